"""Options and helpers more than one command shares: SSH, clocks, the console for progress and errors."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console


def add_clock_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lock-clocks", action="store_true",
                        help="run jetson_clocks for the capture: the board's own clocks are stored first and restored "
                             "after it however it ends (the board restores them itself if this machine is gone)")
    parser.add_argument("--nvpmodel", type=int, metavar="MODE",
                        help="with --lock-clocks: this nvpmodel power mode for the capture, the board's own after it")


def clock_request(args: argparse.Namespace) -> dict:
    if args.nvpmodel is not None and not args.lock_clocks:
        raise UsageError("--nvpmodel goes with --lock-clocks", "e.g. --lock-clocks --nvpmodel 0")
    return {"lock_clocks": args.lock_clocks, "nvpmodel": args.nvpmodel}


def add_study_run_options(parser: argparse.ArgumentParser,
                          wait_lock_help: str = "before each run (default 0)") -> None:
    """--grace, --retries and --wait-lock of a command that runs a study's cells (or an app) on boards."""
    parser.add_argument("--grace", type=float, default=30.0, help="as for profile (default 30)")
    parser.add_argument("--retries", type=int, default=1, help="as for profile (default 1)")
    parser.add_argument("--wait-lock", type=float, default=0.0, metavar="S",
                        help=f"wait up to S seconds for another run on the board to end, {wait_lock_help}")


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ssh-config", type=Path, help="ssh config file (default ~/.ssh/config)")
    parser.add_argument("--known-hosts", type=Path, help="known_hosts file (default ~/.ssh/known_hosts)")
    parser.add_argument("--accept-new-host-key", action="store_true",
                        help="record an unknown host key in known_hosts instead of refusing (never a changed one)")


def stderr() -> Console:
    """rich's console on stderr, for progress, notes and errors (stdout carries the results)."""
    from rich.console import Console
    return Console(stderr=True)


def write_output(path: Path, text: str, append: bool = False) -> Path:
    """Write a file the user named, or say in one line why it cannot be written."""
    try:
        with path.open("a" if append else "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}", "give a path in a folder you can write") from None
    return path
