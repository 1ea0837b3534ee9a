"""The tasks of the orchestrate.jetson Ansible collection: one command (profile, study, ci, doctor, fetch) for the one
host a play resolved, its options parsed as the command line parses them, its result one JSON object.

The host comes as the record ``orchestrate_ansible`` makes of the values Ansible resolved for it (its connection and
become plugins' options, its variables), read as an inventory's host is read (``inventory.play_values``): what
orchestrate cannot honour fails the task in one line. A result never raises for the board's own failures: its
``status`` is ``ok``, ``failed`` or ``unreachable`` (the board was never reached), with the one-line ``reason``, the
run (or study) folder, the board's facts, and per app or study cell the frame time, the verdict and the validity
flags, as a fleet records each of its boards. ``changed``: a capture ran on the board.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..documents.fleet import FleetBoard
from ..documents.run import read_run_or_none
from ..documents.study import read_study
from ..errors import OrchestratorError, UsageError
from ..fleet.board import UNREACHABLE_ERRORS, board_failure, profile_board, study_board
from ..fleet.doctor import check_board
from ..inventory.hosts import Inventory, play_inventory
from ..runs.profile import ProfileRequest
from ..study.runner import StudyRequest
from .options import capture_overrides, connect_options, output_folder, run_settings

TASKS = ("profile", "study", "ci", "doctor", "fetch")
# the commands whose host is --target (doctor and fetch take theirs from the play, and the run folder)
TARGETED = ("profile", "study", "ci")


@dataclass
class Notes:
    """A run's progress, kept quiet: its notes come back with the task's result (warnings as Ansible's)."""

    said: list[dict[str, str]] = field(default_factory=list)

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        pass

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        pass

    def finish(self, phase: str, summary: str = "") -> None:
        pass

    def note(self, level: str, text: str) -> None:
        self.said.append({"level": level, "text": text})

    def begin_run(self, cell: Any, cells: int, run: int, repeat: int, eta_s: float | None) -> None:
        pass

    def end_run(self, outcome: str) -> None:
        pass


def parse_task(command: str, options: Sequence[str], target: str) -> argparse.Namespace:
    """A task's options as ``orchestrate COMMAND`` parses them (the same checks, the same one-line errors)."""
    from .main import build_parser
    if command not in TASKS:
        raise UsageError(f"no task '{command}'", f"use one of {', '.join(TASKS)}")
    argv = [command, *options, *(["--target", target] if command in TARGETED else [])]
    args = build_parser().parse_args(argv)
    args.become_password = None  # sudo's password comes with the play's host, never from here
    if getattr(args, "ask_become_pass", False) or getattr(args, "ask_vault_pass", False):
        raise UsageError("a task never prompts", "give Ansible's --ask-become-pass or --ask-vault-pass instead")
    return args


def run_task(command: str, options: Sequence[str], target: str, record: Mapping[str, Any],
             check: bool = False) -> dict[str, Any]:
    """One task for one host: never raises for the board's own failures, nor for what orchestrate refuses."""
    notes = Notes()
    printed = io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            args = parse_task(command, options, target)
            hosts = play_inventory(target, record)
            if check and command != "doctor":
                result = _check(command, args, hosts, target)
            else:
                result = TASK_RUNNERS[command](args, hosts, target, notes)
    except OrchestratorError as exc:
        result = {"status": "unreachable" if isinstance(exc, UNREACHABLE_ERRORS) else "failed",
                  "reason": exc.one_line(), "exit_code": exc.exit_code, "changed": False}
    result.setdefault("target", target)
    result["notes"] = notes.said
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _profile(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..inventory.catalog import chosen_app, load_catalog
    settings = run_settings(args)
    host = hosts.host(target)
    spec = chosen_app(load_catalog(args.apps_dir), args.app, args.app_cmd, args.needs_display,
                      **capture_overrides(args))
    out = output_folder(args.out).absolute()
    request = ProfileRequest(host=host, app=spec, out_dir=out, settings=settings, inventory=None,
                             connect=connect_options(args))
    board = profile_board(request, notes, out)
    result = _board_result(board, out)
    run = read_run_or_none(Path(result["folder"])) if result.get("folder") else None
    result["changed"] = run is not None and run.remote_run_dir is not None
    return _with_run_figures(result)


def _study(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..inventory.catalog import load_catalog
    from ..study.spec import load_study, with_values, without_nsys
    settings = run_settings(args)
    spec = with_values(load_study(args.file), args.set)
    if args.no_nsys:
        spec = without_nsys(spec)
    out = output_folder(args.out).absolute()
    request = StudyRequest(spec=spec, host=hosts.host(target), catalog=load_catalog(args.apps_dir), out_dir=out,
                           repeat=spec.repeat if args.repeat is None else args.repeat, fresh=args.fresh,
                           connect=connect_options(args), settings=settings)
    result = _board_result(study_board(request, notes, out), out)
    result["changed"] = False
    if result.get("folder"):
        with contextlib.suppress(OrchestratorError):
            result["changed"] = any(set(cell.runs) - set(cell.reused) for cell in read_study(result["folder"]).cells)
    return result


def _ci(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from .results_commands import ci_failure, ci_job, write_ci_files
    outcome, summary = ci_job(args, [hosts.host(target)])
    write_ci_files(args, outcome, summary)
    failure = ci_failure(outcome)
    folder = Path(outcome.folder).absolute() if outcome.folder else None
    return {"status": "failed" if failure else "ok", "reason": failure.one_line() if failure else None,
            "exit_code": failure.exit_code if failure else 0, "changed": folder is not None,
            "folder": str(folder) if folder else None, "outcome": outcome.outcome, "summary": summary,
            "regressions": [f"{c.name} {c.metric}" for c in outcome.regressions],
            "unsure": [f"{c.name} {c.metric}" for c in outcome.unsure]}


def _doctor(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..nsys.host import find_host_nsys
    checked = check_board(hosts, target, connect_options(args), find_host_nsys())
    found = checked.as_json()
    blocking = [f for f in checked.findings if f.get("level") == "error"]
    reason = checked.error or (f"{blocking[0]['what']}: {blocking[0]['fix']}" if blocking else None)
    return {"status": "ok" if checked.status == "ok" else checked.status if checked.status == "unreachable"
            else "failed", "reason": reason, "exit_code": 0 if checked.status == "ok" else 21, "changed": False,
            "doctor": found}


def _fetch(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..runs.fetch import fetch
    run = read_run_or_none(args.run_dir)
    if run is not None and run.target.name != target:
        raise UsageError(f"{args.run_dir} is a run of {run.target.name}, not of {target}",
                         "give each host its own run folder (e.g. from its profile task's result)")
    before = run.stage if run is not None else None
    base = args.run_dir.absolute().parent
    try:
        outcome = fetch(args.run_dir, None, connect_options(args), notes, hosts=hosts)
        board = _fetched(target, outcome.run_dir, base)
    except OrchestratorError as exc:
        board = board_failure(target, exc, base)
    result = _board_result(board, base)
    after = read_run_or_none(args.run_dir)
    result["changed"] = after is not None and after.stage != before
    return _with_run_figures(result)


def _fetched(target: str, run_dir: Path, base: Path) -> FleetBoard:
    from ..fleet.results import board_result_from_run
    return board_result_from_run(target, run_dir, base)


def _check(command: str, args: argparse.Namespace, hosts: Inventory, target: str) -> dict[str, Any]:
    """--check: what the task would do, changing nothing on the board. A run's task runs the board's preflight (as
    doctor does) and would capture when nothing blocks it; fetch says whether a report is left to pull."""
    if command == "fetch":
        run = read_run_or_none(args.run_dir)
        if run is None:
            raise UsageError(f"{args.run_dir} is not a run folder (no readable run.json)",
                             "pass a folder that a profile task made")
        pulled = run.stage == "pulled"
        return {"status": "ok", "reason": None, "exit_code": 0, "changed": not pulled,
                "folder": str(args.run_dir.absolute())}
    result = _doctor(args, hosts, target, Notes())
    result["changed"] = result["status"] == "ok"  # a capture would run
    return result


def _with_run_figures(result: dict[str, Any]) -> dict[str, Any]:
    """One run's figures at the top of its result, where a play's conditions look for them."""
    cell = result["cells"][0] if result["cells"] else {}
    result.update({key: cell.get(key) for key in ("verdict", "frame_ms", "first_frame_ms", "energy_mj", "flags",
                                                  "report")})
    return result


def _board_result(board: FleetBoard, base: Path) -> dict[str, Any]:
    """A board's result with its paths made whole."""
    result = board.as_json()
    if board.folder:
        result["folder"] = str((base / board.folder).resolve())
    for cell in result["cells"]:
        if cell.get("report"):
            cell["report"] = str((base / cell["report"]).resolve())
    result.pop("unknown", None)
    return result


TASK_RUNNERS = {"profile": _profile, "study": _study, "ci": _ci, "doctor": _doctor, "fetch": _fetch}
