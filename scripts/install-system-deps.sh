#!/usr/bin/env bash
# Installs the system packages orchestrate needs on a Debian/Ubuntu host (run as root):
# Nsight Systems from Debian's non-free component, OpenSSH server and client, Xvfb, the GLES demo
# apps the tests profile, a C compiler and Python's headers (for the analysis's b-tree reader and the
# library the symbol tests build), PostgreSQL's client library (psycopg uses it for a team's results
# database) and server (the tests start one of their own on a private socket), and the Chromium they open
# the reports in. Enables non-free in the sources
# already configured; it never adds a mirror of its own.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-system-deps.sh: run as root (apt-get needs it)" >&2
    exit 1
fi

# enable_component COMPONENT URI_WORD: add COMPONENT to every apt source whose URI contains URI_WORD
# and whose component list has "main" but not COMPONENT (deb822 .sources files and one-line .list files).
enable_component() {
    local component=$1 word=$2 f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        grep -q "^URIs:.*${word}" "$f" || continue
        sed -i -E "/^Components:.* main( |\$)/{/ ${component}( |\$)/!s/\$/ ${component}/}" "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -e "$f" ] || continue
        sed -i -E "/^deb .*${word}.* main/{/ ${component}( |\$)/!s/( main)( |\$)/\1 ${component}\2/}" "$f"
    done
}

have_all() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
    done
}

# nsight-systems-target hard-depends on the NVIDIA driver's libcuda, which on a machine without an
# NVIDIA GPU pulls in the whole driver stack from contrib (and GLX diversions that can displace Mesa).
# nsys's CPU sampling, OS-runtime, NVTX and OpenGL tracing do not load libcuda, so on such machines a
# tiny local package declares "libcuda.so.1" as provided. Boards and GPU hosts never need it.
provide_libcuda_placeholder() {
    if ldconfig -p | grep -q 'libcuda.so.1 ' || have_all libcuda1 || have_all orchestrate-libcuda-placeholder; then
        return 0
    fi
    local dir
    dir=$(mktemp -d)
    mkdir -p "$dir/pkg/DEBIAN"
    cat >"$dir/pkg/DEBIAN/control" <<CONTROL
Package: orchestrate-libcuda-placeholder
Version: 1.0
Architecture: all
Maintainer: orchestrate <orchestrate@localhost>
Provides: libcuda.so.1 (= 520)
Description: declares libcuda.so.1 as provided so nsight-systems installs without a GPU driver
 Installed only on machines with no NVIDIA driver; nsys then profiles CPU, OS runtime and OpenGL.
CONTROL
    dpkg-deb --build "$dir/pkg" "$dir/placeholder.deb" >/dev/null
    dpkg -i "$dir/placeholder.deb" >/dev/null
    rm -rf "$dir"
}

PACKAGES=(
    python3 python3-venv python3-pip procps
    openssh-server openssh-client sudo
    nsight-systems nsight-systems-target libssh-4 libpfm4
    iproute2 xvfb xauth mesa-utils mesa-utils-extra glmark2-es2-x11 libgles2 libegl1 libegl-mesa0
    gcc libc6-dev binutils python3-dev make libegl-dev libgles-dev libx11-dev
    libpq5 postgresql
)
# the tests open the HTML reports in it (headless, through Playwright); Ubuntu ships it as a snap only,
# so there the browser tests are skipped
BROWSER=chromium

if have_all "${PACKAGES[@]}" "$BROWSER"; then
    exit 0
fi

. /etc/os-release
case "${ID:-}" in
    debian) enable_component non-free debian ;;   # nsight-systems lives in Debian's non-free
    ubuntu) enable_component multiverse ubuntu ;;  # and in Ubuntu's multiverse
esac
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
provide_libcuda_placeholder
if apt-cache show "$BROWSER" >/dev/null 2>&1; then
    PACKAGES+=("$BROWSER")
fi
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
