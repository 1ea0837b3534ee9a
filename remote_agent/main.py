"""Entry point: ``python3 agent.pyz COMMAND`` with a JSON request on stdin, JSON lines on stdout.

Every answer ends with one ``result`` line, or one ``error`` line with ``failed: true`` and ``msg``
instead of a traceback.
"""
import argparse
import hashlib
import json
import os
import sys
import traceback

from . import AGENT_VERSION, capture, facts, files, preflight
from .protocol import emit, fail

COMMANDS = ("version", "facts", "preflight", "capture", "checksum", "remove", "import")


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
        return facts.collect(request.get("nsys"))
    if command == "preflight":
        return preflight.run(request)
    if command == "capture":
        return capture.capture(request, emit)
    if command == "checksum":
        return {"files": files.checksums(request["paths"], request.get("sha256", True))}
    if command == "remove":
        return {"removed": files.remove(request["paths"], request["root"])}
    if command == "import":
        return files.import_qdstrm(request["importer"], request["qdstrm"])
    raise ValueError("unknown command " + command)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="orchestrate-agent", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
    args = parser.parse_args(argv)
    try:
        request = read_request() if args.command != "version" else {}
        emit("result", command=args.command, agent_version=AGENT_VERSION, data=handle(args.command, request))
        return 0
    except Exception as exc:  # the agent answers in JSON, never with a bare traceback
        fail("{}: {}".format(type(exc).__name__, exc), command=args.command,
             trace=traceback.format_exc()[-4000:])
        return 1
