"""The one read loop both transports feed, in the shape of Fabric's Runner.

A transport starts a command as a ``Process`` and supplies the hooks: ``start``, ``wait`` (until an output
may hold bytes), ``read_stdout`` and ``read_stderr`` (a chunk that is there now, without blocking) and
``exit_status``. The loop here does the rest, the same for SSH and for this machine: stdout to a sink (whole
lines to a callback, or a download's files), stderr kept, a deadline, both outputs read to their ends.
Fabric reads each output in a thread of its own with blocking reads; a channel and a pipe can both be
waited on with select, so one thread reads both here.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

LineHandler = Callable[[str], None]
CHUNK = 1024 * 1024
POLL_S = 0.2  # how long the loop waits for bytes before it looks at the deadline again


@dataclass(frozen=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str


class DeadlinePassed(Exception):
    """The command ran past the caller's timeout; the transport says so in its own words."""


class Process(Protocol):
    """A command on a target, as a transport runs it: the hooks the read loop calls."""

    def start(self) -> None:
        """Start the command, with its input as the transport was asked to give it."""

    def wait(self, timeout: float) -> None:
        """Return once stdout or stderr may hold bytes, or after timeout seconds."""

    def read_stdout(self) -> bytes | None:
        """A chunk of stdout that is there now: b"" when none has come yet, None once stdout has ended."""

    def read_stderr(self) -> bytes | None:
        """The same for stderr."""

    def exit_status(self) -> int:
        """The command's exit status, once both outputs have ended."""


class Lines:
    """Bytes in, whole lines out (UTF-8, undecodable bytes replaced); an unfinished line waits for its end."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[str]:
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines]

    def rest(self) -> str:
        """The last line when the output did not end with a newline ("" when it did)."""
        rest, self.pending = self.pending, b""
        return rest.decode("utf-8", "replace")


def _take(read: Callable[[], bytes | None], sink: Callable[[bytes], None]) -> bool:
    """Whatever one output holds now, into sink; whether the output is still open."""
    while True:
        data = read()
        if data is None:
            return False
        if not data:
            return True
        sink(data)


class Reader:
    """The read loop: a started process's stdout to on_stdout as it comes, its stderr kept."""

    def __init__(self, process: Process, on_stdout: Callable[[bytes], None]) -> None:
        self.process = process
        self.on_stdout = on_stdout
        self.stderr = bytearray()
        self.stdout_open = self.stderr_open = True

    @property
    def ended(self) -> bool:
        return not (self.stdout_open or self.stderr_open)

    def step(self, timeout: float) -> None:
        """Wait up to timeout seconds for bytes, then take what both outputs hold."""
        self.process.wait(timeout)
        if self.stdout_open:
            self.stdout_open = _take(self.process.read_stdout, self.on_stdout)
        self.take_stderr()

    def take_stderr(self) -> None:
        if self.stderr_open:
            self.stderr_open = _take(self.process.read_stderr, self.stderr.extend)

    def read_to_end(self, timeout: float | None = None) -> None:
        """Both outputs to their ends: the exit status can come before the last output, so the loop waits for
        the end of both instead. DeadlinePassed after timeout seconds (None or 0: no limit)."""
        deadline = time.monotonic() + timeout if timeout else None
        while not self.ended:
            self.step(POLL_S)
            if deadline and time.monotonic() > deadline:
                raise DeadlinePassed()

    def errors(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def run(process: Process, on_line: LineHandler | None, timeout: float | None) -> CommandResult:
    """Start the process and read it to its end, handing stdout's lines to on_line as they arrive (the last
    one too when no newline ends it). DeadlinePassed after timeout seconds."""
    stdout = bytearray()
    lines = Lines()

    def on_stdout(data: bytes) -> None:
        stdout.extend(data)
        if on_line:
            for line in lines.feed(data):
                on_line(line)

    process.start()
    reader = Reader(process, on_stdout)
    reader.read_to_end(timeout)
    rest = lines.rest()
    if on_line and rest:
        on_line(rest)
    return CommandResult(process.exit_status(), stdout.decode("utf-8", "replace"), reader.errors())


class LineStream:
    """A command that runs while we talk to it (transport.Stream): stdout's whole lines as they come, read by
    the same loop. A transport's subclass sends to it and closes it; a failed send marks it finished."""

    def __init__(self, process: Process) -> None:
        process.start()
        self.process = process
        self._lines = Lines()
        self._ready: list[str] = []
        self.reader = Reader(process, lambda data: self._ready.extend(self._lines.feed(data)))
        self.input_closed = False

    def read_lines(self, timeout: float) -> list[str]:
        self.reader.step(timeout)
        ready, self._ready = self._ready, []
        return ready

    @property
    def finished(self) -> bool:
        return self.input_closed or not self.reader.stdout_open

    def error_output(self) -> str:
        self.reader.take_stderr()
        return self.reader.errors()
