"""Finding nsys and its importer on a machine, and reading nsys's version. Pure parsers plus
file-system probes; stdlib only, Python 3.6+."""
import glob
import os
import re
import shutil
import subprocess

# Where JetPack, the Nsight Systems GUI, the CUDA toolkit and distribution packages put nsys, each pattern's
# matches newest first: JetPack 5/6 (nsight-systems-<ver>), JetPack 4's apt feed (nsight-systems-cli: 2020.5 in
# target-linux-armv8, 2021.5 in target-linux-tegra-armv8), the folder the host's GUI deploys on first connect
# (flat, no importer) and where `orchestrate nsys deploy` puts the same.
GUI_FOLDER = "/opt/nvidia/nsight_systems"
NSYS_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems/*/target-linux-tegra-armv8/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/target-linux-tegra-armv8/nsys",
    "/opt/nvidia/nsight-systems-cli/*/target-linux-armv8/nsys",
    GUI_FOLDER + "/nsys",
    "/usr/local/cuda*/bin/nsys",
    "/usr/local/cuda*/nsight-systems-*/bin/nsys",
    "/usr/lib/nsight-systems/bin/nsys",
)
# The options whose values differ between nsys versions (2020.x: --sample cpu|none; 2022.1 on:
# process-tree|system-wide|none; --cpuctxsw system-wide from 2022; trace names come and go).
VERSIONED_OPTIONS = ("sample", "cpuctxsw", "trace")
_OPTION_LINE = re.compile(r"^\s*(?:-\w, )?--([\w-]+)=\s*$")

_VERSION_RE = re.compile(r"(\d{4})\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z]+))?")


def parse_nsys_version(text):
    """'NVIDIA Nsight Systems version 2022.4.2.1-df9881f' -> '2022.4.2.1' (None when absent)."""
    for line in text.splitlines():
        if "version" in line.lower() or _VERSION_RE.match(line.strip()):
            match = _VERSION_RE.search(line)
            if match:
                parts = [p for p in match.groups()[:4] if p is not None]
                return ".".join(parts)
    return None


def parse_profile_help(text):
    """'nsys profile --help' -> {option: [values]} for every option whose help says "Possible values are ...",
    the list read to its closing full stop across wrapped lines."""
    options, option, listing = {}, None, None
    for line in text.splitlines():
        named = _OPTION_LINE.match(line)
        if named:
            option, listing = named.group(1), None
            continue
        words = line.strip()
        if option and listing is None and words.startswith("Possible values are"):
            listing = words
        elif listing is not None and words:
            listing += " " + words
        if option and listing is not None and listing.endswith("."):
            options[option] = re.findall(r"'([^']+)'", listing)
            option, listing = None, None
    return options


def _output(argv, timeout_s=60):
    """What a command prints (stdout and stderr), or None when it cannot run or does not end in time (then
    it is killed)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True)
    except OSError:
        return None
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None


def read_profile_options(path, help_text=None):
    """The values this nsys takes for the options that differ between versions; {} when its help says none."""
    found = parse_profile_help(help_text if help_text is not None else read_profile_help(path))
    return {name: found[name] for name in VERSIONED_OPTIONS if name in found}


def read_profile_help(path):
    return _output([path, "profile", "--help"]) or ""


# GPU hardware metrics: '--gpu-metrics-device' up to 2024, '--gpu-metrics-devices' in later releases
GPU_METRICS_OPTIONS = ("gpu-metrics-devices", "gpu-metrics-device")
_METRIC_DEVICE = re.compile(r"^\s*(\d+)\s*:\s*(\S.*?)\s*$")
_METRIC_SET = re.compile(r"^\s*\[(\d+)\]\s+\[([\w.-]+)\]\s+(\S.*?)\s*$")


def gpu_metrics_option(help_text):
    """The option this nsys selects GPUs for hardware metrics with, as its help spells it (None: it has none)."""
    named = {m.group(1) for m in (_OPTION_LINE.match(line) for line in help_text.splitlines()) if m}
    return next((option for option in GPU_METRICS_OPTIONS if option in named), None)


def parse_metric_devices(text):
    """'nsys profile --gpu-metrics-device=help' -> (the GPUs it can sample as [{"index", "name"}], and what it
    says instead when there are none, e.g. 'NVIDIA GPUs not found, feature is not available')."""
    devices, said = [], None
    for line in text.splitlines():
        match = _METRIC_DEVICE.match(line)
        if match:
            devices.append({"index": int(match.group(1)), "name": match.group(2)})
        elif line.strip() and not line.strip().startswith("Possible") and said is None:
            said = line.strip()
    return devices, (None if devices else said)


def parse_metric_sets(text):
    """'nsys profile --gpu-metrics-set=help' -> [{"index": 9, "alias": "ga10b", "name": "General Metrics for
    NVIDIA GA10B (any frequency)"}]."""
    found = (_METRIC_SET.match(line) for line in text.splitlines())
    return [{"index": int(m.group(1)), "alias": m.group(2), "name": m.group(3)} for m in found if m]


def read_gpu_metrics(path, option):
    """What this nsys can sample: its GPUs and metric sets (each from its own help; about 30 ms each)."""
    devices, said = parse_metric_devices(_output([path, "profile", "--{}=help".format(option)]) or "")
    sets = parse_metric_sets(_output([path, "profile", "--gpu-metrics-set=help"]) or "")
    return {"option": option, "devices": devices, "none_because": said, "sets": sets}


def version_tuple(version):
    """'2022.4.2.1' -> (2022, 4, 2, 1); unknown parts sort low."""
    if not version:
        return ()
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def candidate_nsys_paths(hint=None, path_env=None):
    """Every place nsys may be, in the order we trust them: the inventory's hint, PATH, known folders."""
    seen = []
    if hint:
        seen.append(hint)
    on_path = shutil.which("nsys", path=path_env)
    if on_path:
        seen.append(on_path)
    for pattern in NSYS_GLOBS:
        for path in sorted(glob.glob(pattern), reverse=True):
            seen.append(path)
    unique = []
    for path in seen:
        if path not in unique:
            unique.append(path)
    return unique


def find_nsys(hint=None):
    """Return (path, version, tried) for the first runnable nsys; path is None when none runs.

    A hint (the inventory's orchestrate_nsys) is the only place tried: an explicit setting that is
    wrong must not be papered over by another nsys found elsewhere."""
    tried = []
    for path in ([hint] if hint else candidate_nsys_paths()):
        tried.append(path)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        version = read_nsys_version(path)
        if version:
            return path, version, tried
    return None, None, tried


def read_nsys_version(path):
    out = _output([path, "--version"])
    return parse_nsys_version(out) if out is not None else None


def symlink_chain(path, limit=16):
    """Every name a path goes through while its symlinks are followed one at a time."""
    chain = [path]
    while os.path.islink(path) and len(chain) < limit:
        target = os.readlink(path)
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        chain.append(path)
    real = os.path.realpath(path)
    if real not in chain:
        chain.append(real)
    return chain


def importer_candidates(nsys_path):
    """QdstrmImporter lives in host-linux-* beside target-linux-*; nsys only looks beside its own
    real location, while packages may put the host folder elsewhere (Debian: /usr/bin/nsys ->
    /usr/lib/nsight-systems/bin/nsys -> ../target-linux-x64/nsys, importer in ../host-linux-x64)."""
    paths = []
    for name in symlink_chain(nsys_path):
        root = os.path.dirname(os.path.dirname(name))
        for found in sorted(glob.glob(os.path.join(root, "host-linux-*", "QdstrmImporter"))):
            if found not in paths:
                paths.append(found)
    return paths


def nsys_finds_importer(nsys_path):
    """Whether nsys will import by itself: it looks for host-linux-* beside the real location of its
    target-linux-* folder (a distribution package may split the two apart)."""
    real = os.path.realpath(nsys_path)
    root = os.path.dirname(os.path.dirname(real))
    targets = glob.glob(os.path.join(root, "target-linux-*"))
    if not targets:
        targets = [os.path.dirname(real)]
    for target in targets:
        beside = os.path.dirname(os.path.realpath(target))
        if glob.glob(os.path.join(beside, "host-linux-*", "QdstrmImporter")):
            return True
    return False


def find_importer(nsys_path):
    for path in importer_candidates(nsys_path):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None
