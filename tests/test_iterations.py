"""Iterations of CUDA and TensorRT runs without frames, on real exports: each rule's iterations are the export's
own marks, read in SQL; the first/steady figures follow them as they follow frames."""
from __future__ import annotations

import shutil
import sqlite3

import numpy as np

from orchestrator.analysis import AnalysisOptions, analyze_report


def sql_rows(path, query, *params):
    with sqlite3.connect(path) as conn:
        return conn.execute(query, params).fetchall()


def test_tensorrt_enqueues_at_a_steady_period_are_the_iterations(tmp_path):
    """No public export here runs TensorRT in a steady loop (trtexec's way): NVTX_EVENTS rows as nsys writes them
    (TensorRT's domain, push/pop ranges named by textId) for 30 enqueues every 5 ms, each holding a layer range,
    make 29 iterations, from one enqueue to the next."""
    from orchestrator.analysis.analyzers.iterations import tensorrt_ranges
    from orchestrator.analysis.export.schema import probe
    path = tmp_path / "trt.sqlite"
    tid = (4242 << 24) | 4242
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "ExecutionContext::enqueueV3"), (2, "conv1")])
        conn.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT, '
                     "globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, textId INTEGER)")
        for k in range(30):
            at = 1_000_000 + k * 5_000_000 + (k % 3) * 10_000  # a little jitter
            conn.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, NULL, 1, 1)", (at, at + 40_000, tid))
            conn.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, NULL, 1, 2)",
                         (at + 5_000, at + 30_000, tid))
    with sqlite3.connect(path) as conn:
        found = tensorrt_ranges(conn, probe(conn), None)
        starts = [s for (s,) in conn.execute("SELECT start FROM NVTX_EVENTS WHERE textId = 1 ORDER BY start")]
    assert found is not None and (found.source, found.kind, found.thread) == ("ExecutionContext::enqueueV3", "nvtx",
                                                                             tid)
    assert list(found.starts) == starts[:-1] and list(found.ends) == starts[1:]


def test_tensorrt_enqueues_in_bursts_pace_no_loop(export):
    """TensorRT's multi-stream sample enqueues in bursts (10 us apart, then up to a second's wait): its enqueue
    ranges pace no loop, and the iterations come from the next rule, the synchronising call at a steady period."""
    path = export("trt_multistream_gtx1070_2021.export2022_4")
    summary = analyze_report(path).as_json()
    frames = summary["frames"]
    assert (frames["unit"], frames["kind"], frames["source"]) == ("iteration", "cuda", "cudaEventSynchronize")
    ends = [e for (e,) in sql_rows(path, 'SELECT r."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s '
                                         "ON s.id = r.nameId WHERE s.value LIKE 'cudaEventSynchronize%' "
                                         'ORDER BY r."end"')]
    assert frames["count"] == len(ends) and frames["frame_starts_ns"][1:] == ends[:-1]
    assert summary["verdict"]["summary"].split("(")[1].split(")")[0].endswith("iteration")


def test_a_loop_that_synchronises_once_an_iteration_is_read_by_that_call(export):
    """instant-ngp's loop returns from cudaStreamSynchronize once per iteration, at a steady period: iteration k ends
    when call k returns."""
    path = export("instantngp_rtx3070_2021.export2022_4")
    summary = analyze_report(path).as_json()
    frames = summary["frames"]
    assert (frames["unit"], frames["kind"], frames["source"]) == ("iteration", "cuda", "cudaStreamSynchronize")
    ends = [e for (e,) in sql_rows(path, 'SELECT r."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s '
                                         "ON s.id = r.nameId WHERE s.value LIKE 'cudaStreamSynchronize%' "
                                         'ORDER BY r."end"')]
    assert frames["count"] == len(ends) == 937
    assert [s + d for s, d in zip(frames["frame_starts_ns"], frames["per_frame_ns"])] == ends
    assert frames["frame_starts_ns"][1:] == ends[:-1]
    steady = np.array(frames["per_frame_ns"][1 + frames["warmup"]["frames"]:])
    assert frames["steady"]["mean_ns"] == steady.mean()


def test_a_graph_launched_per_iteration_comes_before_the_other_rules(export, tmp_path):
    """No public export here launches CUDA graphs: abacus's cudaEventSynchronize calls renamed cudaGraphLaunch stand
    for them. Each iteration runs from one launch to the next, before any synchronising call is looked at."""
    path = tmp_path / "graphs.sqlite"
    shutil.copyfile(export("abacus_titanrtx_2020.export2022_4"), path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE StringIds SET value = 'cudaGraphLaunch_v10000' "
                     "WHERE value = 'cudaEventSynchronize_v3020'")
    starts = [s for (s,) in sql_rows(path, "SELECT r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                                           "ON s.id = r.nameId WHERE s.value = 'cudaGraphLaunch_v10000' "
                                           "ORDER BY r.start")]
    frames = analyze_report(path).as_json()["frames"]
    assert (frames["unit"], frames["source"], frames["count"]) == ("iteration", "cudaGraphLaunch", len(starts) - 1)
    assert frames["frame_starts_ns"] == starts[:-1] and "graph" in frames["rule"]


def test_a_range_the_user_names_comes_first_and_a_single_inference_has_no_iterations(export):
    flux = analyze_report(export("flux_gtx1650_2019.export2022_4"), AnalysisOptions(frame_range="Model"))
    assert flux.frames is not None and (flux.frames.source, flux.frames.count, flux.frames.unit) == \
        ("Model", 2, "frame")
    single = analyze_report(export("tensorrt_layers_2023")).as_json()  # one execute, a handful of syncs
    assert single["frames"] is None and single["window"]["kind"] == "all"


def test_gpu_time_per_nvtx_range_of_an_opengl_app_is_its_workloads(export):
    """posebench with its GL delegate (compute shaders on Mesa's llvmpipe), traced with NVTX and OpenGL: each range
    holds the OpenGL workloads whose submitting call (endCorrelationId) it holds, on its thread (counted by those
    calls); the projection
    runs from the first one's start to the last one's end, as SQL over the export finds it."""
    from orchestrator.analysis.analyzers.nvtx_gpu import projections
    from orchestrator.analysis.export.report_input import open_report
    from orchestrator.analysis.export.trace import Trace
    path = export("posebench-gl-nvtx")
    rows = sql_rows(path, """
        SELECT n.rowid, min(w.start), max(w."end"), count(DISTINCT c.correlationId) FROM NVTX_EVENTS n
        JOIN OPENGL_API c ON c.globalTid = n.globalTid AND c.start >= n.start AND c."end" <= n."end"
        JOIN OPENGL_WORKLOAD w ON w.endCorrelationId = c.correlationId AND w.globalTid = c.globalTid
        WHERE n.eventType = 59 GROUP BY n.rowid""")
    assert len(rows) > 10
    conn, schema, export_path = open_report(path, None)
    trace = Trace(conn, schema, export_path)
    try:
        found = projections(trace).set_index("rangeId")
    finally:
        trace.close()
        conn.close()
    assert sorted(found.index) == sorted(r[0] for r in rows)
    for range_id, first, last, count in rows:
        assert (found.loc[range_id, "proj_start"], found.loc[range_id, "proj_end"], found.loc[range_id, "ops"]) == \
            (first, last, count), range_id
    tree = {row["name"]: row for row in analyze_report(path).as_json()["nvtx_gpu"]}
    assert tree["frame"]["depth"] == 0 and tree["detect"]["path"] == ["frame", "detect"]
