"""Ship the agent to a target (by content hash), check it before every use, talk to it in JSON lines.

The agent lives in a root-only folder (0700, owned by the connecting user) as
``orchestrate-agent-<hash>.pyz`` (0600). It is never run as is: every command goes through a few lines
of Python (``BOOTSTRAP``) that check the archive's owner, mode and sha256 against the hash this host
built, and run it only when all three hold. A tampered or damaged archive answers "untrusted", exit
status 3, and is uploaded again.
"""
from __future__ import annotations

import hashlib
import io
import json
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import remote_agent
from remote_agent.commands import VERSION, A, Command, Q
from remote_agent.messages import Failure, Message

from ..errors import AgentError
from ..inventory.hosts import Host
from .agent_session import UNTRUSTED_EXIT, AgentSession, EventHandler, message_line, parse_event
from .shell import ShellCommand, shell_path
from .streams import CommandResult
from .transport import Stream, Transport

AGENT_SOURCE = Path(remote_agent.__file__).parent
ZIP_ENTRY_TIME = (2020, 1, 1, 0, 0, 0)
ARCHIVE_MAIN = b"import sys\nfrom remote_agent.main import main\nsys.exit(main())\n"
# Python 3.6+, standard library only: argv is archive, expected sha256, agent command.
BOOTSTRAP = (
    "import hashlib,os,runpy,stat,sys\n"
    "a,h=sys.argv[1],sys.argv[2]\n"
    "def trusted(p):\n"
    " s=os.lstat(p)\n"
    " return s.st_uid==os.geteuid() and not s.st_mode&0o077\n"
    "try:\n"
    " ok=stat.S_ISREG(os.lstat(a).st_mode) and trusted(a) and trusted(os.path.dirname(a))\n"
    " ok=ok and hashlib.sha256(open(a,'rb').read()).hexdigest()==h\n"
    "except OSError:\n"
    " ok=False\n"
    "if not ok:\n"
    " sys.stderr.write('orchestrate-agent-untrusted\\n');sys.exit(3)\n"
    "sys.argv=[a]+sys.argv[3:];sys.path.insert(0,a);runpy.run_path(a,run_name='__main__')\n"
)


class UntrustedAgent(AgentError):
    """The archive on the target is missing, damaged, tampered with, or not root-only."""


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


@dataclass(frozen=True)
class RemoteAgent:
    transport: Transport
    python: str
    archive: str
    work_dir: str
    sha256: str
    version: str
    reused: bool
    board_root: str | None = None  # the agent reads the board's files under this folder (orchestrate_board_root)
    sessions: list[AgentSession] = field(default_factory=list, compare=False, repr=False)  # the open one, if any

    def command(self, name: str) -> ShellCommand:
        """The checked invocation of one agent command."""
        env = (("ORCHESTRATE_BOARD_ROOT", self.board_root),) if self.board_root else ()
        return ShellCommand((self.python, "-c", BOOTSTRAP, self.archive, self.sha256, name), env)

    def call(self, command: Command[Q, A], request: Q | None = None, *, on_event: EventHandler | None = None,
             timeout: float | None = None) -> A:
        """Run one agent command; return its answer (the command's answer message) or raise AgentError with its
        message."""
        return command.answer.from_wire(self._call(command.name, request, on_event, timeout))

    def _call(self, command: str, request: Message | None, on_event: EventHandler | None,
              timeout: float | None) -> dict[str, Any]:
        events: list[dict[str, Any]] = []

        def on_line(line: str) -> None:
            event = parse_event(line)
            if event is None:
                return
            if on_event and event.get("event") != "result" and not event.get("failed"):
                on_event(event)
            else:
                events.append(event)

        session = self._session()
        if session is not None:
            return result_of(command, session.call(command, request, on_event, timeout), session.result(),
                             self.transport)
        answer = self.transport.run(self.command(command), stdin=_wire(request),
                                    on_stdout_line=on_line, timeout=timeout)
        return result_of(command, events, answer, self.transport)

    def open(self, command: Command[Q, A], request: Q) -> Stream:
        """Start a conversational command (attach): its request first, then lines as the caller sends them."""
        assert command.conversational, command
        session = self._session()
        if session is not None:
            return session.attach(command.name, request)
        stream = self.transport.open_stream(self.command(command.name))
        stream.send(message_line(request))
        return stream

    @contextmanager
    def session(self) -> Iterator[None]:
        """The calls made inside go to one agent process on the board, on one channel (agent_session)."""
        opened = AgentSession(self.transport.open_stream(self.command("session")), self.transport.description)
        self.sessions.append(opened)
        try:
            yield
        finally:
            self.sessions.remove(opened)
            opened.end()

    def _session(self) -> AgentSession | None:
        return next((session for session in self.sessions if session.usable), None)


def _wire(message: Message | None) -> bytes:
    return json.dumps(message.to_wire() if message is not None else {}).encode()


def result_of(command: str, events: list[dict[str, Any]], answer: CommandResult,
              transport: Transport) -> dict[str, Any]:
    """An agent command's result data from its JSON lines, or the AgentError that says why there is none."""
    raise_if_untrusted(answer, transport)
    failed = next((event for event in reversed(events) if event.get("failed")), None)
    if failed is not None:
        failure = Failure.from_wire(failed)
        if failure.kind == "bad_request":
            raise AgentError(f"the agent on {transport.description} could not read the host's '{command}' request: "
                             f"{failure.msg}", "this is a bug in orchestrate; rerun with --debug-log and report it")
        raise AgentError(f"agent '{command}' failed on {transport.description}: {failure.msg}",
                         "see the message above; rerun with --debug-log for the agent's trace")
    result = next((event.get("data") for event in reversed(events) if event.get("event") == "result"), None)
    if result is None:
        detail = (answer.stderr.strip().splitlines() or [f"exit status {answer.exit_status}"])[-1]
        raise AgentError(f"agent '{command}' gave no answer on {transport.description}: {detail}",
                         "check that the target's python is 3.6 or newer (orchestrate_python)")
    return result


def raise_if_untrusted(answer: CommandResult, transport: Transport) -> None:
    if answer.exit_status == UNTRUSTED_EXIT and "orchestrate-agent-untrusted" in answer.stderr:
        raise UntrustedAgent(f"the agent on {transport.description} failed its check (owner, mode or sha256)",
                             "it is uploaded again; if this repeats, check who else writes to the work dir")


def _probe(transport: Transport, host: Host, archive_name: str, digest: str, command: Command[Q, A],
           request: Q | None) -> tuple[str, str, A | None]:
    """Make the work dir root-only, find it and the python, and make the agent's first call there (cwd: the work
    dir), in one round trip: (work dir, python, the call's result; None when the archive is missing or not
    trusted). The fields come NUL-separated, so any path works; the call's JSON lines after them."""
    work = shell_path(host.work_dir)
    env = f"export ORCHESTRATE_BOARD_ROOT={ShellCommand((host.board_root,)).render()} && " if host.board_root else ""
    call = ShellCommand(("-c", BOOTSTRAP)).render()
    probe = transport.run(f"umask 077 && mkdir -p {work}/agent && chmod 700 {work} {work}/agent && cd {work} "
                          f"&& printf '%s\\0' \"$(stat -c %u .)\" \"$(id -u)\" \"$(pwd)\" "
                          f"&& py=$(command -v {ShellCommand((host.python,)).render()}) && printf '%s\\0' \"$py\" "
                          f"&& {env}exec \"$py\" {call} \"$(pwd)/agent/{archive_name}\" {digest} {command.name}",
                          stdin=_wire(request))
    owner, user, *fields = probe.stdout.split("\0", 4) if probe.stdout.count("\0") >= 3 else ["", "", probe.stdout]
    if owner != user and len(fields) >= 2:  # the bootstrap would refuse every archive in it
        raise AgentError(f"the work dir {fields[0]} on {transport.description} belongs to uid {owner}, not to the "
                         f"user the agent works as (uid {user})",
                         "set orchestrate_work_dir to a folder of its own (the default ~/.cache/orchestrate is made "
                         "for it), or remove that one")
    if len(fields) < 3:
        if len(fields) == 2:
            raise AgentError(f"'{host.python}' not found on {transport.description}",
                             "install Python 3.6+ there or set orchestrate_python in the inventory")
        detail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise AgentError(f"cannot prepare {host.work_dir} on {transport.description}: {detail}",
                         "set orchestrate_work_dir to a writable folder")
    events = [event for event in map(parse_event, fields[2].splitlines()) if event is not None]
    try:
        return fields[0], fields[1], command.answer.from_wire(result_of(command.name, events, probe, transport))
    except UntrustedAgent:
        return fields[0], fields[1], None


def deploy_and_call(transport: Transport, host: Host, command: Command[Q, A],
                    request: Q | None = None) -> tuple[RemoteAgent, A]:
    """Put the agent archive into a root-only folder on the target unless the same one is there, and make its
    first call: one round trip when it is there (the bootstrap runs it only if its sha256 is this machine's).
    The request's work dir is the call's current folder, if it does not say one."""
    archive_bytes = build_agent_archive()
    digest = hashlib.sha256(archive_bytes).hexdigest()
    name = f"orchestrate-agent-{digest[:16]}.pyz"
    work_dir, python, answer = _probe(transport, host, name, digest, command, request)
    archive = f"{work_dir}/agent/{name}"
    agent = RemoteAgent(transport=transport, python=python, archive=archive, work_dir=work_dir, sha256=digest,
                        version=remote_agent.AGENT_VERSION, reused=answer is not None, board_root=host.board_root)
    if answer is None:
        with tempfile.NamedTemporaryFile(suffix=".pyz") as local:
            local.write(archive_bytes)
            local.flush()
            transport.put(Path(local.name), archive, mode=0o600)
        keep = ShellCommand((Path(archive).name,)).render()
        transport.run(f"cd {ShellCommand((work_dir + '/agent',)).render()} && for old in orchestrate-agent-*.pyz; do "
                      f"[ \"$old\" = {keep} ] || rm -f \"$old\"; done")
        answer = agent.call(command, _with_work_dir(request, work_dir))
    return agent, answer


def _with_work_dir(request: Q | None, work_dir: str) -> Q | None:
    """A request whose work dir was left to the probe's folder (None) names it: a call of its own runs elsewhere."""
    if request is None or not hasattr(request, "work_dir") or request.work_dir is not None:
        return request
    return request.replace(work_dir=work_dir)


def deploy_agent(transport: Transport, host: Host) -> RemoteAgent:
    """The agent, there and checked (its version's answer)."""
    agent, found = deploy_and_call(transport, host, VERSION)
    if found.sha256 != agent.sha256:
        raise AgentError(f"the agent does not run on {transport.description} with {agent.python}",
                         "the agent needs Python 3.6 or newer; set orchestrate_python to one")
    return replace(agent, version=str(found.version))
