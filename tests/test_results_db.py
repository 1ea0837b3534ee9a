"""The results database on both backends for real: SQLite files and a PostgreSQL server of the session's own.
Migrations from the first version on, runs in and out, baselines, history, and concurrent writers."""
from __future__ import annotations

import json
import multiprocessing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import inspect

from orchestrator.database.connection import (
    HEAD_REVISION,
    downgrade,
    open_database,
    revisions,
    schema_revision,
    upgrade,
)
from orchestrator.database.schema import metadata
from orchestrator.documents.run_sections import Flag
from orchestrator.errors import ResultsDatabaseError
from orchestrator.results.records import Metric, Provenance, RunRecord, folder_records, provenance_from
from orchestrator.results.store import Series, add_run, baseline, count_runs, finish_job, history, list_runs, start_job

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)
NANO_KIND = "a1b2c3d4e5f60718"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return request.getfixturevalue("postgres").new_database()


def record(index: int, value: float, *, valid: bool = True, app: str = "posebench", cell: str = "",
           kind: str = NANO_KIND, started: datetime | None = None, target: str = "nano-01") -> RunRecord:
    return RunRecord(
        uid=f"uid-{app}-{cell}-{kind}-{index}", run_id=f"run-{index}",
        started_at=started or T0 + timedelta(hours=index),
        target=target, board_kind="NVIDIA Jetson Nano Developer Kit", kind_fingerprint=kind,
        software_fingerprint="s" * 16, app=app, status="ok", valid=valid,
        flags=[] if valid else [Flag(code="clocks_dropped", what="the CPU clock dropped")], folder=f"/runs/{index}",
        cell=cell, metrics={"steady_mean_ms": Metric(value, "ms", "lower"),
                            "frames_per_s": Metric(1000 / value, "frames/s", "higher")})


MAIN = Provenance("1" * 40, "main")


def test_migrations_build_the_schema_the_code_describes_from_the_first_version_on(db_url):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    database = open_database(db_url, migrate=False)
    try:
        steps = revisions()
        assert steps[0] == "0001" and steps[-1] == HEAD_REVISION  # the revision a database is opened at
        for revision in steps:  # one version at a time, as a database made long ago would go
            upgrade(database, revision)
            with database.engine.connect() as connection:
                assert schema_revision(connection) == revision
        with database.engine.connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        tables = set(inspect(database.engine).get_table_names())
        assert {"jobs", "runs", "metrics", "alembic_version"} <= tables
        assert add_run(database, record(1, 10.0), MAIN)
        downgrade(database, "base")
        assert set(inspect(database.engine).get_table_names()) <= {"alembic_version"}
        upgrade(database)
        assert count_runs(database) == 0
    finally:
        database.close()


def test_runs_go_in_once_and_come_out_with_their_figures(db_url):
    database = open_database(db_url)
    try:
        assert add_run(database, record(1, 10.0), MAIN)
        assert not add_run(database, record(1, 99.0), MAIN)  # the same run again: left as it was
        assert add_run(database, record(2, 11.0, valid=False), Provenance("2" * 40, "feature"))
        assert add_run(database, record(3, 12.0, app="other", target="orin-01"), MAIN)
        assert count_runs(database) == 3
        newest = list_runs(database)
        assert [r["run_id"] for r in newest] == ["run-3", "run-2", "run-1"]
        first = newest[-1]
        assert first["metrics"] == {"steady_mean_ms": 10.0, "frames_per_s": 100.0}
        assert (first["git_commit"], first["git_branch"], first["valid"], first["flags"]) == \
            ("1" * 40, "main", True, [])
        assert first["started_at"] == T0 + timedelta(hours=1)
        assert newest[1]["flags"][0]["code"] == "clocks_dropped" and newest[1]["valid"] is False
        assert [r["run_id"] for r in list_runs(database, app="posebench")] == ["run-2", "run-1"]
        assert [r["run_id"] for r in list_runs(database, target="orin-01")] == ["run-3"]
        assert [r["run_id"] for r in list_runs(database, since=T0 + timedelta(hours=2))] == ["run-3", "run-2"]
    finally:
        database.close()


def test_a_baseline_is_the_newest_valid_jobs_of_the_base_of_the_same_board_kind(db_url):
    database = open_database(db_url)
    try:
        job = start_job(database, "job-1", MAIN, "main", "nano-01", "posebench")
        for index, value in enumerate([10.0, 10.2, 9.8, 10.1, 9.9, 10.0]):  # four lone runs, then a job of two
            add_run(database, record(index, value), MAIN, job if index >= 4 else None)
        add_run(database, record(10, 30.0, valid=False), MAIN)                        # flagged: never a baseline
        add_run(database, record(11, 20.0, kind="f" * 16), MAIN)                      # another board kind
        add_run(database, record(12, 15.0), Provenance("abcdef0123456789", "feature"))  # another branch
        add_run(database, record(13, 7.0, cell="threads=2"), MAIN)                    # another cell
        series = Series("posebench", cell="", board_kind=NANO_KIND)

        def values(base: str, jobs: int, exclude_job: int | None = None) -> list[tuple[float, ...]]:
            excluded = [exclude_job] if exclude_job is not None else []
            return [j.values for j in baseline(database, series, "steady_mean_ms", base, jobs, excluded)]
        assert values("main", 10) == [(10.0,), (10.2,), (9.8,), (10.1,), (9.9, 10.0)]
        assert values("main", 2) == [(10.1,), (9.9, 10.0)]
        # this job's own runs are left out of its baseline
        assert values("main", 10, exclude_job=job) == [(10.0,), (10.2,), (9.8,), (10.1,)]
        # a commit (7+ hex digits) or a run id; "last-good" once the job passed
        assert values("abcdef0", 10) == [(15.0,)]
        assert values("run-2", 10) == [(9.8,)]
        assert values("last-good", 10) == []
        finish_job(database, job, "pass")
        assert values("last-good", 10) == [(9.9, 10.0)]
        by_name = Series("posebench", cell="", board_kind="NVIDIA Jetson Nano Developer Kit")
        assert len(baseline(database, by_name, "steady_mean_ms", "main", 10)) == 5 + 1  # the other kind shares a name
        # a fleet's other boards' jobs of the same commit (ci --limit) are left out too
        sibling = start_job(database, "job-1b", MAIN, "main", "nano-02", "posebench")
        add_run(database, record(20, 10.3), MAIN, sibling)
        assert [j.values for j in baseline(database, series, "steady_mean_ms", "main", 10, [job, sibling])] == [
            (10.0,), (10.2,), (9.8,), (10.1,)]
        assert values("main", 10, exclude_job=job)[-1] == (10.3,)
    finally:
        database.close()


def test_history_is_the_newest_values_oldest_first_with_flagged_runs_marked(db_url):
    database = open_database(db_url)
    try:
        for index in range(30):
            add_run(database, record(index, 10.0 + index, valid=index % 7 != 3), MAIN)
        points = history(database, Series("posebench"), "steady_mean_ms", last=12)
        assert [p.value for p in points] == [10.0 + i for i in range(18, 30)]
        assert [p.valid for p in points] == [i % 7 != 3 for i in range(18, 30)]
        assert points[0].started_at == T0 + timedelta(hours=18) and points[0].branch == "main"
        assert history(database, Series("posebench"), "no_such_metric") == []
        assert len(history(database, Series("posebench"), "steady_mean_ms", branch="feature")) == 0
    finally:
        database.close()


def _write_runs(url: str, worker: int, count: int, shared: int) -> int:
    """One writer process: its own runs, and the shared ones every writer tries to store."""
    database = open_database(url)  # every writer opens a new database at once: one of them migrates it
    stored = 0
    try:
        for index in range(count):
            stored += add_run(database, record(1000 * worker + index, 10.0 + index), MAIN)
            if index < shared:
                stored += add_run(database, record(index, 5.0), MAIN)
    finally:
        database.close()
    return stored


def test_concurrent_writers_neither_corrupt_nor_lose_rows(db_url):
    workers, count, shared = 4, 25, 5
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        stored = pool.starmap(_write_runs, [(db_url, worker + 1, count, shared) for worker in range(workers)])
    assert sum(stored) == workers * count + shared  # each shared run stored by exactly one writer
    database = open_database(db_url)
    try:
        assert count_runs(database) == workers * count + shared
        rows = list_runs(database, limit=1000)
        assert all(len(row["metrics"]) == 2 for row in rows)
        assert sorted(row["run_id"] for row in rows if row["metrics"]["steady_mean_ms"] == 5.0) == \
            [f"run-{i}" for i in range(shared)]
    finally:
        database.close()


def test_a_database_out_of_reach_is_one_line_that_says_what_to_check(tmp_path, postgres):
    with pytest.raises(ResultsDatabaseError) as caught:
        open_database(postgres.url("no_such_database"))
    assert "cannot open the results database" in caught.value.one_line() and "check --db" in caught.value.one_line()
    with pytest.raises(ResultsDatabaseError, match="only SQLite and PostgreSQL"):
        open_database("mysql://user@host/db")
    (tmp_path / "file").write_text("")
    with pytest.raises(ResultsDatabaseError, match="cannot create the folder"):
        open_database(str(tmp_path / "file" / "results.db"))


def test_a_run_that_never_reached_its_board_is_not_a_record(tmp_path):
    """An unreachable board's run folder (what profile writes before it connects) has no board and no figure:
    it is not stored as a flagged run of nothing."""
    run = tmp_path / "20261101T080000Z-nano-es2gears"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({
        "run_id": run.name, "started_at": "2026-11-01T09:00:00+01:00", "status": "failed", "stage": "failed",
        "target": {"name": "nano-01"}, "app": {"name": "es2gears"},
        "error": {"type": "ConnectError", "message": "cannot reach nano-01", "exit_code": 4}}))
    assert folder_records(run) == [] and folder_records(tmp_path) == []


def test_a_run_folder_and_a_study_folder_become_records(tmp_path):
    run = tmp_path / "study" / "20261101T080000Z-nano-posebench"
    run.mkdir(parents=True)
    facts = {"board": {"model": "NVIDIA Jetson Nano Developer Kit", "is_jetson": True, "l4t": "32.7.4"},
             "system": {"arch": "aarch64", "os": "Ubuntu 18.04.6 LTS"}}
    run_json = {"run_id": run.name, "started_at": "2026-11-01T09:00:00+01:00", "status": "ok",
                "target": {"name": "nano-01"}, "app": {"name": "posebench", "parser": "tftrt-bench"},
                "facts": facts, "validity": {"flags": []},
                "study": {"name": "posebench-delegate", "variables": {"delegate": "none", "threads": 2}}}
    (run / "run.json").write_text(json.dumps(run_json))
    (run / "summary.json").write_text(json.dumps({"frames": {
        "first_ns": 250_000_000, "steady": {"mean_ns": 80_000_000, "p50_ns": 79_000_000, "p90_ns": 90_000_000}},
        "energy": {"median_mj": 412.5}}))
    (run / "app.stdout.log").write_text("First Inference : 250.1 ms\nInference : 81.25 ms\n")
    (tmp_path / "study" / "study.json").write_text(json.dumps({"study": "posebench-delegate", "cells": [
        {"label": "delegate=none, threads=2", "variables": {"delegate": "none", "threads": 2}, "runs": [run.name],
         "parser": "tftrt-bench"}]}))
    for folder in (run, tmp_path / "study"):
        (found,) = folder_records(folder)
        assert (found.run_id, found.target, found.app, found.study, found.cell) == \
            (run.name, "nano-01", "posebench", "posebench-delegate", "delegate=none, threads=2")
        assert found.started_at == datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)
        assert found.board_kind == "NVIDIA Jetson Nano Developer Kit" and found.valid
        assert found.variables_key == '{"delegate":"none","threads":2}'
        figures = {name: (m.value, m.unit, m.better) for name, m in found.metrics.items()}
        assert figures["steady_mean_ms"] == (80.0, "ms", "lower")
        assert figures["steady_p50_ms"] == (79.0, "ms", "lower")
        assert figures["first_frame_ms"] == (250.0, "ms", "lower")
        assert figures["energy_per_frame_mj"] == (412.5, "mJ", "lower")
        assert figures["frames_per_s"] == (12.5, "frames/s", "higher")
        assert figures["app.first_inference_ms"][0] == 250.1 and figures["app.inference_mean_ms"][0] == 81.25
    # a throttled run is stored, flagged, and not valid
    run_json["validity"] = {"flags": [{"code": "thermal_limit", "what": "a zone passed its trip point"}]}
    (run / "run.json").write_text(json.dumps(run_json))
    (flagged,) = folder_records(run)
    assert not flagged.valid and flagged.flags == [Flag(code="thermal_limit", what="a zone passed its trip point")]
    assert folder_records(tmp_path / "nothing") == []


@pytest.mark.parametrize("env, expected", [
    ({"GITHUB_SHA": "a" * 40, "GITHUB_REF_NAME": "main", "GITHUB_RUN_ID": "7", "GITHUB_REPOSITORY": "o/r",
      "GITHUB_SERVER_URL": "https://example.test"},
     Provenance("a" * 40, "main", None, "https://example.test/o/r/actions/runs/7")),
    ({"GITHUB_SHA": "b" * 40, "GITHUB_REF_NAME": "12/merge", "GITHUB_HEAD_REF": "speedup", "GITHUB_BASE_REF": "main"},
     Provenance("b" * 40, "speedup", "main", None)),
    ({"CI_COMMIT_SHA": "c" * 40, "CI_COMMIT_REF_NAME": "feature", "CI_DEFAULT_BRANCH": "trunk",
      "CI_JOB_URL": "https://gitlab.example/j/1"}, Provenance("c" * 40, "feature", "trunk", "https://gitlab.example/j/1")),
    ({}, Provenance("d" * 40, "topic")),
])
def test_the_commit_and_branch_come_from_the_ci_system_else_from_git(env, expected):
    assert provenance_from(env, {"commit": "d" * 40, "branch": "topic"}) == expected


def test_git_head_reads_the_working_tree(tmp_path):
    import subprocess

    from orchestrator.results.records import git_head
    assert git_head(tmp_path) == {}
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert git_head(tmp_path) == {"commit": head.strip(), "branch": "trunk"}


def test_the_default_database_is_a_file_in_the_user_data_folder(tmp_path, monkeypatch):
    from orchestrator.database.connection import database_url
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert database_url(None) == f"sqlite:///{tmp_path / 'orchestrate' / 'results.db'}"
    monkeypatch.setenv("ORCHESTRATE_DB", "postgresql://ci@db/results")
    assert database_url(None) == "postgresql+psycopg://ci@db/results"
    assert database_url("runs.db") == f"sqlite:///{Path('runs.db').resolve()}"
