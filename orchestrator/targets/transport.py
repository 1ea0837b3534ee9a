"""What a transport is: the only way the rest of orchestrate talks to a target. Its verbs: run a command,
open a stream to a running command, put a file, download a command's output into files, close.

``ssh.SSHTransport`` speaks SSH, ``local.LocalTransport`` does the same on this machine and
``become.BecomeTransport`` runs another transport's commands through sudo; ``connect.open_transport`` opens
the one an inventory host asks for. Both SSH and local commands are read by the one loop of ``streams``.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from .download import Part, ProgressHandler
from .shell import ShellCommand
from .streams import CommandResult, LineHandler


class Stream(Protocol):
    """A command that runs while we talk to it: lines in, lines out."""

    def send(self, data: bytes) -> None: ...

    def read_lines(self, timeout: float) -> list[str]: ...

    @property
    def finished(self) -> bool: ...

    def error_output(self) -> str: ...

    def close(self) -> None: ...


class Transport(Protocol):
    description: str

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult: ...

    def open_stream(self, command: ShellCommand) -> Stream: ...

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None: ...

    def prepare_download(self) -> None:
        """Set up what a download needs (a connection of its own) without waiting: a download comes next."""

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        """The command's stdout appended to the parts' files in turn, each its count of bytes."""

    def close(self) -> None: ...
