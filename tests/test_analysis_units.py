"""The analysis's pure parts on small, hand-made inputs whose answers are known."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.analysis.analyzers.frames import warmup_frames
from orchestrator.analysis.export import sampling, scheduling
from orchestrator.analysis.export.bulk import int_columns
from orchestrator.analysis.export.durations import summarize, summarize_nested
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.selection import parse_range, parse_time, pick_processes
from orchestrator.analysis.export.trace import Trace
from orchestrator.errors import ReportError, UsageError


def test_summarize_counts_totals_median_and_sample_std():
    table = summarize({"name": np.array([7, 7, 7, 7, 9])}, np.array([1, 10, 2, 3, 5]))
    first, second = table.to_dict(orient="records")
    assert first["name"] == 7
    assert (first["calls"], first["total_ns"], first["min_ns"], first["max_ns"]) == (4, 16, 1, 10)
    assert first["med_ns"] == 2.5 and first["avg_ns"] == 4.0              # even count: mean of the middle two
    assert first["std_ns"] == pytest.approx(np.std([1, 10, 2, 3], ddof=1))
    assert (second["calls"], second["med_ns"], second["std_ns"]) == (1, 5.0, 0.0)
    assert first["pct"] == pytest.approx(16 * 100 / 21) and second["pct"] == pytest.approx(5 * 100 / 21)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.integers(-5, 10**12)), min_size=1, max_size=300))
def test_summarize_equals_numpys_own_figures(rows):
    keys = {"name": np.array([r[0] for r in rows]), "grid": np.array([r[1] for r in rows])}
    durations = np.array([r[2] for r in rows], dtype=np.int64)
    table = summarize(keys, durations)
    assert table["calls"].sum() == len(rows)
    for row in table.to_dict(orient="records"):
        mine = durations[(keys["name"] == row["name"]) & (keys["grid"] == row["grid"])]
        assert (row["calls"], row["total_ns"], row["min_ns"], row["max_ns"]) == (len(mine), mine.sum(), mine.min(),
                                                                                  mine.max())
        assert row["med_ns"] == np.median(mine)
        assert row["std_ns"] == pytest.approx(np.std(mine, ddof=1) if len(mine) > 1 else 0.0, rel=1e-9, abs=1e-6)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3), st.integers(-5, 10**12)), min_size=1, max_size=300))
def test_a_nested_summary_is_the_summaries_of_its_keys_and_of_its_outer_column(rows):
    """Kernels by launch shape and by function from one sort: each table equals summarize's own (the outer
    column's spread to rounding: its sum of squares adds the terms in another order)."""
    names = np.array([r[0] for r in rows])
    keys, outer = {"name": names, "grid": np.array([r[1] for r in rows])}, names % 3  # a function of the keys
    durations = np.array([r[2] for r in rows], dtype=np.int64)
    inner, by_outer = summarize_nested(keys, "fn", outer, durations)
    expected = summarize(keys, durations)
    assert inner.drop(columns=["fn"]).equals(expected)
    assert list(inner["fn"]) == [n % 3 for n in inner["name"]]
    expected = summarize({"fn": outer}, durations)
    exact = ["fn", "calls", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "pct"]
    assert by_outer[exact].equals(expected[exact])
    assert np.allclose(by_outer["std_ns"], expected["std_ns"], rtol=1e-9, atol=1e-6)
    assert list(by_outer["groups"]) == [len(inner[inner["fn"] == f]) for f in by_outer["fn"]]


def test_a_nested_summary_of_nothing_has_the_columns():
    inner, by_outer = summarize_nested({"name": np.array([], dtype=np.int64)}, "fn", np.array([], dtype=np.int64),
                                       np.array([], dtype=np.int64))
    assert list(inner.columns)[:2] == ["name", "fn"] and len(inner) == 0
    assert list(by_outer.columns)[-1] == "groups" and len(by_outer) == 0


def test_summarize_groups_by_several_keys_and_negative_durations():
    keys = {"name": np.array([1, 1, 1, 2]), "grid": np.array([5, 6, 5, 5])}
    table = summarize(keys, np.array([-4, 3, 8, 1]))  # a negative value takes the lexsort path
    rows = {(r["name"], r["grid"]): r for r in table.to_dict(orient="records")}
    assert rows[(1, 5)]["calls"] == 2 and rows[(1, 5)]["min_ns"] == -4 and rows[(1, 5)]["med_ns"] == 2.0
    assert rows[(1, 6)]["total_ns"] == 3 and rows[(2, 5)]["total_ns"] == 1
    assert list(table["total_ns"]) == sorted(table["total_ns"], reverse=True)


@pytest.mark.parametrize("durations, warm", [
    ([100, 50, 40, 10, 10, 10, 10, 10, 10, 10, 10, 10], 2),
    ([100, 10, 10, 10, 10, 10, 10, 10], 0),
    ([100, 90, 90, 90, 90, 10, 10, 10], 2),    # capped at a quarter of the frames
    ([5, 50, 10], 0),                            # too few frames to tell
])
def test_warmup_frames(durations, warm):
    assert warmup_frames(np.array(durations)) == warm


def test_times_and_windows():
    assert parse_time("1500") == 1500 and parse_time("1.5ms") == 1_500_000 and parse_time("2s") == 2_000_000_000
    window = parse_range("1s:5s", (2_000_000_000, 4_000_000_000))  # clipped to the capture
    assert (window.start_ns, window.end_ns, window.kind) == (2_000_000_000, 4_000_000_000, "range")
    for bad, message in [("5s:1s", "not after"), ("9s:10s", "outside the capture"), ("a:b", "cannot read"),
                         ("1s", "not START:END")]:
        with pytest.raises(UsageError, match=message):
            parse_range(bad, (2_000_000_000, 4_000_000_000))


def test_pick_processes_by_name_or_basename():
    processes = [{"pid": 10, "name": "/usr/bin/es2gears_x11"}, {"pid": 11, "name": "python3"}]
    assert pick_processes(processes, "es2gears_x11") == [10]
    assert pick_processes(processes, None) is None
    with pytest.raises(UsageError, match="no such process") as raised:
        pick_processes(processes, "glmark2")
    assert raised.value.hint == "give a name or pid of: /usr/bin/es2gears_x11 (10), python3 (11)"


def test_a_process_is_known_by_every_name_it_had_and_by_pid():
    """`sh -c '... exec "$@"'` keeps the shell's pid: PROCESSES says /bin/sh, the main thread the app's name
    (the kernel's 15 characters of it)."""
    processes = [{"pid": 10, "name": "es2gears_x11", "aliases": ["es2gears_x11", "/bin/sh"]},
                 {"pid": 12, "name": "posebench_longe", "aliases": ["posebench_longe"]},
                 {"pid": 11, "name": "python3", "aliases": ["python3"]}]
    assert pick_processes(processes, "es2gears_x11") == [10]
    assert pick_processes(processes, "/usr/bin/es2gears_x11") == [10]
    assert pick_processes(processes, "sh") == [10]
    assert pick_processes(processes, "11") == [11]
    assert pick_processes(processes, "posebench_longer_name") == [12]
    for wrong in ("12345", "es2gears", "posebench"):
        with pytest.raises(UsageError, match=f"--process {wrong}: no such process"):
            pick_processes(processes, wrong)


def _memory_export(script: str) -> Trace:
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    return Trace(conn, probe(conn))


def test_sched_events_pair_into_busy_cores_and_threads():
    # thread 1 runs on cpu0 0-40 and 60-100 (its last sched-in has no sched-out); thread 2 runs since before
    # tracing started until 30 on cpu1
    trace = _memory_export("""
        CREATE TABLE SCHED_EVENTS (start INT, cpu INT, isSchedIn INT, globalTid INT);
        INSERT INTO SCHED_EVENTS VALUES (0, 0, 1, 1), (40, 0, 0, 1), (60, 0, 1, 1), (30, 1, 0, 2);""")
    intervals = scheduling.on_cpu_intervals(trace, (0, 100), None)
    use = scheduling.cpu_use_from_sched(intervals, (0, 100), cpu_count=4)
    assert use.cores.to_dict(orient="list") == {"cpu": [0, 1, 2, 3], "busy_pct": [80.0, 30.0, 0.0, 0.0]}
    assert dict(zip(use.threads["globalTid"], use.threads["cpu_pct"])) == {1: 80.0, 2: 30.0}
    half = scheduling.cpu_use_from_sched(scheduling.on_cpu_intervals(trace, (50, 100), None), (50, 100), 2)
    assert half.cores["busy_pct"].tolist() == [80.0, 0.0]


def test_samples_give_self_inclusive_and_a_pruned_tree():
    # three samples: main>f>g, main>f, main>h ; stackDepth 0 is the leaf
    trace = _memory_export("""
        CREATE TABLE StringIds (id INT, value TEXT);
        INSERT INTO StringIds VALUES (1, 'main'), (2, 'f'), (3, 'g'), (4, 'h'), (5, 'app'), (6, '[Max depth]');
        CREATE TABLE COMPOSITE_EVENTS (id INT, start INT, cpu INT, threadState INT, globalTid INT, cpuCycles INT);
        INSERT INTO COMPOSITE_EVENTS VALUES (1, 10, 0, 1, 7, 0), (2, 20, 1, 1, 7, 0), (3, 30, 0, 1, 8, 0);
        CREATE TABLE SAMPLING_CALLCHAINS (id INT, symbol INT, module INT, stackDepth INT);
        INSERT INTO SAMPLING_CALLCHAINS VALUES (1, 3, 5, 0), (1, 2, 5, 1), (1, 1, 5, 2), (1, 6, 6, 3),
                                               (2, 2, 5, 0), (2, 1, 5, 1), (3, 4, 5, 0), (3, 1, 5, 1);""")
    samples = sampling.load_samples(trace, (0, 100), None)
    self_rows = sampling.self_hotspots(samples).to_dict(orient="records")
    assert {(r["symbol"], r["samples"]) for r in self_rows} == {("g", 1), ("f", 1), ("h", 1)}
    inclusive = sampling.inclusive_hotspots(samples).to_dict(orient="records")
    assert [(r["symbol"], r["samples"], r["module"]) for r in inclusive[:2]] == [("main", 3, "app"), ("f", 2, "app")]
    assert "[Max depth]" not in {r["symbol"] for r in inclusive}
    tree = sampling.top_down_tree(samples, min_share=0.5)  # h and g fall under the 50 % floor
    main, = tree["children"]
    assert (main["symbol"], main["samples"]) == ("main", 3)
    assert [(c["symbol"], c["samples"], c["children"]) for c in main["children"]] == [("f", 2, [])]
    later = sampling.load_samples(trace, (15, 100), None)
    assert len(later.ids) == 2


def test_sampling_estimates_cpu_when_there_are_no_context_switches():
    trace = _memory_export("""
        CREATE TABLE StringIds (id INT, value TEXT);
        CREATE TABLE COMPOSITE_EVENTS (id INT, start INT, cpu INT, threadState INT, globalTid INT, cpuCycles INT);
        CREATE TABLE SAMPLING_CALLCHAINS (id INT, symbol INT, module INT, stackDepth INT);""" + "".join(
        f"INSERT INTO COMPOSITE_EVENTS VALUES ({i}, {i * 1_000_000}, 0, 1, 7, 0);"
        f"INSERT INTO SAMPLING_CALLCHAINS VALUES ({i}, 1, 1, 0);" for i in range(1, 51)))
    samples = sampling.load_samples(trace, (0, 100_000_000), None)
    use = scheduling.cpu_use_from_samples(samples, (0, 100_000_000), cpu_count=2)
    assert use.source.startswith("sampling (estimated, 1 ms")
    assert use.cores["busy_pct"].tolist() == [50.0, 0.0]   # 50 samples x 1 ms in a 100 ms window


def test_a_null_where_a_value_is_expected_is_reported_not_misaligned():
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE T (a INT, b INT); INSERT INTO T VALUES (1, 2), (3, NULL), (5, 6);")
    assert int_columns(conn, "T", {"a": "a"})["a"].tolist() == [1, 3, 5]
    with pytest.raises(ReportError, match="b is NULL in 1 rows"):
        int_columns(conn, "T", {"a": "a", "b": "b"})


def _gl_export(calls: list[tuple[int, int, str, int]]) -> Trace:
    names = sorted({name for _, _, name, _ in calls})
    ids = {name: i + 1 for i, name in enumerate(names)}
    rows = ",".join(f"({start}, {end}, {ids[name]}, {tid})" for start, end, name, tid in calls)
    return _memory_export(f"""
        CREATE TABLE StringIds (id INT, value TEXT);
        INSERT INTO StringIds VALUES {",".join(f"({i}, '{n}')" for n, i in ids.items())};
        CREATE TABLE OPENGL_API (start INT, end INT, nameId INT, globalTid INT);
        INSERT INTO OPENGL_API VALUES {rows};""")


def test_frames_end_at_swaps_and_the_busiest_swapping_thread_wins():
    from orchestrator.analysis.analyzers.frames import find_frames
    calls = [(5, 6, "glClear", 1), (10, 12, "glXSwapBuffers", 1), (20, 23, "glXSwapBuffers", 1),
             (31, 35, "glXSwapBuffers", 1), (8, 9, "glXSwapBuffers", 2)]
    trace = _gl_export(calls)
    frames = find_frames(trace, None)
    assert (frames.source, frames.global_tid) == ("glXSwapBuffers", 1)
    assert frames.starts.tolist() == [5, 12, 23] and frames.ends.tolist() == [12, 23, 35]


def test_apps_that_draw_nothing_are_cut_at_glfinish():
    from orchestrator.analysis.analyzers.frames import find_frames
    trace = _gl_export([(0, 1, "glDispatchCompute", 3), (2, 9, "glFinish", 3), (10, 11, "glDispatchCompute", 3),
                        (12, 20, "glFinish", 3)])
    frames = find_frames(trace, None)
    assert frames.source == "glFinish" and frames.durations.tolist() == [9, 11]
    assert find_frames(trace, None, "eglSwapBuffers") is None
