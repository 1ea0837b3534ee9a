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
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..documents.fleet import FleetBoard
from ..documents.run import RunDocument, read_run_or_none
from ..documents.study import read_study
from ..environment import take_become_password
from ..errors import BoardQuarantinedError, OrchestratorError, UsageError
from ..fleet.board import UNREACHABLE_ERRORS, board_failure, profile_board, study_board
from ..fleet.doctor import check_board
from ..fleet.results import board_result_from_run
from ..inventory.hosts import Inventory, play_inventory
from ..runs.folder import safe_name_part
from ..runs.profile import ProfileRequest
from ..study.runner import StudyRequest
from .options import capture_overrides, connect_options, lease_options, output_folder, run_settings
from .warehouse_commands import keep_rows

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
    argv = [command, *(["--target", target] if command in TARGETED else []), *options]
    args = build_parser().parse_args(argv)
    args.become_password = None
    if getattr(args, "ask_become_pass", False) or getattr(args, "ask_vault_pass", False):
        raise UsageError("a task never prompts", "give Ansible's --ask-become-pass or --ask-vault-pass instead")
    return args


def run_task(command: str, options: Sequence[str], target: str, record: Mapping[str, Any],
             check: bool = False) -> dict[str, Any]:
    """One task for one host: never raises for the board's own failures, nor for what orchestrate refuses."""
    notes = Notes()
    printed = io.StringIO()
    started = time.monotonic()
    # as the command line does: sudo's password out of this worker's environment before anything starts (the local
    # target's agent, nsys, the app); the host's own comes with its record
    password = take_become_password()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            args = parse_task(command, options, target)
            args.become_password = password
            hosts = play_inventory(target, record)
            if check and command != "doctor":
                result = _check(command, args, hosts, target)
            else:
                result = TASK_RUNNERS[command](args, hosts, target, notes)
                if command in ("profile", "study", "fetch") and result.get("folder"):
                    keep_rows(args, Path(result["folder"]))  # as the command line keeps them
    except BoardQuarantinedError as exc:  # skipped, as a fleet skips it
        result = {"status": "skipped", "reason": exc.one_line(), "exit_code": exc.exit_code, "changed": False}
    except OrchestratorError as exc:
        result = {"status": "unreachable" if isinstance(exc, UNREACHABLE_ERRORS) else "failed",
                  "reason": exc.one_line(), "exit_code": exc.exit_code, "changed": False}
    except Exception as exc:  # a bug: a short reason, the traceback in the debug log (as the command line does)
        from .main import DEFAULT_DEBUG_LOG
        with open(DEFAULT_DEBUG_LOG, "a", encoding="utf-8") as log:
            log.write(f"orchestrate.jetson.{command} for {target}:\n{traceback.format_exc()}\n")
        result = {"status": "failed", "reason": f"internal error: {exc!r} (traceback in {DEFAULT_DEBUG_LOG}; please "
                  "report it)", "exit_code": 1, "changed": False}
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
    board = profile_board(request, notes, out, lease_options(args))
    result = _board_result(board, out)
    run = read_run_or_none(Path(result["folder"])) if result.get("folder") else None
    result["changed"] = run is not None and run.remote_run_dir is not None
    return _with_run_figures(result, run)


def _study(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..inventory.catalog import load_catalog
    from ..study.spec import load_study, with_values, without_nsys
    settings = run_settings(args)
    spec = with_values(load_study(args.file), args.set)
    if args.no_nsys:
        spec = without_nsys(spec)
    # each host's studies in a folder of its own, as a fleet keeps them: two hosts' studies begin in the same second
    out = output_folder(args.out).absolute()
    request = StudyRequest(spec=spec, host=hosts.host(target), catalog=load_catalog(args.apps_dir),
                           out_dir=out / safe_name_part(target),
                           repeat=spec.repeat if args.repeat is None else args.repeat, fresh=args.fresh,
                           connect=connect_options(args), settings=settings)
    result = _board_result(study_board(request, notes, out, lease_options(args)), out)
    result["changed"] = False
    if result.get("folder"):
        with contextlib.suppress(OrchestratorError):
            result["changed"] = any(set(cell.runs) - set(cell.reused)
                                    for cell in read_study(Path(result["folder"])).cells)
    return result


def _ci(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from .ci_commands import ci_failure, ci_job, update_job_site, write_ci_files
    outcome, summary = ci_job(args, [hosts.host(target)])
    write_ci_files(args, outcome, summary)
    site_error = update_job_site(args) if args.site is not None else None  # a regression is drawn too
    failure = ci_failure(outcome) or site_error
    folder = Path(outcome.folder).absolute() if outcome.folder else None
    status = "unreachable" if isinstance(outcome.error, UNREACHABLE_ERRORS) else "failed" if failure else "ok"
    return {"status": status, "reason": failure.one_line() if failure else None,
            "exit_code": failure.exit_code if failure else 0, "changed": folder is not None,
            "folder": str(folder) if folder else None, "outcome": outcome.outcome, "summary": summary,
            "regressions": [f"{c.name} {c.metric}" for c in outcome.regressions],
            "unsure": [f"{c.name} {c.metric}" for c in outcome.unsure]}


def _doctor(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..nsys.host import find_host_nsys
    return _doctor_result(check_board(hosts, target, connect_options(args), find_host_nsys()))


def _doctor_result(checked: Any) -> dict[str, Any]:
    found = checked.as_json()
    blocking = [f for f in checked.findings if f.get("level") == "error"]
    reason = checked.error or (f"{blocking[0]['what']}: {blocking[0]['fix']}" if blocking else None)
    return {"status": {"ok": "ok", "unreachable": "unreachable"}.get(checked.status, "failed"), "reason": reason,
            "exit_code": 0 if checked.status == "ok" else 21, "changed": False, "doctor": found}


def _fetch(args: argparse.Namespace, hosts: Inventory, target: str, notes: Notes) -> dict[str, Any]:
    from ..runs.fetch import fetch
    before = _run_to_fetch(args.run_dir, target).stage
    base = args.run_dir.absolute().parent
    try:
        outcome = fetch(args.run_dir, None, connect_options(args), notes, hosts=hosts)
        board = board_result_from_run(target, outcome.run_dir, base)
    except OrchestratorError as exc:
        board = board_failure(target, exc, base)
    result = _board_result(board, base)
    after = read_run_or_none(args.run_dir)
    result["changed"] = after is not None and after.stage != before
    return _with_run_figures(result, after)


def _check(command: str, args: argparse.Namespace, hosts: Inventory, target: str) -> dict[str, Any]:
    """--check: what the task would do, capturing nothing. The options are checked as the run checks them, then
    the board's preflight runs as the run would ask it (an app's: its nsys or not, display, capture length;
    a study's or a CI job's: each app's, the first that would fail said); fetch says whether a report is left to
    pull, without connecting. The preflight deploys orchestrate's agent to its work dir, as doctor does."""
    if command == "fetch":
        run = _run_to_fetch(args.run_dir, target)
        pulled = run.stage == "pulled"
        return {"status": "ok", "reason": None, "exit_code": 0, "changed": not pulled,
                "folder": str(args.run_dir.absolute())}
    from ..nsys.host import find_host_nsys
    settings = run_settings(args)
    host_nsys = find_host_nsys()
    checked = None
    for app in _apps_of(command, args):
        checked = check_board(hosts, target, connect_options(args), host_nsys, app, settings)
        if checked.status != "ok":
            break
    assert checked is not None
    result = _doctor_result(checked)
    result["changed"] = result["status"] == "ok"  # a capture would run
    return result


def _apps_of(command: str, args: argparse.Namespace) -> list[Any]:
    """The apps a task would run, as its run would make them (a usage error as the run would give it)."""
    from ..inventory.catalog import chosen_app, load_catalog
    catalog = load_catalog(args.apps_dir)
    if command == "profile":
        return [chosen_app(catalog, args.app, args.app_cmd, args.needs_display, **capture_overrides(args))]
    from ..study.spec import cell_app, cells, load_study, with_values, without_nsys
    if command == "ci":
        from ..ci.job import job_study
        spec, _ = job_study(catalog, args.app, args.study, args.set, args.repeat)
    else:
        spec = with_values(load_study(args.file), args.set)
    if args.no_nsys:
        spec = without_nsys(spec)
    return [cell_app(spec, cell, catalog) for cell in cells(spec)]


def _run_to_fetch(run_dir: Path, target: str) -> RunDocument:
    """The host's run that fetch would re-attach to, or the usage error it would give."""
    from ..runs.fetch import run_to_fetch
    run = run_to_fetch(run_dir)
    if run.target.name != target:
        raise UsageError(f"{run_dir} is a run of {run.target.name}, not of {target}",
                         "give each host its own run folder (e.g. from its profile task's result)")
    return run


def _with_run_figures(result: dict[str, Any], run: RunDocument | None) -> dict[str, Any]:
    """One run's figures at the top of its result, where a play's conditions look for them: the verdict, the frame
    times, the flags, and ``metrics``, every figure as the results database and the gate name it (the app output
    parser's among them, ``app.inference_mean_ms``: a run without nsys has only those)."""
    from ..figures.run_metrics import run_metrics
    cell = result["cells"][0] if result["cells"] else {}
    result.update({key: cell.get(key) for key in ("verdict", "frame_ms", "first_frame_ms", "energy_mj", "flags",
                                                  "report")})
    result["metrics"] = {}
    if run is not None and run.stage == "pulled":
        with contextlib.suppress(OrchestratorError):
            found = run_metrics(Path(result["folder"]), run.parser)
            result["metrics"] = {name: round(value, 6) for name, value in found.values.items()}
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
