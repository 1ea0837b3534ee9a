"""The answers across runs: which runs the root holds, two runs compared (with the gate's verdict where the results
database holds the baseline), and a metric's history over commits with the gate's decisions. Each value says which
document field or database row it came from.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..database.connection import open_database
from ..documents.run import read_run_or_none
from ..documents.study import StudyCell, read_study_or_none
from ..documents.summary import read_summary
from ..errors import OrchestratorError, UsageError
from ..figures.measured import run_flags
from ..results.compare_gate import compare_with_gate
from ..results.store import Series, baseline, history, metric_unit
from ..results.trend import replay
from ..stats.estimates import compare_rounds
from ..stats.gate import BASELINE_JOBS, decide, default_threshold
from ..targets.facts import board_kind
from .answers import frames_headline, paged
from .root import Root
from .sql import literal

# compare's values and the summary.json fields they are read from
COMPARED_FIELDS = {"first_frame_ns": "frames.first_ns", "steady_mean_ns": "frames.steady.mean_ns",
                   "p50_ns": "frames.steady.p50_ns", "p90_ns": "frames.steady.p90_ns",
                   "p99_ns": "frames.steady.p99_ns", "frames_per_s": "1e9 / frames.steady.mean_ns",
                   "frames": "frames.count", "cores_busy": "cores (their busy fractions summed)"}


def runs_answer(root: Root, app: str | None = None, target: str | None = None, board: str | None = None,
                since: str | None = None, verdict: str | None = None, valid: bool | None = None,
                kind: str | None = None, offset: int = 0, limit: int = 50) -> dict[str, Any]:
    """The runs, studies, fleets and reports under the root, newest first, those the filters keep."""
    paged(offset, limit)
    after = _moment(since) if since else None
    found = []
    for what, path in root.folders():
        entry: dict[str, Any] = {"name": root.name_of(path), "kind": what}
        if what == "run":
            entry.update(_run_entry(path))
        elif what == "study":
            study = _quietly(read_study_or_none, path)
            entry.update({"study": study.name if study else None, "runs": len(study.run_names) if study else None})
        if kind and what != kind:
            continue
        if app and entry.get("app") != app and entry.get("study") != app:
            continue
        if target and entry.get("target") != target:
            continue
        if board and board.lower() not in str(entry.get("board_kind", "")).lower():
            continue
        if verdict and entry.get("verdict") != verdict:
            continue
        if valid is not None and entry.get("valid") is not valid:
            continue
        if after and (not entry.get("started_at") or _moment(entry["started_at"]) < after):
            continue
        found.append(entry)
    found.sort(key=lambda e: e.get("started_at") or "", reverse=True)
    shown = found[offset:offset + limit]
    return {"root": str(root.path), "entries": shown, "total": len(found), "offset": offset,
            "after_this_page": max(0, len(found) - offset - len(shown)),
            "evidence": {"document": "run.json and summary.json of each run folder"}}


def _quietly(read: Any, path: Any) -> Any:
    try:
        return read(path)
    except OrchestratorError:
        return None


def _run_entry(path: Any) -> dict[str, Any]:
    run = _quietly(read_run_or_none, path)
    summary = _quietly(read_summary, path)
    entry: dict[str, Any] = {}
    if run is not None:
        flags = run_flags(run)
        entry.update({"app": run.app_name, "target": run.target.name, "board_kind": board_kind(run.facts),
                      "started_at": run.started_at, "status": run.status, "study": run.study_name,
                      "valid": run.status == "ok" and not flags, "flags": [f.code for f in flags]})
    if summary is not None:
        steady = summary.steady
        entry.update({"verdict": summary.verdict_kind, "unit": summary.unit,
                      "steady_mean_ns": steady.mean_ns if steady else None})
    return entry


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"'{text}' is not a date", "give a date as 2026-12-01 or 2026-12-01T10:00") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def compare_answer(root: Root, names: list[str], labels: list[str] | None = None,
                   db: str | None = None) -> dict[str, Any]:
    """Two (or more) runs compared as `orchestrate compare` compares them: each metric's values and changes, the
    three-way verdict on the steady frames as distributions, and the gate's verdict from the results database."""
    if len(names) < 2:
        raise UsageError("compare needs two runs", "give the baseline run first, then the run to compare")
    sources = [root.resolve(name) for name in names]
    document = compare_with_gate(sources, labels, None, None, db)
    variants = document["variants"]
    evidence = []
    for name in names:
        opened = root.run(name)
        headline = frames_headline(opened)
        evidence.append({"run": opened.name, "fields": {k: {"document": f"{opened.name}/summary.json", "field": v}
                                                        for k, v in COMPARED_FIELDS.items()},
                         "sql": (headline or {}).get("evidence", {}).get("sql")})
    return {"runs": [v["label"] for v in variants], "baseline": document["baseline"],
            "metrics": document["metrics"], "share_changes": document["share_changes"],
            "work": document["work"], "gate": document["gate"], "evidence": evidence,
            "verdicts": [v.get("verdict") for v in variants]}


def history_answer(db: str | None, app: str, metric: str = "steady_mean_ms", board: str | None = None,
                   cell: str | None = None, branch: str | None = None, last: int = 50) -> dict[str, Any]:
    """A metric's values over the runs of an app (or study) on a kind of board, oldest first, each job judged against
    the valid jobs before it as `results history --judge` judges them (on every branch: give ``branch`` for one);
    each value with the SQL that reads it from the database."""
    paged(0, last)
    database = open_database(db, read_only=True)
    try:
        points = history(database, Series(app, cell=cell, board_kind=board), metric, last, branch)
        unit, better = metric_unit(database, metric)
        judged = replay(points, better, default_threshold(metric), metric=metric)
        where = database.describe()
    finally:
        database.close()
    if not points:
        raise UsageError(f"no runs of '{app}' with {metric} in {where}" + (f" on '{board}'" if board else ""),
                         "call 'runs' for the apps there, or import runs with 'orchestrate results import'")
    return {"app": app, "metric": metric, "unit": unit, "better": better, "database": where,
            "points": [{**t.as_json(), "evidence": {"sql": stored_value_sql(t.point.run_id, metric)}} for t in judged]}


def stored_value_sql(run_id: str, metric: str) -> str:
    """The statement that reads a stored run's value of a metric from the results database."""
    return (f"SELECT m.value FROM metrics AS m JOIN runs AS r ON r.id = m.run_id WHERE r.run_id = {literal(run_id)} "
            f"AND m.name = {literal(metric)}")


def compare_cells(root: Root, study: str, cells: list[str]) -> dict[str, Any]:
    """Two cells of a study (by index or label) on each metric both have: their medians and 95 % intervals from
    study.json, and the rounds compared as the study compares a cell with the first (stats.estimates)."""
    folder = root.resolve(study)
    document = _quietly(read_study_or_none, folder)
    if document is None:
        raise UsageError(f"'{study}' is not a study folder (no readable study.json)", "call 'runs' with kind study")
    if len(cells) != 2:
        raise UsageError("compare needs two cells", "give the base cell first, then the other (index or label)")
    chosen = [_cell(document.cells, given, study) for given in cells]
    base, other = chosen
    metrics = []
    for name, figures in (base.metrics or {}).items():
        theirs = other.metric(name)
        if theirs is None:
            continue
        mine, paired = figures.paired_with(theirs)
        difference = compare_rounds(mine, paired, figures.faster_when) if mine else None
        where = f"{root.name_of(folder)}/study.json"
        metrics.append({"metric": name, "unit": figures.unit, "values": [figures.median, theirs.median],
                        "ci95": [figures.ci95, theirs.ci95], "rounds": len(mine),
                        "difference": None if difference is None else difference.as_json(),
                        "evidence": [{"document": where, "field": f"cells[{c.index}].metrics.{name}"}
                                     for c in chosen]})
    return {"study": root.name_of(folder), "cells": [c.label for c in chosen], "metrics": metrics}


def _cell(cells: list[StudyCell], given: str, study: str) -> StudyCell:
    found = [c for c in cells if given == c.label or (given.isdecimal() and int(given) == c.index)]
    if not found:
        raise UsageError(f"'{study}' has no cell '{given}'", f"give a cell's index (0 to {len(cells) - 1}) or label")
    return found[0]


def compare_commits(db: str | None, app: str, commits: list[str], metric: str = "steady_mean_ms",
                    board: str | None = None, cell: str | None = None) -> dict[str, Any]:
    """The runs of one commit against those of another (each a prefix of 7 hex digits or more) in the results
    database, judged as the gate judges a job against its baseline jobs: the first commit's jobs are the baseline."""
    if len(commits) != 2 or any(len(c) < 7 for c in commits):
        raise UsageError("compare needs two commits of 7 hex digits or more", "give the base commit first")
    database = open_database(db, read_only=True)
    try:
        series = Series(app, cell=cell, board_kind=board)
        base_jobs, new_jobs = (baseline(database, series, metric, commit, BASELINE_JOBS) for commit in commits)
        unit, better = metric_unit(database, metric)
        where = database.describe()
    finally:
        database.close()
    for commit, jobs in zip(commits, (base_jobs, new_jobs)):
        if not jobs:
            raise UsageError(f"no valid run of '{app}' at {commit} with {metric} in {where}",
                             "call 'history' for the commits stored")
    values = [value for job in new_jobs for value in job.values]
    decision = decide(metric, values, [job.values for job in base_jobs], better, unit, default_threshold(metric))
    runs = [point for jobs in (base_jobs, new_jobs) for job in jobs for point in job.points]
    return {"app": app, "metric": metric, "unit": unit, "commits": commits, "database": where,
            "verdict": decision.verdict, "figure": decision.figure, "baseline_figure": decision.baseline_figure,
            "change": decision.change, "p_value": decision.p_value, "band": decision.band, "note": decision.note,
            "evidence": [{"run": p.run_id, "commit": p.commit, "value": p.value,
                          "sql": stored_value_sql(p.run_id, metric)} for p in runs]}
