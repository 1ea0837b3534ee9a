"""The board's clocks as ``jetson_clocks --show`` prints them: a pure parser (R28's 'Gonvernor' spelling,
12-core Orin's cpu0, cpu1, cpu10 order, offline cores, the fan line of each generation).

Python 3.6+, stdlib only.
"""
import re

_CPU = re.compile(r"^cpu(\d+):\s*(.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


def _int(value):
    return int(value) if value is not None and value.isdigit() else None


def _freqs(pairs):
    return {"min": _int(pairs.get("MinFreq")), "max": _int(pairs.get("MaxFreq")),
            "current": _int(pairs.get("CurrentFreq"))}


def parse_jetson_clocks_show(text):
    """'jetson_clocks --show' -> {soc_family, machine, online_cpus, cpus: [{cpu, online, governor, min_khz,
    max_khz, current_khz}], gpu: {min_hz, max_hz, current_hz}, emc: {..., override}, fan, power_mode,
    locked}; None when the text holds none of it. 'locked' is what jetson_clocks does: every online core and
    the GPU held at one clock (minimum = maximum)."""
    found = {"soc_family": None, "machine": None, "online_cpus": None, "cpus": [], "gpu": None, "emc": None,
             "fan": None, "power_mode": None}  # type: dict
    for raw in (text or "").splitlines():
        line = raw.strip()
        cpu = _CPU.match(line)
        if line.startswith("SOC family:"):
            head, _, machine = line.partition("Machine:")
            found["soc_family"] = head.split(":", 1)[1].strip() or None
            found["machine"] = machine.strip() or None
        elif line.startswith("Online CPUs:"):
            found["online_cpus"] = line.split(":", 1)[1].strip()
        elif cpu:
            pairs = dict(_PAIR.findall(cpu.group(2)))
            freqs = _freqs(pairs)
            online = pairs.get("Online")
            found["cpus"].append({
                "cpu": int(cpu.group(1)), "online": None if online is None else online == "1",
                "governor": pairs.get("Governor") or pairs.get("Gonvernor"),
                "min_khz": freqs["min"], "max_khz": freqs["max"], "current_khz": freqs["current"]})
        elif line.startswith("GPU ") and "Freq=" in line:
            freqs = _freqs(dict(_PAIR.findall(line)))
            found["gpu"] = {"min_hz": freqs["min"], "max_hz": freqs["max"], "current_hz": freqs["current"]}
        elif line.startswith("EMC ") and "Freq=" in line:
            pairs = dict(_PAIR.findall(line))
            freqs = _freqs(pairs)
            found["emc"] = {"min_hz": freqs["min"], "max_hz": freqs["max"], "current_hz": freqs["current"],
                            "override": _int(pairs.get("FreqOverride"))}
        elif line.lower().startswith("fan"):
            found["fan"] = line
        elif line.startswith("NV Power Mode:"):
            found["power_mode"] = line.split(":", 1)[1].strip()
    if not found["cpus"] and found["gpu"] is None and found["soc_family"] is None:
        return None
    found["cpus"].sort(key=lambda c: c["cpu"])
    found["locked"] = clocks_locked(found)
    return found


def clocks_locked(shown):
    """True when every online core and the GPU run at a fixed clock; None when the text cannot say."""
    cores = [c for c in shown["cpus"] if c["online"] is not False]
    held = [c["min_khz"] == c["max_khz"] for c in cores if c["min_khz"] is not None and c["max_khz"] is not None]
    gpu = shown.get("gpu")
    if gpu and gpu["min_hz"] is not None and gpu["max_hz"] is not None:
        held.append(gpu["min_hz"] == gpu["max_hz"])
    return all(held) if held else None
