"""Become another user on a target, as Ansible's ``become`` does with its ``sudo`` method.

The login user (root or not) reaches the target; every command then runs as the become user (root by
default) through ``sudo``: the agent, its uploads, its downloads. A password, when sudo asks for one, is
the first line of the command's standard input (``sudo -S``), never an argument, a variable or a file on
either side. It is checked once when the target is opened, so that a wrong one is one clear error at once
instead of sudo taking the next lines of input as further tries; from then on every command asks afresh
(``-k``), so that the first line of input is always the password whether or not sudo cached it.
"""
from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from ..environment import BECOME_PASSWORD_VARIABLE
from ..errors import BecomeError, TransferError
from .download import Part, ProgressHandler
from .shell import ShellCommand
from .streams import CommandResult, LineHandler
from .transport import Stream, Transport

ASK_FIX = f"give it with --ask-become-pass or {BECOME_PASSWORD_VARIABLE}"


def sudo_prefix(user: str, asks_password: bool) -> str:
    """sudo's options: read a password from standard input with no prompt, or never ask for one."""
    flags = "-S -k -p ''" if asks_password else "-n"
    return f"sudo {flags} -u {shlex.quote(user)} -H --"


class BecomeTransport:
    """A transport whose commands run as another user through sudo; the same verbs as the one it wraps."""

    def __init__(self, inner: Transport, user: str, password: str | None) -> None:
        self.inner = inner
        self.user = user
        self.description = inner.description
        self._password = password
        self._asks = _check(inner, user, password)

    def __repr__(self) -> str:  # the password stays out of every trace and log
        return f"BecomeTransport({self.description}, user={self.user!r})"

    def wrap(self, command: ShellCommand | str) -> str:
        line = command.render() if isinstance(command, ShellCommand) else command
        return f"{sudo_prefix(self.user, self._asks)} sh -c {shlex.quote(line)}"

    def _input(self, data: bytes | None) -> bytes:
        head = (self._password or "").encode() + b"\n" if self._asks else b""
        return head + (data or b"")

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult:
        return self.inner.run(self.wrap(command), stdin=self._input(stdin), on_stdout_line=on_stdout_line,
                              timeout=timeout)

    def open_stream(self, command: ShellCommand) -> Stream:
        stream = self.inner.open_stream(ShellCommand(("sh", "-c", self.wrap(command))))
        if self._asks:
            stream.send(self._input(None))
        return stream

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None:
        """The file's bytes through sudo's standard input into place, half-sent bytes removed."""
        partial = shlex.quote(remote + ".part")
        try:
            data = local.read_bytes()
        except OSError as exc:
            raise TransferError(f"cannot read {local}: {exc.strerror or exc}", "check that the file is there") from None
        done = self.run(f"umask 077 && {{ cat > {partial} && chmod {mode:o} {partial} && "
                        f"mv -f {partial} {shlex.quote(remote)}; }} || {{ rm -f {partial}; exit 1; }}", stdin=data)
        if done.exit_status != 0:
            detail = (done.stderr.strip().splitlines() or [f"exit status {done.exit_status}"])[-1]
            raise TransferError(f"uploading {local.name} to {self.description}:{remote} as {self.user} failed: "
                                f"{detail}", "check free space and permissions on the target")

    def prepare_download(self) -> None:
        self.inner.prepare_download()

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        return self.inner.download(ShellCommand(("sh", "-c", self.wrap(command))), parts, self._input(stdin),
                                   on_progress)

    def close(self) -> None:
        self.inner.close()


def _first_line(result: CommandResult) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip() and "unable to resolve host" not in line]
    return lines[-1].strip() if lines else f"exit status {result.exit_status}"


def _check(inner: Transport, user: str, password: str | None) -> bool:
    """Whether sudo asks the login user for a password (True) or not; a BecomeError when it cannot be used."""
    where = inner.description
    probe = inner.run(f"id -un && LC_ALL=C {sudo_prefix(user, False)} true")  # sudo's words in English
    login = probe.stdout.strip() or "the login user"
    sudoers_line = f"{login} ALL=(ALL) NOPASSWD: ALL"
    if probe.exit_status == 0:
        return False
    if probe.exit_status == 127 or "not found" in probe.stderr:
        raise BecomeError(f"ansible_become is set but {where} has no sudo",
                          "install sudo there (apt install sudo), or log in as root and drop ansible_become")
    if "tty" in probe.stderr:
        raise BecomeError(f"sudo on {where} needs a terminal: {_first_line(probe)}",
                          f"add 'Defaults:{login} !requiretty' to /etc/sudoers.d/orchestrate (visudo -f)")
    if "password is required" not in probe.stderr:
        raise BecomeError(f"sudo -u {user} refused {login} on {where}: {_first_line(probe)}",
                          f"let {login} use sudo: 'usermod -aG sudo {login}' on the board, or the line "
                          f"'{sudoers_line}' in /etc/sudoers.d/orchestrate (visudo -f)")
    if password is None:
        raise BecomeError(f"sudo on {where} asks {login} for a password and none was given",
                          f"{ASK_FIX}; or, once on the board, allow it without one: the line '{sudoers_line}' "
                          "in /etc/sudoers.d/orchestrate (visudo -f)")
    tried = inner.run(f"LC_ALL=C {sudo_prefix(user, True)} true", stdin=password.encode() + b"\n")
    if tried.exit_status == 0:
        return True
    said = _first_line(tried)
    if "incorrect password" in said or "no password was provided" in said:
        raise BecomeError(f"sudo on {where} refused the become password for {login}", f"check it, then {ASK_FIX}")
    if "sudoers" in said or "may not run sudo" in said:
        raise BecomeError(f"{login} may not use sudo on {where}: {said}",
                          f"add {login} to the sudo group on the board: usermod -aG sudo {login}")
    if "tty" in said:
        raise BecomeError(f"sudo on {where} needs a terminal: {said}",
                          f"add 'Defaults:{login} !requiretty' to /etc/sudoers.d/orchestrate (visudo -f)")
    raise BecomeError(f"sudo -u {user} failed on {where}: {said}", "run 'sudo true' there by hand to see why")
