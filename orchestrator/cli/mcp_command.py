"""`orchestrate mcp`: the runs under a root, asked through the Model Context Protocol (orchestrator/ask)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import DB_HELP, whole


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


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..ask.http_guard import serve_http, token_from_environment
    from ..ask.server import build_server
    token = token_from_environment() if args.http else None
    server = build_server(args.root, args.db)
    if token is not None:
        serve_http(server, args.http, token)
    else:
        server.run("stdio")
    return 0
