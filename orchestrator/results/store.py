"""Reading and writing the results database: runs in (one transaction each, a run stored once however often
it is imported), runs out by app, target and time, a metric's history, and the runs a baseline is made of.
Backend-neutral SQLAlchemy Core: the same calls on SQLite and PostgreSQL."""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Select, and_, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from ..database.connection import Database, _first_line
from ..database.schema import jobs as jobs_table
from ..database.schema import metrics, runs
from ..errors import ResultsDatabaseError
from .records import Provenance, RunRecord

PASSING_OUTCOMES = ("pass", "no-baseline", "unsure")
RUNS_PER_JOB_READ = 1000  # a baseline reads at most this many runs per job it wants (--repeat's bound)


@dataclass(frozen=True)
class Series:
    """Which runs a history or a baseline is made of: one app or study (and cell) on one kind of board."""

    app: str                            # the app's name, or the study's
    cell: str | None = None             # a study cell's label; None: every cell
    board_kind: str | None = None       # a board kind's name or its kind fingerprint; None: every kind
    variables: str | None = None        # a cell's variables key (records.variables_key); None: any


@dataclass(frozen=True)
class Point:
    run_id: str
    started_at: datetime
    value: float
    valid: bool
    status: str
    target: str
    board_kind: str
    cell: str
    commit: str | None
    branch: str | None
    job_id: int | None
    job: str = ""       # the job this run belongs to (job_key): the unit of noise
    uid: str = ""       # records.RunRecord.uid
    folder: str | None = None   # where its run folder was when it was stored

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": self.started_at.isoformat(), "value": self.value,
                "valid": self.valid, "status": self.status, "target": self.target, "board_kind": self.board_kind,
                "cell": self.cell, "commit": self.commit, "branch": self.branch, "job_id": self.job_id,
                "job": self.job}


@dataclass(frozen=True)
class Job:
    """A baseline job: the valid values of one job's runs, oldest first."""

    key: str
    values: tuple[float, ...]
    points: tuple[Point, ...]


def job_key(job_id: int | None, study: str | None, folder: str | None, run_id: str) -> str:
    """Which runs share one job's weather: a CI job's runs; outside one, the runs of one study folder
    (imported together); else each run alone."""
    if job_id is not None:
        return f"job {job_id}"
    if study and folder:
        return f"folder {folder.rstrip('/').rsplit('/', 1)[0]}"
    return f"run {run_id}"


def jobs_of(points: Iterable[Point]) -> list[Job]:
    """Points grouped by job, in the order each job first appears."""
    groups: dict[str, list[Point]] = {}
    for point in points:
        groups.setdefault(point.job, []).append(point)
    return [Job(key, tuple(p.value for p in found), tuple(found)) for key, found in groups.items()]


def _guard(what: str, database: Database) -> ResultsDatabaseError:
    return ResultsDatabaseError(f"cannot {what} the results database {database.describe()}",
                                "check that it is reachable and writable")


def add_run(database: Database, record: RunRecord, provenance: Provenance, job_id: int | None = None) -> bool:
    """Store one run with its figures in one transaction; False when it was stored before."""
    row = {
        "uid": record.uid, "run_id": record.run_id, "started_at": record.started_at,
        "recorded_at": datetime.now(timezone.utc), "target": record.target, "board_kind": record.board_kind,
        "kind_fingerprint": record.kind_fingerprint, "software_fingerprint": record.software_fingerprint,
        "app": record.app, "study": record.study, "cell": record.cell, "variables": record.variables_key,
        "git_commit": provenance.commit, "git_branch": provenance.branch, "job_id": job_id,
        "status": record.status, "valid": record.valid, "folder": record.folder,
        "flags": json.dumps([flag.as_json() for flag in record.flags]),
    }
    try:
        with database.engine.begin() as connection:
            run_key = connection.execute(insert(runs).values(**row).returning(runs.c.id)).scalar_one()
            if record.metrics:
                connection.execute(insert(metrics), [
                    {"run_id": run_key, "name": name, "value": m.value, "unit": m.unit, "better": m.better}
                    for name, m in record.metrics.items()])
    except IntegrityError:
        return False  # the same uid: this run is in already (its transaction rolled back whole)
    except SQLAlchemyError as exc:
        raise ResultsDatabaseError(f"cannot store {record.run_id} in {database.describe()}: {_first_line(exc)}",
                                   "check that the database is reachable and writable") from None
    return True


def add_runs(database: Database, records: Iterable[RunRecord], provenance: Provenance,
             job_id: int | None = None) -> tuple[int, int]:
    """(stored, already there)."""
    stored = skipped = 0
    for record in records:
        if add_run(database, record, provenance, job_id):
            stored += 1
        else:
            skipped += 1
    return stored, skipped


def start_job(database: Database, uid: str, provenance: Provenance, base: str, target: str, subject: str) -> int:
    try:
        with database.engine.begin() as connection:
            return int(connection.execute(insert(jobs_table).values(
                uid=uid, started_at=datetime.now(timezone.utc), git_commit=provenance.commit,
                git_branch=provenance.branch, base=base, target=target, subject=subject,
                url=provenance.url).returning(jobs_table.c.id)).scalar_one())
    except SQLAlchemyError:
        raise _guard("write to", database) from None


def finish_job(database: Database, job_id: int, outcome: str) -> None:
    try:
        with database.engine.begin() as connection:
            connection.execute(update(jobs_table).where(jobs_table.c.id == job_id).values(
                outcome=outcome, finished_at=datetime.now(timezone.utc)))
    except SQLAlchemyError:
        raise _guard("write to", database) from None


def _series_filter(series: Series) -> ColumnElement[bool]:
    conditions = [or_(runs.c.app == series.app, runs.c.study == series.app)]
    if series.cell is not None:
        conditions.append(runs.c.cell == series.cell)
    if series.variables is not None:
        conditions.append(runs.c.variables == series.variables)
    if series.board_kind:
        conditions.append(or_(runs.c.board_kind == series.board_kind, runs.c.kind_fingerprint == series.board_kind))
    return and_(*conditions)


POINT_COLUMNS = (runs.c.uid, runs.c.run_id, runs.c.started_at, runs.c.valid, runs.c.status, runs.c.target,
                 runs.c.board_kind, runs.c.cell, runs.c.git_commit, runs.c.git_branch, runs.c.job_id, runs.c.study,
                 runs.c.folder)


def _series_points(series: Series, metric: str, newest: int) -> Select[Any]:
    """The series' newest values of the metric, newest first, with what a Point carries."""
    return (select(*POINT_COLUMNS, metrics.c.value).join(metrics, metrics.c.run_id == runs.c.id)
            .where(_series_filter(series), metrics.c.name == metric)
            .order_by(runs.c.started_at.desc(), runs.c.id.desc()).limit(newest))


def _point(r: Any) -> Point:
    return Point(r.run_id, _aware(r.started_at), r.value, bool(r.valid), r.status, r.target, r.board_kind, r.cell,
                 r.git_commit, r.git_branch, r.job_id, job_key(r.job_id, r.study, r.folder, r.run_id), r.uid, r.folder)


def _oldest_first(database: Database, query: Select[Any]) -> list[Point]:
    return [_point(r) for r in reversed(read_rows(database, query))]


def history(database: Database, series: Series, metric: str, last: int = 500,
            branch: str | None = None, until: datetime | None = None) -> list[Point]:
    """The metric's newest ``last`` values for the series (invalid runs too, marked), oldest first; ``until``:
    of the runs started then or before."""
    query = _series_points(series, metric, last)
    if branch:
        query = query.where(runs.c.git_branch == branch)
    if until is not None:
        query = query.where(runs.c.started_at <= until)
    return _oldest_first(database, query)


def stored_point(database: Database, series: Series, metric: str, uid: str) -> Point | None:
    """The series' value of the metric in the run stored as ``uid`` (records.RunRecord.uid), or None."""
    found = _oldest_first(database, _series_points(series, metric, 1).where(runs.c.uid == uid))
    return found[0] if found else None


def job_points(database: Database, series: Series, metric: str, point: Point) -> list[Point]:
    """The series' values of the metric in the job ``point`` is of (job_key's unit), oldest first."""
    query = _series_points(series, metric, RUNS_PER_JOB_READ)
    if point.job_id is not None:
        query = query.where(runs.c.job_id == point.job_id)
    elif point.job.startswith("folder "):  # a study folder's runs, imported together
        query = query.where(runs.c.job_id.is_(None), runs.c.study.is_not(None),
                            runs.c.folder.startswith(point.job[len("folder "):] + "/", autoescape=True))
    else:
        query = query.where(runs.c.run_id == point.run_id)
    return [found for found in _oldest_first(database, query) if found.job == point.job]


def baseline(database: Database, series: Series, metric: str, base: str, jobs: int,
             exclude_jobs: Collection[int] = ()) -> list[Job]:
    """The valid jobs a new job is compared with, the newest ``jobs`` of them, oldest first. ``base`` is a
    branch name (its runs), "last-good" (runs of jobs whose gate passed, any branch), or a run id or commit
    (that run, or the commit's runs: a prefix of 7 or more hex digits). ``exclude_jobs``: the job being judged,
    and the jobs of the other boards of its fleet (the same commit)."""
    query = _series_points(series, metric, 0).where(runs.c.valid.is_(True))
    if exclude_jobs:
        query = query.where(or_(runs.c.job_id.is_(None), runs.c.job_id.not_in(list(exclude_jobs))))
    if base == "last-good":
        query = query.join(jobs_table, jobs_table.c.id == runs.c.job_id).where(
            jobs_table.c.outcome.in_(PASSING_OUTCOMES))
    else:
        by_name = or_(runs.c.run_id == base, runs.c.git_commit.startswith(base, autoescape=True)) \
            if len(base) >= 7 else runs.c.run_id == base
        query = query.where(or_(runs.c.git_branch == base, by_name))
    per_job = 4  # runs read per job wanted: more when the jobs hold more runs
    while True:
        points = _oldest_first(database, query.limit(jobs * per_job))
        newest = [job.key for job in jobs_of(reversed(points))]
        cut = len(points) == jobs * per_job  # the oldest job read may be cut short
        if not cut or len(newest) > jobs or per_job >= RUNS_PER_JOB_READ:
            break
        per_job = min(per_job * 4, RUNS_PER_JOB_READ)
    if cut and len(newest) > 1:
        newest = newest[:-1]
    chosen = set(newest[:jobs])
    return jobs_of(p for p in points if p.job in chosen)


def list_runs(database: Database, app: str | None = None, target: str | None = None, since: datetime | None = None,
              limit: int = 100) -> list[dict[str, Any]]:
    """The newest runs (newest first) with their headline figures."""
    query = select(runs).order_by(runs.c.started_at.desc(), runs.c.id.desc()).limit(limit)
    if app:
        query = query.where(runs.c.app == app)
    if target:
        query = query.where(runs.c.target == target)
    if since:
        query = query.where(runs.c.started_at >= since)
    found = [dict(row._mapping) for row in read_rows(database, query)]
    figures: defaultdict[int, dict[str, float]] = defaultdict(dict)  # a run without figures has none
    if found:
        wanted = select(metrics.c.run_id, metrics.c.name, metrics.c.value).where(
            metrics.c.run_id.in_([row["id"] for row in found]))
        for row in read_rows(database, wanted):
            figures[row.run_id][row.name] = row.value
    for row in found:
        row["started_at"], row["recorded_at"] = _aware(row["started_at"]), _aware(row["recorded_at"])
        row["metrics"] = figures[row["id"]]
        row["flags"] = json.loads(row["flags"] or "[]")
    return found


def metric_unit(database: Database, metric: str) -> tuple[str, str]:
    """The unit the metric was stored with, and which way is better ("lower" when it says neither)."""
    rows = read_rows(database, select(metrics.c.unit, metrics.c.better).where(metrics.c.name == metric).limit(1))
    return (rows[0].unit, rows[0].better or "lower") if rows else ("", "lower")


@dataclass(frozen=True)
class SeriesKey:
    """One history's runs: an app's outside a study (cell ""), or a study cell's, on one board kind."""
    subject: str        # the app's name, or the study's
    cell: str
    board_kind: str
    runs: int           # how many it holds
    newest: int         # the largest row id among them: it grows when a run is stored


def series_keys(database: Database) -> list[SeriesKey]:
    """Every history the database holds, by subject, cell and board kind."""
    subject = func.coalesce(runs.c.study, runs.c.app)
    query = (select(subject.label("subject"), runs.c.cell, runs.c.board_kind, func.count().label("n"),
                    func.max(runs.c.id).label("newest"))
             .group_by(subject, runs.c.cell, runs.c.board_kind).order_by(subject, runs.c.cell, runs.c.board_kind))
    return [SeriesKey(r.subject, r.cell, r.board_kind, int(r.n), int(r.newest)) for r in read_rows(database, query)]


def series_history(database: Database, key: SeriesKey) -> dict[str, list[Point]]:
    """Every metric's values over the history's runs (invalid runs too, marked), oldest first, in one query."""
    subject = func.coalesce(runs.c.study, runs.c.app)
    query = (select(*POINT_COLUMNS, metrics.c.name, metrics.c.value).join(metrics, metrics.c.run_id == runs.c.id)
             .where(subject == key.subject, runs.c.cell == key.cell, runs.c.board_kind == key.board_kind)
             .order_by(runs.c.started_at, runs.c.id))
    found: dict[str, list[Point]] = {}
    for row in read_rows(database, query):
        found.setdefault(row.name, []).append(_point(row))
    return found


def job_bases(database: Database) -> dict[int, str]:
    """What each CI job compared with (a branch, "last-good", or a run or commit), by its id."""
    rows = read_rows(database, select(jobs_table.c.id, jobs_table.c.base).where(jobs_table.c.base.is_not(None)))
    return {int(row.id): row.base for row in rows}


def metric_units(database: Database) -> dict[str, tuple[str, str | None]]:
    """Each metric's unit and which way is better, as stored."""
    rows = read_rows(database, select(metrics.c.name, metrics.c.unit, metrics.c.better).distinct())
    return {row.name: (row.unit, row.better) for row in rows}


def stored_uids(database: Database) -> set[str]:
    """Every stored run's uid (records.RunRecord.uid)."""
    return {row.uid for row in read_rows(database, select(runs.c.uid))}


def count_runs(database: Database) -> int:
    return int(read_rows(database, select(func.count()).select_from(runs))[0][0])


def job_outcomes(database: Database) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in read_rows(database, select(jobs_table).order_by(jobs_table.c.id))]


def read_rows(database: Database, query: Any) -> list[Any]:
    try:
        with database.engine.connect() as connection:
            return list(connection.execute(query))
    except SQLAlchemyError as exc:
        raise ResultsDatabaseError(f"cannot read the results database {database.describe()}: {_first_line(exc)}",
                                   "check that it is reachable") from None


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes: they were stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
