"""One board's run as a fleet counts it: a value, ``ok``, ``failed``, ``unreachable`` (Ansible's word for a host it
could not reach or log in to) or ``skipped`` (quarantined), with the figures it measured, and never an exception for
the board's own failures. Each holds the board's lease for its run or study. The fleet runs it for each of its
boards; the orchestrate.jetson collection's tasks for the host a play gives them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..boards.lease import LeaseOptions, hold
from ..documents.fleet import FleetBoard
from ..documents.run import is_run_folder, read_run_or_none
from ..documents.run_sections import RunFleet
from ..documents.study import study_folders
from ..errors import AuthError, BoardQuarantinedError, ConnectError, HostKeyError, OrchestratorError, UsageError
from ..figures.measured import measured_despite_nsys
from ..runs.profile import ProfileRequest, profile
from ..runs.progress import Progress
from ..study.runner import StudyProgress, StudyRequest, run_study
from .results import board_result_from_run, board_result_from_study

# a board that could not be reached or logged in to: it ran nothing
UNREACHABLE_ERRORS = (ConnectError, AuthError, HostKeyError)


def profile_board(request: ProfileRequest, progress: Progress, base: Path, leases: LeaseOptions,
                  granted: Callable[[], None] | None = None) -> FleetBoard:
    """Profile one app on the request's host once its lease is granted (``granted`` is told then); paths in the
    result are relative to ``base``."""
    target = request.host.name
    try:
        with hold(leases, (request.host,), _purpose(f"profile {request.app.name}", request.fleet), progress,
                  request.connect, request.stop, granted) as lease:
            outcome = profile(replace(request, lease=lease), progress)
    except BoardQuarantinedError as exc:
        return skipped(target, exc)
    except OrchestratorError as exc:
        return board_failure(target, exc, base)
    return board_result_from_run(target, outcome.run_dir, base)


def study_board(request: StudyRequest, progress: StudyProgress, base: Path, leases: LeaseOptions,
                granted: Callable[[], None] | None = None) -> FleetBoard:
    """Run a study on the request's host, holding the board for all its runs; paths in the result are relative to
    ``base``."""
    target = request.host.name
    try:
        with hold(leases, (request.host,), _purpose(f"study {request.spec.name}", request.fleet), progress,
                  request.connect, request.stop, granted) as lease:
            study = run_study(replace(request, lease=lease), progress)
    except BoardQuarantinedError as exc:
        return skipped(target, exc)
    except OrchestratorError as exc:
        return board_failure(target, exc, base, request.out_dir)
    return board_result_from_study(target, study.folder, base)


def skipped(target: str, exc: BoardQuarantinedError) -> FleetBoard:
    return FleetBoard(target, "skipped", exc.one_line(), exc.exit_code)


def _purpose(what: str, fleet: RunFleet | None) -> str:
    return f"fleet {fleet.folder}: {what}" if fleet else what


def board_failure(target: str, exc: OrchestratorError, base: Path, study_out: Path | None = None) -> FleetBoard:
    """A board whose run (or the study in ``study_out``) raised: its figures as far as they came back, and the
    error's one line."""
    status = "unreachable" if isinstance(exc, UNREACHABLE_ERRORS) else "failed"
    measured = None
    try:
        if exc.run_dir is not None and is_run_folder(exc.run_dir):
            measured = board_result_from_run(target, exc.run_dir, base)
        elif study_out is not None:
            studies = study_folders(study_out)
            if studies:
                measured = board_result_from_study(target, studies[-1], base)
    except UsageError:  # a study.json the failure left unreadable: the board's error says what happened
        measured = None
    if measured is None:
        return FleetBoard(target, status, exc.one_line(), exc.exit_code)
    run = read_run_or_none(exc.run_dir) if exc.run_dir is not None else None
    if run is not None and measured_despite_nsys(run):
        # nsys alone stalled after a complete capture and its report came back: measured, as a study counts it
        return measured.replace(status="ok", reason=f"measured; {exc.one_line()}", exit_code=0)
    return measured.replace(status=status, reason=exc.one_line(), exit_code=exc.exit_code)
