"""Jetson boards laid out under a folder, from text published from real boards (tests/data/jetson_samples.json,
each file naming the sample it comes from), for the agent to read as it reads a board (ORCHESTRATE_BOARD_ROOT).

Three boards, each a composite of samples from one board kind and release line:
- nano:      Jetson Nano, L4T 32.7.1 by dpkg-query only (no nv_tegra_release), clocks of s045, zones of s076/s046
- orin_nano: Jetson Orin Nano Super, L4T 36.4.3 (s031), clocks of s036, temperatures of s034 (three zones
             power-gated: they fail to read), power mode of s032
- agx_orin:  Jetson AGX Orin, L4T 35.3.1 (s059), clocks of s119, temperatures of s027's tegrastats line
Sizes of RAM and swap come from the same board kind's tegrastats lines (s022, s053, s027).
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

DATA = Path(__file__).parent / "data"
SAMPLES = {s["id"]: s for s in json.loads((DATA / "jetson_samples.json").read_text())}


def _text(sample_id: str) -> str:
    return SAMPLES[sample_id]["text"]


def _clocks_of(sample_id: str) -> tuple[list[dict], dict, int]:
    """Cores (governor, min/max/current kHz, online), GPU (Hz) and EMC rate from a 'jetson_clocks --show' sample."""
    text = _text(sample_id)
    cores = []
    for line in text.splitlines():
        match = re.match(r"^cpu(\d+):\s*(.*)$", line.strip())
        if match:
            pairs = dict(re.findall(r"(\w+)=(\S+)", match.group(2)))
            cores.append({"n": int(match.group(1)), "online": pairs.get("Online", "1") == "1",
                          "governor": pairs.get("Governor") or pairs.get("Gonvernor"),
                          "min": pairs["MinFreq"], "max": pairs["MaxFreq"], "cur": pairs["CurrentFreq"]})
    gpu = dict(re.findall(r"(\w+)=(\d+)", next(x for x in text.splitlines() if x.startswith("GPU "))))
    emc = dict(re.findall(r"(\w+)=(\d+)", next(x for x in text.splitlines() if x.startswith("EMC "))))
    return sorted(cores, key=lambda c: c["n"]), gpu, int(emc["CurrentFreq"])


BOARDS = {
    "nano": {
        "model": _text("s070"), "compatible": ["nvidia,p3450-0000", "nvidia,jetson-nano", "nvidia,tegra210"],
        "dpkg_query": _text("s101").lstrip("# "), "clocks": "s045", "gpu_node": "57000000.gpu",
        "gpu_available": _text("s065").splitlines()[1], "emc_file": "/sys/kernel/debug/clk/emc/clk_rate",
        "zones": list(zip([line.split(": ")[1] for line in _text("s076").splitlines()],
                          _text("s046").splitlines())),
        "nvpmodel": "NV Power Mode: MAXN\n0\n", "modes": {0: "MAXN", 1: "5W"}, "ram_mb": 3964, "swap_mb": 1982,
        "tegrastats": "s022",
    },
    "orin_nano": {
        "model": _text("s116"), "compatible": ["nvidia,p3768-0000+p3767-0005", "nvidia,tegra234"],
        "nv_tegra_release": _text("s031"), "clocks": "s036", "gpu_node": "17000000.ga10b",
        "emc_file": "/sys/kernel/debug/bpmp/debug/clk/emc/rate",
        # the R35+ zone order; cv0-cv2 are power-gated on Orin Nano and fail to read, as s034 shows
        "zones": list(zip(["cpu-thermal", "gpu-thermal", "cv0-thermal", "cv1-thermal", "cv2-thermal", "soc0-thermal",
                           "soc1-thermal", "soc2-thermal", "tj-thermal"],
                          [line.split(": ")[1] for line in _text("s034").splitlines()])),
        "nvpmodel": "\n".join(_text("s032").splitlines()[:4]) + "\n", "modes": {0: "15W", 1: "25W"},
        "ram_mb": 7620, "swap_mb": 3810,
        "tegrastats": "s053",
    },
    "agx_orin": {
        "model": "Jetson AGX Orin", "compatible": ["nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005",
                                                   "nvidia,tegra234"],
        "nv_tegra_release": _text("s059"), "clocks": "s119", "gpu_node": "17000000.ga10b",
        "emc_file": "/sys/kernel/debug/bpmp/debug/clk/emc/rate",
        "zones": [(f"{name}-thermal", str(round(float(c) * 1000))) for name, c in
                  re.findall(r"(\w+)@([\d.]+)C", _text("s027"))],
        "nvpmodel": _text("s060") + "\n", "modes": {0: "MAXN", 1: "MODE_15W", 2: "MODE_30W", 3: "MODE_50W"},
        "ram_mb": 62840, "swap_mb": 31420, "tegrastats": "s027",
        # L4T R35.3.1's own nvpmodel.conf of the AGX Orin 32GB (tests/data/jetson/SOURCES.md): the modes' TPC
        # power-gating masks, which nvpmodel cannot change while the board runs
        "nvpmodel_conf": "nvpmodel_p3701_0000.conf", "tpc_masks": {0: "0", 1: "248", 2: "240", 3: "0"},
    },
}


def _write(root: Path, path: str, text: str | bytes) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text)


def tool(root: Path, name: str, script: str) -> Path:
    """A stand-in for a board tool: a shell script in the root's /usr/bin."""
    path = root / "usr/bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def throttled(line: str) -> str:
    """The line with every core's clock halved, as a thermal or power throttle lowers them."""
    return re.sub(r"%@(\d+)", lambda m: f"%@{int(m.group(1)) // 2}", line.split(" EMC")[0]) + " EMC" + \
        line.split(" EMC", 1)[1]


def lay_out(root: Path, name: str, tegrastats: bool = True, throttling: bool = False) -> Path:
    """The board's files under root; with tegrastats, a stand-in that prints the board's real tegrastats line
    every --interval ms until stopped (with throttling, every other line has the cores' clocks halved)."""
    board = BOARDS[name]
    if tegrastats:
        line = _text(board["tegrastats"])
        second = throttled(line) if throttling else line
        tool(root, "tegrastats", 'ms=1000; [ "$1" = "--interval" ] && ms=$2\n'
                                 'pause=$(awk "BEGIN { print $ms / 1000 }")\n'
                                 f"while true; do printf '%s\\n' {shlex.quote(line)}; sleep \"$pause\"; "
                                 f"printf '%s\\n' {shlex.quote(second)}; sleep \"$pause\"; done\n")
    _write(root, "/proc/device-tree/model", board["model"].encode() + b"\0")
    _write(root, "/proc/device-tree/compatible", b"".join(c.encode() + b"\0" for c in board["compatible"]))
    if "nv_tegra_release" in board:
        _write(root, "/etc/nv_tegra_release", board["nv_tegra_release"] + "\n")
    if "dpkg_query" in board:
        tool(root, "dpkg-query", f"printf '%s\\n' {shlex.quote(board['dpkg_query'])}\n")
    # nvpmodel: -q prints the board's real text until -m sets a mode (kept in the root, as nvpmodel keeps it).
    # A mode whose GPU power gating differs from the current one's gets nvpmodel's real reboot prompt (words of
    # published captures); with no terminal to answer it, nvpmodel keeps the mode. Its exit status is in no
    # published log: 0 here, so that only its words tell.
    names = " ".join(f"{n}) name={shlex.quote(name)};;" for n, name in board["modes"].items())
    masks = " ".join(f"{n}) mask={m};;" for n, m in board.get("tpc_masks", {}).items())
    current = re.search(r"\n(\d+)\s*$", board["nvpmodel"])
    if "nvpmodel_conf" in board:
        _write(root, "/etc/nvpmodel.conf", (DATA / "jetson" / board["nvpmodel_conf"]).read_text())
    tool(root, "nvpmodel", 'root=$(cd "$(dirname "$0")/../.." && pwd); state="$root/var/lib/nvpmodel/status"\n'
                           f'now={current.group(1) if current else 0}; [ -f "$state" ] && now=$(cat "$state")\n'
                           f'mask_of() {{ mask=none; case "$1" in {masks} esac; echo "$mask"; }}\n'
                           'if [ "$1" = "-m" ]; then\n'
                           '  if [ "$(mask_of "$2")" != "$(mask_of "$now")" ]; then\n'
                           '    echo "NVPM WARN: Golden image context is already created"\n'
                           '    echo "NVPM WARN: Reboot required for changing to this power mode: $2"\n'
                           '    echo "NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:"\n'
                           '    read answer; case "$answer" in YES|yes) echo "NVPM WARN: rebooting";; esac\n'
                           '    echo "NVPM ERROR: optMask is 1, no request for power mode"; exit 0\n'
                           '  fi\n'
                           '  mkdir -p "$(dirname "$state")"; echo "$2" > "$state"; exit 0\n'
                           'fi\n'
                           f'if [ ! -f "$state" ]; then printf "%s" {shlex.quote(board["nvpmodel"])}; exit 0; fi\n'
                           f'id=$(cat "$state"); case "$id" in {names} *) echo "bad mode" >&2; exit 1;; esac\n'
                           'printf "NV Power Mode: %s\\n%s\\n" "$name" "$id"\n')
    # jetson_clocks: --store writes 'path:value' lines as the real one does (s047), no argument holds every
    # online core and the GPU at their highest clock, --restore writes the stored values back; --store onto a
    # file that exists asks to overwrite it as the real script does, and with no answer exits 1
    tool(root, "jetson_clocks", 'root=$(cd "$(dirname "$0")/../.." && pwd)\n'
                                'mins="$(cd "$root" && ls sys/devices/system/cpu/cpu*/cpufreq/scaling_min_freq '
                                'sys/class/devfreq/*/min_freq)"\n'
                                'case "$1" in\n'
                                '--store) if [ -e "$2" ]; then echo "File $2 already exists. Can I overwrite it? '
                                'Y/N:"; read answer; case $answer in y|Y) rm -f "$2";; *) '
                                'echo "Error: file $2 already exists!"; exit 1;; esac; fi\n'
                                '  for f in $mins; do echo "/$f:$(cat "$root/$f")"; done > "$2";;\n'
                                '--restore) while IFS=: read -r path value; do '
                                'echo "$value" > "$root$path"; done < "$2";;\n'
                                '"") for f in $mins; do cat "$root/$(dirname "$f")/$(basename "$f" | '
                                'sed s/min/max/)" > "$root/$f"; done;;\n'
                                '*) echo "unknown option $1" >&2; exit 1;;\n'
                                'esac\n')
    cores, gpu, emc = _clocks_of(board["clocks"])
    online = [c["n"] for c in cores if c["online"]]
    _write(root, "/sys/devices/system/cpu/online", f"{min(online)}-{max(online)}\n")
    for core in cores:
        base = f"/sys/devices/system/cpu/cpu{core['n']}/cpufreq/"
        for file, value in (("scaling_governor", core["governor"]), ("scaling_min_freq", core["min"]),
                            ("scaling_max_freq", core["max"]), ("scaling_cur_freq", core["cur"])):
            _write(root, base + file, f"{value}\n")
    node = f"/sys/class/devfreq/{board['gpu_node']}/"
    for file, key in (("min_freq", "MinFreq"), ("max_freq", "MaxFreq"), ("cur_freq", "CurrentFreq")):
        _write(root, node + file, f"{gpu[key]}\n")
    if "gpu_available" in board:
        _write(root, node + "available_frequencies", board["gpu_available"] + "\n")
    _write(root, board["emc_file"], f"{emc}\n")
    for n, (zone, temp) in enumerate(board["zones"]):
        _write(root, f"/sys/class/thermal/thermal_zone{n}/type", zone + "\n")
        if temp.strip().lstrip("-").isdigit():
            _write(root, f"/sys/class/thermal/thermal_zone{n}/temp", temp.strip() + "\n")
        else:  # a power-gated zone: reading it fails
            (root / f"sys/class/thermal/thermal_zone{n}/temp").mkdir(parents=True)
    _write(root, "/proc/meminfo", f"MemTotal:       {board['ram_mb'] * 1024} kB\nMemAvailable:   "
                                  f"{board['ram_mb'] * 512} kB\nSwapTotal:      {board['swap_mb'] * 1024} kB\n"
                                  f"SwapFree:       {board['swap_mb'] * 1024} kB\n")
    return root
