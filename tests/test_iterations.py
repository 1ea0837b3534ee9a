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


def test_tensorrt_runs_iterate_by_their_enqueue_ranges(export):
    path = export("trt_multistream_gtx1070_2021.export2022_4")
    summary = analyze_report(path).as_json()
    frames = summary["frames"]
    assert (frames["unit"], frames["kind"], frames["source"]) == ("iteration", "nvtx", "ExecutionContext::enqueue")
    assert "TensorRT" in frames["rule"]
    starts = [s for (s,) in sql_rows(path, "SELECT e.start FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                                           "WHERE s.value = 'ExecutionContext::enqueue' ORDER BY e.start")]
    assert len(starts) == 121 and frames["count"] == 120  # from one enqueue to the next
    assert frames["frame_starts_ns"] == starts[:-1]
    assert frames["per_frame_ns"] == list(np.diff(starts))
    assert summary["window"]["kind"] == "steady"
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
