"""Entry point: ``python3 agent.pyz COMMAND`` with a JSON request on stdin, JSON lines on stdout.

Every answer ends with one ``result`` line, or one ``error`` line with ``failed: true`` and ``msg``
instead of a traceback. ``send`` is the exception: its stdout is files' bytes, its answer a JSON line per
file on stderr.
"""
import argparse
import hashlib
import importlib
import json
import os
import sys
import traceback

from . import AGENT_VERSION
from .protocol import emit, fail

COMMANDS = ("version", "facts", "preflight", "launch", "attach", "status", "send", "remove", "board_state")
MODULES = {"facts": "facts", "board_state": "facts", "preflight": "preflight", "launch": "daemon", "attach": "daemon",
           "status": "daemon", "remove": "files", "send": "send"}


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


def command_module(command):
    """The module a command needs, imported when it runs: a board's Python starts slowly enough (a Nano's
    more so) that every call, each file of a pull among them, gains from loading nothing else."""
    return importlib.import_module("." + MODULES[command], __package__)


def handle(command, request):
    if command == "version":
        return {"version": AGENT_VERSION, "sha256": own_sha256(),
                "python": "{}.{}.{}".format(*sys.version_info[:3])}
    if command not in MODULES:
        raise ValueError("unknown command " + command)
    module = command_module(command)
    if command == "facts":
        return module.collect(request.get("nsys"), request.get("work_dir"), request.get("with_nsys", True))
    if command == "board_state":
        return module.board_state()
    if command == "preflight":
        return module.run(request)
    if command == "launch":
        return module.launch(request)
    if command == "attach":
        return module.attach(request, emit)
    if command == "status":
        return module.status(request)
    return {"removed": module.remove(request["paths"], request["root"])}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="orchestrate-agent", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
    args = parser.parse_args(argv)
    if args.command == "send":
        return _send(sys.stdin.readline())
    if args.command == "attach":  # its input is the host's heartbeat lines, after one line of request
        return _answer("attach", lambda: command_module("attach").attach(json.loads(_raw_line(0) or b"{}"), emit))
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
        files = json.loads(request_line or "{}")["files"]
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(json.dumps({"failed": True, "msg": "{}: {}".format(type(exc).__name__, exc)}) + "\n")
        return 1
    return command_module("send").send_files(files)
