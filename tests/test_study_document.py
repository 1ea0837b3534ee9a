"""A study's document from its run folders: every measured run's figures, and what a run lacks said in its
cell's notes (pure over the folders' files)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.documents.study import StudyCell, StudyDocument
from orchestrator.study.runner import extra_round, finish_document

SUMMARY = {"frames": {"first_ns": 160e6, "steady": {"mean_ns": 25e6, "p90_ns": 27e6}}}


def run_folder(study: Path, name: str, printed: str, ended: str) -> str:
    run = study / name
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "ok", "app_exit": {"status": 0, "ended": ended}}))
    (run / "summary.json").write_text(json.dumps(SUMMARY))
    (run / "app.stdout.log").write_text(printed)
    return name


def test_a_run_stopped_before_its_app_printed_keeps_its_frames_and_says_why_its_figures_are_missing(tmp_path):
    printed = "First Inference : 158.14 ms\nInference : 24.66 ms\n"
    runs = [run_folder(tmp_path, "r1", printed, "exited by itself"),
            run_folder(tmp_path, "r2", "", "stopped by the agent after 30.0 s, as planned"),
            run_folder(tmp_path, "r3", "nothing it knows\n", "exited by itself")]
    document = StudyDocument.from_json({"cells": [{"label": "delegate=none", "status": "ok", "reason": None,
                                                   "runs": runs, "parser": "tftrt-bench"}]})
    said = finish_document(document, tmp_path)
    [cell] = document.as_json()["cells"]
    assert cell["status"] == "ok"
    assert cell["metrics"]["app.first_inference_ms"]["values"] == [158.14]
    assert cell["metrics"]["steady_mean_ms"]["values"] == [25.0, 25.0, 25.0]
    stopped, unknown = cell["notes"]
    assert stopped == ("r2: the app's output holds none of the figures the 'tftrt-bench' parser reads: the app was "
                       "stopped by the agent after 30.0 s, as planned, before it printed its figures; give it less "
                       "work or a longer duration_s")
    assert unknown == "r3: the app's output holds none of the figures the 'tftrt-bench' parser reads"
    assert said == [f"delegate=none, {note}" for note in cell["notes"]]


def test_runs_with_every_figure_add_no_notes(tmp_path):
    runs = [run_folder(tmp_path, f"r{n}", "First Inference : 100 ms\nInference : 5.0 ms\n", "exited by itself")
            for n in (1, 2)]
    document = StudyDocument.from_json({"cells": [{"label": "", "status": "ok", "reason": None, "runs": runs,
                                                   "parser": "tftrt-bench"}]})
    assert finish_document(document, tmp_path) == []
    [cell] = document.as_json()["cells"]
    assert "notes" not in cell
    assert cell["metrics"]["app.first_inference_ms"]["values"] == [100.0, 100.0]


def summary_of(steady_ms: float) -> dict:
    return {"frames": {"first_ns": 160e6, "steady": {"mean_ns": steady_ms * 1e6, "p90_ns": steady_ms * 1.1e6}}}


def test_cells_are_compared_round_by_round_and_reused_runs_pair_with_none(tmp_path):
    """Two cells that took turns: the k-th runs are one round. The machine slowed by a third during the study,
    both cells alike: round by round B stays 4 % faster, which the runs' spread alone would hide."""
    names = {}
    for cell, times in (("a", [25.0, 30.0, 33.0, 25.3]), ("b", [24.0, 28.8, 31.7, 24.3])):
        for k, ms in enumerate(times):
            name = f"{cell}{k}"
            run = tmp_path / name
            run.mkdir()
            (run / "run.json").write_text(json.dumps({"status": "ok"}))
            (run / "summary.json").write_text(json.dumps(summary_of(ms)))
            names.setdefault(cell, []).append(name)
    document = StudyDocument.from_json({"cells": [
        {"index": 0, "label": "a", "status": "ok", "reason": None, "runs": names["a"], "reused": [], "parser": None},
        {"index": 1, "label": "b", "status": "ok", "reason": None, "runs": names["b"], "reused": ["b0"],
         "parser": None}]})
    finish_document(document, tmp_path)
    a, b = document.as_json()["cells"]
    assert a["metrics"]["steady_mean_ms"]["rounds"] == [25.0, 30.0, 33.0, 25.3]
    assert b["metrics"]["steady_mean_ms"]["rounds"] == [None, 28.8, 31.7, 24.3]  # b0 came from an earlier folder
    assert b["metrics"]["steady_mean_ms"]["values"] == [24.0, 28.8, 31.7, 24.3]  # its figures still count
    [steady] = [c for c in document.comparisons if c.metric == "steady_mean_ms"]
    assert (steady.verdict, steady.rounds, steady.base, steady.other) == ("faster", 3, 0, 1)
    assert steady.relative == pytest.approx(-0.0397, abs=1e-3)


def test_an_extra_round_runs_the_cells_asked_for_that_are_ok_and_behind():
    entries = [StudyCell(index=0, status="ok", runs=["r1", "r2", "r3"]),
               StudyCell(index=1, status="failed", runs=["r1"]),
               StudyCell(index=2, status="ok", runs=["r1", "r2", "r3", "r4"]),
               StudyCell(index=3, status="ok", runs=["r1", "r2", "r3"])]
    assert extra_round(entries, [0, 1, 2], 3) == [0]  # 1 failed; 2 has its fourth run already; 3 not asked for
    assert extra_round(entries, [1], 3) == [] and extra_round(entries, [], 3) == []
    assert extra_round(entries, [0, 2, 3], 4) == [0, 2, 3]
