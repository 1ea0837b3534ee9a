"""How this orchestrate was started, to say it again in a command a user copies: ``orchestrate`` when the one
on PATH is this very program, else its absolute path (the README installs it in .venv/bin, which is seldom on
PATH), else this Python with ``-m orchestrator`` (a test, or ``python -m orchestrator``)."""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

PROGRAM = "orchestrate"


def program(argv0: str | None = None, path: str | None = None) -> str:
    """The words that run this orchestrate from any folder."""
    started = Path(argv0 if argv0 is not None else sys.argv[0])
    if str(started) == PROGRAM:  # found on PATH when it was started
        return PROGRAM
    if started.name == PROGRAM:
        here = started if started.is_absolute() else Path.cwd() / started
        found = shutil.which(PROGRAM, path=path if path is not None else os.environ.get("PATH"))
        if found and Path(found).resolve() == here.resolve():
            return PROGRAM
        return shlex.quote(str(here.resolve()))
    return shlex.join([sys.executable, "-m", "orchestrator"])
