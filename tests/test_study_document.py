"""A study's document from its run folders: every measured run's figures, and what a run lacks said in its
cell's notes (pure over the folders' files)."""
from __future__ import annotations

import json
from pathlib import Path

from orchestrator.study.runner import finish_document

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
    document = {"cells": [{"label": "delegate=none", "status": "ok", "reason": None, "runs": runs,
                           "parser": "tftrt-bench"}]}
    said = finish_document(document, tmp_path)
    [cell] = document["cells"]
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
    document = {"cells": [{"label": "", "status": "ok", "reason": None, "runs": runs, "parser": "tftrt-bench"}]}
    assert finish_document(document, tmp_path) == []
    assert "notes" not in document["cells"][0]
    assert document["cells"][0]["metrics"]["app.first_inference_ms"]["values"] == [100.0, 100.0]
