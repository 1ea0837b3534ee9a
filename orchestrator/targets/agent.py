"""Ship the agent to a target (by content hash) and talk to it in JSON lines."""
from __future__ import annotations

import hashlib
import io
import json
import shlex
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import remote_agent

from ..errors import AgentError
from ..inventory.hosts import Host
from .shell import ShellCommand
from .transport import Transport

AGENT_SOURCE = Path(remote_agent.__file__).parent
ZIP_ENTRY_TIME = (2020, 1, 1, 0, 0, 0)
ARCHIVE_MAIN = b"import sys\nfrom remote_agent.main import main\nsys.exit(main())\n"
EventHandler = Callable[[dict], None]


def build_agent_archive() -> bytes:
    """A zip the target's python runs directly; byte-identical for identical sources."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        entries = [("__main__.py", ARCHIVE_MAIN)]
        entries += [(f"remote_agent/{p.name}", p.read_bytes()) for p in sorted(AGENT_SOURCE.glob("*.py"))]
        for name, data in entries:
            info = zipfile.ZipInfo(name, ZIP_ENTRY_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def shell_path(path: str) -> str:
    """Quote a path for the shell, keeping a leading ~/ expandable."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return '"$HOME"' + ("/" + shlex.quote(rest) if rest else "")
    return shlex.quote(path)


@dataclass(frozen=True)
class RemoteAgent:
    transport: Transport
    python: str
    archive: str
    work_dir: str
    sha256: str
    version: str
    reused: bool

    def call(self, command: str, request: dict[str, Any] | None = None, *, on_event: EventHandler | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        """Run one agent command; return its result data or raise AgentError with its message."""
        result: dict[str, Any] | None = None
        failure: dict[str, Any] | None = None

        def on_line(line: str) -> None:
            nonlocal result, failure
            if not line.startswith("{"):
                return
            try:
                event = json.loads(line)
            except ValueError:
                return
            if event.get("event") == "result":
                result = event.get("data")
            elif event.get("failed"):
                failure = event
            elif on_event:
                on_event(event)

        answer = self.transport.run(ShellCommand((self.python, self.archive, command)),
                                    stdin=json.dumps(request or {}).encode(), on_stdout_line=on_line,
                                    timeout=timeout)
        if failure is not None:
            raise AgentError(f"agent '{command}' failed on {self.transport.description}: {failure.get('msg')}",
                             "see the message above; rerun with --debug-log for the agent's trace")
        if result is None:
            detail = (answer.stderr.strip().splitlines() or [f"exit status {answer.exit_status}"])[-1]
            raise AgentError(f"agent '{command}' gave no answer on {self.transport.description}: {detail}",
                             "check that the target's python is 3.6 or newer (orchestrate_python)")
        return result


def _version(transport: Transport, python: str, archive: str) -> dict[str, Any] | None:
    answer = transport.run(ShellCommand((python, archive, "version")))
    for line in answer.stdout.splitlines():
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "result":
                return event["data"]
    return None


def deploy_agent(transport: Transport, host: Host) -> RemoteAgent:
    """Put the agent archive into a root-only folder on the target unless the same one is there."""
    archive_bytes = build_agent_archive()
    digest = hashlib.sha256(archive_bytes).hexdigest()
    work = shell_path(host.work_dir)
    probe = transport.run(f"umask 077 && mkdir -p {work}/agent && chmod 700 {work} {work}/agent && cd {work} "
                          f"&& pwd && command -v {shlex.quote(host.python)}")
    lines = probe.stdout.split()
    if probe.exit_status != 0 or len(lines) < 2:
        if lines and probe.exit_status != 0 and len(lines) == 1:
            raise AgentError(f"'{host.python}' not found on {transport.description}",
                             "install Python 3.6+ there or set orchestrate_python in the inventory")
        detail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise AgentError(f"cannot prepare {host.work_dir} on {transport.description}: {detail}",
                         "set orchestrate_work_dir to a writable folder")
    work_dir, python = lines[0], lines[1]
    archive = f"{work_dir}/agent/orchestrate-agent-{digest[:16]}.pyz"
    found = _version(transport, python, archive)
    reused = bool(found and found.get("sha256") == digest)
    if not reused:
        with tempfile.NamedTemporaryFile(suffix=".pyz") as local:
            local.write(archive_bytes)
            local.flush()
            transport.put(Path(local.name), archive, mode=0o600)
        transport.run(f"cd {shlex.quote(work_dir)}/agent && for old in orchestrate-agent-*.pyz; do "
                      f"[ \"$old\" = {shlex.quote(Path(archive).name)} ] || rm -f \"$old\"; done")
        found = _version(transport, python, archive)
    if not found or found.get("sha256") != digest:
        raise AgentError(f"the agent does not run on {transport.description} with {python}",
                         "the agent needs Python 3.6 or newer; set orchestrate_python to one")
    return RemoteAgent(transport=transport, python=python, archive=archive, work_dir=work_dir, sha256=digest,
                       version=str(found.get("version")), reused=reused)
