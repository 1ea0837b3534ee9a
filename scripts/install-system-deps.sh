#!/usr/bin/env bash
# Installs the system packages orchestrate needs on a Debian/Ubuntu host (run as root):
# Nsight Systems from Debian's non-free component, OpenSSH server and client, Xvfb and the
# GLES demo apps the tests profile. Enables non-free in the sources already configured;
# it never adds a mirror of its own.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-system-deps.sh: run as root (apt-get needs it)" >&2
    exit 1
fi

enable_non_free() {
    local changed=0 f
    # deb822 sources (Debian 12+): add non-free to every "Components:" line that lacks it.
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        grep -q '^URIs:.*debian' "$f" || continue
        if grep -q '^Components:' "$f" && ! grep -q '^Components:.*\bnon-free\b' "$f"; then
            sed -i -E 's/^(Components:.*\bmain\b.*)$/\1 non-free/' "$f"
            changed=1
        fi
    done
    # One-line sources: append non-free to Debian "deb ... main" lines that lack it.
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -e "$f" ] || continue
        if grep -qE '^deb .*debian.* main' "$f" && grep -E '^deb .*debian.* main' "$f" | grep -vq 'non-free\( \|$\)'; then
            sed -i -E '/^deb .*debian/{/ non-free( |$)/!s/( main)( |$)/\1 non-free\2/}' "$f"
            changed=1
        fi
    done
    return 0
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
    openssh-server openssh-client
    nsight-systems nsight-systems-target libssh-4 libpfm4
    xvfb xauth mesa-utils mesa-utils-extra glmark2-es2-x11 libgles2 libegl1 libegl-mesa0
)

if have_all "${PACKAGES[@]}"; then
    exit 0
fi

. /etc/os-release
if [ "${ID:-}" = "debian" ]; then
    enable_non_free
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
provide_libcuda_placeholder
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
