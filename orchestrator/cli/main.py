"""The orchestrate command: parse, call one function, render, map errors to exit codes.

With ``results_commands`` and ``ci_commands``, the only code that prints; the only one that exits.
"""
from __future__ import annotations

import argparse
import errno
import gc
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
    InterruptedRunError,
    OrchestratorError,
    StudyCellsFailedError,
    UsageError,
)
from .board_commands import add_parsers as add_board_parsers
from .board_commands import cmd_boards, cmd_nsys
from .ci_commands import add_parsers as add_ci_parsers
from .ci_commands import cmd_ci
from .fleet_commands import add_parsers as add_fleet_parsers
from .fleet_commands import cmd_doctor, cmd_fleet, cmd_targets
from .help_commands import add_parsers as add_help_parsers
from .help_commands import cmd_help
from .mcp_command import add_parsers as add_mcp_parsers
from .mcp_command import cmd_mcp
from .options import (
    add_app_choice,
    add_capture_options,
    add_inventory_options,
    add_lease_options,
    add_no_nsys_option,
    add_run_settings,
    add_ssh_options,
    add_warehouse_option,
    capture_overrides,
    connect_options,
    existing_folder,
    lease_options,
    output_folder,
    recorded_inventory,
    run_settings,
    show,
    stderr,
    target_hosts,
    vault_options,
    whole,
)
from .report_commands import add_parsers as add_report_parsers
from .report_commands import cmd_analyze, cmd_compare, cmd_parse, cmd_report, cmd_trace
from .results_commands import add_parsers as add_results_parsers
from .results_commands import cmd_results
from .warehouse_commands import keep_rows

# rich, the inventory and the app catalog (YAML) load in the commands that use them: `analyze --json` starts
# reading the export 80 ms sooner without them

DEFAULT_DEBUG_LOG = Path(tempfile.gettempdir()) / "orchestrate-debug.log"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit code 2, like every other usage error
        raise UsageError(f"{self.prog}: {message}", f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="orchestrate", description="Remote Nsight Systems profiling for Jetson boards.",
                     epilog=f"exit codes: 0 success, 2 bad usage, and {len(EXIT_CODES) - 2} more, each for one kind of "
                            "failure: 'orchestrate help exit-codes' lists them")
    parser.add_argument("--version", action="version", version=f"orchestrate {__version__}")
    parser.add_argument("--debug-log", type=Path, default=DEFAULT_DEBUG_LOG,
                        help=f"where unexpected errors write their traceback (default {DEFAULT_DEBUG_LOG})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    prof = sub.add_parser("profile", help="profile one app on one target and bring the report back",
                          description="Connect, deploy the agent, preflight, capture under nsys, pull the "
                                      "verified report and export it to SQLite. Prints the run folder.")
    prof.add_argument("--target", required=True, help="host name from the inventory ('local' needs no board); with "
                                                      "--any, a pattern of them")
    add_app_choice(prof)
    add_inventory_options(prof, "Ansible inventory: a file, a folder or a script (default $ORCHESTRATE_INVENTORY, "
                                "./inventory.yaml, else a built-in one with just 'local')")
    prof.add_argument("--out", type=Path, default=Path("runs"), help="folder for run folders (default runs/)")
    add_capture_options(prof)
    add_no_nsys_option(prof)
    add_ssh_options(prof)
    add_run_settings(prof, "(default: fail at once)")
    add_lease_options(prof)

    study = sub.add_parser("study", help="run a study file: every cell of its matrix, with repeats and statistics",
                           description="Run every cell of the study's matrix --repeat times on one target, over "
                                       "one connection and one agent deployment, reusing runs an earlier folder of "
                                       "the same study already has (unless --fresh). Prints the study folder.")
    study.add_argument("file", type=Path, help="the study file (YAML; see 'Studies' in the README)")
    study.add_argument("--target", help="host name from the inventory (default: the study's 'target'); with --any, a "
                                        "pattern of them")
    add_inventory_options(study, "Ansible inventory (as for profile)")
    study.add_argument("--repeat", type=whole(1, 1000), help="runs per cell (default: the study's 'repeat')")
    study.add_argument("--fresh", action="store_true", help="run every cell again, reusing nothing")
    study.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                       help="other values for a matrix variable, e.g. --set frames=10 for a quick run")
    study.add_argument("--out", type=Path, default=Path("runs"), help="folder for study folders (default runs/)")
    study.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs")
    add_run_settings(study, "before each run (default 0)")
    add_no_nsys_option(study)
    add_ssh_options(study)
    add_lease_options(study)

    fetch = sub.add_parser("fetch", help="re-attach to a run: wait for its capture, pull what the board kept",
                           description="Reconnect to the run's target, wait for a capture still running, then "
                                       "pull the report the board kept (resuming a partial download), verify its "
                                       "sha256, export and analyse it. Safe to run again.")
    fetch.add_argument("run_dir", type=Path, help="the run folder (runs/<run>)")
    add_inventory_options(fetch, "Ansible inventory (default: the one the run used, else as for profile)")
    add_ssh_options(fetch)
    add_warehouse_option(fetch)

    apps = sub.add_parser("apps", help="list the app catalog", description="List the app specs orchestrate knows.")
    apps.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs")

    add_report_parsers(sub)

    add_fleet_parsers(sub)
    add_help_parsers(sub)
    add_results_parsers(sub)
    add_ci_parsers(sub)
    add_board_parsers(sub)
    add_mcp_parsers(sub)
    return parser


def cmd_profile(args: argparse.Namespace) -> int:
    from ..boards.lease import hold
    from ..inventory.catalog import chosen_app, load_catalog
    from ..runs.profile import ProfileRequest, profile  # imported here: SSH and analysis libraries load slowly
    from .console import RichProgress
    settings, leases = run_settings(args), lease_options(args)  # a usage error before anything loads
    hosts = target_hosts(args, args.target)
    spec = chosen_app(load_catalog(args.apps_dir), args.app, args.app_cmd, args.needs_display,
                      **capture_overrides(args))
    output_folder(args.out)
    connect = connect_options(args)
    progress = RichProgress(stderr())
    try:
        with hold(leases, hosts, f"profile {spec.name}", progress, connect) as lease:
            request = ProfileRequest(host=lease.host, app=spec, out_dir=args.out, settings=settings,
                                     inventory=recorded_inventory(args), connect=connect, lease=lease)
            outcome = profile(request, progress)
    except OrchestratorError as exc:
        keep_rows(args, exc.run_dir)  # a run that failed is a row too: its status says how
        raise
    finally:
        progress.close()
    keep_rows(args, outcome.run_dir)
    show_next_steps(outcome.run_dir)
    print(outcome.run_dir)
    return 0


def show_next_steps(run_dir: Path) -> None:
    """What to do next, from the run's summary, at the end of what the command printed."""
    from ..documents.summary import read_summary
    from .analysis_view import next_steps_view
    try:
        summary = read_summary(run_dir)
    except OrchestratorError:
        return
    for line in next_steps_view(summary) if summary is not None else []:
        show(line, err=True)


def cmd_study(args: argparse.Namespace) -> int:
    from ..boards.lease import hold
    from ..inventory.catalog import load_catalog
    from ..study.runner import StudyRequest, run_study  # imported here: SSH and analysis libraries load slowly
    from ..study.spec import cells, load_study, with_values, without_nsys
    from .console import StudyView
    settings, leases = run_settings(args), lease_options(args)  # a usage error before anything loads
    spec = with_values(load_study(args.file), args.set)
    if args.no_nsys:
        spec = without_nsys(spec)
    target = args.target or spec.target
    if not target:
        raise UsageError(f"{args.file} names no target", "add 'target:' to the study, or give --target")
    repeat = spec.repeat if args.repeat is None else args.repeat
    hosts = target_hosts(args, target)
    output_folder(args.out)
    connect = connect_options(args)
    view = StudyView(stderr(), len(cells(spec)) * repeat)
    try:
        with hold(leases, hosts, f"study {spec.name}", view, connect) as lease:  # for all its runs
            request = StudyRequest(spec=spec, host=lease.host, catalog=load_catalog(args.apps_dir), out_dir=args.out,
                                   repeat=repeat, fresh=args.fresh, connect=connect, inventory=recorded_inventory(args),
                                   settings=settings, lease=lease)
            outcome = run_study(request, view)
    finally:
        view.close()
    keep_rows(args, outcome.folder)
    print(outcome.folder)
    failed = outcome.failed_cells
    if failed:
        first = failed[0]
        raise StudyCellsFailedError(f"{len(failed)} of {len(outcome.document.cells)} cells failed; the first, "
                                    f"{first.label or 'the only cell'}: {first.reason}",
                                    f"see {study_file(outcome.folder)}")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from ..runs.fetch import fetch
    from .console import RichProgress
    progress = RichProgress(stderr())
    try:
        outcome = fetch(args.run_dir, args.inventory, connect_options(args), progress, vault_options(args))
    finally:
        progress.close()
    keep_rows(args, outcome.run_dir)
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


COMMANDS = {"nsys": cmd_nsys, "boards": cmd_boards,
            "profile": cmd_profile, "fetch": cmd_fetch, "apps": cmd_apps, "targets": cmd_targets,
            "analyze": cmd_analyze, "report": cmd_report, "trace": cmd_trace, "compare": cmd_compare,
            "parse": cmd_parse, "study": cmd_study, "fleet": cmd_fleet, "doctor": cmd_doctor,
            "results": cmd_results, "ci": cmd_ci, "help": cmd_help, "mcp": cmd_mcp}


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


def run() -> int:
    """The program (its console script and ``python -m orchestrator``): ``main``, then nothing that it loaded is
    collected on the way out. The interpreter's last collection of pandas', paramiko's and rich's objects took
    0.2 s of every command here; what needs closing is closed before ``main`` returns."""
    code = main()
    gc.freeze()
    return code


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
