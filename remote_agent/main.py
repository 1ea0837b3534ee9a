"""Entry point: ``python3 agent.pyz COMMAND`` with a JSON request on stdin, JSON lines on stdout.

Every answer ends with one ``result`` line, or one ``error`` line with ``failed: true`` and ``msg``
instead of a traceback. ``send`` is the exception: its stdout is files' bytes, its answer a JSON line per
file on stderr. ``session`` answers a run's commands in turn in one process (one channel, one Python start
on the board instead of one each): a ``SessionCall`` line per command, each answered as a call of its own
would be (``attach`` reads the host's lines until its capture ended), until ``end`` or the input's end.
"""
import argparse
import functools
import hashlib
import importlib
import json
import os
import sys
import traceback

from . import AGENT_VERSION
from .messages import (
    AttachRequest,
    FactsRequest,
    Failure,
    LaunchRequest,
    Message,
    PreflightRequest,
    RemoveAnswer,
    RemoveRequest,
    SendRequest,
    SessionCall,
    StatusRequest,
    VersionAnswer,
)
from .protocol import emit, fail

COMMANDS = ("version", "facts", "preflight", "launch", "attach", "status", "send", "remove", "board_state", "session")
IN_SESSION = ("version", "facts", "preflight", "launch", "attach", "status", "remove", "board_state")
MODULES = {"facts": "facts", "board_state": "facts", "preflight": "preflight", "launch": "daemon", "attach": "daemon",
           "status": "daemon", "remove": "files", "send": "send"}
# each command's request (read strictly: a field of the wrong kind is a bad_request failure)
REQUESTS = {"facts": FactsRequest, "preflight": PreflightRequest, "launch": LaunchRequest, "attach": AttachRequest,
            "status": StatusRequest, "remove": RemoveRequest, "send": SendRequest}  # type: dict


class BadRequest(ValueError):
    """The host's request could not be read as the command's message."""


def own_sha256():
    """The agent's archive is its identity: the host deploys by this hash."""
    archive = os.path.abspath(sys.argv[0])
    if not os.path.isfile(archive):
        return None
    with open(archive, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_request(command, raw):
    """The command's request message from its JSON text (empty: every field at its default), or from the
    JSON object a session's call holds."""
    try:
        wire = raw if isinstance(raw, dict) else json.loads(raw) if raw.strip() else {}
        message = REQUESTS.get(command)
        return message.from_wire(wire, strict=True) if message is not None else None
    except ValueError as exc:
        raise BadRequest("{} request: {}".format(command, exc)) from None


def command_module(command):
    """The module a command needs, imported when it runs: a board's Python starts slowly enough (a Nano's
    more so) that every call, each file of a pull among them, gains from loading nothing else."""
    return importlib.import_module("." + MODULES[command], __package__)


def handle(command, request):
    """The command's answer, as a message or (facts, board_state, preflight) the JSON object it documents."""
    if command == "version":
        return VersionAnswer(version=AGENT_VERSION, sha256=own_sha256(),
                             python="{}.{}.{}".format(*sys.version_info[:3]), pid=os.getpid())
    module = command_module(command)
    if command == "facts":
        return module.collect(request.nsys, request.work_dir, request.with_nsys)
    if command == "board_state":
        return module.board_state()
    if command == "preflight":
        return module.run(request)
    if command == "launch":
        return module.launch(request)
    if command == "status":
        return module.status(request)
    return RemoveAnswer(removed=module.remove(request.paths, request.root))


def answer(command, data):
    emit("result", command=command, agent_version=AGENT_VERSION,
         data=data.to_wire() if isinstance(data, Message) else data)


def failed(command, exc):
    kind = "bad_request" if isinstance(exc, BadRequest) else "error"
    failure = Failure(kind=kind, msg="{}: {}".format(type(exc).__name__, exc), command=command,
                      trace=traceback.format_exc()[-4000:] if kind == "error" else None)
    fail(failure.msg, **{key: value for key, value in failure.to_wire().items() if key != "msg"})


def main(argv=None):
    parser = argparse.ArgumentParser(prog="orchestrate-agent", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
    args = parser.parse_args(argv)
    if args.command == "send":
        return _send(sys.stdin.readline())
    if args.command == "session":
        return _session()
    if args.command == "attach":  # its input is the host's heartbeat lines, after one line of request
        return _answer("attach", lambda: _attach(_raw_line(0).decode("utf-8", "replace")))
    return _answer(args.command, lambda: _handle(args.command, sys.stdin.read()))


def _handle(command, raw):
    return handle(command, read_request(command, raw) if command != "version" else None)


def _attach(raw):
    return command_module("attach").attach(read_request("attach", raw), emit)


def _session():
    """A run's commands in turn, until ``end`` or the input's end. A line that is no call (a heartbeat the host
    sent as an attach ended) is passed over."""
    while True:
        line = _raw_line(0)
        if not line:
            return 0
        try:
            wire = json.loads(line.decode("utf-8", "replace"))
            call = SessionCall.from_wire(wire, strict=True) if isinstance(wire, dict) and "command" in wire else None
        except ValueError as exc:
            failed("session", BadRequest("session call: {}".format(exc)))
            continue
        if call is None:
            continue
        if call.command == "end":
            return 0
        if call.command not in IN_SESSION:
            failed(call.command, BadRequest("'{}' is not a command of a session".format(call.command)))
            continue
        _answer(call.command, functools.partial(_attach, call.request) if call.command == "attach" else
                functools.partial(_handle, call.command, call.request))


def _raw_line(fd):
    """One line read byte by byte, so that nothing after it is held in a buffer the caller cannot see."""
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return line


def _answer(command, work):
    """One result line with work()'s answer, or one failure line: the agent answers in JSON, never with a bare
    traceback."""
    try:
        answer(command, work())
        return 0
    except BrokenPipeError:  # the host went away: nobody to answer
        return 0
    except Exception as exc:
        failed(command, exc)
        return 1


def _send(request_line):
    try:
        files = read_request("send", request_line or "{}").files
    except BadRequest as exc:
        failure = Failure(kind="bad_request", msg=str(exc), command="send")
        sys.stderr.write(json.dumps(dict(failure.to_wire(), failed=True)) + "\n")
        return 1
    return command_module("send").send_files(files)
