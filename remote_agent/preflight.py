"""Preflight: what would make a capture fail, each finding with what, why and how to fix.

Pure: ``evaluate(request, facts, probes)`` turns facts into findings; ``run`` gathers the facts.
"""
import os
import shutil

from . import boardfs, files, nsys_locate, power_modes, xdisplay
from . import facts as facts_mod
from .messages import DisplayPlan, Facts, Finding, PreflightAnswer

MIN_NSYS_VERSION = (2019, 5)
# 3 s of es2gears with OpenGL trace wrote a 98 MB qdstrm: budget 40 MB per captured second.
BYTES_PER_CAPTURE_SECOND = 40 * 1024 * 1024
BYTES_FIXED_OVERHEAD = 200 * 1024 * 1024
# Below this a capture cannot even start (nsys's scratch, the agent's reserve, a short report): an error.
# Between it and the estimate, a warning: the capture runs, and is ended early, its report kept, if the
# disk fills up (the agent watches the free space).
BYTES_MINIMUM = 96 * 1024 * 1024


def finding(level, code, what, why, fix):
    return {"level": level, "code": code, "what": what, "why": why, "fix": fix}


def required_bytes(duration_s):
    return int(BYTES_FIXED_OVERHEAD + BYTES_PER_CAPTURE_SECOND * max(duration_s or 0, 1))


def nsys_findings(request, facts, probes):
    """What a capture under nsys needs: root (or CPU sampling allowed), a runnable nsys that is new enough,
    its importer, the GPU metrics asked for. A run without nsys (--no-nsys) needs none of it."""
    found = []
    system, nsys = facts["system"], facts["nsys"]
    sampling = request.sample not in ("none", None)

    if system["uid"] != 0:
        paranoid = system.get("perf_event_paranoid")
        blocking = sampling and paranoid is not None and paranoid > 2
        found.append(finding(
            "error" if blocking else "warning", "not_root",
            "connected as '{}', not root".format(system.get("user")),
            "nsys needs root on Jetson for OpenGL/CUDA trace and CPU sampling (a normal user gets empty traces)",
            "log in as the board's user with ansible_become: true (sudo), or as root by key "
            "(ansible_user: root, PermitRootLogin prohibit-password)"))
        if sampling and paranoid is not None and paranoid > 2:
            found.append(finding(
                "error", "perf_event_paranoid",
                "kernel.perf_event_paranoid is {}".format(paranoid),
                "CPU sampling by a non-root user needs perf_event_paranoid <= 2",
                "run as root, or 'sysctl -w kernel.perf_event_paranoid=2', or use --sample none"))

    if not nsys["path"]:
        if request.nsys:
            elsewhere = nsys_locate.candidate_nsys_paths()
            fix = "fix orchestrate_nsys in the inventory" + (
                " (nsys found at {})".format(", ".join(elsewhere)) if elsewhere else "")
            what = "no runnable nsys at {} (orchestrate_nsys)".format(request.nsys)
        else:
            fix = ("JetPack 5/6: apt install nsight-systems-<version> (it lands in /opt/nvidia/nsight-systems); "
                   "JetPack 4: apt install nsight-systems-cli, or from the host: orchestrate nsys deploy --target "
                   "<this board> --from <the host's Nsight Systems folder>; or set orchestrate_nsys to it")
            what = "nsys not found (looked on PATH and in {})".format(", ".join(nsys_locate.NSYS_GLOBS))
        found.append(finding("error", "nsys_missing", what, "the capture runs 'nsys profile' on the target", fix))
    else:
        if nsys_locate.version_tuple(nsys["version"])[:2] < MIN_NSYS_VERSION:
            found.append(finding(
                "error", "nsys_too_old", "nsys {} at {} is too old".format(nsys["version"], nsys["path"]),
                "versions before {}.{} lack the CLI options the capture uses".format(*MIN_NSYS_VERSION),
                "install a newer Nsight Systems and point orchestrate_nsys at it"))
        if not nsys["imports_itself"]:
            if nsys["importer"]:
                detail = "the agent will run {} on the target".format(nsys["importer"])
            else:
                detail = "the raw .qdstrm will be pulled and imported on the host"
            found.append(finding(
                "info", "importer_missing",
                "nsys will not find its QdstrmImporter by itself",
                "nsys leaves a raw .qdstrm when host-linux-* is not beside its target-linux-* folder; " + detail,
                "nothing to do; install the full Nsight Systems host package to import where nsys runs"))

    found += gpu_metrics_findings(request.gpu_metrics, nsys, probes.get("gpu_metrics"))
    return found


def evaluate(request, facts, probes):
    """request: what the run needs (a PreflightRequest); facts: facts.collect(); probes: app/display/disk
    look-ups."""
    found = nsys_findings(request, facts, probes) if request.with_nsys else []

    app = probes.get("app")
    if app is not None and not app["found"]:
        found.append(finding(
            "error", "app_not_found", "the app '{}' was not found on the target".format(app["argv0"]),
            "looked in {} and on PATH".format(app["cwd"] or "the working directory"),
            "build or install the app there, or fix 'command'/'workdir' in the app spec"))
    if request.cwd and not os.path.isdir(request.cwd):
        found.append(finding(
            "error", "workdir_missing", "the app's working directory {} does not exist".format(request.cwd),
            "the app is started from there (relative model paths)",
            "create it or fix 'workdir' in the app spec"))

    if request.lock_clocks and not probes.get("jetson_clocks"):
        found.append(finding(
            "error", "cannot_lock_clocks", "--lock-clocks asked, but jetson_clocks is not on the target",
            "the clocks are locked with jetson_clocks (JetPack installs it), and restored with it afterwards",
            "run without --lock-clocks on a board that is not a Jetson"))
    if request.nvpmodel_mode is not None and not probes.get("nvpmodel"):
        found.append(finding(
            "error", "cannot_set_power_mode", "--nvpmodel asked, but nvpmodel is not on the target",
            "the power mode is set with nvpmodel (JetPack installs it), and set back with it afterwards",
            "run without --nvpmodel on a board that is not a Jetson"))
    conf = probes.get("power_modes")
    if request.nvpmodel_mode is not None and probes.get("nvpmodel") and conf:
        current = (facts["board"].get("power_mode") or {}).get("id")
        unknown = power_modes.unknown_mode(conf, request.nvpmodel_mode)
        problem = power_modes.switch_problem(conf, current, request.nvpmodel_mode)
        if unknown:
            found.append(finding("error", "power_mode_unknown", "--nvpmodel {}: {}".format(
                request.nvpmodel_mode, unknown), "nvpmodel sets only the modes its configuration defines",
                "pick one of those modes"))
        elif problem:
            reachable = power_modes.switchable_modes(conf, current)
            found.append(finding(
                "error", "power_mode_needs_reboot", "--nvpmodel {}: {}".format(request.nvpmodel_mode, problem),
                "nvpmodel would ask on the board, where no one answers, and keep the mode it has",
                "set it once by hand (sudo nvpmodel -m {} and reboot), then --lock-clocks without --nvpmodel; or "
                "pick a mode this board switches to as it runs: {}".format(
                    request.nvpmodel_mode, ", ".join(str(i) for i in reachable) or "none")))

    display = probes.get("display")
    if display is not None and display["mode"] == "missing":
        found.append(finding(
            "error", "no_display",
            "the app needs a display and none is usable ({})".format(display.get("detail")),
            "GLES apps open an X window",
            display.get("fix") or "start X on the board and set orchestrate_display (e.g. ':0' or auto), "
            "or install Xvfb (apt install xvfb) and allow the private Xvfb (orchestrate_xvfb: auto)"))

    for place in probes.get("disk", []):
        if place["free"] < place["needed"]:
            blocking = place["free"] < BYTES_MINIMUM
            found.append(finding(
                "error" if blocking else "warning", "low_disk",
                "only {} MB free in {} ({})".format(place["free"] // 2**20, place["path"], place["role"]),
                "a {:g} s capture needs about {} MB there{}".format(
                    request.capture_s, place["needed"] // 2**20,
                    "" if blocking else "; if the disk fills up, the capture is ended early and its report kept"),
                "free space there, shorten --duration, or set orchestrate_work_dir to a larger disk"))
    return found


def gpu_metrics_findings(wanted, nsys, probe):
    """--gpu-metrics SET: this nsys must have the option, list a GPU it supports, and know the set."""
    if not wanted or not nsys.get("path"):
        return []
    fix = "run without --gpu-metrics, or install an Nsight Systems that lists the board's GPU for " \
          "'nsys profile --gpu-metrics-device=help'"
    if probe is None or not probe.get("option"):
        return [finding("error", "gpu_metrics_unsupported",
                        "--gpu-metrics asked, but nsys {} has no --gpu-metrics-device option".format(nsys["version"]),
                        "the GPU's hardware metrics are sampled by nsys", fix)]
    usable = [d for d in probe["devices"] if "not supported" not in d["name"]]
    if not usable:
        if probe["devices"]:
            said = "lists only GPUs it does not support: " + ", ".join(d["name"] for d in probe["devices"])
        else:
            said = "says '{}'".format(probe.get("none_because") or "nothing")
        return [finding("error", "gpu_metrics_no_gpu",
                        "--gpu-metrics asked, but nsys {} samples no GPU here: it {}".format(nsys["version"], said),
                        "nsys samples hardware metrics only on the GPUs it supports", fix)]
    names = [s["alias"] for s in probe["sets"]] + [str(s["index"]) for s in probe["sets"]]
    if wanted != "default" and wanted not in names:
        return [finding("error", "gpu_metrics_set_unknown",
                        "--gpu-metrics {}: nsys {} has no such metric set".format(wanted, nsys["version"]),
                        "its sets are " + ", ".join(s["alias"] for s in probe["sets"]),
                        "pick one of those (or 'default' for nsys's choice for the GPU)")]
    return []


def probe_app(argv0, cwd):
    if not argv0:
        return None
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd or os.getcwd(), argv0)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(argv0) is not None
    return {"argv0": argv0, "cwd": cwd, "found": found}


def probe_display(needs_display, display, xvfb_policy, xvfb_path):
    """Decide where the app's window goes: 'use' a live display (with the cookie it was started with), 'xvfb' a
    private one, or 'missing'. A display whose server refuses us is missing (the board's desktop was asked
    for); one with no server falls back to Xvfb when allowed."""
    if not needs_display:
        return {"mode": "none"}
    unusable = {"mode": "missing", "detail": "DISPLAY {} has no X server".format(display) if display
                else "no DISPLAY set"}
    if display == "auto" or (display and facts_mod.display_socket_exists(display)):
        unusable = xdisplay.check_display(display)
        if unusable["mode"] == "use" or not unusable.get("no_server"):
            return unusable
    if xvfb_policy in ("auto", "always") and xvfb_path:
        return {"mode": "xvfb", "xvfb": xvfb_path}
    if xvfb_policy in ("auto", "always"):
        unusable = dict(unusable, detail=unusable["detail"] + ", and Xvfb is not installed")
    return unusable


def _probe_gpu_metrics(nsys):
    if not nsys["path"] or not nsys.get("gpu_metrics_option"):
        return None
    return nsys_locate.read_gpu_metrics(nsys["path"], nsys["gpu_metrics_option"])


def run(request):
    """Preflight's answer to a PreflightRequest: the facts, the findings, the display chosen, the board now."""
    if not request.work_dir:  # the deploy's call: its folder
        request.work_dir = os.getcwd()
    if request.cwd:
        request.cwd = boardfs.expand_login_home(request.cwd)
    facts = facts_mod.collect(request.nsys, request.work_dir, request.with_nsys)
    if request.xvfb == "always":
        display = probe_display(request.needs_display, None, "always", facts["system"]["xvfb"])
    else:
        display = probe_display(request.needs_display, request.display or facts["system"]["display_env"],
                                request.xvfb, facts["system"]["xvfb"])
    needed = required_bytes(request.capture_s)
    work_dir = request.work_dir
    disk = [{"path": work_dir, "role": "report and nsys scratch", "needed": needed,
             "free": files.free_bytes(work_dir)}]
    probes = {
        "app": probe_app(request.argv0, request.cwd),
        "display": display,
        "disk": disk,
        "jetson_clocks": boardfs.tool("jetson_clocks"),
        "nvpmodel": boardfs.tool("nvpmodel"),
        "power_modes": power_modes.read_conf() if request.nvpmodel_mode is not None else None,
        "gpu_metrics": _probe_gpu_metrics(facts["nsys"]) if request.gpu_metrics else None,
    }
    return PreflightAnswer(facts=Facts.from_wire(facts, strict=True),
                           findings=[Finding(**found) for found in evaluate(request, facts, probes)],
                           display=DisplayPlan(**display),
                           board_state=facts_mod.board_state_now())  # the board before the run: one round trip less
