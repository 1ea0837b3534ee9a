"""Entry point: ``python3 agent.pyz COMMAND`` with a JSON request on stdin, JSON lines on stdout.

Every answer ends with one ``result`` line, or one ``error`` line with ``failed: true`` and ``msg``
instead of a traceback. ``send`` is the exception: its stdout is a file's bytes, its answer one JSON
line on stderr.
"""
import argparse
import hashlib
import json
import os
import sys
import traceback

from . import AGENT_VERSION, daemon, facts, files, preflight, send
from .protocol import emit, fail

COMMANDS = ("version", "facts", "preflight", "launch", "attach", "status", "send", "remove", "board_state")


def own_sha256():
    """The agent's archive is its identity: the host deploys by this hash."""
    archive = os.path.abspath(sys.argv[0])
    if not os.path.isfile(archive):
        return None
    with open(archive, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_request():
    raw = sys.stdin.read()
    return json.loads(raw) if raw.strip() else {}


def handle(command, request):
    if command == "version":
        return {"version": AGENT_VERSION, "sha256": own_sha256(),
                "python": "{}.{}.{}".format(*sys.version_info[:3])}
    if command == "facts":
        return facts.collect(request.get("nsys"), request.get("work_dir"))
    if command == "board_state":
        return facts.board_state()
    if command == "preflight":
        return preflight.run(request)
    if command == "launch":
        return daemon.launch(request)
    if command == "attach":
        return daemon.attach(request, emit)
    if command == "status":
        return daemon.status(request)
    if command == "remove":
        return {"removed": files.remove(request["paths"], request["root"])}
    raise ValueError("unknown command " + command)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="orchestrate-agent", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
    args = parser.parse_args(argv)
    if args.command == "send":
        return _send(sys.stdin.readline())
    if args.command == "attach":  # its input is the host's heartbeat lines, after one line of request
        return _answer("attach", lambda: daemon.attach(json.loads(_raw_line(0) or b"{}"), emit))
    try:
        request = read_request() if args.command != "version" else {}
        emit("result", command=args.command, agent_version=AGENT_VERSION, data=handle(args.command, request))
        return 0
    except Exception as exc:  # the agent answers in JSON, never with a bare traceback
        fail("{}: {}".format(type(exc).__name__, exc), command=args.command,
             trace=traceback.format_exc()[-4000:])
        return 1


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
    try:
        emit("result", command=command, agent_version=AGENT_VERSION, data=work())
        return 0
    except BrokenPipeError:  # the host went away: nobody to answer
        return 0
    except Exception as exc:
        fail("{}: {}".format(type(exc).__name__, exc), command=command, trace=traceback.format_exc()[-4000:])
        return 1


def _send(request_line):
    try:
        request = json.loads(request_line or "{}")
        send.send(request["path"], request.get("offset", 0))
        return 0
    except Exception as exc:
        sys.stderr.write(json.dumps({"failed": True, "msg": "{}: {}".format(type(exc).__name__, exc)}) + "\n")
        return 1
