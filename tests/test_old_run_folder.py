"""A run folder and a study folder written before the documents were typed (run.json before it said its version;
tests/data/written-before-typed-documents, see its SOURCES.md) still open: their documents read, and `report`,
`compare`, `results import` and `fetch` work on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA, run_cli

from orchestrator.documents.run import RUN_VERSION, read_run, write_run
from orchestrator.documents.study import read_study, write_study
from orchestrator.documents.summary import read_summary
from orchestrator.figures.measured import measured_run, run_flags
from orchestrator.figures.run_metrics import run_metrics

WRITTEN_BEFORE = DATA / "written-before-typed-documents"
OLD = WRITTEN_BEFORE / "20261203T170830Z-local-es2gears"
OLD_STUDY = WRITTEN_BEFORE / "20261203T180308Z-posebench-delegate"
# its summary.json's figures: 1802 frames, steady mean 1544048.52 ns, first frame 31810655 ns, two cores 37.4 % and
# 53.2 % busy (0.906 cores), verdict gpu_wait
STEADY_MEAN_MS = 1.5440485233333334


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    copy = tmp_path / OLD.name
    shutil.copytree(OLD, copy)
    return copy


def test_its_documents_read_with_their_figures(old_run):
    run = read_run(old_run)
    assert "run_version" not in json.loads((old_run / "run.json").read_text())
    assert (run.run_id, run.status, run.stage, run.app_name, run.target.name) == (
        "20261203T170830Z-local-es2gears", "ok", "pulled", "es2gears", "local")
    assert run.target.address == "this machine" and run.inventory is None
    assert run.stored_flags == [] and run.keep_remote is False and run.heartbeat_timeout_s == 30
    assert run.import_ is not None and run.import_.where == "target"  # its "import" key
    summary = read_summary(old_run)
    assert summary is not None
    assert (summary.frames.count, summary.first_frame_ns, summary.verdict_kind) == (1802, 31810655, "gpu_wait")
    assert summary.cores_busy == pytest.approx(0.9060528495725434)
    assert measured_run(old_run, run) and run_flags(run) == []
    figures = run_metrics(old_run, None)
    assert figures.values["steady_mean_ms"] == pytest.approx(STEADY_MEAN_MS)
    assert figures.values["first_frame_ms"] == pytest.approx(31.810655)


def test_written_again_it_says_its_version_and_loses_nothing(old_run):
    before = json.loads((old_run / "run.json").read_text())
    write_run(old_run, read_run(old_run))
    after = json.loads((old_run / "run.json").read_text())
    assert after.pop("run_version") == RUN_VERSION
    assert after == before


def test_report_and_compare_open_it(old_run, tmp_path):
    done = run_cli("report", str(old_run))
    assert done.returncode == 0, done.stderr
    page = (old_run / "report.html").read_text()
    assert "<title>es2gears on local" in page and "1802 frames" in page
    done = run_cli("compare", str(old_run), str(old_run), "--label", "a", "--label", "b", "--json")
    assert done.returncode == 0, done.stderr
    compared = json.loads(done.stdout)
    values = {m["key"]: m["values"] for m in compared["metrics"]}
    assert values["steady_mean_ns"] == [pytest.approx(1544048.5233333334)] * 2
    assert values["first_frame_ns"] == [31810655, 31810655]
    assert [(v["app"], v["target"], v["status"]) for v in compared["variants"]] == [("es2gears", "local", "ok")] * 2


def test_results_import_stores_it_with_its_figures(old_run, tmp_path):
    db = str(tmp_path / "results.db")
    done = run_cli("results", "import", str(old_run), "--db", db, "--commit", "abc", "--branch", "main")
    assert done.returncode == 0, done.stderr
    assert "1 run stored" in done.stdout
    stored = json.loads(run_cli("results", "list", "--db", db, "--json").stdout)
    assert [(r["run_id"], r["app"], r["target"], r["status"], r["valid"]) for r in stored] == [
        ("20261203T170830Z-local-es2gears", "es2gears", "local", "ok", True)]
    assert stored[0]["metrics"]["steady_mean_ms"] == pytest.approx(STEADY_MEAN_MS)
    assert stored[0]["metrics"]["cores_busy"] == pytest.approx(0.9060528495725434)


def test_fetch_finds_its_report_already_here(old_run):
    done = run_cli("fetch", str(old_run))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(old_run)
    assert "the report is already here, verified" in done.stderr


@pytest.fixture
def old_study(tmp_path: Path) -> Path:
    copy = tmp_path / OLD_STUDY.name
    shutil.copytree(OLD_STUDY, copy)
    return copy


def test_a_study_folder_reads_its_cells_and_written_again_loses_nothing(old_study):
    before = json.loads((old_study / "study.json").read_text())
    study = read_study(old_study)
    assert (study.name, study.status, study.repeat, study.variables) == (
        "posebench-delegate", "complete", 1, ["delegate", "threads", "frames"])
    assert [(c.index, c.label, c.status, len(c.runs)) for c in study.cells] == [
        (0, "delegate=xnnpack, threads=1, frames=20", "ok", 1), (1, "delegate=none, threads=1, frames=20", "ok", 1)]
    assert [cell.metrics["app.inference_mean_ms"].median for cell in study.cells if cell.metrics] == [16.65, 67.15]
    assert [o.cell for o in study.order] == [0, 1]
    assert study.cell_of("20261203T180314Z-local-posebench") is study.cells[1]
    write_study(old_study, study)
    assert json.loads((old_study / "study.json").read_text()) == before


def test_results_import_stores_a_study_folder_with_its_cells_and_app_figures(old_study, tmp_path):
    db = str(tmp_path / "results.db")
    done = run_cli("results", "import", str(old_study), "--db", db, "--commit", "abc", "--branch", "main")
    assert done.returncode == 0, done.stderr
    assert "2 runs stored" in done.stdout
    stored = json.loads(run_cli("results", "list", "--db", db, "--json").stdout)
    by_cell = {r["cell"]: r for r in stored}
    assert set(by_cell) == {"delegate=xnnpack, threads=1, frames=20", "delegate=none, threads=1, frames=20"}
    xnnpack, none = by_cell["delegate=xnnpack, threads=1, frames=20"], by_cell["delegate=none, threads=1, frames=20"]
    assert (xnnpack["study"], xnnpack["app"], xnnpack["valid"]) == ("posebench-delegate", "posebench", True)
    assert xnnpack["metrics"]["app.inference_mean_ms"] == 16.65 and none["metrics"]["app.inference_mean_ms"] == 67.15
    assert json.loads(none["variables"]) == {"delegate": "none", "threads": 1, "frames": 20}


def test_compare_opens_two_runs_of_the_study(old_study):
    runs = [str(old_study / name) for name in ("20261203T180308Z-local-posebench", "20261203T180314Z-local-posebench")]
    done = run_cli("compare", *runs, "--label", "xnnpack", "--label", "none", "--json")
    assert done.returncode == 0, done.stderr
    values = {m["key"]: m["values"] for m in json.loads(done.stdout)["metrics"]}
    assert values["steady_mean_ns"] == [pytest.approx(16626745.315789474), pytest.approx(67115375.84210527)]
