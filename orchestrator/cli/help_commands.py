"""`orchestrate help TOPIC`: what does not fit in one command's --help (the exit codes, as a table)."""
from __future__ import annotations

import argparse
from typing import Any

from ..errors import EXIT_CODES

TOPICS = ("exit-codes",)


def add_parsers(sub: Any) -> None:
    topic = sub.add_parser("help", help="a topic of its own: exit-codes",
                           description="Print a help topic that spans the commands.")
    topic.add_argument("topic", choices=TOPICS, help="exit-codes: every exit status, and what it means")


def exit_codes_table() -> str:
    """The exit codes as a Markdown table (as the docs show them)."""
    rows = [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES.items()]
    return "\n".join(["| code | meaning |", "|---|---|", *rows])


def cmd_help(args: argparse.Namespace) -> int:
    print(exit_codes_table())
    return 0
