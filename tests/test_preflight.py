"""Preflight findings from facts, and how the host maps them and capture results to errors."""
import pytest

from orchestrator.errors import (
    AppFailedError,
    AppNotFoundError,
    DiskFullError,
    NsysMissingError,
    PreflightError,
    ReportError,
    WatchdogError,
)
from orchestrator.inventory.catalog import AppSpec
from orchestrator.runs.outcome import classify_capture, nudged_warning, raise_for_findings
from remote_agent import nsys_locate, preflight
from remote_agent.capture_machine import NSYS_STOPS
from remote_agent.messages import CaptureResult, Finding, PreflightRequest

NSYS_OK = {"path": "/usr/bin/nsys", "version": "2022.4.2.1", "tried": ["/usr/bin/nsys"],
           "importer": "/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter", "imports_itself": True}


def facts(uid=0, paranoid=2, nsys=None):
    return {"system": {"uid": uid, "user": "root" if uid == 0 else "ubuntu", "perf_event_paranoid": paranoid},
            "nsys": nsys or NSYS_OK}


def codes(found):
    return [(f["level"], f["code"]) for f in found]


def test_a_ready_root_target_has_no_findings():
    assert preflight.evaluate(PreflightRequest(sample="cpu"), facts(), {"disk": []}) == []


def test_non_root_with_high_paranoid_blocks_sampling():
    found = preflight.evaluate(PreflightRequest(sample="cpu"), facts(uid=1000, paranoid=3), {})
    assert codes(found) == [("error", "not_root"), ("error", "perf_event_paranoid")]
    assert "PermitRootLogin prohibit-password" in found[0]["fix"]
    found = preflight.evaluate(PreflightRequest(sample="none"), facts(uid=1000, paranoid=3), {})
    assert codes(found) == [("warning", "not_root")]


def test_nsys_missing_too_old_and_no_importer():
    missing = {"path": None, "version": None, "tried": ["/usr/bin/nsys"], "importer": None, "imports_itself": False}
    found = preflight.evaluate(PreflightRequest(), facts(nsys=missing), {})
    assert codes(found) == [("error", "nsys_missing")]
    assert found[0]["what"] == "nsys not found (looked on PATH and in {})".format(", ".join(nsys_locate.NSYS_GLOBS))
    assert "/opt/nvidia/nsight_systems/nsys" in found[0]["what"]
    assert "orchestrate nsys deploy --target <this board> --from" in found[0]["fix"]
    old = dict(NSYS_OK, version="2019.3.7.9", imports_itself=False, importer=None)
    found = preflight.evaluate(PreflightRequest(), facts(nsys=old), {})
    assert codes(found) == [("error", "nsys_too_old"), ("info", "importer_missing")]
    assert "imported on the host" in found[1]["why"]


def test_app_display_and_disk_probes():
    probes = {
        "app": {"argv0": "./gl2posenet", "cwd": "/root/app", "found": False},
        "display": {"mode": "missing", "detail": "no DISPLAY set, and Xvfb is not installed"},
        "disk": [{"path": "/root/.cache/orchestrate", "role": "report and nsys scratch", "free": 50 * 2**20,
                  "needed": preflight.required_bytes(10)}],
    }
    found = preflight.evaluate(PreflightRequest(capture_s=10), facts(), probes)
    assert codes(found) == [("error", "app_not_found"), ("error", "no_display"), ("error", "low_disk")]
    assert found[2]["what"] == "only 50 MB free in /root/.cache/orchestrate (report and nsys scratch)"
    assert "600 MB" in found[2]["why"]


def test_disk_between_the_minimum_and_the_estimate_is_a_warning():
    probes = {"disk": [{"path": "/w", "role": "report and nsys scratch", "free": 300 * 2**20,
                        "needed": preflight.required_bytes(10)}]}
    [found] = preflight.evaluate(PreflightRequest(capture_s=10), facts(), probes)
    assert (found["level"], found["code"], found["what"]) == ("warning", "low_disk",
                                                              "only 300 MB free in /w (report and nsys scratch)")
    assert found["why"].endswith("if the disk fills up, the capture is ended early and its report kept")


def test_display_decision():
    assert preflight.probe_display(False, None, "auto", None) == {"mode": "none"}
    assert preflight.probe_display(True, None, "auto", "/usr/bin/Xvfb")["mode"] == "xvfb"
    assert preflight.probe_display(True, ":77", "never", "/usr/bin/Xvfb") == {
        "mode": "missing", "detail": "DISPLAY :77 has no X server"}


@pytest.mark.parametrize("code, error", [
    ("nsys_missing", NsysMissingError), ("app_not_found", AppNotFoundError), ("low_disk", DiskFullError),
    ("no_display", PreflightError),
])
def test_first_blocking_finding_becomes_its_error(code, error):
    found = [{"level": "info", "code": "importer_missing", "what": "i", "why": "", "fix": ""},
             {"level": "error", "code": code, "what": "what broke", "why": "", "fix": "do this"},
             {"level": "error", "code": "no_display", "what": "x", "why": "", "fix": ""}]
    with pytest.raises(error) as err:
        raise_for_findings([Finding.from_wire(f, strict=True) for f in found])
    assert err.value.one_line() == "preflight: what broke (+1 more problem(s), listed above) (do this)"
    raise_for_findings([Finding.from_wire(found[0], strict=True)])  # info alone never blocks


APP = AppSpec(name="es2gears", command=("es2gears_x11",), duration_s=3)


def capture(**changes):
    base = {"program_not_found": False, "watchdog": [], "reports": {".qdstrm": "/r/report.qdstrm"},
            "nsys_exit": 143, "nsys_elapsed_s": 11.2, "app_pid": 42}
    base.update(changes)
    kinds = {words: kind for kind, words in NSYS_STOPS.items()}  # what the agent's watchdog says each step was
    base["watchdog"] = [dict(step, kind=kinds.get(step["reason"], "outlived")) for step in base["watchdog"]]
    return CaptureResult.from_wire(base, strict=True)


def test_how_the_app_ended_in_words():
    from orchestrator.runs.outcome import app_ending
    assert app_ending(capture(app_stopped_after_s=3.02), "ok") == "stopped by the agent after 3.0 s, as planned"
    assert app_ending(capture(), "app_failed") == "exited by itself"
    assert app_ending(capture(app_pid=None), "nsys_failed") == "never started"
    assert app_ending(capture(watchdog=[{"target": "app", "signal": "SIGKILL", "reason": "r"}]), "watchdog") == \
        "killed by the watchdog"


def test_app_stopped_by_nsys_at_the_end_is_ok():
    assert classify_capture(capture(), APP) == ("ok", None)
    assert classify_capture(capture(nsys_exit=0, nsys_elapsed_s=1.0), APP) == ("ok", None)


def test_app_failing_early_is_reported_with_its_status():
    status, error = classify_capture(capture(nsys_exit=3, nsys_elapsed_s=0.8), APP)
    assert status == "app_failed" and isinstance(error, AppFailedError)
    assert error.message == "the app exited with status 3 after 0.8 s"  # no app_gone_after_s: nsys's time
    status, _ = classify_capture(capture(nsys_exit=143, nsys_elapsed_s=1.0), APP)
    assert status == "app_failed"  # killed by someone else before the capture ended


def test_app_failing_early_is_the_news_even_when_nsys_hangs_after_it():
    hung = [{"reason": "nsys did not finish after the app was gone", "signal": "SIGINT", "target": "nsys"}]
    status, error = classify_capture(capture(nsys_exit=3, nsys_elapsed_s=55.2, app_gone_after_s=0.1,
                                             watchdog=hung, reports={}), APP)
    assert (status, type(error)) == ("app_failed", AppFailedError)
    assert error.message == "the app exited with status 3 after 0.1 s; nsys then hung and was stopped by the watchdog"
    status, error = classify_capture(capture(nsys_exit=3, nsys_elapsed_s=2.5, app_gone_after_s=1.4), APP)
    assert error.message == "the app exited with status 3 after 1.4 s"
    # stopped by the agent at the planned end: a success, whatever the signal status
    assert classify_capture(capture(app_stopped_after_s=3.0, app_gone_after_s=3.1), APP) == ("ok", None)


def test_watchdog_no_report_and_nsys_failure():
    actions = [{"reason": "app outlived the capture", "signal": "SIGTERM", "target": "app"},
               {"reason": "app outlived the capture", "signal": "SIGKILL", "target": "app"}]
    status, error = classify_capture(capture(watchdog=actions), APP)
    assert status == "watchdog" and isinstance(error, WatchdogError)
    assert error.message == "watchdog: app outlived the capture (SIGTERM to app, SIGKILL to app)"
    status, error = classify_capture(capture(reports={}, app_pid=None, nsys_exit=1), APP)
    assert (status, type(error)) == ("nsys_failed", ReportError)
    status, error = classify_capture(capture(program_not_found=True, reports={}), APP)
    assert (status, type(error)) == ("app_not_found", AppNotFoundError)


def test_nsys_that_finishes_once_nudged_is_a_success():
    nudged = [{"reason": "nsys stalled while generating the report", "signal": "SIGINT", "target": "nsys"},
              {"reason": "nsys daemon outlived the capture", "signal": "SIGTERM", "target": "nsys daemon"}]
    planned = {"app_stopped_after_s": 5.0, "app_gone_after_s": 5.1, "nsys_exit": 0}
    assert classify_capture(capture(watchdog=nudged, **planned), APP) == ("ok", None)
    # an app that ended by itself, with success, before the planned end: the same
    assert classify_capture(capture(watchdog=nudged, nsys_exit=0, app_gone_after_s=2.0), APP) == ("ok", None)
    # not when nsys did not exit cleanly, wrote nothing, needed more than a SIGINT, or the app was killed
    assert classify_capture(capture(watchdog=nudged, **{**planned, "nsys_exit": 130}), APP)[0] == "watchdog"
    assert classify_capture(capture(watchdog=nudged, reports={}, **planned), APP)[0] == "watchdog"
    harder = nudged[:1] + [{"reason": "nsys did not finish", "signal": "SIGTERM", "target": "nsys"}]
    assert classify_capture(capture(watchdog=harder, **planned), APP)[0] == "watchdog"
    killed = [{"reason": "app outlived the capture", "signal": "SIGKILL", "target": "app"}] + nudged
    assert classify_capture(capture(watchdog=killed, **planned), APP)[0] == "watchdog"


def test_nsys_that_ended_well_but_left_its_daemon_running_is_a_success():
    """nsys exits 0 with its report; its daemon and helpers do not end within their grace and are stopped:
    nothing of the capture was lost (nsys 2022.4 under load, now and then)."""
    left = [{"reason": "nsys helpers outlived the capture", "signal": "SIGTERM", "target": "nsys helpers"},
            {"reason": "nsys daemon outlived the capture", "signal": "SIGTERM", "target": "nsys daemon"}]
    planned = {"app_stopped_after_s": 5.0, "app_gone_after_s": 5.1, "nsys_exit": 0}
    assert classify_capture(capture(watchdog=left, **planned), APP) == ("ok", None)
    assert nudged_warning(capture(watchdog=left, **planned)) == (
        "nsys ended well and wrote its report, but what it left running (nsys daemon, nsys helpers) did not end "
        "within its grace and was stopped; run.json lists the signals")
    # not when nsys failed, wrote nothing, or the app had to be killed
    assert classify_capture(capture(watchdog=left, **{**planned, "nsys_exit": 1}), APP)[0] == "watchdog"
    assert classify_capture(capture(watchdog=left, reports={}, **planned), APP)[0] == "watchdog"
    killed = [{"reason": "app outlived the capture", "signal": "SIGKILL", "target": "app"}] + left
    assert classify_capture(capture(watchdog=killed, **planned), APP)[0] == "watchdog"
    nudged = [{"reason": "nsys stalled while generating the report", "signal": "SIGINT", "target": "nsys"}] + left
    assert nudged_warning(capture(watchdog=nudged, **planned)).startswith(
        "nsys stalled while writing its report and finished it once interrupted (exit 0)")


def test_nsys_hanging_after_it_said_generated_is_a_success():
    hung = [{"reason": "nsys hung after writing the report", "signal": "SIGTERM", "target": "nsys"},
            {"reason": "nsys hung after writing the report", "signal": "SIGKILL", "target": "nsys"},
            {"reason": "nsys daemon outlived the capture", "signal": "SIGTERM", "target": "nsys daemon"}]
    planned = {"app_stopped_after_s": 5.0, "app_gone_after_s": 5.1, "nsys_exit": -9,
               "generated": ["/w/runs/r/report.qdstrm"]}
    assert classify_capture(capture(watchdog=hung, **planned), APP) == ("ok", None)
    assert nudged_warning(capture(watchdog=hung, **planned)) == \
        "nsys hung after it had written its report and was stopped; run.json lists the signals"
    # without nsys's word that the report was written, the same signals are the watchdog's failure
    assert classify_capture(capture(watchdog=hung, **{**planned, "generated": []}), APP)[0] == "watchdog"


NSYS_2022 = {"path": "/usr/bin/nsys", "version": "2022.4.2.1"}
GA10B = [{"index": 3, "alias": "ga10x", "name": "General Metrics for NVIDIA GA10x (any frequency)"},
         {"index": 9, "alias": "ga10b", "name": "General Metrics for NVIDIA GA10B (any frequency)"}]
ORIN = [{"index": 0, "name": "Orin (nvgpu)"}]


@pytest.mark.parametrize("wanted, probe, code, what", [
    (None, None, None, None),
    ("ga10b", None, "gpu_metrics_unsupported", "--gpu-metrics asked, but nsys 2022.4.2.1 has no --gpu-metrics-device "
                                               "option"),
    ("ga10b", {"option": "gpu-metrics-device", "devices": [], "sets": GA10B,
               "none_because": "NVIDIA GPUs not found, feature is not available"}, "gpu_metrics_no_gpu",
     "--gpu-metrics asked, but nsys 2022.4.2.1 samples no GPU here: it says 'NVIDIA GPUs not found, feature is not "
     "available'"),
    ("ga10b", {"option": "gpu-metrics-device", "devices": [{"index": 0, "name": "Orin (not supported)"}],
               "sets": GA10B, "none_because": None}, "gpu_metrics_no_gpu",
     "--gpu-metrics asked, but nsys 2022.4.2.1 samples no GPU here: it lists only GPUs it does not support: "
     "Orin (not supported)"),
    ("ga10c", {"option": "gpu-metrics-device", "devices": ORIN, "sets": GA10B, "none_because": None},
     "gpu_metrics_set_unknown", "--gpu-metrics ga10c: nsys 2022.4.2.1 has no such metric set"),
    ("ga10b", {"option": "gpu-metrics-device", "devices": ORIN, "sets": GA10B, "none_because": None}, None, None),
    ("9", {"option": "gpu-metrics-device", "devices": ORIN, "sets": GA10B, "none_because": None}, None, None),
    ("default", {"option": "gpu-metrics-device", "devices": ORIN, "sets": [], "none_because": None}, None, None),
])
def test_gpu_metrics_need_the_option_a_gpu_and_a_known_set(wanted, probe, code, what):
    found = preflight.gpu_metrics_findings(wanted, NSYS_2022, probe)
    assert [(f["level"], f["code"], f["what"]) for f in found] == ([("error", code, what)] if code else [])
    if code == "gpu_metrics_set_unknown":
        assert found[0]["why"] == "its sets are ga10x, ga10b"
