"""Options and helpers more than one command shares: SSH, clocks, the console for progress and errors."""
from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..boards.queue import QUARANTINE_AFTER
from ..errors import UsageError
from ..inventory.catalog import CAPTURE_OPTION_FIELDS
from ..runs.run_settings import RunSettings

if TYPE_CHECKING:
    from rich.console import Console

    from ..boards.lease import LeaseOptions
    from ..inventory.ansible_source import VaultOptions
    from ..inventory.host import Host
    from ..targets.settings import ConnectOptions


DAY_S = 86400.0


def seconds(low: float, high: float = DAY_S, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds from low (or above it) to high."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value > high or (value <= low if above else value < low):
            floor = f"more than {low:g}" if above else f"{low:g}"
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from {floor} to {high:g}")
        return value
    parse.__name__ = "seconds"
    return parse


def whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from low to high."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
        return value
    parse.__name__ = "whole"
    return parse


def existing_folder(text: str) -> Path:
    """An argparse type: a folder that is there (a mistyped one is said, not ignored)."""
    return _existing(text, Path.is_dir, "folder")


def existing_file(text: str) -> Path:
    """An argparse type: a file that is there (a mistyped one is said, not ignored)."""
    return _existing(text, Path.is_file, "file")


def user_path(text: str) -> Path:
    """An argparse type: a path, '~' expanded ('~nobody-here/x' is said, not a traceback)."""
    try:
        return Path(text).expanduser()
    except RuntimeError as exc:  # "Could not determine home directory"
        raise argparse.ArgumentTypeError(f"{text[:200]}: {exc}") from None


def _existing(text: str, kind: Callable[[Path], bool], what: str) -> Path:
    path = user_path(text)
    try:
        if kind(path):
            return path
        problem = f"not a {what}" if path.exists() else f"no such {what}"
    except OSError as exc:  # a name too long, a loop of links
        problem = exc.strerror or str(exc)
    raise argparse.ArgumentTypeError(f"{text[:200]}: {problem}")


def output_folder(path: Path, option: str = "--out") -> Path:
    """The folder runs go into can be made or written: said before anything connects or captures, and nothing
    made yet (the run makes it)."""
    problem = _unwritable(path, folder=True)
    if problem:
        raise UsageError(f"{option} {path}: {problem}", "give a folder you can write")
    return path


def output_file(path: Path | None, option: str) -> None:
    """A file the command writes at its end can be written there: said before the command's work, not after."""
    problem = _unwritable(path, folder=False) if path is not None else None
    if problem:
        raise UsageError(f"{option} {path}: {problem}", "give a file path in a folder you can write")


def _unwritable(path: Path, folder: bool) -> str | None:
    """Why ``path`` (a folder, or a file) cannot be written, or None: it, or the nearest folder above it that
    is there, is of the right kind and writable by this user."""
    try:
        if path.exists():
            if folder != path.is_dir():
                return "not a folder" if folder else "it is a folder"
            return None if os.access(path, os.W_OK | (os.X_OK if folder else 0)) else "this user cannot write it"
        above = path.absolute().parent
        while not above.exists():
            above = above.parent
        if not above.is_dir():
            return f"{above} is not a folder"
        return None if os.access(above, os.W_OK | os.X_OK) else f"this user cannot write in {above}"
    except OSError as exc:  # a name too long, a loop of links
        return exc.strerror or str(exc)


def add_capture_options(parser: argparse.ArgumentParser) -> None:
    """What an app's capture records, over its spec's (profile, fleet): declared once."""
    group = parser.add_argument_group("capture (each defaults to the app spec's)")
    group.add_argument("--duration", type=seconds(0.1), help="seconds to capture")
    group.add_argument("--delay", type=seconds(0), help="seconds to wait before capturing")
    group.add_argument("--trace", help="nsys traces, comma-separated")
    group.add_argument("--sample", help="nsys CPU sampling: cpu, none, process-tree, system-wide")
    group.add_argument("--cpuctxsw", help="nsys context-switch trace: process-tree, system-wide, none (else nsys's "
                                          "default; cores busy needs it)")
    group.add_argument("--gpu-metrics", metavar="SET", help="sample the GPU's hardware metrics with this nsys metric "
                                                            "set (e.g. ga10b on Orin; 'default': nsys's choice)")


# each capture option's argparse dest and the app spec field it sets
CAPTURE_OPTIONS = {option[2:].replace("-", "_"): field for option, field in CAPTURE_OPTION_FIELDS.items()}


def add_no_nsys_option(parser: argparse.ArgumentParser) -> None:
    """--no-nsys of every command that runs apps on boards (profile, study, fleet, ci): declared once."""
    parser.add_argument("--no-nsys", action="store_true",
                        help="run the app as a benchmark, without nsys: its output parser's figures, the board's "
                             "samples and facts, the same run folder, page and results; no trace (nor root) needed")


NSYS_OPTIONS = ("trace", "sample", "cpuctxsw", "gpu_metrics")  # what only nsys records


def capture_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The capture options given, as ``inventory.catalog.with_overrides`` takes them; an nsys option with
    --no-nsys is a usage error (nothing would record it)."""
    given = [name for name in NSYS_OPTIONS if getattr(args, name) is not None]
    if args.no_nsys and given:
        option = "--" + given[0].replace("_", "-")
        raise UsageError(f"{option} sets what nsys records, and --no-nsys runs the app without nsys",
                         f"leave {option} out, or --no-nsys")
    return {**{field: getattr(args, dest) for dest, field in CAPTURE_OPTIONS.items()},
            "nsys": False if args.no_nsys else None}


def given_capture_options(args: argparse.Namespace) -> list[str]:
    return [f"--{name.replace('_', '-')}" for name in CAPTURE_OPTIONS if getattr(args, name) is not None]


def add_app_choice(parser: argparse.ArgumentParser, *, study: bool = False) -> None:
    """--app or --app-cmd (or, for a fleet, --study), and --needs-display for a command line's window."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--app", help="app name from the catalog (see 'orchestrate apps')")
    which.add_argument("--app-cmd", help="profile this command line instead of a catalog app")
    if study:
        which.add_argument("--study", type=Path, metavar="FILE", help="run this study file on every board")
    parser.add_argument("--needs-display", action="store_true",
                        help="the app opens a window (over its spec's, with --app)")
    parser.add_argument("--apps-dir", type=existing_folder,
                        help="extra folder of app specs (default ~/.config/orchestrate/apps)")


def add_run_settings(parser: argparse.ArgumentParser,
                     wait_lock_help: str = "before each run (default: fail at once)") -> None:
    """The run's settings (RunSettings), for every command that runs captures on boards: declared once."""
    group = parser.add_argument_group("run settings")
    group.add_argument("--grace", type=seconds(0), default=RunSettings.grace_s,
                       help=f"seconds past delay+duration before the watchdog stops nsys and the app "
                            f"(default {RunSettings.grace_s:g})")
    group.add_argument("--retries", type=whole(0, 10), default=RunSettings.retries,
                       help=f"captures to try again when nsys ends without a report, however it ended "
                            f"(default {RunSettings.retries})")
    group.add_argument("--wait-lock", type=seconds(0), default=RunSettings.wait_lock_s, metavar="S",
                       help=f"wait up to S seconds for another run on the board to end, {wait_lock_help}")
    group.add_argument("--keep-remote", action="store_true", help="leave the runs' files on the target")
    group.add_argument("--warehouse", metavar="DIR", help=WAREHOUSE_HELP)
    group.add_argument("--heartbeat-timeout", type=seconds(2, 3600), default=RunSettings.heartbeat_timeout_s,
                       metavar="S", help="the board ends the capture on its own after S seconds without hearing from "
                                         f"this machine, and keeps the report for 'orchestrate fetch' (default "
                                         f"{RunSettings.heartbeat_timeout_s:g})")
    group.add_argument("--lock-clocks", action="store_true",
                       help="run jetson_clocks for the capture: the board's own clocks are stored first and restored "
                            "after it however it ends (the board restores them itself if this machine is gone)")
    group.add_argument("--nvpmodel", type=whole(0, 99), metavar="MODE",
                       help="with --lock-clocks: this nvpmodel power mode for the capture, the board's own after it")


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The run's settings as the command line gave them (a usage error before anything loads)."""
    return RunSettings(grace_s=args.grace, retries=args.retries, heartbeat_timeout_s=args.heartbeat_timeout,
                       wait_lock_s=args.wait_lock, keep_remote=args.keep_remote, lock_clocks=args.lock_clocks,
                       nvpmodel=args.nvpmodel)


DB_HELP = "results database: a file path or a postgresql:// URL (default $ORCHESTRATE_DB, else " \
          "results.db in ~/.local/share/orchestrate)"
WAREHOUSE_HELP = "the folder every run's rows go to as Parquet (default $ORCHESTRATE_WAREHOUSE, else warehouse/ in " \
                 "~/.local/share/orchestrate); 'none' keeps no rows"


def add_warehouse_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", metavar="DIR", help=WAREHOUSE_HELP)


def add_lease_options(parser: argparse.ArgumentParser, pick_any: bool = True) -> None:
    """The boards' leases in the results database, for every command that runs captures on boards: declared once."""
    group = parser.add_argument_group("boards shared by a team (leases in the results database)")
    group.add_argument("--db", help=DB_HELP + "; its leases hold each board for one run, study or job at a time, "
                       "across every process and machine sharing it")
    if pick_any:
        group.add_argument("--any", action="store_true",
                           help="--target is an Ansible pattern: take the first of its boards that is free and not "
                                "quarantined (waiting in turn when all are held)")
    group.add_argument("--no-leases", action="store_true",
                       help="take no lease (a lone board nobody shares; the board's capture lock still holds)")
    group.add_argument("--quarantine-after", type=whole(1, 100), default=QUARANTINE_AFTER, metavar="N",
                       help="quarantine a board after N failures in a row of its connection or preflight (default "
                            f"{QUARANTINE_AFTER})")


def lease_options(args: argparse.Namespace) -> LeaseOptions:
    from ..boards.lease import LeaseOptions
    if getattr(args, "any", False) and args.no_leases:
        raise UsageError("--any takes a free board from the leases, which --no-leases turns off",
                         "drop one of them")
    return LeaseOptions(args.db, not args.no_leases, args.quarantine_after)


def target_hosts(args: argparse.Namespace, target: str) -> list[Host]:
    """The host --target names; with --any, every host the pattern matches (in the inventory's order)."""
    from ..inventory.hosts import find_host, load_inventory
    if not getattr(args, "any", False):
        return [find_host(args.inventory, target, vault_options(args))]
    from ..fleet.patterns import select_hosts
    inventory = load_inventory(args.inventory, vault_options(args))
    return [inventory.host(name) for name in select_hosts(inventory, target, "--target")]


def recorded_inventory(args: argparse.Namespace) -> str | None:
    """The inventory as run.json records it: the sources read (--inventory, else $ORCHESTRATE_INVENTORY, else
    ./inventory.yaml), each file or folder by its full path, so that a run's next steps find it from any folder;
    None for the embedded default."""
    from ..inventory.hosts import inventory_sources
    sources = inventory_sources(args.inventory)
    if not sources:
        return None
    return ",".join(os.path.abspath(source) if os.path.exists(source) else source for source in sources)


def add_inventory_options(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Which inventory, and how Ansible opens its vaulted values."""
    parser.add_argument("--inventory", action=_Sources, metavar="SOURCE",
                        help=help_text + "; repeatable: Ansible reads every source, as with several -i")
    parser.add_argument("--vault-password-file", action="append", default=[], type=existing_file, metavar="FILE",
                        help="a file holding the vault password (or a script printing it), as Ansible's; repeatable")
    parser.add_argument("--ask-vault-pass", action="store_true",
                        help="ask for the vault password that opens the inventory's vaulted values")


class _Sources(argparse.Action):
    """--inventory given again adds a source: kept as one comma-joined text, as run.json records it, a file or
    folder by its full path. Several sources are files or folders (a comma in anything else is Ansible's own host
    list, given alone)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, self.dest, None)
        if given:
            for source in (*given.split(","), values):
                if "," in source or not os.path.exists(source):
                    raise UsageError(f"--inventory {source}: several sources are files or folders that exist",
                                     "give a host list ('nano01,nano02,') as the only --inventory")
        if "," not in values and os.path.exists(values):  # by its full path: the run's next steps run from anywhere
            values = os.path.abspath(values)
        setattr(namespace, self.dest, f"{given},{values}" if given else values)


def vault_options(args: argparse.Namespace) -> VaultOptions:
    """How the inventory's vaulted values are opened: the files given, or the password typed at the prompt (it
    reaches Ansible's reader through a pipe, never a command line or a file)."""
    from ..inventory.ansible_source import VaultOptions
    password = None
    if getattr(args, "ask_vault_pass", False):
        import getpass
        try:
            password = getpass.getpass("Vault password: ")
        except EOFError:
            raise UsageError("--ask-vault-pass found no terminal to ask on",
                             "give --vault-password-file instead (for CI)") from None
    return VaultOptions(tuple(str(p) for p in getattr(args, "vault_password_file", ())), password)


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ssh-config", type=existing_file, help="ssh config file (default ~/.ssh/config)")
    parser.add_argument("--known-hosts", type=user_path, help="known_hosts file (default ~/.ssh/known_hosts)")
    parser.add_argument("--accept-new-host-key", action="store_true",
                        help="record an unknown host key in known_hosts instead of refusing (never a changed one)")
    parser.add_argument("--ask-become-pass", action="store_true",
                        help="ask for sudo's password for boards with ansible_become (else it is read from "
                             "ORCHESTRATE_BECOME_PASSWORD, or sudo must not ask for one)")


def connect_options(args: argparse.Namespace) -> ConnectOptions:
    """What this machine adds to the inventory's hosts: the ssh options above and sudo's password (the one
    main() took from the environment, or typed at --ask-become-pass's prompt)."""
    from ..targets.settings import ConnectOptions
    password = getattr(args, "become_password", None)
    if args.ask_become_pass:
        import getpass
        try:
            password = getpass.getpass("BECOME password: ") or None
        except EOFError:
            raise UsageError("--ask-become-pass found no terminal to ask on",
                             "set ORCHESTRATE_BECOME_PASSWORD instead (for CI)") from None
    if password is not None and any(c in password for c in "\n\r\0"):
        raise UsageError("the become password holds a line break or a NUL, which sudo cannot take",
                         "give the password without them")
    return ConnectOptions(args.ssh_config, args.known_hosts, args.accept_new_host_key, become_password=password)


def stderr() -> Console:
    """rich's console on stderr, for progress, notes and errors (stdout carries the results)."""
    from rich.console import Console
    return Console(stderr=True)


PIPED_WIDTH = 10_000  # piped output is as wide as its longest line: nothing cut to "es2gears…"


def show(renderable: Any, err: bool = False) -> None:
    """Print a table (or text) of results: every name as text, never taken for markup ('[swrast_dri.so]');
    on a terminal at its width, piped at full width (or $COLUMNS when set)."""
    from rich.console import Console
    console = Console(stderr=err, markup=False, highlight=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(stderr=err, markup=False, highlight=False, width=PIPED_WIDTH)
        _natural_width(renderable)
    console.print(renderable, soft_wrap=isinstance(renderable, str))  # a line of text is never cut


def _natural_width(renderable: Any) -> None:
    from rich.console import Group
    from rich.table import Table
    if isinstance(renderable, Table):
        renderable.expand = False
    elif isinstance(renderable, Group):
        for part in renderable.renderables:
            _natural_width(part)


def write_output(path: Path, text: str, append: bool = False) -> Path:
    """Write a file the user named (whole, or appended to), or say in one line why it cannot be written."""
    from ..files import write_error, write_text
    if not append:
        return write_text(path, text)
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise write_error(path, exc) from None
    return path
