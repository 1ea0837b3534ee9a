"""Where a verdict finding happens: time and samples attributed to frames, against brute force and SQL."""
from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from share_sql import display_ns, global_tid

from orchestrator.analysis import analyze_report
from orchestrator.analysis.analyzers.frames import Frames
from orchestrator.analysis.analyzers.where import in_frames_count, in_frames_ns, where


def frames_of(bounds: list[int]) -> Frames:
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    return Frames("eglSwapBuffers", "opengl", 1, starts, np.asarray(bounds[1:], dtype=np.int64), 0)


def test_calls_are_split_between_the_frames_they_overlap():
    frames = frames_of([0, 10, 20, 30])
    starts, ends = np.array([2, 8, 25]), np.array([5, 14, 40])  # 3 in frame 0; 2 + 4 across 0|1; 5 in 2, rest out
    assert in_frames_ns(frames, starts, ends).tolist() == [5, 4, 5]
    assert in_frames_count(frames, np.array([0, 9, 10, 29, 30, -1])).tolist() == [2, 1, 1]
    found = where((0, 30), frames, in_frames_ns(frames, starts, ends))
    assert [f[0] for f in found.frames] == [0, 2, 1]  # largest first, ties in frame order
    assert found.to_json()["frames"][0] == {"index": 0, "start_ns": 0, "end_ns": 10, "ns": 5}
    assert where((10, 20), frames, in_frames_ns(frames, starts, ends)).to_json()["frames"] == [
        {"index": 1, "start_ns": 10, "end_ns": 20, "ns": 4}]  # only frames in the window
    assert where((0, 30), None).to_json() == {"start_ns": 0, "end_ns": 30, "frames": []}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=12), st.lists(st.integers(0, 40), max_size=20),
       st.integers(0, 600))
def test_time_in_frames_equals_brute_force(lengths, pieces, offset):
    bounds = np.r_[0, np.cumsum(lengths)] + offset
    frames = frames_of(bounds.tolist())
    edges, t = [], 0  # disjoint intervals alternating gaps and calls
    for i, size in enumerate(pieces):
        if i % 2:
            edges.append((t, t + size))
        t += size
    starts = np.array([s for s, _ in edges], dtype=np.int64)
    ends = np.array([e for _, e in edges], dtype=np.int64)
    expected = [sum(max(0, min(e, hi) - max(s, lo)) for s, e in edges) for lo, hi in zip(bounds[:-1], bounds[1:])]
    assert in_frames_ns(frames, starts, ends).tolist() == expected


def test_findings_say_which_frames_carry_them(export):
    path = export("es2gears-opengl")
    summary = analyze_report(path)
    verdict = summary.as_json()["verdict"]
    assert [f["text"] for f in verdict["findings"]] == verdict["evidence"]
    display = next(f for f in verdict["findings"] if f["kind"] == "share_display")
    assert len(display["frames"]) == 3
    assert display["frames"][0]["ns"] >= display["frames"][1]["ns"] >= display["frames"][2]["ns"]
    assert display["names"][:2] == ["poll", "writev"] and display["thread"] == summary.attribution.thread
    with sqlite3.connect(path) as conn:
        gtid = global_tid(conn, summary.attribution.thread)
        for frame in display["frames"]:  # off a CPU in socket calls made inside OpenGL calls, in that frame, by SQL
            assert frame["ns"] == display_ns(conn, gtid, [(frame["start_ns"], frame["end_ns"])])
    gpu = next(f for f in verdict["findings"] if f["kind"] == "gpu_busy")
    assert gpu["frames"] == [] and (gpu["start_ns"], gpu["end_ns"]) == (display["start_ns"], display["end_ns"])


def test_the_hottest_function_is_placed_by_its_samples(export):
    path = export("tflite-pose-xnnpack")
    summary = analyze_report(path).as_json()
    hottest = next(f for f in summary["verdict"]["findings"] if f["kind"] == "hottest_function")
    symbol = summary["hotspots"]["self"][0]["symbol"]
    with sqlite3.connect(path) as conn:
        for frame in hottest["frames"]:
            samples = conn.execute(
                """SELECT count(*) FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS c ON c.id = e.id AND
                   c.stackDepth = 0 JOIN StringIds s ON s.id = c.symbol WHERE s.value = ? AND e.start >= ?
                   AND e.start < ?""", (symbol, frame["start_ns"], frame["end_ns"])).fetchone()[0]
            assert frame["samples"] == samples > 0
