"""A Jetson's state as its files say it: the cores online and their clocks and governors, the GPU's and
the memory controller's (EMC) clocks, whether jetson_clocks holds them, RAM and swap. Pure parsers of
the files' texts, and readers that find the files (``boardfs``: under a test root when asked).

Python 3.6+, stdlib only. A PC has none of the Jetson files: those fields are None there.
"""
import re

from . import boardfs

CPU_ROOT = "/sys/devices/system/cpu"
DEVFREQ_ROOT = "/sys/class/devfreq"
GPU_DEVFREQ_NAMES = ("gpu", "gk20a", "gm20b", "gp10b", "gv11b", "ga10b", "gb10b")
# the memory controller's clock: debugfs (root only) moved between releases
EMC_RATE_FILES = ("/sys/kernel/debug/bpmp/debug/clk/emc/rate", "/sys/kernel/debug/clk/emc/clk_rate",
                  "/sys/kernel/debug/tegra_bwmgr/emc_rate")


def parse_cpu_list(text):
    """'0-3,5' (the kernel's cpu list format) -> [0, 1, 2, 3, 5]; None for no text."""
    if not text or not text.strip():
        return None
    cpus = []  # type: list
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


MEMINFO_KEYS = ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree")


def parse_meminfo(text):
    """/proc/meminfo -> {ram_total_mb, ram_available_mb, swap_total_mb, swap_free_mb} (None when absent).
    Split, not matched: the board's sampler reads it five times a second."""
    values = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if name in MEMINFO_KEYS and len(words) == 2 and words[0].isdigit() and words[1] == "kB":
            values[name] = int(words[0])

    def mb(key):
        return values[key] // 1024 if key in values else None
    if not values:
        return None
    return {"ram_total_mb": mb("MemTotal"), "ram_available_mb": mb("MemAvailable"),
            "swap_total_mb": mb("SwapTotal"), "swap_free_mb": mb("SwapFree")}


def _mhz(hz_or_khz, divisor):
    return None if hz_or_khz is None else round(hz_or_khz / divisor, 1)


def cpu_clocks():
    """Per core: online, governor, and its clocks in MHz (cpufreq's kHz); the cores sorted by number."""
    online = parse_cpu_list(boardfs.read(CPU_ROOT + "/online"))
    cores = sorted((int(d[3:]) for d in boardfs.listdir(CPU_ROOT) if re.match(r"^cpu\d+$", d)))
    found = []
    for n in cores:
        freq = "{}/cpu{}/cpufreq/".format(CPU_ROOT, n)
        governor = (boardfs.read(freq + "scaling_governor") or "").strip() or None
        found.append({"cpu": n, "online": None if online is None else n in online, "governor": governor,
                      "min_mhz": _mhz(boardfs.read_int(freq + "scaling_min_freq"), 1000.0),
                      "max_mhz": _mhz(boardfs.read_int(freq + "scaling_max_freq"), 1000.0),
                      "cur_mhz": _mhz(boardfs.read_int(freq + "scaling_cur_freq"), 1000.0)})
    return found


def current_cpu_clocks():
    """Per core: online and its current clock in MHz: what a board sample needs of cpu_clocks, without the
    governor and limits (three reads a core fewer, five times a second)."""
    online = parse_cpu_list(boardfs.read(CPU_ROOT + "/online"))
    cores = sorted((int(d[3:]) for d in boardfs.listdir(CPU_ROOT) if re.match(r"^cpu\d+$", d)))
    return [{"cpu": n, "online": None if online is None else n in online,
             "cur_mhz": _mhz(boardfs.read_int("{}/cpu{}/cpufreq/scaling_cur_freq".format(CPU_ROOT, n)), 1000.0)}
            for n in cores]


def gpu_devfreq_node():
    """The devfreq device that is the GPU ('57000000.gpu' on Nano, '17000000.ga10b' on Orin), or None."""
    for name in sorted(boardfs.listdir(DEVFREQ_ROOT)):
        if any(part in GPU_DEVFREQ_NAMES for part in re.split(r"[.:_-]", name)):
            return name
    return None


def gpu_clock():
    node = gpu_devfreq_node()
    if node is None:
        return None
    base = "{}/{}/".format(DEVFREQ_ROOT, node)
    available = (boardfs.read(base + "available_frequencies") or "").split()
    return {"device": node, "governor": (boardfs.read(base + "governor") or "").strip() or None,
            "min_mhz": _mhz(boardfs.read_int(base + "min_freq"), 1e6),
            "max_mhz": _mhz(boardfs.read_int(base + "max_freq"), 1e6),
            "cur_mhz": _mhz(boardfs.read_int(base + "cur_freq"), 1e6),
            "available_mhz": [_mhz(int(f), 1e6) for f in available if f.isdigit()]}


def emc_mhz():
    for candidate in EMC_RATE_FILES:
        rate = boardfs.read_int(candidate)
        if rate:
            return _mhz(rate, 1e6)
    return None


def clocks_held(cpus, gpu):
    """True when every online core and the GPU are held at one clock (minimum = maximum), as jetson_clocks
    leaves them; False when any floats; None when the board does not say."""
    held = [c["min_mhz"] == c["max_mhz"] for c in cpus
            if c["online"] is not False and c["min_mhz"] is not None and c["max_mhz"] is not None]
    if gpu and gpu["min_mhz"] is not None and gpu["max_mhz"] is not None:
        held.append(gpu["min_mhz"] == gpu["max_mhz"])
    return all(held) if held else None


def clock_facts():
    cpus, gpu = cpu_clocks(), gpu_clock()
    online = [c["cpu"] for c in cpus if c["online"] is not False]
    return {"cpus": cpus, "online_cores": online, "gpu": gpu, "emc_mhz": emc_mhz(),
            "jetson_clocks": clocks_held(cpus, gpu)}


def memory():
    return parse_meminfo(boardfs.read("/proc/meminfo"))


def thermal_trips():
    """{zone type: its lowest passive trip point in C}: where the kernel starts throttling for that zone."""
    root = "/sys/class/thermal"
    trips = {}
    for zone in sorted(d for d in boardfs.listdir(root) if d.startswith("thermal_zone")):
        name = (boardfs.read("{}/{}/type".format(root, zone)) or "").strip()
        passive = []
        for k in range(32):
            kind = (boardfs.read("{}/{}/trip_point_{}_type".format(root, zone, k)) or "").strip()
            if not kind:
                break
            temp = boardfs.read_int("{}/{}/trip_point_{}_temp".format(root, zone, k))
            if kind == "passive" and temp:
                passive.append(temp / 1000.0)
        if name and passive:
            trips[name] = min(passive)
    return trips or None
