"""Writing the files a command makes (run.json, pages, traces, summaries, exports): whole or not at all.

Each is written to a partial file beside it and renamed over it once complete, so a reader never sees half
a file; a write that fails (a full disk, a folder where the file should go, an interrupt) removes its
partial file and says in one line what the path was and what to do.
"""
from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import DiskFullError, OrchestratorError, UsageError


def write_error(path: Path, exc: OSError) -> OrchestratorError:
    """The one-line error of a file that could not be written at ``path``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"no space left to write {path}", "free some space and run it again")
    try:
        folder = path.is_dir()
    except OSError:  # a name too long, say: its own error says so
        folder = False
    if folder:
        return UsageError(f"cannot write {path}: it is a folder", "give a file path, e.g. inside that folder")
    return UsageError(f"cannot write {path}: {exc.strerror or exc}", "give a path in a folder you can write")


@contextmanager
def replacing(path: Path, partial_name: str | None = None) -> Iterator[Path]:
    """The partial file to write; it becomes ``path`` when the block ends, and is removed when it fails."""
    if not path.name:  # '.', '/': a folder by its very name
        raise UsageError(f"cannot write {path}: it is a folder", "give a file path, e.g. inside that folder")
    partial = path.with_name(partial_name or f".{path.name}.{os.getpid()}.part")
    try:
        try:
            yield partial
            partial.replace(path)
        except BaseException:
            try:
                partial.unlink()
            except OSError:
                pass  # never made, or its folder is gone: nothing left behind either way
            raise
    except OSError as exc:
        if exc.filename is not None and exc.filename not in (str(partial), str(path)):
            raise  # another file's error (a program the block started, say): the caller's to say
        raise write_error(path, exc) from None


def write_text(path: Path, text: str) -> Path:
    """``text`` as the whole of ``path`` (UTF-8), or nothing and an error that says why."""
    with replacing(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return path
