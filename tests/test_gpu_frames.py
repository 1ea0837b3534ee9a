"""The GPU's side of each frame: the pure per-frame sums against a plain loop, and on a real export (es2gears
under nsys 2022.4 with OpenGL trace) against plain SQL over the same rows."""
from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.analysis import analyze_report
from orchestrator.analysis.analyzers.gpu_frames import frame_of, per_frame, queued_at
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.trace import Trace


def plain_frame_of(starts: list[int], ends: list[int], at: int) -> int:
    for i, start in enumerate(starts):
        until = starts[i + 1] if i + 1 < len(starts) else ends[i]
        if start <= at < until:
            return i
    return -1


@given(st.lists(st.integers(1, 50), min_size=1, max_size=8), st.lists(st.integers(-10, 400), max_size=30))
def test_each_time_falls_in_the_frame_a_plain_loop_finds(gaps, times):
    starts = np.cumsum(gaps).astype(np.int64)
    ends = np.r_[starts[1:], starts[-1] + 7]
    found = frame_of(starts, ends, np.array(times, dtype=np.int64))
    assert list(found) == [plain_frame_of(list(starts), list(ends), t) for t in times]


@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 1000), st.integers(0, 2)), max_size=40))
def test_the_sums_per_frame_and_kind_are_a_plain_loops(work):
    frame = np.array([w[0] for w in work], dtype=np.int64)
    durations = np.array([w[1] for w in work], dtype=np.int64)
    kinds = np.array([w[2] for w in work], dtype=np.int64)
    got = per_frame(4, frame, durations, kinds, ["a", "b", "c"])
    assert got["per_frame_ns"] == [sum(d for f, d, _ in work if f == i) for i in range(4)]
    assert got["count_per_frame"] == [sum(1 for f, _, _ in work if f == i) for i in range(4)]
    for entry in got["kinds"]:
        k = "abc".index(entry["name"])
        mine = [(f, d) for f, d, kind in work if kind == k and f >= 0]
        assert entry["per_frame_ns"] == [sum(d for f, d in mine if f == i) for i in range(4)]
        assert entry["longest_ns"] == max(d for _, d in mine)
    assert {e["name"] for e in got["kinds"]} == {"abc"[k] for f, _, k in work if f >= 0}


def test_work_is_placed_at_the_call_that_queued_it_when_exactly_one_call_did():
    conn = sqlite3.connect(":memory:")
    conn.executescript("""
        CREATE TABLE OPENGL_API (start INT, "end" INT, correlationId INT);
        INSERT INTO OPENGL_API VALUES (100, 110, 1), (200, 210, 2), (250, 260, 2), (300, 310, 0), (400, 410, 5);""")
    trace = Trace(conn, probe(conn))
    corr = np.array([1, 2, 3, 0, 5], dtype=np.int64)
    at, matched = queued_at(trace, "OPENGL_WORKLOAD", corr, np.array([1000, 2000, 3000, 4000, 5000]))
    # 2 is carried by two calls and 3 by none: those stay at the GPU's start, as does work without an id
    assert (at.tolist(), matched) == ([100, 2000, 3000, 4000, 400], 2)
    bare = sqlite3.connect(":memory:")
    bare.executescript('CREATE TABLE OPENGL_API (start INT, "end" INT); INSERT INTO OPENGL_API VALUES (1, 2);')
    assert queued_at(Trace(bare, probe(bare)), "OPENGL_WORKLOAD", corr, corr * 7)[1] == 0


def test_es2gears_gpu_time_per_frame_is_the_workload_sql_finds(export):
    path = export("es2gears-opengl")
    summary = analyze_report(path).as_json()
    section, frames = summary["gpu_frames"], summary["frames"]
    assert section["sources"] == ["OpenGL"] and section["frame_source"] == frames["source"] == "eglSwapBuffers"
    assert section["renderer"] is None  # the report alone does not name it
    starts = frames["frame_starts_ns"]
    bounds = list(zip(starts, starts[1:] + [starts[-1] + frames["per_frame_ns"][-1]]))
    # each piece of work counts in the frame of the call that queued it (the API call with its correlationId)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT a.start, w.end - w.start, s.value FROM OPENGL_WORKLOAD w "
                            "JOIN OPENGL_API a ON a.correlationId = w.correlationId "
                            "JOIN StringIds s ON s.id = w.nameId").fetchall()
        [[pieces]] = conn.execute("SELECT count(*) FROM OPENGL_WORKLOAD").fetchall()
        # the calls nsys read no GPU timing for: queued after the last call a record covers (es2gears was
        # stopped after its last swap, so they are in no frame)
        [[late]] = conn.execute("SELECT count(*) FROM OPENGL_API WHERE correlationId > "
                                "(SELECT max(endCorrelationId) FROM OPENGL_WORKLOAD)").fetchall()
    assert (section["by_queuing_call"], section["by_gpu_start"]) == (len(rows), 0) == (pieces, 0)
    assert (section["unrecorded_calls"], section["incomplete_frames"]) == (late, []) == (4, [])
    for name in ("glClear", "glDrawArrays"):
        [entry] = [e for e in section["kinds"] if e["name"] == name]
        expected = [sum(d for t, d, n in rows if n == name and a <= t < b) for a, b in bounds]
        assert entry["per_frame_ns"] == expected
        assert entry["count_per_frame"] == [sum(1 for t, _, n in rows if n == name and a <= t < b) for a, b in bounds]
    assert sum(section["per_frame_ns"]) == sum(d for t, d, _ in rows if any(a <= t < b for a, b in bounds))
    assert [e["name"] for e in section["kinds"]] == ["glClear", "glDrawArrays"]  # by GPU time, most first
    steady = section["per_frame_ns"][section["steady_first"]:]
    assert section["steady_median_ns"] == float(np.median(steady)) > 0
