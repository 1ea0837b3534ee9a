"""A CI job over a fleet (``orchestrate ci --limit PATTERN``): each matching board runs the job of its own, one
after the other, each stored as a job of its own and gated against the baseline of its own board kind; what
CI systems read is one outcome of them all, a check per board x app x metric."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..database.connection import Database
from ..errors import BoardQuarantinedError, InterruptedRunError
from ..inventory.hosts import Host
from ..study.runner import StudyProgress
from .job import FAILED, NO_BASELINE_OUTCOME, PASS, REGRESSION, UNSURE, CiOutcome, CiRequest, run_ci

# the fleet's outcome is its worst board's, in this order
WORST_FIRST = (FAILED, REGRESSION, UNSURE, NO_BASELINE_OUTCOME, PASS)


def run_fleet_ci(request: CiRequest, hosts: list[Host], database: Database, progress: StudyProgress) -> CiOutcome:
    """Every board's job; an interrupt ends the fleet's job after the board it came in (its runs kept). A quarantined
    board is skipped, said in the recap; every board quarantined is the job's error."""
    outcomes: list[CiOutcome] = []
    skipped: dict[str, str] = {}
    quarantined: BoardQuarantinedError | None = None
    for host in hosts:
        siblings = tuple(o.job_id for o in outcomes)
        try:
            outcome = run_ci(replace(request, study=replace(request.study, host=host), fleet_jobs=siblings,
                                     candidates=(host,)), database, progress)
        except BoardQuarantinedError as exc:
            progress.note("warning", f"{host.name} skipped: {exc.one_line()}")
            skipped[host.name] = exc.message
            quarantined = quarantined or exc
            continue
        outcomes.append(outcome)
        if isinstance(outcome.error, InterruptedRunError):
            break
    if not outcomes:
        assert quarantined is not None
        raise quarantined
    result = merged(outcomes, request.study.out_dir)
    result.skipped = skipped
    return result


def merged(outcomes: list[CiOutcome], folder: Path) -> CiOutcome:
    """One outcome of the boards' jobs: every check, the worst outcome, the first error (an interrupt first)."""
    first = outcomes[0]
    worst = min((o.outcome for o in outcomes), key=lambda name: WORST_FIRST.index(name)
                if name in WORST_FIRST else len(WORST_FIRST))
    errors = [o.error for o in outcomes if o.error is not None]
    error = next((e for e in errors if isinstance(e, InterruptedRunError)), errors[0] if errors else None)
    return CiOutcome(first.job_id, worst, [c for o in outcomes for c in o.checks],
                     [r for o in outcomes for r in o.records], folder if len(outcomes) > 1 else first.folder,
                     first.provenance, first.base, error)
