"""`orchestrate mcp`: the runs under a root, asked through the Model Context Protocol (orchestrator/ask)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .options import DB_HELP, existing_file, existing_folder, user_path, whole


def add_parsers(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="serve the runs to an agent over the Model Context Protocol",
                         description="An MCP server over the run, study and fleet folders under --root and the "
                                     "results database: runs, summary, frames, window, hotspots, gpu_work, compare "
                                     "and history, each figure with the SQL that recomputes it from the run's "
                                     "export. Over stdio, or with --http PORT over streamable HTTP on 127.0.0.1, "
                                     "with the bearer token in $ORCHESTRATE_MCP_TOKEN (32 bytes or more).")
    mcp.add_argument("--root", type=Path, default=Path("runs"), help="the folder of runs to serve (default: runs/)")
    mcp.add_argument("--db", help=DB_HELP)
    mcp.add_argument("--http", type=whole(1, 65535), metavar="PORT",
                     help="serve over streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    capture = mcp.add_argument_group("captures (tools that profile and run studies: off unless asked for)")
    capture.add_argument("--allow-capture", action="store_true",
                         help="offer 'profile' and 'study', their run folders made under --root")
    capture.add_argument("--allow-capture-over-http", action="store_true",
                         help="with --http, offer them over HTTP too (--allow-capture alone is refused there)")
    capture.add_argument("--inventory", type=Path, help="the Ansible inventory captures read (default as "
                                                                 "for profile)")
    capture.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs for captures")
    capture.add_argument("--ssh-config", type=existing_file, help="ssh config file for captures")
    capture.add_argument("--known-hosts", type=user_path, help="known_hosts file for captures")


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..ask.capture import CaptureSettings
    from ..ask.http_guard import serve_http, token_from_environment
    from ..ask.server import build_server
    if args.http and args.allow_capture and not args.allow_capture_over_http:
        raise UsageError("--allow-capture over --http lets whoever holds the token run commands on the boards",
                         "add --allow-capture-over-http as well if that is meant, or serve captures over stdio")
    token = token_from_environment() if args.http else None
    capture = CaptureSettings(args.root.resolve(), args.inventory, args.apps_dir, args.ssh_config, args.known_hosts,
                              getattr(args, "become_password", None)) if args.allow_capture else None
    server = build_server(args.root, args.db, capture)
    if token is not None:
        serve_http(server, args.http, token)
    else:
        server.run("stdio")
    return 0
