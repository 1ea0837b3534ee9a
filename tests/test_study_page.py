"""study.html's context from a fixed study.json: the seeds' table shape, a log scale when a cell is ten
times the others, failed cells as failed with their reason."""
from __future__ import annotations

from orchestrator.documents.study import StudyDocument
from orchestrator.report.charts import Interval, grouped_bars
from orchestrator.study.page import layout, study_page


def cell(index, model, precision, values=None, status="ok", reason=None):
    metrics = {}
    if values:
        low, high = min(values), max(values)
        metrics["app.inference_mean_ms"] = {"values": values, "median": sorted(values)[len(values) // 2],
                                            "ci95": [low, high], "unit": "ms", "faster_when": "lower"}
    return {"index": index, "variables": {"model": model, "precision": precision},
            "label": f"model={model}, precision={precision}", "status": status, "reason": reason,
            "runs": [f"run{index}-{i}" for i in range(len(values or [1]))], "metrics": metrics,
            "top_function": "xnn_f32_gemm" if values else None, "verdict": "cpu_bound" if values else None}


# the seed's second-inference figures for two models (ms), three runs each, and a model "Killed"
DOCUMENT = StudyDocument.from_json({
    "study": "seed", "target": "nano", "repeat": 3, "variables": ["model", "precision"], "status": "complete",
            "interval": "bootstrap", "cells": [
                cell(0, "ssdlite_mobilenet_v2", "FP32", [16066, 15990, 16102]),
                cell(1, "ssdlite_mobilenet_v2", "FP16", [72, 71, 74]),
                cell(2, "ssd_mobilenet_v1", "FP32", [99, 97, 101]),
                cell(3, "ssd_inception_v2", "FP32", status="failed", reason="Killed (out of memory)")],
            "comparisons": [{"metric": "app.inference_mean_ms", "base": 0, "other": 1, "verdict": "faster",
                             "relative": -0.9956, "reason": "the 95 % intervals do not overlap"}]})


def test_rows_are_the_first_variable_and_columns_the_others():
    row_variable, rows, columns, places = layout(DOCUMENT)
    assert row_variable == "model"
    assert rows == ["model=ssdlite_mobilenet_v2", "model=ssd_mobilenet_v1", "model=ssd_inception_v2"]
    assert columns == ["precision=FP32", "precision=FP16"]
    assert places[("model=ssd_mobilenet_v1", "precision=FP32")].index == 2


def test_table_cells_say_median_interval_failed_or_missing():
    page = study_page(DOCUMENT)
    [table] = page.tables
    cells = {row: [(c.state, c.text, c.interval) for c in found] for row, found in table.rows}
    assert cells == {"model=ssdlite_mobilenet_v2": [("ok", "1.607e+04", "1.599e+04–1.61e+04"), ("ok", "72", "71–74")],
                     "model=ssd_mobilenet_v1": [("ok", "99", "97–101"), ("missing", "–", "")],
                     "model=ssd_inception_v2": [("failed", "failed", ""), ("missing", "–", "")]}
    assert [v.status for v in page.variants] == ["ok", "ok", "ok", "failed"]
    assert page.variants[3].reason == "Killed (out of memory)" and page.variants[0].runs[0] == ("run0-0",
                                                                                                 "run0-0/report.html")
    assert page.verdicts[0].change == "-99.6%" and page.verdicts[0].verdict == "faster"


def test_the_chart_turns_logarithmic_and_draws_the_failed_cell_as_text():
    page = study_page(DOCUMENT)
    [(title, chart)] = page.charts
    assert title == "the app's own inference mean ms (ms)"
    assert chart.marks == 3  # three cells with figures; the failed one is text, not a bar of 0
    assert any(t.text == "ms (log scale)" for t in chart.texts)
    assert [t.text for t in chart.texts if t.cls == "tick"] == ["10", "100", "1000", "10000", "100000"]
    failed = [t.text for t in chart.texts if t.cls == "failed"]
    assert failed == ["failed: Killed (out of memory)"]
    whiskers = [line for line in chart.lines if line.cls == "whisker"]
    assert len(whiskers) == 3 * 3


def test_close_values_keep_a_linear_scale():
    values = {("a", "p"): Interval(80, 79, 82), ("a", "q"): Interval(165, 160, 170)}
    chart = grouped_bars("x", ["a"], ["p", "q"], values, "ms")
    assert not any("log" in t.text for t in chart.texts) and chart.marks == 2
    bars = [r for r in chart.rects if r.cls.startswith("mark")]
    assert abs(bars[1].w / bars[0].w - 165 / 80) < 0.01


def test_the_shares_of_each_cells_frame_are_one_table_not_a_table_each():
    def metric(value):
        return {"values": [value], "median": value, "ci95": [value, value], "unit": "ms", "faster_when": "lower"}
    cells = [{"index": 0, "label": "delegate=gl", "variables": {"delegate": "gl"}, "runs": ["a"],
              "metrics": {"share_gpu_ms": metric(473.0), "share_cpu_ms": metric(16.2), "share_display_ms": metric(0.0),
                          "steady_mean_ms": metric(494.0)}},
             {"index": 1, "label": "delegate=xnnpack", "variables": {"delegate": "xnnpack"}, "runs": ["b"],
              "metrics": {"share_gpu_ms": metric(0.0), "share_cpu_ms": metric(9.2), "steady_mean_ms": metric(9.5)}}]
    page = study_page(StudyDocument.from_json({"study": "gpu", "target": "local", "repeat": 1,
                                               "variables": ["delegate"], "status": "complete", "cells": cells}))
    assert [t.key for t in page.tables] == ["steady_mean_ms"]  # the shares are not a table each
    assert page.shares is not None and page.shares.keys == ["cpu", "gpu"]  # a share no cell has is left out
    assert page.shares.titles[1] == "waiting for the GPU (or a software renderer)"
    assert [(label, [c.text for c in found]) for label, found in page.shares.rows] == [
        ("delegate=gl", ["16.2", "473"]), ("delegate=xnnpack", ["9.2", "0"])]


def _timed(index, iterations: bool):
    """A cell whose runs have steady frames, or iterations (a CUDA app's: iteration_mean_ms beside them)."""
    found = cell(index, f"m{index}", "FP16", [30.0, 31.0, 32.0])
    figures = found["metrics"].pop("app.inference_mean_ms")
    found["metrics"] = {"steady_mean_ms": figures, "frames_per_s": {**figures, "unit": "frames/s",
                                                                    "faster_when": "higher"}}
    if iterations:
        found["metrics"]["iteration_mean_ms"] = figures
    return found


def test_a_study_of_iteration_runs_titles_its_tables_by_iterations():
    base = {"study": "cuda", "target": "nano", "repeat": 3, "variables": ["model", "precision"],
            "status": "complete", "interval": "bootstrap", "comparisons": []}
    page = study_page(StudyDocument.from_json({**base, "cells": [_timed(0, True), _timed(1, True)]}))
    assert page.unit == "iteration"
    assert [t.title for t in page.tables][:2] == ["steady mean per iteration", "iterations per second"]
    mixed = study_page(StudyDocument.from_json({**base, "cells": [_timed(0, True), _timed(1, False)]}))
    assert mixed.unit == "frame" and mixed.tables[0].title == "steady mean per frame"
