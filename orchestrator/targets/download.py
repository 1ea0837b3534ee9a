"""A download: a command's stdout written into files in turn, through OpenSSH's client (or a local shell) or
through a paramiko channel read by the one read loop (``streams``). Each part names a file and how many of the
stream's next bytes are its; the last may take the rest. The bytes are appended (a partial file resumes where it
stopped).

OpenSSH's client writes the whole stream into the first part's file itself, as scp would (a pull puts its
largest file first); what follows that part's bytes is moved to the other parts once the client is done.
Through a pipe and this process instead, every byte took one more copy: a 512 MB pull ran at 0.87x scp's
rate on a 2-core machine where it had run at 0.99x.
"""
from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from . import openssh
from .streams import CHUNK, CommandResult, Process, Reader

ProgressHandler = Callable[[int, int], None]
Part = tuple[Path, "int | None"]  # a file, and how many of the stream's next bytes are its (None: the rest)


class PartWriter:
    """The stream's bytes into the parts' files, in turn. Bytes past the last part are counted, not kept."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = list(parts)
        self.index = -1
        self.left: int | None = 0
        self.handle: int | None = None
        self.written = 0
        self.overflow = 0
        self._next()

    def _next(self) -> None:
        """Move on to the next part with room left (a part of 0 bytes is only created)."""
        while self.left == 0:
            self._close_file()
            self.index += 1
            if self.index >= len(self.parts):
                return
            path, count = self.parts[self.index]
            self.handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.left = count

    def _close_file(self) -> None:
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None

    def _room(self, wanted: int) -> int:
        return wanted if self.left is None else min(wanted, self.left)

    def _account(self, moved: int) -> None:
        self.written += moved
        if self.left is not None:
            self.left -= moved
            self._next()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.handle is None:
                self.overflow += len(view)
                return
            done = os.write(self.handle, view[:self._room(len(view))])
            view = view[done:]
            self._account(done)

    def close(self) -> None:
        self._close_file()

    def complaint(self) -> str:
        return f"\nthe command sent {self.overflow} bytes more than asked" if self.overflow else ""


def from_process(argv: list[str], parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None) -> CommandResult:
    """Run argv (OpenSSH's client, or a local shell) with its stdout into the parts; an interrupt stops the
    child and goes on up."""
    first, count = parts[0]
    start = first.stat().st_size if first.exists() else 0
    overflow = ""
    try:
        with open(first, "ab") as sink:
            proc = openssh.child(argv, stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.PIPE)
            errors = _follow(proc, lambda: first.stat().st_size - start, stdin, on_progress)
    finally:  # interrupted too: each file keeps only its own bytes, for the next pull to resume
        if count is not None:
            overflow = _move_tail(first, start + count, parts[1:])
    return CommandResult(proc.returncode if not overflow else 255, "", errors + overflow)


def _follow(proc: subprocess.Popen, received: Callable[[], int], stdin: bytes,
            on_progress: ProgressHandler | None) -> str:
    """Feed the child its input and wait for it, reporting progress; its stderr.

    Not the read loop of ``streams``: the child writes stdout into the file itself (see above), so there is
    no stdout to read here, only stderr to keep and the file's size to report while the child runs."""
    assert proc.stderr
    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        if proc.stdin:
            proc.stdin.write(stdin)
            proc.stdin.close()
        while True:
            try:
                proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if on_progress:
                    on_progress(received(), 0)
    except BaseException:
        proc.terminate()
        proc.wait()
        raise
    reader.join()
    if on_progress:
        on_progress(received(), 0)
    return b"".join(errors).decode("utf-8", "replace")


def _move_tail(first: Path, end: int, rest: Sequence[Part]) -> str:
    """The bytes of first past end, moved into the rest of the parts; first cut back to end. Returns what to
    say of bytes more than the parts asked for."""
    if first.stat().st_size <= end:  # the stream ended within the first part (a broken transfer): nothing more
        return ""
    writer = PartWriter(rest)
    try:
        with open(first, "rb") as handle:
            handle.seek(end)
            for block in iter(lambda: handle.read(CHUNK), b""):
                writer.write(block)
    finally:
        writer.close()
    os.truncate(first, end)
    return writer.complaint()


def from_stdout(process: Process, parts: Sequence[Part], on_progress: ProgressHandler | None,
                failures: tuple[type[BaseException], ...]) -> CommandResult:
    """Start the process and write its stdout into the parts as the read loop takes it; one of failures (the
    transport's errors) ends the download with exit status 255 and what stderr said until then."""
    writer = PartWriter(parts)

    def on_stdout(data: bytes) -> None:
        writer.write(data)
        if on_progress:
            on_progress(writer.written, 0)

    reader = Reader(process, on_stdout)
    try:
        process.start()
        reader.read_to_end()
        status = process.exit_status() if not writer.overflow else 255
        return CommandResult(status, "", reader.errors() + writer.complaint())
    except failures as exc:
        return CommandResult(255, "", f"{reader.errors()}{exc}")
    finally:
        writer.close()
