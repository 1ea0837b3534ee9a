"""Entry point: ``python3 agent.pyz COMMAND`` with a JSON request on stdin, JSON lines on stdout.

Every answer ends with one ``result`` line, or one ``error`` line with ``failed: true`` and ``msg``
instead of a traceback. ``send`` is the exception: its stdout is files' bytes, its answer a JSON line per
file on stderr. ``session`` answers a run's commands in turn in one process (one channel, one Python start
on the board instead of one each): a ``SessionCall`` line per command, each answered as a call of its own
would be (``attach`` reads the host's lines until its capture ended), until ``end`` or the input's end.
"""
import argparse
import functools
import importlib
import json
import os
import sys
import traceback

from . import AGENT_VERSION
from .commands import COMMANDS, SEND
from .messages import Failure, Message, SessionCall
from .protocol import emit, fail

SESSION = "session"


class BadRequest(ValueError):
    """The host's request could not be read as the command's message."""


def read_request(command, raw):
    """The command's request message from its JSON text (empty: every field at its default), or from the
    JSON object a session's call holds."""
    try:
        wire = raw if isinstance(raw, dict) else json.loads(raw) if raw.strip() else {}
        return command.request.from_wire(wire, strict=True)
    except ValueError as exc:
        raise BadRequest("{} request: {}".format(command.name, exc)) from None


def handler(command):
    """The command's handler, its module imported when it runs: a board's Python starts slowly enough (a Nano's
    more so) that every call, each file of a pull among them, gains from loading nothing else."""
    return getattr(importlib.import_module("." + command.module, __package__), command.function)


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
    parser.add_argument("command", choices=sorted(COMMANDS) + [SESSION])
    args = parser.parse_args(argv)
    if args.command == SESSION:
        return _session()
    command = COMMANDS[args.command]
    if command is SEND:
        return _send(sys.stdin.readline())
    if command.conversational:  # its input is the host's lines, after one line of request
        return _answer(command, lambda: _call(command, _raw_line(0).decode("utf-8", "replace")))
    return _answer(command, lambda: _call(command, sys.stdin.read()))


def _call(command, raw):
    request = read_request(command, raw)
    return handler(command)(request, emit) if command.conversational else handler(command)(request)


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
            failed(SESSION, BadRequest("session call: {}".format(exc)))
            continue
        if call is None:
            continue
        if call.command == "end":
            return 0
        command = COMMANDS.get(call.command)
        if command is None or not command.in_session:
            failed(call.command, BadRequest("'{}' is not a command of a session".format(call.command)))
            continue
        _answer(command, functools.partial(_call, command, call.request))


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
        answer(command.name, work())
        return 0
    except BrokenPipeError:  # the host went away: nobody to answer
        return 0
    except Exception as exc:
        failed(command.name, exc)
        return 1


def _send(request_line):
    try:
        request = read_request(SEND, request_line or "{}")
    except BadRequest as exc:
        failure = Failure(kind="bad_request", msg=str(exc), command=SEND.name)
        sys.stderr.write(json.dumps(dict(failure.to_wire(), failed=True)) + "\n")
        return 1
    return handler(SEND)(request)
