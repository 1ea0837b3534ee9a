"""Facts about the target: pure parsers of board files plus the probes that read them.

Python 3.6+, stdlib only. Every probe tolerates a missing file: a PC has no Jetson files.
"""
import datetime
import os
import platform
import re
import shutil
import socket
import sys

from . import board, boardfs, files, nsys_locate
from .board_text import jetpack_for_l4t, parse_l4t_core_version, parse_nv_tegra_release, parse_nvpmodel_query
from .messages import BoardState, CurrentClocks, Facts, PowerMode


def parse_device_tree_string(raw):
    """Device-tree strings are NUL-terminated (and NUL-separated for lists)."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return [part for part in raw.split("\0") if part.strip()]


def chip_from_compatible(entries):
    """The last compatible entry names the SoC: 'nvidia,tegra210' -> 'tegra210'."""
    for entry in reversed(entries):
        name = entry.split(",")[-1].strip()
        if name.startswith("tegra"):
            return name
    return None


def parse_os_release(text):
    values = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip('"')
    return values


def parse_clocks(cpu_khz, devfreq_hz):
    """{'cpu_mhz': [per CPU], 'gpu_mhz': n} from cpufreq's scaling_cur_freq texts (kHz) and a
    {devfreq device name: cur_freq text (Hz)} map; None when neither is known."""
    cpus = [int(text.strip()) // 1000 for text in cpu_khz if text and text.strip().isdigit()]
    gpu = None
    for name in sorted(devfreq_hz):
        text = (devfreq_hz[name] or "").strip()
        if text.isdigit() and any(part in board.GPU_DEVFREQ_NAMES for part in re.split(r"[.:_-]", name)):
            gpu = int(text) // 1000000
            break
    if not cpus and gpu is None:
        return None
    return {"cpu_mhz": cpus, "gpu_mhz": gpu}


def current_clocks():
    cpu_root, devfreq_root = "/sys/devices/system/cpu", "/sys/class/devfreq"
    cpus = sorted((d for d in _list(cpu_root) if re.match(r"^cpu\d+$", d)), key=lambda d: int(d[3:]))
    cpu_khz = [_read(os.path.join(cpu_root, d, "cpufreq", "scaling_cur_freq")) for d in cpus]
    devfreq = {d: _read(os.path.join(devfreq_root, d, "cur_freq")) for d in _list(devfreq_root)}
    return parse_clocks(cpu_khz, devfreq)


def parse_thermal_zones(zones):
    """{zone type: temp file text (millidegrees)} -> {type: degrees C}. Zones that failed to read
    (power-gated ones answer EAGAIN) or read -256 C (powered off) are left out."""
    temps = {}
    for name, text in sorted(zones.items()):
        text = (text or "").strip()
        if not name or not text.lstrip("-").isdigit():
            continue
        celsius = int(text) / 1000.0
        if celsius > -200:
            temps[name] = celsius
    return temps


def current_power_mode():
    nvpmodel = boardfs.tool("nvpmodel")
    return parse_nvpmodel_query(boardfs.output([nvpmodel, "-q"])) if nvpmodel else None


def current_temperatures():
    root = "/sys/class/thermal"
    zones = {}
    for zone in sorted(d for d in _list(root) if d.startswith("thermal_zone")):
        name = (_read(os.path.join(root, zone, "type")) or "").strip() or zone
        zones[name if name not in zones else "{} ({})".format(name, zone)] = _read(os.path.join(root, zone, "temp"))
    return parse_thermal_zones(zones)


def board_state_now(_request=None):
    """The board_state command's answer: board_state() with when it was read (UTC, ISO 8601), or why it could not
    be; asked for beside another answer (preflight's, the capture's), it never fails that one."""
    at = datetime.datetime.now(datetime.timezone.utc).isoformat()
    try:
        state = board_state()
    except Exception as exc:  # noqa: BLE001 (said in run.json, not raised)
        return BoardState(at=at, error="{}: {}".format(type(exc).__name__, exc))
    state.at = at
    return state


def board_state():
    """What can change between two runs on one board and explain a fast or slow one: clocks, power mode,
    temperatures, the load average (None for what the board does not expose)."""
    load = _read("/proc/loadavg")
    mode = current_power_mode()
    clocks = current_clocks()
    return BoardState(clocks=CurrentClocks.from_wire(clocks, strict=True) if clocks else None,
                      power_mode=PowerMode(**mode) if mode else None,
                      temperatures_c=current_temperatures() or None,
                      load_average=[float(x) for x in load.split()[:3]] if load else None)


_list = boardfs.listdir
_read = boardfs.read


def display_socket_exists(display):
    """':1' or ':1.0' -> whether /tmp/.X11-unix/X1 exists (a local X server listens)."""
    match = re.match(r"^[^:]*:(\d+)(?:\.\d+)?$", display or "")
    if not match:
        return False
    return os.path.exists("/tmp/.X11-unix/X" + match.group(1))


def board_facts():
    model_raw = _read("/proc/device-tree/model", binary=True) or _read(
        "/sys/firmware/devicetree/base/model", binary=True)
    compat_raw = _read("/proc/device-tree/compatible", binary=True) or b""
    tegra = _read("/etc/nv_tegra_release")
    l4t = parse_nv_tegra_release(tegra) if tegra else None
    dpkg_query = boardfs.tool("dpkg-query")
    if l4t is None and dpkg_query:
        l4t = parse_l4t_core_version(boardfs.output([dpkg_query, "--show", "nvidia-l4t-core"]))
    model = parse_device_tree_string(model_raw)[0] if model_raw else None
    return {
        "power_mode": current_power_mode(),
        "model": model,
        "chip": chip_from_compatible(parse_device_tree_string(compat_raw)),
        "l4t": l4t,
        "jetpack": jetpack_for_l4t(l4t),
        "is_jetson": bool(l4t) or bool(model and "jetson" in model.lower()),
        "clocks": current_clocks(),
        "temperatures_c": current_temperatures() or None,
        "thermal_trips_c": board.thermal_trips(),
        "memory": board.memory(),
        **board.clock_facts(),
    }


def system_facts():
    os_release = parse_os_release(_read("/etc/os-release") or "")
    paranoid = _read("/proc/sys/kernel/perf_event_paranoid")
    return {
        "hostname": socket.gethostname(),
        "uid": os.geteuid(),
        "user": _user_name(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "os": os_release.get("PRETTY_NAME"),
        "python": "{}.{}.{}".format(*sys.version_info[:3]),
        "cpu_count": os.cpu_count(),
        "perf_event_paranoid": int(paranoid.strip()) if paranoid and paranoid.strip().lstrip("-").isdigit() else None,
        "xvfb": shutil.which("Xvfb"),
        "display_env": os.environ.get("DISPLAY"),
    }


def _user_name():
    try:
        import pwd
        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return None


def nsys_facts(hint=None):
    path, version, tried = nsys_locate.find_nsys(hint)
    facts = {"path": path, "version": version, "tried": tried, "importer": None, "imports_itself": False}
    if path:
        facts["importer"] = nsys_locate.find_importer(path)
        facts["imports_itself"] = nsys_locate.nsys_finds_importer(path)
        help_text = nsys_locate.read_profile_help(path)
        facts["profile_options"] = nsys_locate.read_profile_options(path, help_text)
        facts["gpu_metrics_option"] = nsys_locate.gpu_metrics_option(help_text)
    return facts


# The nsys facts of a run that does not use nsys (--no-nsys): nsys is neither looked for nor started.
NO_NSYS = {"path": None, "version": None, "tried": [], "importer": None, "imports_itself": False,
           "used": False}  # type: dict


def answer(request):
    """The facts command's answer to a FactsRequest (its dicts read strictly: a key the message does not declare
    is an error here, not a field the host never sees)."""
    return Facts.from_wire(collect(request.nsys, request.work_dir, request.with_nsys), strict=True)


def collect(nsys_hint=None, work_dir=None, with_nsys=True):
    system = system_facts()
    if work_dir:
        system["work_dir_free_mb"] = files.free_bytes(os.path.expanduser(work_dir)) // 2**20
    return {"system": system, "board": board_facts(), "nsys": nsys_facts(nsys_hint) if with_nsys else dict(NO_NSYS),
            "board_root": boardfs.root()}
