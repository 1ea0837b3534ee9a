"""What to do next (figures/next_steps.py): each rule appears when its evidence is there, and not otherwise;
never more than three steps; none the run already did; each a command."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from orchestrator.documents.attribution import Attribution, AttributionFrames, AttributionSources, Share
from orchestrator.documents.run import RunDocument, RunTarget
from orchestrator.documents.run_sections import Flag, RunApp, RunRequest, Validity
from orchestrator.documents.shares import SHARES
from orchestrator.documents.summary import Summary
from orchestrator.documents.summary_sections import CaptureGap
from orchestrator.figures.next_steps import MAX_STEPS, next_steps
from remote_agent.messages import Facts


def summary(pcts: dict[str, float] | None = None, sources: dict | None = None, software: bool = False,
            hotspots: dict | None = None, verdict: str = "cpu_bound", wait_samples: int = 0,
            cpu_calls: list[str] | None = None) -> Summary:
    pcts = pcts or {"cpu": 100.0}
    found = Attribution(
        thread="app (7)", window_ns=10**9, frames=AttributionFrames(first=1, count=100, every=1),
        shares={n: Share(ns=int(pcts.get(n, 0) * 1e7), pct=pcts.get(n, 0.0),
                         calls=(cpu_calls or []) if n == "cpu" else []) for n in SHARES},
        largest=max(pcts, key=lambda n: pcts[n]), software_renderer=software, wait_function_samples=wait_samples,
        sources=AttributionSources.from_json({"os_runtime": True, "context_switches": True, "gpu_work": False,
                                             "samples": True, "software_renderer": [], **(sources or {})}),
        confidence="high")
    return Summary.from_json({"attribution": found.as_json(), "hotspots": hotspots,
                              "verdict": {"kind": verdict, "share": found.largest}})


def run(**app: object) -> RunDocument:
    spec = {"name": "posebench", "command": ["python3", "posebench.py"], "trace": ["osrt", "nvtx"], "sample": "cpu",
            "source": "<built-in>", **app}
    return RunDocument(run_id="r1", target=RunTarget("nano01"), app=RunApp.from_json(spec), inventory="fleet.yaml")


def rules(found: Summary, document: RunDocument | None = None) -> dict[str, str]:
    return {step.rule: step.command for step in next_steps(found, document, "runs/r1")}


def test_software_renderer_off_a_jetson_asks_for_the_board():
    board = rules(summary(software=True), run())["on_the_board"]
    assert board == "orchestrate profile --target BOARD --app posebench --inventory fleet.yaml"
    jetson = run()
    jetson.facts = Facts.from_wire({"board": {"model": "NVIDIA Jetson Orin Nano Developer Kit"}})
    assert "on_the_board" not in rules(summary(software=True), jetson)
    assert "on_the_board" not in rules(summary(), run())


def test_clocks_that_dropped_ask_to_lock_them_unless_the_run_did():
    dropped = run()
    dropped.validity = Validity(flags=[Flag(code="clocks_dropped", what="the CPU clock dropped from 1900 to 1200 MHz")])
    assert rules(summary(), dropped)["lock_clocks"] == ("orchestrate profile --target nano01 --app posebench "
                                                       "--inventory fleet.yaml --lock-clocks")
    dropped.request = RunRequest(lock_clocks=True)
    assert "lock_clocks" not in rules(summary(), dropped)
    assert "lock_clocks" not in rules(summary(), run())


def test_missing_context_switches_are_asked_for_since_running_is_then_an_estimate():
    no_switches = {"context_switches": False}
    waits = summary({"threads": 40.0, "cpu": 30.0, "io": 30.0}, no_switches, verdict="thread_wait")
    assert rules(waits, run())["context_switches"].endswith("--cpuctxsw process-tree")
    assert "context_switches" in rules(summary({"cpu": 90.0, "io": 10.0}, no_switches), run())
    io = next_steps(summary({"io": 95.0, "cpu": 5.0}, no_switches), run(), "runs/r1")
    assert [step.why for step in io if step.rule == "context_switches"] == [
        "when app (7) ran is estimated from its OS runtime calls and CPU samples: context switches record when it "
        "was on a CPU, inside which call, and the thread that ends each wait"]
    assert "context_switches" not in rules(waits, run(cpuctxsw="process-tree"))
    assert "context_switches" not in rules(summary({"threads": 40.0, "cpu": 60.0}), run())
    refused = summary({"cpu": 90.0, "io": 10.0}, no_switches)
    refused.set(capture_gaps=[CaptureGap(code="empty_trace", trace="sample", what="no CPU samples", why="denied")])
    assert "context_switches" not in rules(refused, run())  # perf events refused: context switches would be too


def test_missing_os_runtime_calls_are_asked_for_when_time_is_unexplained():
    found = summary({"unexplained": 60.0, "cpu": 40.0}, {"os_runtime": False}, verdict="unexplained")
    assert rules(found, run(trace=["nvtx"]))["os_runtime"].endswith("--trace nvtx,osrt")
    assert "os_runtime" not in rules(summary({"unexplained": 5.0, "cpu": 95.0}, {"os_runtime": False}),
                                     run(trace=["nvtx"]))
    assert "os_runtime" not in rules(found, run(trace=["nvtx", "osrt"]))


def test_samples_in_a_gpu_wait_without_recorded_gpu_work_ask_for_the_gpu_trace():
    waiting = summary({"cpu": 90.0, "io": 10.0}, wait_samples=120, cpu_calls=["tflite::gpu::gl::WaitForCompletion"])
    assert rules(waiting, run())["gpu_trace"].endswith("--trace osrt,nvtx,opengl")
    assert "gpu_trace" not in rules(waiting, run(trace=["osrt", "opengl"]))
    assert "gpu_trace" not in rules(summary({"cpu": 90.0, "io": 10.0}), run())


def test_vsync_off_is_offered_for_frames_the_refresh_paces_keeping_the_apps_display_and_environment():
    paced = summary({"display": 80.0, "cpu": 20.0}, verdict="vsync")
    app = run(command=["./gl2posenet", "--camera", "0"], needs_display=True, env=[["CAMERA", "csi"]],
              duration_s=30.0)
    words = shlex.split(rules(paced, app)["vsync_off"])
    assert words[:6] == ["orchestrate", "profile", "--target", "nano01", "--app-cmd",
                         "env CAMERA=csi vblank_mode=0 __GL_SYNC_TO_VBLANK=0 ./gl2posenet --camera 0"]
    assert words[6:] == ["--needs-display", "--trace", "osrt,nvtx", "--sample", "cpu", "--duration", "30",
                         "--inventory", "fleet.yaml"]
    off = run(env=[["vblank_mode", "0"]])
    assert "vsync_off" not in rules(paced, off)
    assert "vsync_off" not in rules(summary({"display": 80.0, "cpu": 20.0}, verdict="display_wait"), run())


def test_unnamed_hot_functions_ask_for_symbols_unless_given():
    unnamed = {"self": [{"symbol": "[libnvinfer.so.8]", "pct": 35.0}, {"symbol": "0x7f00dead", "pct": 5.0},
                        {"symbol": "[JIT]", "pct": 30.0}], "symbols": None}
    found = rules(summary(hotspots=unnamed), run())
    # the page again, with the names, of the run folder by its full path
    assert found["symbols"] == f"orchestrate report {Path('runs/r1').absolute()} --symbols DIR"
    profiler = {"self": [{"symbol": "[libToolsInjection64.so]", "pct": 50.0}], "symbols": None}
    assert "symbols" not in rules(summary(hotspots=profiler), run())  # nsys's own library: not the app's to name
    assert "symbols" not in rules(summary(hotspots={**unnamed, "symbols": []}), run())  # --symbols was given
    named = {"self": [{"symbol": "xnn_f32_gemm", "pct": 60.0}, {"symbol": "[JIT]", "pct": 30.0}], "symbols": None}
    assert "symbols" not in rules(summary(hotspots=named), run())  # JIT code has no symbol file


def test_never_more_than_three_steps_the_heaviest_first_and_commands_for_a_bare_report():
    dropped = run()
    dropped.validity = Validity(flags=[Flag(code="clocks_dropped", what="the GPU clock dropped")])
    crowded = summary({"threads": 50.0, "unexplained": 30.0, "cpu": 20.0},
                      {"context_switches": False, "os_runtime": False}, software=True,
                      hotspots={"self": [{"symbol": "[libEGL.so]", "pct": 80.0}], "symbols": None})
    steps = next_steps(crowded, dropped, "runs/r1")
    assert len(steps) == MAX_STEPS and [s.rule for s in steps] == ["on_the_board", "lock_clocks", "context_switches"]
    bare = next_steps(summary({"threads": 50.0, "cpu": 50.0}, {"context_switches": False}), None, "report.sqlite")
    assert [s.command for s in bare] == ["orchestrate profile --target TARGET --app-cmd APP --cpuctxsw process-tree"]
    assert all(step.why for step in steps + bare)


@pytest.mark.parametrize("source, expected", [
    ("--app-cmd", "orchestrate profile --target nano01 --app-cmd 'python3 posebench.py' --trace osrt,nvtx --sample cpu"
                  " --inventory fleet.yaml --cpuctxsw process-tree"),
    ("/home/me/apps/posebench.yaml", "orchestrate profile --target nano01 --app posebench --apps-dir /home/me/apps "
                                     "--inventory fleet.yaml --cpuctxsw process-tree")])
def test_the_command_runs_the_same_app_again(source, expected):
    found = summary({"threads": 40.0, "cpu": 60.0}, {"context_switches": False})
    assert rules(found, run(source=source))["context_switches"] == expected


@pytest.mark.parametrize("share, verb", [("io", "waits on I/O or other blocking calls"), ("sleep", "sleeps")])
def test_a_largest_io_or_sleep_share_is_aimed_at_the_frame_that_holds_most_of_it(share, verb):
    from orchestrator.documents.summary_sections import SummaryFrames, SummaryWindow, WhereFrame
    found = summary({share: 70.0, "cpu": 30.0}, verdict=f"{share}_wait" if share == "io" else "sleep")
    found.attribution.shares[share] = Share(ns=7 * 10**8, pct=70.0, calls=["read", "pread64"],
                                            frames=[WhereFrame(index=42, ns=9_000_000), WhereFrame(index=7, ns=1)])
    found.set(frames=SummaryFrames(source="update loop", kind="nvtx", count=100))
    steps = {step.rule: step for step in next_steps(found, run(), "runs/r1")}
    step = steps[f"{share}_calls"]
    assert step.command == (f"orchestrate analyze {Path('runs/r1').resolve()} --thread 7 --frame-range 'update loop'"
                            " --frame 42")  # the same thread and frames, by the delimiter they were found by
    assert step.why.startswith(f"70 % of app (7)'s time {verb} in read, pread64: frame 42, where it {verb} most")
    found.set(frames=SummaryFrames(source="cudaStreamSynchronize", kind="cuda", count=100, unit="iteration"))
    step = {step.rule: step for step in next_steps(found, run(), "runs/r1")}[f"{share}_calls"]
    assert ": iteration 42, where it" in step.why and step.command.endswith("--thread 7 --frame 42")
    small = summary({share: 15.0, "cpu": 85.0})
    assert f"{share}_calls" not in rules(small, run())  # not the largest: no step aims at it
    assert f"{share}_calls" not in rules(summary({share: 70.0, "cpu": 30.0}), run())  # no frames: none to aim at
    found.set(window=SummaryWindow(kind="frame", start_ns=1, end_ns=2, duration_ns=1))
    assert f"{share}_calls" not in rules(found, run())  # one frame analysed already
