"""`profile` and `study` through the server (only with `orchestrate mcp --allow-capture`): the command line itself, run
as a child with the options the tool was given, so that its leases, retries, one-line errors and run folders are
the CLI's own. Each line it says of its progress is an MCP progress notification. A client's cancel, or its closed
stdin, is the CLI's Ctrl-C: the child gets SIGINT, ends the capture early and keeps the report, and the tool waits
for it. The child has a session of its own and writes to files rather than to the server's pipes, so a client that
kills the server's process group (as the SDK's does two seconds after closing stdin) does not kill a capture half
way: it ends as an interrupted run would, on its own.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ..environment import BECOME_PASSWORD_VARIABLE
from ..errors import UsageError

Report = Callable[[str], Awaitable[None]]
POLL_S = 0.2  # how often what the command said is read


@dataclass(frozen=True)
class CaptureSettings:
    """What the server's own command line gives every capture: where runs go, and the machine's inventory, app
    specs and ssh files (a client names a target and an app, never a file of this machine)."""
    out: Path
    inventory: Path | None = None
    apps_dir: Path | None = None
    ssh_config: Path | None = None
    known_hosts: Path | None = None
    become_password: str | None = field(default=None, repr=False)  # handed to each child in its environment only

    def common(self) -> list[str]:
        return options((("--out", self.out), ("--inventory", self.inventory), ("--ssh-config", self.ssh_config),
                        ("--known-hosts", self.known_hosts), ("--apps-dir", self.apps_dir)))

    def environment(self) -> dict[str, str]:
        """The child's environment: this one's, and sudo's password where the server was given one (the child
        takes it out of its environment as it starts, as the server did)."""
        found = dict(os.environ)
        if self.become_password is not None:
            found[BECOME_PASSWORD_VARIABLE] = self.become_password
        return found


def options(pairs: Iterable[tuple[str, object]]) -> list[str]:
    """--flag=value for each value given: a value that begins with '-' stays a value."""
    return [f"{flag}={value}" for flag, value in pairs if value is not None]


def profile_args(settings: CaptureSettings, target: str, app: str | None, app_cmd: str | None,
                 duration: float | None, trace: str | None, sample: str | None, cpuctxsw: str | None,
                 retries: int | None, needs_display: bool, no_nsys: bool) -> list[str]:
    """`orchestrate profile`'s arguments for the tool's options."""
    if (app is None) == (app_cmd is None):
        raise UsageError("profile needs one of app and app_cmd", "name a catalog app, or give the command line")
    args = ["profile", *options((("--target", target), ("--app", app), ("--app-cmd", app_cmd))), *settings.common()]
    args += options((("--duration", duration), ("--trace", trace), ("--sample", sample), ("--cpuctxsw", cpuctxsw),
                     ("--retries", retries)))
    return args + ["--needs-display"] * needs_display + ["--no-nsys"] * no_nsys


def study_args(settings: CaptureSettings, file: Path, target: str | None, repeat: int | None,
               values: list[str] | None) -> list[str]:
    """`orchestrate study`'s arguments for the tool's options."""
    return ["study", str(file.resolve()), *settings.common(),
            *options((("--target", target), ("--repeat", repeat), *(("--set", value) for value in values or [])))]


@dataclass(frozen=True)
class Ran:
    code: int
    folder: str | None    # the run or study folder it printed last
    error: str | None     # its one-line error, when it failed


async def run_command(args: list[str], report: Report, environment: dict[str, str]) -> Ran:
    """The command line, its progress lines reported as they come; on cancel, its Ctrl-C, waited for. What it prints
    goes to files of its own that nothing names (made, opened and unlinked at once): a server that goes away (its
    client kills it) leaves the command no broken pipe to die of, and no file behind."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            open(f"/proc/self/fd/{err.fileno()}", "rb") as progress:
        process = await anyio.open_process([sys.executable, "-m", "orchestrator", *args], stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=err, start_new_session=True, env=environment)
        said: list[str] = []
        pending = b""

        async def read_progress() -> None:
            nonlocal pending
            pending += progress.read()
            *lines, pending = pending.split(b"\n")
            for line in (text.decode(errors="replace").strip() for text in lines):
                if line:
                    said.append(line)
                    await report(line)

        try:
            while process.returncode is None:
                with anyio.move_on_after(POLL_S):
                    await process.wait()
                await read_progress()
        except BaseException:  # a cancel, or anything else: the command is never left without anyone waiting for it
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.send_signal(signal.SIGINT)  # the CLI's Ctrl-C: the capture ends early, the report is kept
                    await process.wait()
            raise
        pending += b"\n"
        await read_progress()
        out.seek(0)
        printed = [line for line in out.read().decode(errors="replace").splitlines() if line.strip()]
    code = process.returncode or 0
    errors = [line for line in said if line.startswith("error:")]
    return Ran(code, printed[-1] if printed else None,
               (errors[-1] if errors else said[-1] if said else None) if code else None)
