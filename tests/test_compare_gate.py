"""`compare` with the gate's verdict, in a real results database (SQLite and PostgreSQL): a run compared with a stored
run whose app has five jobs or more on its branch is judged as `orchestrate ci` judges a job; fewer jobs, no baseline
run stored, or no database at all, and it says so. The runs are copies of an es2gears run folder an earlier release
wrote, one with every frame time scaled by 1.2."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from orchestrator.database.connection import open_database
from orchestrator.database.schema import runs
from orchestrator.errors import ResultsDatabaseError
from orchestrator.report.compare import comparison_page
from orchestrator.results.compare_gate import compare_with_gate
from orchestrator.results.records import Metric, Provenance, run_record
from orchestrator.results.store import add_run, start_job
from orchestrator.stats.gate import NO_BASELINE, NO_CHANGE, REGRESSION

RUN = Path(__file__).parent / "data" / "written-before-one-record-type" / "20261206T143333Z-local-es2gears"
MAIN = Provenance("1" * 40, "main")
SPREAD = (0.998, 1.003, 0.996, 1.002, 1.001)  # the earlier jobs' steady means against the baseline run's


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    return str(tmp_path / "results.db") if request.param == "sqlite" else \
        request.getfixturevalue("postgres").new_database()


def run_copy(folder: Path, name: str, factor: float = 1.0, hours: int = 1) -> Path:
    """The run folder under a new run id, started ``hours`` later, every frame time scaled by ``factor``."""
    copy = folder / name
    shutil.copytree(RUN, copy)
    run = json.loads((copy / "run.json").read_text())
    run["run_id"] = name
    run["started_at"] = run["started_at"].replace("14:33:33", f"{14 + hours}:33:33")
    (copy / "run.json").write_text(json.dumps(run))
    summary = json.loads((copy / "summary.json").read_text())
    frames = summary["frames"]
    frames["first_ns"] = round(frames["first_ns"] * factor)
    frames["per_frame_ns"] = [round(v * factor) for v in frames["per_frame_ns"]]
    frames["steady"] = {k: v * factor if k.endswith("_ns") else v for k, v in frames["steady"].items()}
    (copy / "summary.json").write_text(json.dumps(summary))
    return copy


def store(db_url: str, base: Path, earlier_jobs: int) -> None:
    """The baseline run in a job of its own on main, after ``earlier_jobs`` jobs of two runs of the same app, cell
    and board, their steady means within half a percent of its."""
    record = run_record(base)
    assert record is not None and "steady_mean_ms" in record.metrics
    database = open_database(db_url)
    try:
        for number in range(earlier_jobs):
            figures = [SPREAD[number % len(SPREAD)] * (1 + 0.001 * run) for run in range(2)]
            store_job(database, record, f"main-{number}", figures, -(earlier_jobs - number))
        add_run(database, record, MAIN, start_job(database, "main-base", MAIN, "main", record.target, record.app))
    finally:
        database.close()


def store_job(database, record, name: str, factors: list[float], hours: float, provenance: Provenance = MAIN,
              job: int | None = None) -> int:
    """A job of runs like ``record``, ``hours`` from its start, each its steady mean times a factor."""
    mean = record.metrics["steady_mean_ms"]
    job = job or start_job(database, name, provenance, provenance.branch, record.target, record.app)
    for run, factor in enumerate(factors):
        add_run(database, replace(record, uid=f"{name}-{run}", run_id=f"{name}-{run}",
                                  started_at=record.started_at + timedelta(hours=hours, minutes=run),
                                  metrics={"steady_mean_ms": Metric(mean.value * factor, mean.unit, mean.better)}),
                provenance, job)
    return job


def gate_of(document: dict) -> dict:
    return {found["metric"]: found for found in document["gate"]["verdicts"]}


def test_a_run_20_percent_slower_is_a_regression_against_the_baseline_runs_jobs(db_url, tmp_path):
    base, slower = run_copy(tmp_path, "base"), run_copy(tmp_path, "slower", factor=1.2, hours=2)
    store(db_url, base, earlier_jobs=5)
    document = compare_with_gate([base, slower], ["base", "slower"], page_dir=tmp_path, db=db_url)
    steady = gate_of(document)["steady_mean_ms"]
    assert (steady["verdict"], steady["jobs"], steady["runs"]) == (REGRESSION, 6, 1)
    assert steady["change"] == pytest.approx(0.2, abs=0.005) and document["gate"]["branch"] == "main"
    first = gate_of(document)["first_frame_ms"]  # the earlier jobs hold no first frame: the baseline run's alone
    assert first["verdict"] == NO_BASELINE and first["note"].startswith("1 baseline job, 5 needed")
    line = comparison_page(document).gate[0]
    assert line.startswith("slower, steady_mean_ms: the gate says regression against 6 jobs of the baseline on main: ")


def test_an_unchanged_run_is_no_clear_change_and_too_few_jobs_no_baseline(db_url, tmp_path):
    base, same = run_copy(tmp_path, "base"), run_copy(tmp_path, "same", hours=2)
    store(db_url, base, earlier_jobs=5)
    assert gate_of(compare_with_gate([base, same], page_dir=tmp_path, db=db_url))["steady_mean_ms"]["verdict"] == \
        NO_CHANGE
    few = tmp_path / "few"
    few.mkdir()
    base, slower = run_copy(few, "base"), run_copy(few, "slower", factor=1.2, hours=2)
    store(str(few / "results.db"), base, earlier_jobs=2)
    steady = gate_of(compare_with_gate([base, slower], page_dir=few, db=str(few / "results.db")))["steady_mean_ms"]
    assert steady["verdict"] == NO_BASELINE and steady["note"].startswith("3 baseline jobs, 5 needed")


def test_without_the_baseline_run_stored_or_a_database_it_says_why(tmp_path):
    base, slower = run_copy(tmp_path, "base"), run_copy(tmp_path, "slower", factor=1.2, hours=2)
    document = compare_with_gate([base, slower], page_dir=tmp_path)  # the default database: there is none
    assert document["gate"]["database"] is None and document["gate"]["verdicts"] == []
    assert comparison_page(document).gate == []  # a page without a database says nothing of the gate
    empty = str(tmp_path / "empty.db")
    open_database(empty).close()
    document = compare_with_gate([base, slower], page_dir=tmp_path, db=empty)
    assert document["gate"]["reason"].startswith("base is not in the results database")
    assert comparison_page(document).gate[0].startswith("the gate: base is not in the results database")
    with pytest.raises(ResultsDatabaseError):
        compare_with_gate([base, slower], page_dir=tmp_path, db=str(tmp_path / "missing.db"))


def test_the_command_prints_the_gates_verdict(tmp_path):
    base, slower = run_copy(tmp_path, "base"), run_copy(tmp_path, "slower", factor=1.2, hours=2)
    db = str(tmp_path / "results.db")
    store(db, base, earlier_jobs=5)
    done = subprocess.run([sys.executable, "-m", "orchestrator", "compare", str(base), str(slower), "--db", db,
                           "-o", str(tmp_path / "compare.html")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "steady_mean_ms: the gate says regression against 6 jobs of the baseline on main" in done.stderr
    assert 'data-gate>slower, steady_mean_ms: the gate says regression' in (tmp_path / "compare.html").read_text()


def test_the_baseline_is_the_base_runs_job_whole_and_the_jobs_before_it_on_its_branch(db_url, tmp_path):
    """The baseline run is the first of its job of three; jobs after it on main, and jobs of another branch, are no
    part of the baseline; a stored run is judged by its job's runs; a run of the baseline's own job is not judged."""
    base, slower = run_copy(tmp_path, "base"), run_copy(tmp_path, "slower", factor=1.2, hours=5)
    store(db_url, base, earlier_jobs=5)
    record, judged = run_record(base), run_record(slower)
    database = open_database(db_url)
    try:
        with database.engine.begin() as connection:
            [base_job] = connection.execute(select(runs.c.job_id).where(runs.c.uid == record.uid)).scalars()
        store_job(database, record, "base-later", [1.001, 0.999], 0.1, job=base_job)  # the rest of the base's job
        store_job(database, record, "main-after", [1.5, 1.5], 2)  # after the baseline run: not before it
        store_job(database, record, "other", [3.0, 3.0], -1, Provenance("2" * 40, "other"))  # another branch
        job = start_job(database, "slower-job", MAIN, "main", judged.target, judged.app)
        add_run(database, judged, MAIN, job)
        store_job(database, judged, "slower-job-more", [1.01, 0.99], 0.1, job=job)  # around the judged run's 1.2
        same = run_copy(tmp_path, "same-job", hours=0)
        add_run(database, run_record(same), MAIN, base_job)
    finally:
        database.close()
    steady = gate_of(compare_with_gate([base, slower], page_dir=tmp_path, db=db_url))["steady_mean_ms"]
    assert (steady["jobs"], steady["baseline_runs"], steady["runs"]) == (6, 5 * 2 + 4, 3)  # the base job: 4 runs
    assert steady["verdict"] == REGRESSION and steady["figure"] == pytest.approx(
        judged.metrics["steady_mean_ms"].value, rel=1e-9)  # the median of its job's three runs: its own
    database = open_database(db_url)
    try:
        from orchestrator.results.compare_gate import gate_verdicts
        found = gate_verdicts(database, [base, same], ["base", "same-job"])
    finally:
        database.close()
    [own] = [v for v in found["verdicts"] if v["metric"] == "steady_mean_ms"]
    assert own["verdict"] is None and own["note"].startswith("same-job is of the baseline run's own job")
