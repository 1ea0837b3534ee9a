"""What Jetson boards print about themselves, read the one way both sides read it: ``/etc/nv_tegra_release``,
dpkg's nvidia-l4t-core, ``nvpmodel -q`` and ``jetson_clocks --show``. The agent reads them on the board; the host
reads saved copies (``orchestrate parse``). Pure functions, Python 3.6+, standard library only, and no other
module of the agent.
"""
import re

# L4T release -> JetPack release, for the releases boards are commonly seen with.
L4T_TO_JETPACK = {
    "32.2.1": "4.2.2", "32.3.1": "4.3", "32.4.3": "4.4", "32.4.4": "4.4.1", "32.5.0": "4.5",
    "32.5.1": "4.5.1", "32.5.2": "4.5.1", "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2",
    "32.7.3": "4.6.3", "32.7.4": "4.6.4", "32.7.5": "4.6.5", "32.7.6": "4.6.6",
    "35.1.0": "5.0.2", "35.2.1": "5.1", "35.3.1": "5.1.1", "35.4.1": "5.1.2", "35.5.0": "5.1.3",
    "35.6.0": "5.1.4", "35.6.1": "5.1.5", "36.2.0": "6.0 DP", "36.3.0": "6.0", "36.4.0": "6.1",
    "36.4.3": "6.2", "36.4.4": "6.2.1",
}

_TEGRA_RE = re.compile(r"R(\d+)\s*\(release\),\s*REVISION:\s*(\d+)\.(\d+)")
_L4T_CORE_RE = re.compile(r"nvidia-l4t-core\s+(\d+)\.(\d+)\.(\d+)")


def parse_nv_tegra_release(text):
    """'# R32 (release), REVISION: 7.1, GCID: ...' -> '32.7.1' (None when it is not such a line).

    The leading '#' may be missing or escaped ('\\#' in copies pasted from markdown)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    match = _TEGRA_RE.search(first)
    if not match:
        return None
    return "{}.{}.{}".format(*match.groups())


def parse_l4t_core_version(text):
    """dpkg-query's 'nvidia-l4t-core<TAB>32.7.1-20220219090432' -> '32.7.1' (the fallback source)."""
    match = _L4T_CORE_RE.search(text or "")
    return "{}.{}.{}".format(*match.groups()) if match else None


def parse_nvpmodel_query(text):
    """'nvpmodel -q' -> {'name': 'MAXN', 'id': 0}; older Xavier adds a 'NV Fan Mode:cool' line first."""
    name, mode_id = None, None
    for line in (text or "").splitlines():
        line = line.strip()
        if "NV Power Mode:" in line:  # verbose output prefixes it: 'NVPM VERB: Current mode: NV Power Mode: 25W'
            name = line.split("NV Power Mode:", 1)[1].strip()
        elif line.isdigit() and name is not None and mode_id is None:
            mode_id = int(line)
    return {"name": name, "id": mode_id} if name else None


def jetpack_for_l4t(l4t):
    return L4T_TO_JETPACK.get(l4t) if l4t else None


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
