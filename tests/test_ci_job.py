"""What a CI job decides per cell and metric once its runs are stored: flagged runs, missing figures and
failed cells, against baselines in a real results database (SQLite and PostgreSQL)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_results_db import MAIN, record

from orchestrator.ci.job import CiRequest, gate_checks, job_outcome
from orchestrator.database.connection import open_database
from orchestrator.documents.study import StudyDocument
from orchestrator.inventory.hosts import Host
from orchestrator.results.records import Provenance
from orchestrator.results.store import Series, add_run, baseline, start_job
from orchestrator.stats.gate import NO_CHANGE, REGRESSION, GateRule
from orchestrator.study.runner import StudyRequest
from orchestrator.study.spec import StudySpec

BRANCH = Provenance("9" * 40, "speedup")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        url = str(tmp_path / "results.db")
    else:
        url = request.getfixturevalue("postgres").new_database()
    opened = open_database(url)
    yield opened
    opened.close()


def ci_request(tmp_path: Path, *rules: GateRule) -> CiRequest:
    study = StudySpec(name="posebench", source="--app", matrix=(), app="posebench")
    return CiRequest(StudyRequest(spec=study, host=Host(name="nano-01"), catalog={}, out_dir=tmp_path, repeat=2),
                     provenance=BRANCH, base="main", rules=rules)


JOBS = ((10.0, 10.02), (10.1, 10.08), (9.9, 9.93), (10.05, 10.03), (9.97, 10.0))


def stored_baseline(database, jobs=JOBS) -> None:
    """Five jobs of two runs on main, and a sixth whose one run was throttled."""
    index = 0
    for number, values in enumerate(jobs):
        job = start_job(database, f"main-{number}", MAIN, "main", "nano-01", "posebench")
        for value in values:
            add_run(database, record(index, value), MAIN, job)
            index += 1
    job = start_job(database, "main-throttled", MAIN, "main", "nano-01", "posebench")
    add_run(database, record(50, 99.0, valid=False), MAIN, job)  # never part of a baseline


def test_flagged_runs_are_left_out_and_never_a_baseline(database, tmp_path):
    stored_baseline(database)
    job = start_job(database, "job", BRANCH, "main", "nano-01", "posebench")
    runs = [record(100, 10.02), record(101, 9.98), record(102, 30.0, valid=False)]
    for run in runs:
        add_run(database, run, BRANCH, job)
    checks = gate_checks(ci_request(tmp_path, GateRule("steady_mean_ms")), database, runs, StudyDocument(), job)
    [check] = checks
    assert (check.status, check.verdict, check.reason) == ("decided", NO_CHANGE, "1 flagged run left out")
    assert check.decision.values == (10.02, 9.98) and check.decision.baseline == (10.01, 10.09, 9.915, 10.04, 9.985)
    assert check.decision.baseline_runs == 10
    assert job_outcome(checks, None) == "pass"


def test_a_cell_whose_every_run_is_flagged_is_reported_not_judged(database, tmp_path):
    stored_baseline(database)
    runs = [record(100, 30.0, valid=False), record(101, 31.0, valid=False)]
    checks = gate_checks(ci_request(tmp_path), database, runs, StudyDocument(), None)
    assert {c.metric for c in checks} == {"steady_mean_ms", "frames_per_s"}  # every metric with a direction
    assert all(c.status == "invalid" and c.decision is None for c in checks)
    assert checks[0].reason == "every run was flagged (the CPU clock dropped): not judged, and not a baseline"
    assert job_outcome(checks, None) == "pass"


def test_every_gated_metric_is_judged_and_a_missing_one_says_so(database, tmp_path):
    stored_baseline(database)
    runs = [record(100, 11.0), record(101, 11.1)]
    checks = gate_checks(ci_request(tmp_path, GateRule("steady_mean_ms", 0.05), GateRule("frames_per_s", 0.2),
                                    GateRule("energy_per_frame_mj")), database, runs, StudyDocument(), None)
    by_metric = {c.metric: c for c in checks}
    assert by_metric["steady_mean_ms"].verdict == REGRESSION
    assert by_metric["frames_per_s"].verdict == NO_CHANGE  # -9 %: clear, but under its 20 % threshold
    assert by_metric["energy_per_frame_mj"].status == "missing"
    assert job_outcome(checks, None) == "regression"


def test_the_baseline_is_the_same_board_kind_and_cell(database, tmp_path):
    stored_baseline(database)
    runs = [replace(record(i, v), kind_fingerprint="f" * 16) for i, v in ((100, 11.0), (101, 11.1))]
    [check, _] = gate_checks(ci_request(tmp_path), database, runs, StudyDocument(), None)
    assert check.verdict == "no baseline" and check.decision.baseline == ()
    other_cell = [replace(record(100, 11.0), cell="threads=4"), replace(record(101, 11.1), cell="threads=4")]
    document = StudyDocument.from_json({"cells": [{"label": "threads=4", "status": "ok"}]})
    [check, _] = gate_checks(ci_request(tmp_path), database, other_cell, document, None)
    assert check.verdict == "no baseline"
    same_cell = [record(100, 11.0), record(101, 11.1)]
    [check, _] = gate_checks(ci_request(tmp_path), database, same_cell, StudyDocument(), None)
    assert check.verdict == REGRESSION and len(check.decision.baseline) == 5  # the same kind and cell: judged


def test_a_baseline_is_the_newest_jobs_each_with_its_valid_runs(database):
    for number in range(12):
        job = start_job(database, f"job-{number}", MAIN, "main", "nano-01", "posebench")
        add_run(database, record(2 * number, 10.0 + number), MAIN, job)
        add_run(database, record(2 * number + 1, 10.5 + number), MAIN, job)
    found = baseline(database, Series("posebench"), "steady_mean_ms", "main", 10)
    assert [job.values for job in found] == [(10.0 + n, 10.5 + n) for n in range(2, 12)]  # oldest first
    assert [job.key for job in found] == [f"job {n}" for n in range(3, 13)]
    newest = found[-1].points[0].job_id
    assert [j.values for j in baseline(database, Series("posebench"), "steady_mean_ms", "main", 3,
                                       exclude_jobs=[newest])] == [(18.0, 18.5), (19.0, 19.5), (20.0, 20.5)]
    # runs stored outside a CI job: a study folder's runs are one job, a lone run its own
    for index, folder in ((40, "/runs/study-a/r1"), (41, "/runs/study-a/r2"), (42, None)):
        run = replace(record(index, 30.0 + index), study="posebench" if folder else None, folder=folder or "/lone")
        add_run(database, run, MAIN)
    latest = baseline(database, Series("posebench"), "steady_mean_ms", "main", 2)
    assert [(job.key, job.values) for job in latest] == [("folder /runs/study-a", (70.0, 71.0)),
                                                         ("run run-42", (72.0,))]


def test_a_cell_that_measured_nothing_fails_the_job(database, tmp_path):
    document = StudyDocument.from_json({"cells": [{"label": "", "status": "failed",
                                                   "reason": "the app exited with status 3"}]})
    failed = replace(record(100, 10.0), status="failed", valid=False, metrics={})
    checks = gate_checks(ci_request(tmp_path, GateRule("steady_mean_ms")), database, [failed], document, None)
    assert [(c.metric, c.status, c.reason) for c in checks] == [
        ("steady_mean_ms", "failed", "the app exited with status 3")]
    assert job_outcome(checks, None) == "failed"
    nothing = gate_checks(ci_request(tmp_path), database, [], document, None)
    assert [(c.metric, c.status) for c in nothing] == [("run", "failed")]
