"""The verdict's words over hand-made shares (analysis/analyzers/verdict.py): the largest share named, never one its
evidence contradicts; vsync only for frames a display's refresh paces (pacing.py); a software renderer said to
be the CPU; and a capture that holds none of what it was asked for (content.py) named first."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from orchestrator.analysis.analyzers.content import capture_gaps
from orchestrator.analysis.analyzers.pacing import refresh_pacing
from orchestrator.analysis.analyzers.verdict import Context, decide
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.trace import Trace
from orchestrator.documents.attribution import Attribution, AttributionFrames, AttributionSources, Share
from orchestrator.documents.shares import SHARES

WINDOW = (0, 1_000_000_000)  # 1 s, 100 frames of 10 ms


def attribution(pcts: dict[str, float], software: bool = False, **shares: dict) -> Attribution:
    found = {name: Share(ns=int(pcts.get(name, 0.0) * 1e7), pct=pcts.get(name, 0.0), **shares.get(name, {}))
             for name in SHARES}
    return Attribution(thread="app (7)", start_ns=0, end_ns=WINDOW[1], window_ns=WINDOW[1],
                       frames=AttributionFrames(first=1, count=100, every=1), shares=found,
                       largest=max(pcts, key=lambda n: pcts[n]), software_renderer=software,
                       sources=AttributionSources(os_runtime=True, context_switches=True, gpu_work=True,
                                                  software_renderer=["llvmpipe-0", "llvmpipe-1"] if software else []),
                       confidence="high")


def test_pacing_finds_a_refresh_only_where_the_frames_cluster_at_its_periods():
    rng = np.random.default_rng(7)
    at_60 = 1e9 / 60 + rng.normal(0, 150_000, 200)
    paced = refresh_pacing(at_60)
    assert paced is not None and (paced.hz, paced.periods) == (60.0, 1) and paced.share > 0.95
    every_other = 2e9 / 60 + rng.normal(0, 200_000, 200)
    assert (refresh_pacing(every_other).hz, refresh_pacing(every_other).periods) == (60.0, 2)
    assert refresh_pacing(rng.uniform(5e6, 25e6, 200)) is None   # spread: no refresh explains them
    assert refresh_pacing(np.full(500, 848_000.0)) is None        # es2gears under Xvfb: far faster than any display
    assert refresh_pacing(at_60[:5]) is None                      # too few frames to tell
    for steady_ms in (25.0, 14.0, 12.5, 8.3):  # an app's own steady pace, at no 60 or 50 Hz multiple
        assert refresh_pacing(steady_ms * 1e6 + rng.normal(0, 100_000, 200)) is None, steady_ms


def test_the_largest_share_names_the_verdict_and_vsync_is_not_said_when_the_frames_are_not_paced():
    found = attribution({"display": 53.0, "gpu": 27.0, "cpu": 14.0, "threads": 5.0, "unexplained": 1.0},
                        display={"calls": ["poll", "writev"], "inside": ["eglSwapBuffers", "glClear"]},
                        gpu={"calls": ["eglSwapBuffers"]})
    verdict = decide(found, Context(WINDOW, gpu_busy_pct=0.3, gpu_work_names=("glClear",)))
    assert (verdict["kind"], verdict["share"], verdict["confidence"]) == ("display_wait", "display", "high")
    assert verdict["summary"].startswith("53 % (5.3 ms of each 10 ms frame) on app (7) is spent waiting on the "
                                         "display server in poll, writev inside eglSwapBuffers, glClear")
    assert "vsync" not in verdict["summary"] and "vsync" not in " ".join(verdict["evidence"])
    shares = [f for f in verdict["findings"] if f["kind"].startswith("share_")]
    assert [f["kind"] for f in shares] == ["share_display", "share_gpu", "share_cpu", "share_threads",
                                           "share_unexplained"]
    assert verdict["evidence"][:len(shares)] == [f["text"] for f in shares]


def test_vsync_is_said_when_a_refresh_paces_the_frames_and_the_wait_is_in_the_swap():
    from orchestrator.analysis.analyzers.pacing import Pacing
    found = attribution({"display": 70.0, "cpu": 30.0}, display={"calls": ["poll"], "inside": ["eglSwapBuffers"]})
    verdict = decide(found, Context(WINDOW, pacing=Pacing(60.0, 1, 0.98)))
    assert verdict["kind"] == "vsync" and "60 Hz display's refresh (vsync) likely paces them" in verdict["summary"]
    busy_gpu = decide(found, Context(WINDOW, pacing=Pacing(60.0, 1, 0.98), gpu_busy_pct=95.0))
    assert busy_gpu["kind"] == "display_wait"  # a GPU busy all the time sets the pace itself
    elsewhere = attribution({"display": 70.0, "cpu": 30.0}, display={"calls": ["poll"], "inside": ["glClear"]})
    assert decide(elsewhere, Context(WINDOW, pacing=Pacing(60.0, 1, 0.98)))["kind"] == "display_wait"


@pytest.mark.parametrize("busy, kind", [(90.0, "gpu_bound"), (50.0, "gpu_wait")])
def test_a_wait_for_a_hardware_gpu(busy, kind):
    found = attribution({"gpu": 80.0, "cpu": 20.0}, gpu={"calls": ["cudaStreamSynchronize"]})
    verdict = decide(found, Context(WINDOW, gpu_busy_pct=busy, gpu_work_names=("gemm_kernel",),
                                    renderer="NVIDIA Tegra Orin (nvgpu)/integrated"))
    assert verdict["kind"] == kind
    assert verdict["summary"] == ("80 % (8 ms of each 10 ms frame) on app (7) is spent waiting for the GPU in "
                                  "cudaStreamSynchronize while the GPU ran gemm_kernel on NVIDIA Tegra Orin "
                                  "(nvgpu)/integrated")


def test_a_software_renderer_is_said_to_be_the_cpu_and_not_the_boards_gpu():
    found = attribution({"gpu": 96.0, "cpu": 4.0}, software=True,
                        gpu={"calls": ["glDispatchCompute", "glFinish"], "threads": ["llvmpipe-0", "llvmpipe-1"]})
    verdict = decide(found, Context(WINDOW, gpu_busy_pct=97.0, gpu_work_names=("glDispatchCompute",),
                                    renderer="llvmpipe (LLVM 15.0.6, 256 bits)"))
    assert verdict["kind"] == "software_renderer"
    assert "waiting for the GPU" not in verdict["summary"]
    assert verdict["summary"].endswith("while llvmpipe-0, llvmpipe-1 ran glDispatchCompute on the CPU; the renderer "
                                       "is llvmpipe (LLVM 15.0.6, 256 bits), a software renderer: its work runs on "
                                       "the CPU (llvmpipe-0, llvmpipe-1), so these figures do not represent the "
                                       "board's GPU")


def test_a_trace_that_recorded_nothing_leads_the_verdict_and_lowers_its_confidence():
    gap = {"code": "empty_trace", "trace": "opengl", "what": "nsys wrote a report but it holds no OpenGL calls",
           "why": "the app made no OpenGL call nsys could hook"}
    verdict = decide(attribution({"cpu": 100.0}), Context(WINDOW, gaps=[gap]))
    assert verdict["summary"].startswith("nsys wrote a report but it holds no OpenGL calls: the app made no OpenGL "
                                         "call nsys could hook. 100 % ")
    assert verdict["confidence"] == "low" and verdict["findings"][0]["kind"] == "empty_trace"
    nothing = decide(None, Context(WINDOW))
    assert (nothing["kind"], nothing["confidence"], nothing["share"]) == ("unexplained", "low", None)


def _export(script: str) -> Trace:
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    return Trace(conn, probe(conn))


def test_a_capture_is_checked_for_the_rows_its_traces_must_produce():
    empty = _export("""
        CREATE TABLE StringIds (id INT, value TEXT);
        CREATE TABLE OSRT_API (start INT, "end" INT, eventClass INT, globalTid INT, nameId INT);
        INSERT INTO OSRT_API VALUES (0, 10, 27, 1, 1);
        CREATE TABLE NVTX_EVENTS (start INT, "end" INT, eventType INT, globalTid INT, text TEXT);
        INSERT INTO NVTX_EVENTS VALUES (5, NULL, 34, 1, 'a mark, not a range');
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, "end" INT, globalTid INT, nameId INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 5, 1, 1);""")
    gaps = capture_gaps(empty, ("opengl", "osrt", "nvtx", "cuda"), sampled=True)
    assert [(g["trace"], g["what"]) for g in gaps] == [
        ("opengl", "nsys wrote a report but it holds no OpenGL calls"),
        ("nvtx", "nsys wrote a report but it holds no NVTX ranges"),
        ("cuda", "nsys wrote a report but it holds no CUDA kernels"),
        ("sample", "nsys wrote a report but it holds no CPU samples")]
    assert all(g["why"] and g["code"] == "empty_trace" for g in gaps)
    assert capture_gaps(empty, ("osrt",), sampled=False) == []
