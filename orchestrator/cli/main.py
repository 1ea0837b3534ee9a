"""The orchestrate command: parse, call one function, render, map errors to exit codes.

With ``results_commands`` (the results and ci commands), the only code that prints; the only one that exits.
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import NoReturn

from .. import __version__
from ..documents.study import study_file
from ..environment import take_become_password
from ..errors import (
    EXIT_CODES,
    DiskFullError,
    FleetBoardsFailedError,
    InterruptedRunError,
    OrchestratorError,
    StudyCellsFailedError,
    UsageError,
)
from .board_commands import add_parsers as add_board_parsers
from .board_commands import cmd_nsys
from .options import (
    DAY_S,
    add_app_choice,
    add_capture_options,
    add_clock_options,
    add_run_options,
    add_ssh_options,
    add_study_run_options,
    capture_overrides,
    clock_request,
    connect_options,
    existing_folder,
    given_capture_options,
    output_folder,
    seconds,
    show,
    stderr,
    whole,
)
from .report_commands import add_parsers as add_report_parsers
from .report_commands import cmd_analyze, cmd_compare, cmd_parse, cmd_report, cmd_trace
from .results_commands import add_parsers as add_results_parsers
from .results_commands import cmd_ci, cmd_results

# rich, the inventory and the app catalog (YAML) load in the commands that use them: `analyze --json` starts
# reading the export 80 ms sooner without them

DEFAULT_DEBUG_LOG = Path(tempfile.gettempdir()) / "orchestrate-debug.log"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit code 2, like every other usage error
        raise UsageError(f"{self.prog}: {message}", f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="orchestrate", description="Remote Nsight Systems profiling for Jetson boards.",
                     epilog="exit codes: " + "; ".join(f"{k} {v}" for k, v in EXIT_CODES.items()))
    parser.add_argument("--version", action="version", version=f"orchestrate {__version__}")
    parser.add_argument("--debug-log", type=Path, default=DEFAULT_DEBUG_LOG,
                        help=f"where unexpected errors write their traceback (default {DEFAULT_DEBUG_LOG})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    prof = sub.add_parser("profile", help="profile one app on one target and bring the report back",
                          description="Connect, deploy the agent, preflight, capture under nsys, pull the "
                                      "verified report and export it to SQLite. Prints the run folder.")
    prof.add_argument("--target", required=True, help="host name from the inventory ('local' needs no board)")
    add_app_choice(prof)
    prof.add_argument("--inventory", help="inventory YAML (default $ORCHESTRATE_INVENTORY, ./inventory.yaml, "
                                          "else a built-in one with just 'local')")
    prof.add_argument("--out", type=Path, default=Path("runs"), help="folder for run folders (default runs/)")
    add_capture_options(prof)
    prof.add_argument("--grace", type=seconds(0), default=30.0,
                      help="seconds past delay+duration before the watchdog stops nsys and the app (default 30)")
    prof.add_argument("--retries", type=whole(0, 10), default=1,
                      help="captures to try again when nsys stalls while writing its report (default 1)")
    add_ssh_options(prof)
    add_run_options(prof)
    prof.add_argument("--wait-lock", type=seconds(0), default=0.0, metavar="S",
                      help="wait up to S seconds for another run on the board to end (default: fail at once)")
    add_clock_options(prof)

    study = sub.add_parser("study", help="run a study file: every cell of its matrix, with repeats and statistics",
                           description="Run every cell of the study's matrix --repeat times on one target, over "
                                       "one connection and one agent deployment, reusing runs an earlier folder of "
                                       "the same study already has (unless --fresh). Prints the study folder.")
    study.add_argument("file", type=Path, help="the study file (YAML; see 'Studies' in the README)")
    study.add_argument("--target", help="host name from the inventory (default: the study's 'target')")
    study.add_argument("--inventory", help="inventory YAML (as for profile)")
    study.add_argument("--repeat", type=whole(1, 1000), help="runs per cell (default: the study's 'repeat')")
    study.add_argument("--fresh", action="store_true", help="run every cell again, reusing nothing")
    study.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                       help="other values for a matrix variable, e.g. --set frames=10 for a quick run")
    study.add_argument("--out", type=Path, default=Path("runs"), help="folder for study folders (default runs/)")
    study.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs")
    add_study_run_options(study)
    add_clock_options(study)
    add_ssh_options(study)

    fetch = sub.add_parser("fetch", help="re-attach to a run: wait for its capture, pull what the board kept",
                           description="Reconnect to the run's target, wait for a capture still running, then "
                                       "pull the report the board kept (resuming a partial download), verify its "
                                       "sha256, export and analyse it. Safe to run again.")
    fetch.add_argument("run_dir", type=Path, help="the run folder (runs/<run>)")
    fetch.add_argument("--inventory", help="inventory YAML (default: the one the run used, else as for profile)")
    add_ssh_options(fetch)

    apps = sub.add_parser("apps", help="list the app catalog", description="List the app specs orchestrate knows.")
    apps.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs")

    add_report_parsers(sub)

    fleet = sub.add_parser("fleet", help="run an app or a study on every matching board at once, with a recap",
                           description="Profile an app (or run a study) on every target --limit matches, --forks at a "
                                       "time, each board in its own run folder inside the fleet folder; a live table "
                                       "shows each board, a recap says ok / failed / unreachable and why, fleet.html "
                                       "and fleet.json hold every board's figures. Prints the fleet folder.")
    add_app_choice(fleet, study=True)
    _add_fleet_options(fleet)
    fleet.add_argument("--out", type=Path, default=Path("runs"), help="folder for fleet folders (default runs/)")
    add_capture_options(fleet)
    add_study_run_options(fleet, "before each run (default: that board fails)")
    fleet.add_argument("--repeat", type=whole(1, 1000), help="with --study: runs per cell (default: the study's)")
    fleet.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                       help="with --study: other values for a matrix variable")
    add_run_options(fleet)
    fleet.add_argument("--board-timeout", type=seconds(0, 7 * DAY_S, above=True), metavar="S",
                       help="end a board's capture early (its report kept) once it has taken S seconds, and count "
                            "the board as failed (default: no limit beyond the watchdog's)")
    add_clock_options(fleet)

    doctor = sub.add_parser("doctor", help="check every matching board: reachable, what it is, what would fail",
                            description="Connect to every target --limit matches, --forks at a time, deploy the agent "
                                        "and run its preflight: one table of the boards' facts and of what would make "
                                        "a capture fail on each, with the fix.")
    _add_fleet_options(doctor)
    doctor.add_argument("--json", action="store_true", help="print one JSON object per board instead of the table")

    targets = sub.add_parser("targets", help="list the inventory's targets, groups and resolved variables",
                             description="List the hosts of the inventory: their groups and every variable as it "
                                         "resolves for each (group vars, then host vars).")
    targets.add_argument("--inventory", help="inventory YAML")
    targets.add_argument("--limit", metavar="PATTERN", help="only the hosts this Ansible pattern matches")
    add_results_parsers(sub)
    add_board_parsers(sub)
    return parser


def _add_fleet_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inventory", help="inventory YAML (as for profile)")
    parser.add_argument("--limit", metavar="PATTERN",
                        help="Ansible's host pattern: group, host1:host2, group:!host, group1:&group2, globs, ~regex "
                             "(default: all)")
    parser.add_argument("--forks", type=whole(1, 256), default=5, help="boards at a time (default 5, as Ansible's)")
    add_ssh_options(parser)


def cmd_profile(args: argparse.Namespace) -> int:
    from ..inventory.catalog import chosen_app, load_catalog
    from ..inventory.hosts import load_inventory
    from ..runs.profile import ProfileRequest, profile  # imported here: SSH and analysis libraries load slowly
    from .console import RichProgress
    clock = clock_request(args)  # a usage error before anything loads
    host = load_inventory(args.inventory).host(args.target)
    spec = chosen_app(load_catalog(args.apps_dir), args.app, args.app_cmd, args.needs_display,
                      **capture_overrides(args))
    output_folder(args.out)
    request = ProfileRequest(host=host, app=spec, out_dir=args.out, grace_s=args.grace, keep_remote=args.keep_remote,
                             retries=args.retries, heartbeat_timeout_s=args.heartbeat_timeout,
                             wait_lock_s=args.wait_lock, inventory=args.inventory,
                             connect=connect_options(args),
                             **clock)
    progress = RichProgress(stderr())
    try:
        outcome = profile(request, progress)
    finally:
        progress.close()
    print(outcome.run_dir)
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    from ..inventory.catalog import load_catalog
    from ..inventory.hosts import load_inventory
    from ..study.runner import StudyRequest, run_study  # imported here: SSH and analysis libraries load slowly
    from ..study.spec import cells, load_study, with_values
    from .console import StudyView
    clock = clock_request(args)  # a usage error before anything loads
    spec = with_values(load_study(args.file), args.set)
    target = args.target or spec.target
    if not target:
        raise UsageError(f"{args.file} names no target", "add 'target:' to the study, or give --target")
    repeat = spec.repeat if args.repeat is None else args.repeat
    host = load_inventory(args.inventory).host(target)
    output_folder(args.out)
    request = StudyRequest(spec=spec, host=host,
                           catalog=load_catalog(args.apps_dir), out_dir=args.out, repeat=repeat, fresh=args.fresh,
                           connect=connect_options(args),
                           inventory=args.inventory, grace_s=args.grace, retries=args.retries,
                           wait_lock_s=args.wait_lock, **clock)
    view = StudyView(stderr(), len(cells(spec)) * repeat)
    try:
        outcome = run_study(request, view)
    finally:
        view.close()
    print(outcome.folder)
    failed = outcome.failed_cells
    if failed:
        first = failed[0]
        raise StudyCellsFailedError(f"{len(failed)} of {len(outcome.document['cells'])} cells failed; the first, "
                                    f"{first['label'] or 'the only cell'}: {first['reason']}",
                                    f"see {study_file(outcome.folder)}")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from ..runs.fetch import fetch
    from .console import RichProgress
    progress = RichProgress(stderr())
    try:
        outcome = fetch(args.run_dir, args.inventory, connect_options(args), progress)
    finally:
        progress.close()
    print(outcome.run_dir)
    return 0


def cmd_apps(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..inventory.catalog import BUILTIN_DIR, load_catalog
    table = Table("app", "command", "traces", "sample", "duration", "display", "source")
    for spec in load_catalog(args.apps_dir).values():
        source = "built-in" if Path(spec.source).parent == BUILTIN_DIR else spec.source
        table.add_row(spec.name, " ".join(spec.command), ",".join(spec.trace), spec.sample, f"{spec.duration_s:g} s",
                      "yes" if spec.needs_display else "no", source)
    show(table)
    return 0


def cmd_fleet(args: argparse.Namespace) -> int:
    from ..fleet.patterns import select_hosts
    from ..fleet.runner import FleetRequest, run_fleet
    from ..inventory.catalog import chosen_app, load_catalog
    from ..inventory.hosts import load_inventory
    from .console import FleetTable
    clock = clock_request(args)  # a usage error before anything loads
    if not args.study and (args.repeat is not None or args.set):
        raise UsageError(f"{'--repeat' if args.repeat is not None else '--set'} goes with --study",
                         "give --study FILE, or leave it out")
    app_only = given_capture_options(args) + (["--needs-display"] if args.needs_display else [])
    if args.study and app_only:  # a study sets these per cell, in its file
        raise UsageError(f"{app_only[0]} goes with --app or --app-cmd", "set it in the study file, or leave it out")
    inventory = load_inventory(args.inventory)
    targets = select_hosts(inventory, args.limit)
    catalog = load_catalog(args.apps_dir)
    app, study = None, None
    if args.study:
        from ..study.spec import load_study, with_values
        study = with_values(load_study(args.study), args.set)
    else:
        app = chosen_app(catalog, args.app, args.app_cmd, args.needs_display, **capture_overrides(args))
    output_folder(args.out)
    request = FleetRequest(
        inventory=inventory, targets=tuple(targets), out_dir=args.out, app=app, study=study, catalog=catalog,
        repeat=args.repeat, forks=args.forks, limit=args.limit,
        connect=connect_options(args), grace_s=args.grace,
        retries=args.retries, heartbeat_timeout_s=args.heartbeat_timeout,
        wait_lock_s=args.wait_lock, keep_remote=args.keep_remote, board_timeout_s=args.board_timeout,
        inventory_path=args.inventory, **clock)
    view = FleetTable(stderr(), targets)
    try:
        outcome = run_fleet(request, view)
    finally:
        view.close()
    _print_recap(outcome.results)
    print(outcome.folder)
    if outcome.interrupted:
        started = sum(1 for r in outcome.results if r.folder)
        raise InterruptedRunError(f"interrupted; {started} of {len(outcome.results)} boards had started, and "
                                  "kept what they captured (here, or on the board for 'orchestrate fetch')",
                                  f"see {outcome.folder / 'fleet.html'}")
    if outcome.failed:
        first = outcome.failed[0]
        raise FleetBoardsFailedError(f"{len(outcome.failed)} of {len(outcome.results)} boards did not end well; "
                                     f"the first, {first.target}: {first.reason}",
                                     f"see {outcome.folder / 'fleet.html'}")
    return 0


def _print_recap(results: list) -> None:
    """Ansible's PLAY RECAP, one line per board: status, why, where its run folder is."""
    from rich.table import Table
    from rich.text import Text
    table = Table("board", "status", "why", "doubtful figures", "folder", title="recap", expand=True)
    for result in results:
        style = "green" if result.status == "ok" else "red"
        doubts = "; ".join(dict.fromkeys(f["what"] for cell in result.cells for f in cell.get("flags") or []))
        table.add_row(result.target, Text(result.status, style=style), result.reason or "",
                      Text(doubts, style="yellow"), str(result.folder or ""))
    show(table, err=True)


def cmd_doctor(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..fleet.doctor import doctor
    from ..fleet.patterns import select_hosts
    from ..inventory.hosts import load_inventory
    inventory = load_inventory(args.inventory)
    checks = doctor(inventory, select_hosts(inventory, args.limit),
                    connect_options(args), args.forks)
    if args.json:
        for check in checks:
            print(json.dumps(asdict(check)))
    else:
        _print_checks(checks)
    blocked = [c for c in checks if c.blocking]
    if blocked:
        raise FleetBoardsFailedError(f"{len(blocked)} of {len(checks)} boards cannot capture as they are; the first, "
                                     f"{blocked[0].target}: {blocked[0].error or blocked[0].findings[0]['what']}",
                                     "fix what the table says, then run 'orchestrate doctor' again")
    return 0


def _print_checks(checks: list) -> None:
    from rich.table import Table
    from rich.text import Text
    table = Table("board", "status", "kind", "L4T / JetPack", "power mode", "nsys", "what is wrong, and the fix",
                  title="doctor", expand=True)
    for check in checks:
        board = check.board
        problems = [Text.assemble((f["what"], "red" if f["level"] == "error" else "yellow"), f": {f['fix']}")
                    for f in check.findings] + ([Text(check.error, style="red")] if check.error else [])
        table.add_row(check.target, Text(check.status, style="green" if check.status == "ok" else "red"),
                      board.get("kind") or "–", " / ".join(str(board.get(k) or "–") for k in ("l4t", "jetpack")),
                      board.get("power_mode") or "–",
                      f"{board['nsys']} ({board['nsys_path']})" if board.get("nsys") else "–",
                      Text("\n").join(problems) if problems else "nothing")
    show(table)


def cmd_targets(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..inventory.hosts import load_inventory, resolved_variables
    inventory = load_inventory(args.inventory)
    chosen = None
    if args.limit:
        from ..fleet.patterns import select_hosts
        chosen = set(select_hosts(inventory, args.limit))
    table = Table("target", "connection", "address", "groups", "variables (resolved)", title=inventory.source)
    for host in inventory.hosts.values():
        if chosen is not None and host.name not in chosen:
            continue
        variables = " ".join(f"{k}={v}" for k, v in resolved_variables(host).items())
        table.add_row(host.name, host.connection, host.address or host.name, ",".join(host.groups), variables)
    show(table)
    groups = Table("group", "hosts (with its child groups')", "child groups", title="groups")
    for group in sorted(set(inventory.groups) | set(inventory.children)):
        groups.add_row(group, ",".join(inventory.group_hosts(group)), ",".join(inventory.children.get(group, ())))
    show(groups)
    for name, error in sorted(inventory.broken.items()):
        show(f"unusable: {name}: {error.one_line()}")
    for group, error in sorted(inventory.broken_groups.items()):
        show(f"unreadable group: {group}: {error.one_line()}")
    return 0


COMMANDS = {"nsys": cmd_nsys, "profile": cmd_profile, "fetch": cmd_fetch, "apps": cmd_apps, "targets": cmd_targets,
            "analyze": cmd_analyze, "report": cmd_report, "trace": cmd_trace, "compare": cmd_compare,
            "parse": cmd_parse, "study": cmd_study, "fleet": cmd_fleet, "doctor": cmd_doctor,
            "results": cmd_results, "ci": cmd_ci}


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    """SIGTERM does what Ctrl-C does: a run ends its capture early and keeps the report."""
    raise KeyboardInterrupt


def _check_text(argv: list[str]) -> None:
    """Every argument is UTF-8 text: it goes into run.json, pages and databases as it is. (And '--opt=--',
    which argparse would turn into an empty list instead of a value, is said as what it is.)"""
    for arg in argv:
        option, given, value = arg.partition("=")
        if given and value == "--" and option.startswith("-"):
            raise UsageError(f"{arg}: '--' is not a value for {option}", f"give {option} a value")
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "backslashreplace").decode()
            raise UsageError(f"an argument holds bytes that are not UTF-8 text: {shown[:80]!r}",
                             "give every argument as UTF-8 text") from None


def _os_error(exc: OSError) -> OrchestratorError:
    """An OSError no command turned into its own message: a path it was given, or the machine's limits."""
    where = f" {exc.filename}" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return DiskFullError(f"no space left on this machine to write{where}", "free some space and run it again")
    return UsageError(f"cannot use{where}: {exc.strerror or exc}", "check the path and its permissions")


def _print_error(exc: OrchestratorError) -> None:
    from rich.text import Text
    line = " ".join(exc.one_line().splitlines())
    if len(line) > 2000:  # one line, even when a message quotes a whole file
        line = line[:2000] + "…"
    stderr().print(Text.assemble(("error:", "bold red"), " ", line), highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    debug_log = DEFAULT_DEBUG_LOG
    try:
        argv = sys.argv[1:] if argv is None else argv
        _check_text(argv)
        become_password = take_become_password()  # before anything this process starts could inherit it
        args = build_parser().parse_args(argv)
        args.become_password = become_password
        debug_log = args.debug_log
        return COMMANDS[args.command](args)
    except OrchestratorError as exc:
        _print_error(exc)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (| head): nothing left to say
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # no run had begun (a run turns its own interrupt into what it kept, and where)
        stopped = InterruptedRunError("interrupted; what had ended before is kept, and nothing is left running", "")
        _print_error(stopped)
        return stopped.exit_code
    except OSError as exc:
        said = _os_error(exc)
        _print_error(said)
        return said.exit_code
    except Exception:  # a bug: short notice here, the traceback in the debug log
        logging.basicConfig(filename=debug_log, level=logging.DEBUG)
        logging.getLogger("orchestrate").error("unexpected error\n%s", traceback.format_exc())
        from rich.markup import escape
        shown = repr(sys.exc_info()[1])
        stderr().print(f"[bold red]internal error:[/] {escape(shown[:300])} (traceback in {debug_log}; "
                       "please report it)", highlight=False, soft_wrap=True)
        return 1
