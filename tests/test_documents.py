"""The typed documents of a run folder: each reads what any release wrote, keeps what it does not know, and
refuses a newer version in one line (pure, on temporary files)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.documents.fleet import BoardSummary, FleetBoard, FleetCell, FleetDocument, read_fleet, write_fleet
from orchestrator.documents.record import Record
from orchestrator.documents.run import RunDocument, RunTarget, read_run, read_run_or_none, write_run
from orchestrator.documents.run_sections import RunImport
from orchestrator.documents.study import (
    MetricFigures,
    RoundRun,
    StudyCell,
    StudyDocument,
    read_study,
    read_study_or_none,
    write_study,
)
from orchestrator.documents.summary import Attribution, NextStep, Share, Summary, read_summary, write_summary
from orchestrator.errors import UsageError
from remote_agent.wire import _read


@pytest.mark.parametrize("kind", [RunDocument, RunTarget, StudyDocument, StudyCell, FleetDocument, FleetBoard,
                                  FleetCell, BoardSummary, Attribution, Share, NextStep])
def test_every_fields_default_is_of_the_kind_its_annotation_says(kind):
    """The check a value read from a file goes through accepts each field's own default (so an annotation it
    cannot read would show here, not as values silently dropped)."""
    for name, annotation in kind._fields().items():
        default = kind._defaults()[name]
        default = default.as_json() if isinstance(default, Record) else default
        if default is not None:
            assert _read(annotation, default)[0], (kind.__name__, name, annotation)


@pytest.mark.parametrize(("value", "annotation", "fits"), [
    ("x", str | None, True), (None, str | None, True), (None, str, False), (3, str, False),
    ([], list[str], True), ({}, list[str], False), ({}, dict[str, object], True), (True, int, False),
    (3, int, True), (3, float | None, True), (2.5, int, False), ("text", dict[str, object] | None, False),
])
def test_a_value_fits_the_kind_of_its_annotation(value, annotation, fits):
    assert _read(annotation, value)[0] is fits


def test_a_run_document_keeps_unknown_keys_and_values_of_the_wrong_kind(tmp_path):
    written = {"run_id": "r1", "started_at": "2026-12-01T00:00:00+00:00", "status": "ok", "newer_key": [1, 2],
               "error": "edited by hand", "target": {"name": "nano", "groups": 3}, "import": {"where": "host"}}
    (tmp_path / "run.json").write_text(json.dumps(written))
    run = read_run(tmp_path)
    assert (run.run_id, run.status, run.error, run.target, run.import_) == (
        "r1", "ok", None, RunTarget.from_json({"name": "nano", "groups": 3}), RunImport(where="host"))
    assert (run.target.name, run.target.groups, run.target.extra) == ("nano", [], {"groups": 3})
    assert run.extra == {"newer_key": [1, 2], "error": "edited by hand"}
    write_run(tmp_path, run)
    again = json.loads((tmp_path / "run.json").read_text())
    assert again["newer_key"] == [1, 2] and again["error"] == "edited by hand" and again["run_version"] == 1
    assert again["import"] == {"where": "host"} and "import_" not in again and again["inventory"] is None


def test_a_newer_or_broken_document_is_one_clean_line(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "r", "run_version": 99}))
    with pytest.raises(UsageError) as newer:
        read_run(tmp_path)
    assert newer.value.one_line() == (f"{tmp_path / 'run.json'} is a run document of version 99, newer than this "
                                      "orchestrate reads (1) (open it with the orchestrate release that wrote it, "
                                      "or upgrade)")
    (tmp_path / "study.json").write_text("[1, 2]")
    with pytest.raises(UsageError) as broken:
        read_study(tmp_path)
    assert broken.value.message == f"{tmp_path / 'study.json'} could not be read (it holds list, not an object)"
    assert read_study_or_none(tmp_path) is None and read_run_or_none(tmp_path / "nothing") is None
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(UsageError, match="summary.json could not be read \\(not JSON: "):
        read_summary(tmp_path)


def test_a_study_cell_writes_its_figures_only_once_the_study_finished(tmp_path):
    cell = StudyCell(index=1, label="threads=2", variables={"threads": 2}, runs=["a"])
    assert set(cell.as_json()) == {"index", "label", "variables", "status", "reason", "runs", "reused", "parser"}
    cell.metrics, cell.notes = {"steady_mean_ms": MetricFigures(median=16.6)}, ["a: no app figures"]
    assert cell.as_json()["top_function"] is None and cell.as_json()["notes"] == ["a: no app figures"]
    document = StudyDocument(name="s", cells=[cell], order=[RoundRun(round=1, cell=1, run="a")])
    write_study(tmp_path, document)
    written = json.loads((tmp_path / "study.json").read_text())
    assert (written["study"], written["study_version"], "finished" in written) == ("s", 1, False)
    back = read_study(tmp_path)
    assert back == document and back.cell_of("a") is back.cells[0]
    assert back.cells[0].metric("steady_mean_ms") == MetricFigures(median=16.6) and back.cells[0].metric("x") is None


def test_a_fleet_still_running_has_no_end_and_no_recap(tmp_path):
    document = FleetDocument(what="es2gears", targets=["a", "b"], boards=[FleetBoard(target="a", status="ok")])
    write_fleet(tmp_path, document)
    written = json.loads((tmp_path / "fleet.json").read_text())
    assert "finished" not in written and "recap" not in written and written["fleet_version"] == 1
    document.finished, document.recap = "2026-12-03T18:00:00+00:00", {"ok": 1}
    write_fleet(tmp_path, document)
    assert read_fleet(tmp_path) == document


def test_a_summary_is_its_json_with_the_figures_other_layers_read(tmp_path):
    written = {"summary_version": 1, "frames": {"first_ns": 5e6, "per_frame_ns": [4, 5, 6],
                                                "warmup": {"frames": 1}, "steady": {"mean_ns": 5.5}},
               "cores": [{"busy_pct": 50.0}, {"busy_pct": 25.0}], "verdict": {"kind": "cpu_bound"},
               "hotspots": {"self": [{"symbol": "gemm"}]}, "energy": {"median_mj": 3}}
    summary = Summary.from_json(written)
    write_summary(tmp_path, summary)
    back = read_summary(tmp_path)
    assert back == summary and isinstance(back, Summary) and back.as_json() == written  # as it was, key for key
    assert (back.first_frame_ns, back.per_frame_ns, back.warmup_frames) == (5e6, [4, 5, 6], 1)
    assert back.steady is not None and back.steady.mean_ns == 5.5
    assert (back.cores_busy, back.verdict_kind, back.top_function, back.energy_median_mj) == (0.75, "cpu_bound",
                                                                                              "gemm", 3.0)
    assert read_summary(Path(tmp_path / "elsewhere")) is None


def test_an_attribution_edited_by_hand_reads_what_is_of_the_right_kind():
    from orchestrator.documents.summary import Attribution, Summary
    from orchestrator.figures.next_steps import next_steps
    from orchestrator.report.share_parts import shares_part
    edited = {"thread": "app (1)", "window_ns": 1000, "frames": {"first": 0, "count": 2, "every": 1},
              "largest": "cpu", "sources": {"software_renderer": "llvmpipe-0"}, "confidence": 3,
              "shares": {"cpu": {"ns": 900, "pct": 90, "per_frame_ns": [450, "x"], "calls": ["f", 7, None],
                                 "frames": [{"index": 0}, "frame"]}, "io": "not a share"}}
    found = Attribution.from_json(edited)
    assert found is not None and found.confidence == "low" and found.extra["confidence"] == 3
    assert found.software_threads == [] and found.share("cpu").calls == ["f"]
    assert found.share("cpu").per_frame_ns == [] and [f.as_json() for f in found.share("cpu").frames] == [{"index": 0}]
    assert found.share("io").ns == 0 and found.as_json()["shares"]["cpu"]["pct"] == 90
    part = shares_part(found)
    assert part is not None and part.chart is None and [row.key for row in part.rows] == ["cpu"]
    steps = next_steps(Summary.from_json({"attribution": edited,
                                          "hotspots": {"self": [{"symbol": "[x]", "pct": "a lot"}]},
                                          "capture_gaps": "none"}), None, "r")
    assert [step.rule for step in steps] == ["context_switches"]  # no sources said: none of them assumed
    assert Summary.from_json({"attribution": ["not", "an", "object"]}).attribution is None
