"""The local transport: the same verbs on this machine, for the embedded default target that needs no board.
A command's pipes feed the one read loop (``streams``)."""
from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import RemoteCommandError, TransferError
from . import download, streams
from .download import Part, ProgressHandler
from .shell import ShellCommand
from .streams import CHUNK, CommandResult, LineHandler, LineStream


class LocalTransport:
    """The verbs of transport.Transport on this machine: run, open_stream, put, download, close."""

    description = "this machine"

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult:
        line = command.render() if isinstance(command, ShellCommand) else command
        process = PipeProcess(line, stdin or b"")
        try:
            return streams.run(process, on_stdout_line, timeout)
        except streams.DeadlinePassed:
            process.kill()
            raise RemoteCommandError(f"command did not finish within {timeout:g} s: {line[:120]}",
                                     "rerun with a longer --grace") from None

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None:
        target = Path(remote)
        partial = target.with_name(target.name + ".part")
        try:
            shutil.copyfile(local, partial)
            os.chmod(partial, mode)
            os.replace(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise TransferError(f"copying {local.name} to {remote} failed: {exc.strerror or exc}",
                                "check free space and permissions there") from None

    def open_stream(self, command: ShellCommand) -> PipeStream:
        return PipeStream(PipeProcess(command.render(), None, new_session=True))

    def prepare_download(self) -> None:
        pass

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        return download.from_process(["/bin/sh", "-c", command.render()], parts, stdin, on_progress)

    def close(self) -> None:
        pass


class PipeProcess:
    """A command run by /bin/sh here, its outputs on pipes: the read loop's hooks (streams.Process)."""

    def __init__(self, line: str, stdin: bytes | None, new_session: bool = False) -> None:
        self.line = line
        self.stdin = stdin  # all of it, then the input's end; None: the input stays open (a stream)
        self.new_session = new_session
        self.proc: subprocess.Popen | None = None
        self._open: list[int] = []

    def start(self) -> None:
        self.proc = subprocess.Popen(["/bin/sh", "-c", self.line], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=self.new_session)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        for pipe in (self.proc.stdout, self.proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        self._open = [self.proc.stdout.fileno(), self.proc.stderr.fileno()]
        if self.stdin is not None:
            self.proc.stdin.write(self.stdin)
            self.proc.stdin.close()

    def wait(self, timeout: float) -> None:
        if self._open:
            select.select(self._open, [], [], timeout)

    def _read(self, fd: int) -> bytes | None:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return b""
        if not data:
            self._open.remove(fd)
            return None
        return data

    def read_stdout(self) -> bytes | None:
        assert self.proc and self.proc.stdout
        return self._read(self.proc.stdout.fileno())

    def read_stderr(self) -> bytes | None:
        assert self.proc and self.proc.stderr
        return self._read(self.proc.stderr.fileno())

    def exit_status(self) -> int:
        assert self.proc
        return self.proc.wait()

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()


class PipeStream(LineStream):
    """A stream on a local command's pipes (transport.Stream)."""

    def __init__(self, process: PipeProcess) -> None:
        super().__init__(process)
        assert process.proc
        self.proc = process.proc

    def send(self, data: bytes) -> None:
        assert self.proc.stdin
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.input_closed = True

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
