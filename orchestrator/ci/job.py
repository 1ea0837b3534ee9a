"""A CI job: run the app (or study) on the board, store every run as it comes back, compare each gated
metric with the baseline of the same board kind, and say pass, regression or failed.

The job's runs are a study (an app is a study of one cell), run fresh. Each run goes into the database the
moment it ends, so a job killed half way keeps what it measured. Per cell and gated metric:
- runs flagged invalid (throttled, clocks dropped, power mode changed) are stored as such, never serve as
  a baseline, and never fail the gate: when a cell has no valid run, its checks say "invalid";
- the baseline is the newest ``baseline_jobs`` jobs with valid runs of the same app, cell and board kind on
  the base (a branch, "last-good", or a run or commit), this job excluded;
- ``gate.decide`` calls it a regression, an improvement, no clear change, not sure yet, or no baseline yet
  (which passes). A cell the gate is not sure about runs once more, and again, up to ``max_repeat`` runs
  (the study alternates the cells that need them); still unsure then, it passes and says so.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..boards.lease import LeaseOptions, hold
from ..database.connection import Database
from ..documents.run import run_folders_in
from ..documents.study import StudyCell, StudyDocument, study_folders
from ..errors import OrchestratorError, UsageError
from ..figures.run_metrics import REPORT_METRICS
from ..inventory.catalog import AppSpec, find_app
from ..inventory.hosts import Host
from ..results.records import EXTRA_METRICS, Provenance, RunRecord, folder_records
from ..results.store import Series, add_run, baseline, finish_job, start_job
from ..stats.gate import (
    BASELINE_JOBS,
    MIN_JOBS,
    NO_BASELINE,
    NOT_SURE,
    REGRESSION,
    Decision,
    GateRule,
    decide,
    gated_by_default,
)
from ..study.runner import StudyOutcome, StudyProgress, StudyRequest, run_study
from ..study.spec import Cell, StudySpec, cell_app, cells, load_study, with_values
from ..warehouse.importing import store_record
from ..warehouse.store import Warehouse

APP_REPEAT = 3
PASS, FAILED, NO_BASELINE_OUTCOME, UNSURE = "pass", "failed", "no-baseline", "unsure"


@dataclass(frozen=True)
class CiRequest:
    study: StudyRequest                     # what to run where (run fresh, in a folder of the job's own)
    provenance: Provenance
    base: str                               # a branch, "last-good", or a run id or commit
    rules: tuple[GateRule, ...] = ()        # none: every metric with a direction, at its default threshold
    baseline_jobs: int = BASELINE_JOBS
    min_jobs: int = MIN_JOBS
    max_repeat: int | None = None           # runs per cell at most when the gate is not sure (None: the repeat)
    fleet_jobs: tuple[int, ...] = ()        # the jobs of the fleet's other boards so far: never a baseline
    leases: LeaseOptions = field(default_factory=LeaseOptions)  # in the job's database unless they name another
    candidates: tuple[Host, ...] = ()       # --any: the boards the job may take (default: the study's host)
    warehouse: Warehouse | None = None      # where each run's rows go too, as it is stored (None: nowhere)


@dataclass(frozen=True)
class Check:
    """One board x app (cell) x metric: what the gate decided, or why it could not."""

    target: str
    board_kind: str
    app: str
    cell: str
    metric: str
    status: str      # "decided", "invalid" (every run flagged), "missing" (no such figure), "failed" (nothing measured)
    decision: Decision | None = None
    reason: str | None = None

    @property
    def name(self) -> str:
        return f"{self.app}[{self.cell}]" if self.cell else self.app

    @property
    def verdict(self) -> str:
        return self.decision.verdict if self.decision else self.status


@dataclass
class CiOutcome:
    job_id: int
    outcome: str                      # pass, unsure, regression, failed, no-baseline
    checks: list[Check]
    records: list[RunRecord]
    folder: Path | None
    provenance: Provenance
    base: str
    error: OrchestratorError | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # a fleet's quarantined boards: target -> why

    @property
    def regressions(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == REGRESSION]

    @property
    def unsure(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == NOT_SURE]


class _StoringProgress:
    """The study's progress, passed through; after each run, whatever run folders came back are stored."""

    def __init__(self, inner: StudyProgress, store: Callable[[], None]) -> None:
        self._inner = inner
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def begin_run(self, cell: Cell, cells: int, run: int, repeat: int, eta_s: float | None) -> None:
        self._inner.begin_run(cell, cells, run, repeat, eta_s)

    def end_run(self, outcome: str) -> None:
        self._store()
        self._inner.end_run(outcome)


def job_study(catalog: dict[str, AppSpec], app: str | None, study_file: Path | None, settings: list[str],
              repeat: int | None) -> tuple[StudySpec, int]:
    """What a job runs: the study file (with --set values), or the catalog app as a study of one cell; and
    how many times (the study's repeat, 3 for an app, unless given)."""
    if study_file is not None:
        study = with_values(load_study(study_file), settings)
    else:
        if settings:
            raise UsageError("--set goes with --study", "give a study file, or leave --set out")
        study = StudySpec(name=find_app(app or "", catalog).name, source="--app", matrix=(), app=app)
    runs = repeat if repeat is not None else (study.repeat if study_file is not None else APP_REPEAT)
    if not 1 <= runs <= 1000:
        raise UsageError("--repeat must be from 1 to 1000", "e.g. --repeat 3")
    return study, runs


def gated_names(rules: tuple[GateRule, ...], study: StudySpec, catalog: dict[str, AppSpec]) -> None:
    """Every --gate names a metric the job's runs can have, with a better direction: a mistyped name is said
    before the job runs, not after it, as a metric 'missing, not judged'."""
    known = {name for name, (_, better) in REPORT_METRICS.items() if better} | set(EXTRA_METRICS)
    parsed = any(cell_app(study, cell, catalog).parser for cell in cells(study))
    for rule in rules:
        if rule.metric in known or (parsed and rule.metric.startswith("app.") and len(rule.metric) > 4):
            continue
        if rule.metric in REPORT_METRICS:
            raise UsageError(f"--gate {rule.metric}: neither more nor less of it is better, so it is not gated",
                             f"gate one of: {', '.join(sorted(known))}")
        app_names = "app.NAME for a figure of the app's parser" if parsed else "no app.* names: the app has no parser"
        raise UsageError(f"--gate {rule.metric}: no such metric", f"known: {', '.join(sorted(known))}; {app_names}")


def run_ci(request: CiRequest, database: Database, progress: StudyProgress) -> CiOutcome:
    """The job, holding its board (the first free one of ``candidates``) for all its runs."""
    job_uid = uuid.uuid4().hex
    leases = replace(request.leases, database=request.leases.database or database.url)
    with hold(leases, request.candidates or (request.study.host,), f"ci job {job_uid[:12]} "
              f"({request.study.spec.name})", progress, request.study.connect, request.study.stop) as lease:
        study = replace(request.study, host=lease.host, lease=lease)
        outcome = _run_job(replace(request, study=study), job_uid, database, progress)
        lease.ended_with(outcome.error)
        return outcome


def _run_job(request: CiRequest, job_uid: str, database: Database, progress: StudyProgress) -> CiOutcome:
    job_id = start_job(database, job_uid, request.provenance, request.base, request.study.host.name,
                       request.study.spec.name)
    job_dir = request.study.out_dir / f"ci-{job_uid[:12]}"
    stored: set[str] = set()  # the folders of the runs stored as they ended (records' resolved paths)

    def store(records: list[RunRecord]) -> None:
        for record in records:
            if record.folder not in stored:
                add_run(database, record, request.provenance, job_id)
                if request.warehouse is not None:
                    try:
                        store_record(request.warehouse, record, request.provenance, Path(record.folder))
                    except OrchestratorError as exc:  # the job's verdict does not hang on its rows
                        progress.note("warning", f"{record.run_id}'s rows were not kept: {exc.one_line()}; "
                                                 "'orchestrate results import' keeps them later")
                stored.add(record.folder)

    def store_new() -> None:
        for run_dir in run_folders_in(job_dir):
            if str(run_dir.resolve()) not in stored:
                store(folder_records(run_dir))

    def more_runs(folder: Path, document: StudyDocument) -> list[int]:
        """The cells to run once more: those with a metric the gate is not sure about yet (none once a metric
        regressed: the job fails whatever more runs say of the others)."""
        store_new()
        checks = gate_checks(request, database, folder_records(folder), document, job_id)
        if any(c.verdict == REGRESSION for c in checks):
            return []
        unsure = {c.cell for c in checks if c.verdict == NOT_SURE}
        return [cell.index for cell in document.cells if cell.label in unsure]

    extra = max(0, (request.max_repeat or request.study.repeat) - request.study.repeat)
    study_request = replace(request.study, out_dir=job_dir, fresh=True, more_runs=more_runs if extra else None,
                            max_repeat=request.study.repeat + extra)
    outcome: StudyOutcome | None = None
    error: OrchestratorError | None = None
    try:
        outcome = run_study(study_request, _StoringProgress(progress, store_new))
    except OrchestratorError as exc:
        error = exc
    except BaseException:
        finish_job(database, job_id, FAILED)
        raise
    folder = outcome.folder if outcome else next(iter(study_folders(job_dir)), None)
    records = folder_records(folder) if folder else []
    store(records)  # any run the study ended without reporting
    checks = gate_checks(request, database, records, outcome.document if outcome else StudyDocument(), job_id)
    result = job_outcome(checks, error)
    finish_job(database, job_id, result)
    return CiOutcome(job_id, result, checks, records, folder, request.provenance, request.base, error)


def gate_checks(request: CiRequest, database: Database, records: list[RunRecord], document: StudyDocument,
                job_id: int) -> list[Check]:
    checks: list[Check] = []
    target = request.study.host.name
    cells = document.cells or [StudyCell(label=r.cell) for r in records[:1]]
    for cell in cells:
        label = cell.label
        mine = [r for r in records if r.cell == label]
        first = mine[0] if mine else None
        kind = first.board_kind if first else "unknown"
        app = request.study.spec.name  # the study's name, or the app's for --app: what its runs are stored under
        valid = [r for r in mine if r.valid]
        measured = [r for r in mine if r.status == "ok"]
        for metric, threshold in _gated(request.rules, valid or measured):
            if not measured:
                checks.append(Check(target, kind, app, label, metric, "failed",
                                    reason=cell.reason or "no run of this cell measured anything"))
                continue
            if not valid:
                flags = "; ".join(dict.fromkeys(f.what for r in measured for f in r.flags))
                checks.append(Check(target, kind, app, label, metric, "invalid",
                                    reason=f"every run was flagged ({flags}): not judged, and not a baseline"))
                continue
            values = [r.metrics[metric].value for r in valid if metric in r.metrics]
            if not values:
                checks.append(Check(target, kind, app, label, metric, "missing",
                                    reason=f"the runs have no figure named {metric}: not judged"))
                continue
            unit, better = valid[0].metrics[metric].unit, valid[0].metrics[metric].better or "lower"
            series = Series(app, cell=label, board_kind=valid[0].kind_fingerprint, variables=valid[0].variables_key)
            base = baseline(database, series, metric, request.base, request.baseline_jobs,
                            exclude_jobs=[j for j in (job_id, *request.fleet_jobs) if j is not None])
            decision = decide(metric, values, [job.values for job in base], better, unit, threshold,
                              min_jobs=request.min_jobs)
            skipped = len(mine) - len(valid)
            reason = f"{skipped} flagged run{'s' if skipped != 1 else ''} left out" if skipped else None
            checks.append(Check(target, kind, app, label, metric, "decided", decision, reason))
        if not mine or (not measured and not any(c.cell == label for c in checks)):
            checks.append(Check(target, kind, app, label, "run", "failed",
                                reason=cell.reason or "the cell did not run"))
    return checks


def _gated(rules: tuple[GateRule, ...], records: list[RunRecord]) -> list[tuple[str, float]]:
    """(metric, threshold): the rules' metrics, else every metric the runs have with a better direction, each
    at its default threshold (but the GPU's time per frame, whose noise between jobs is not measured yet: it is
    gated when a --gate names it)."""
    if rules:
        return [(rule.metric, rule.limit) for rule in rules]
    names = dict.fromkeys(n for r in records for n, m in r.metrics.items()
                          if gated_by_default(n, m.better))
    return [(name, GateRule(name).limit) for name in names]


def job_outcome(checks: list[Check], error: OrchestratorError | None) -> str:
    """failed (a run failed, or the job stopped) before regression, before unsure (passes, and says which
    metrics the gate could not decide), before no-baseline, before pass."""
    if error is not None or any(c.status == "failed" for c in checks):
        return FAILED
    if any(c.verdict == REGRESSION for c in checks):
        return REGRESSION
    if any(c.verdict == NOT_SURE for c in checks):
        return UNSURE
    decided = [c for c in checks if c.status == "decided"]
    if decided and all(c.verdict == NO_BASELINE for c in decided):
        return NO_BASELINE_OUTCOME
    return PASS
