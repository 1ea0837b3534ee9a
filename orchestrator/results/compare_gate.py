"""`compare` with the gate's verdict: each compared run judged as `orchestrate ci` judges a job, against the baseline
run's jobs in the results database (the same app or study, cell and board kind, on the baseline run's branch, up
to and with the baseline run's own job), where at least MIN_JOBS of them are stored. Two runs alone cannot tell a
change from the noise between jobs (the weather of the day); those jobs can.

A compared run that is stored is judged by its job's valid runs (a CI job's, or a study folder's); a run folder that
is not stored, by its own figure (a report file has no run's figures: it is not judged). The baseline run must be
stored. Without a database (none given, and none at the default place) there is no gate verdict.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..database.connection import Database, default_location, open_database
from ..errors import ResultsDatabaseError
from ..report import compare_runs
from ..stats.gate import BASELINE_JOBS, MIN_JOBS, decide
from .records import RunRecord, run_record
from .store import Job, Point, Series, history, job_points, jobs_of, stored_point

GATE_METRICS = ("steady_mean_ms", "first_frame_ms")  # compare's headline figures, as the gate names them
HISTORY_POINTS = 5000  # a series' newest values read: more than BASELINE_JOBS jobs of --repeat's bound hold


def compare_with_gate(sources: list[Path], labels: list[str] | None = None, nsys_hint: str | None = None,
                      page_dir: Path | None = None, db: str | None = None) -> dict:
    """The comparison document of the runs (report.compare_runs), with ``gate``: the gate's verdicts, or why there
    are none. ``db``: the results database (None: $ORCHESTRATE_DB's, else the default file when it exists)."""
    document = compare_runs(sources, labels, nsys_hint, page_dir)
    names = [variant["label"] for variant in document["variants"]]
    database = _database(db)
    if database is None:
        document["gate"] = {"verdicts": [], "database": None, "reason": "no results database: the gate's verdict "
                            "needs the baseline run's jobs stored (orchestrate ci, or results import)"}
        return document
    try:
        document["gate"] = {**gate_verdicts(database, sources, names), "database": database.describe()}
    finally:
        database.close()
    return document


def _database(db: str | None) -> Database | None:
    """The database --db names (an error when it cannot be read), else the default one when there is one."""
    if db is not None:
        return open_database(db, read_only=True)
    if not os.environ.get("ORCHESTRATE_DB") and not default_location().is_file():
        return None
    try:
        return open_database(None, read_only=True)
    except ResultsDatabaseError:
        return None  # a default database that cannot be read keeps no comparison from being made


def gate_verdicts(database: Database, sources: list[Path], labels: list[str], metrics: tuple[str, ...] = GATE_METRICS,
                  jobs: int = BASELINE_JOBS, min_jobs: int = MIN_JOBS) -> dict[str, Any]:
    """Per compared run after the first and per metric both have: the gate's decision against the baseline run's
    jobs; ``reason`` says why there is none when the baseline run is not stored."""
    base = run_record(sources[0]) if sources[0].is_dir() else None
    if base is None:
        return {"verdicts": [], "reason": f"{labels[0]} is not a run folder: the gate judges runs against a run's jobs"}
    series = series_of(base)
    stored = {metric: point for metric in metrics if metric in base.metrics
              if (point := stored_point(database, series, metric, base.uid)) is not None}
    if not stored:
        return {"verdicts": [], "reason": f"{labels[0]} is not in the results database {database.describe()}: store "
                                          "it (orchestrate results import) for the gate's verdict"}
    verdicts: list[dict[str, Any]] = []
    for label, source in zip(labels[1:], sources[1:]):
        record = run_record(source) if source.is_dir() else None
        for metric, point in stored.items():
            if record is None or metric not in record.metrics:
                continue
            values, judged = _judged(database, record, metric)
            if judged == point.job:
                verdicts.append({"label": label, "metric": metric, "verdict": None,
                                 "note": f"{label} is of the baseline run's own job: the gate judges a job against "
                                         "others"})
                continue
            found = baseline_jobs(database, series, metric, point, judged, jobs)
            figure = record.metrics[metric]
            decision = decide(metric, values, [job.values for job in found], figure.better or "lower", figure.unit,
                              min_jobs=min_jobs)
            verdicts.append({"label": label, "metric": metric, "verdict": decision.verdict, "note": decision.note,
                             "figure": decision.figure, "baseline_figure": decision.baseline_figure,
                             "change": decision.change, "runs": len(decision.values), "jobs": len(found),
                             "baseline_runs": decision.baseline_runs, "unit": decision.unit})
    return {"verdicts": verdicts, "reason": None, "branch": next(iter(stored.values())).branch}


def baseline_jobs(database: Database, series: Series, metric: str, base: Point, judged: str | None,
                  jobs: int) -> list[Job]:
    """The newest ``jobs`` jobs of valid runs the baseline run's value is judged by: its own job whole, and the
    jobs on its branch that began no later than it, not the judged run's; oldest first."""
    own = job_points(database, series, metric, base)
    began = min((p.started_at for p in own), default=base.started_at)
    earlier = [p for p in history(database, series, metric, HISTORY_POINTS, branch=base.branch, until=base.started_at)
               if p.job != base.job]
    found = jobs_of(p for p in sorted(earlier + own, key=lambda p: p.started_at) if p.valid and p.job != judged)
    return [job for job in found if job.key == base.job or job.points[0].started_at <= began][-jobs:]


def series_of(record: RunRecord) -> Series:
    """The runs a record's baseline is made of: its app (or study), cell and board kind, as the gate's."""
    return Series(record.study or record.app, cell=record.cell, board_kind=record.kind_fingerprint,
                  variables=record.variables_key)


def _judged(database: Database, record: RunRecord, metric: str) -> tuple[list[float], str | None]:
    """The judged run's values (its job's valid runs when it is stored, else its own figure) and its job."""
    series = series_of(record)
    mine = stored_point(database, series, metric, record.uid)
    if mine is None:
        return [record.metrics[metric].value], None
    values = [p.value for p in job_points(database, series, metric, mine) if p.valid]
    return values or [record.metrics[metric].value], mine.job
