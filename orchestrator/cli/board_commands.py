"""The commands about boards rather than runs: putting nsys on one (`nsys deploy`), and the boards a team shares
(`boards`: holders, queues, quarantine, history; `boards release`): parse, call the library, render."""
from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from ..errors import NothingStoredError, UsageError
from .options import (
    DB_HELP,
    add_inventory_options,
    add_lease_options,
    add_ssh_options,
    connect_options,
    existing_folder,
    lease_options,
    show,
    stderr,
    vault_options,
)


def add_parsers(sub: Any) -> None:
    nsys = sub.add_parser("nsys", help="put nsys on a board that has none (as the Nsight Systems GUI does)",
                          description="Board-side Nsight Systems.")
    verbs = nsys.add_subparsers(dest="nsys_command", required=True, metavar="deploy",
                                help="deploy: upload a host install's target folder to the board")
    deploy = verbs.add_parser(
        "deploy", help="upload a host Nsight Systems install's target folder to the board",
        description="Upload the target-linux-tegra-armv8 folder of a host Nsight Systems install to the board's "
                    "/opt/nvidia/nsight_systems/, where the GUI puts it (JetPack 4 boards have no nsys of their "
                    "own). Only files that differ are sent, every one verified by sha256; run it again to finish "
                    "one cut short. Needs root on the board: root login or ansible_become.")
    deploy.add_argument("--target", required=True, help="inventory host")
    deploy.add_argument("--from", dest="source", required=True, type=existing_folder,
                        help="the host's Nsight Systems folder (e.g. /opt/nvidia/nsight-systems/2024.5.4) or its "
                             "target-linux-tegra-armv8 folder")
    add_inventory_options(deploy, "Ansible inventory (as for profile)")
    add_ssh_options(deploy)
    add_lease_options(deploy, pick_any=False)  # nsys is replaced under no one's capture

    boards = sub.add_parser("boards", help="the boards a team shares: who holds each, who waits, which are quarantined",
                            description="The leases in the results database: each board's holder (who, what for, "
                                        "since when, the capture running under it), the requests waiting in turn, "
                                        "the quarantined boards with their reason, and the history of the boards' "
                                        "failures. 'boards release BOARD' brings a quarantined board back.")
    boards.add_argument("action", nargs="?", choices=("show", "release"), default="show",
                        help="show (the default): the boards as they stand; release: bring BOARD back into service")
    boards.add_argument("board", nargs="?", help="one board: an inventory host name, or the board as 'boards' names "
                                                 "it (show: only it, with its history)")
    boards.add_argument("--db", help=DB_HELP)
    add_inventory_options(boards, "Ansible inventory, to name boards by their host names (as for profile)")
    boards.add_argument("--json", action="store_true", help="print one JSON document: held, waiting, health, events")


def cmd_nsys(args: argparse.Namespace) -> int:
    from ..boards.lease import hold
    from ..inventory.hosts import find_host
    from ..runs.nsys_deploy import deploy_nsys
    from .console import RichProgress
    leases = lease_options(args)
    host = find_host(args.inventory, args.target, vault_options(args))
    connect = connect_options(args)
    progress = RichProgress(stderr())
    try:
        with hold(leases, [host], "nsys deploy", progress, connect):
            done = deploy_nsys(host, connect, args.source)
    finally:
        progress.close()
    kept = done.files - done.sent
    stderr().print(f"{done.folder} on {args.target}: {done.sent} files sent ({done.sent_bytes / 2**20:.1f} MB), "
                   f"{kept} already in place, {done.removed} old ones removed; all {done.files} verified",
                   highlight=False, markup=False)
    print(done.folder)
    return 0


def cmd_boards(args: argparse.Namespace) -> int:
    from ..boards.overview import Overview, board_of, overview, release
    from ..database.connection import open_database
    from ..inventory.hosts import load_inventory
    if args.action == "release" and not args.board:
        raise UsageError("boards release needs the board", "e.g. 'orchestrate boards release nano01'")
    inventory = load_inventory(args.inventory, vault_options(args)) if args.board or args.inventory else None
    board = board_of(args.board, inventory) if args.board else None
    if args.action == "release":
        assert board is not None
        database = open_database(args.db)
        try:
            health = release(database, board)
        finally:
            database.close()
        if health is None:
            raise UsageError(f"{board} has no failures and no quarantine on record: nothing to release",
                             "see 'orchestrate boards' for the boards on record")
        said = "is back in service" if health.quarantined_at is not None else \
            f"was not quarantined; its {health.failures} failures in a row are forgotten"
        stderr().print(f"{board} {said}", highlight=False, markup=False)
        return 0
    try:
        database = open_database(args.db, read_only=True)
    except NothingStoredError as exc:  # a machine where no run took a lease yet
        stderr().print(f"no board was leased yet ({exc.message})", highlight=False, markup=False)
        found = Overview()
    else:
        try:
            found = overview(database, board, inventory=inventory)
        finally:
            database.close()
    if args.json:
        print(json.dumps(found.as_json(), indent=2, default=str))
        return 0
    _show_overview(found)
    return 0


def _when(at: float | None) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at else ""


def _show_overview(found: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    def named(board: str) -> str:  # "nano01 (10.0.4.17:22)" when the inventory names it
        names = found.hosts.get(board)
        return f"{', '.join(names)} ({board})" if names else board
    held = Table("board", "held by", "for", "since", "capture", "waiting", title="held", expand=True)
    for row in found.held:
        who = row["holder"] + (f" (silent {row['silent_s']:g} s: gone)" if row["gone"] else "")
        held.add_row(named(row["board"]), Text(who, style="red" if row["gone"] else ""), row["purpose"],
                     _when(row["granted_at"]), row["capture"] or "", str(len(row["queue"])))
    waiting = Table("#", "wants", "asked by", "for", "since", "before it", title="waiting, in request order",
                    expand=True)
    for row in found.waiting:
        waiting.add_row(str(row["id"]), ", ".join(named(b) for b in row["candidates"]), row["holder"], row["purpose"],
                        _when(row["requested_at"]), ", ".join(f"{b}: {n}" for b, n in row["ahead"].items()))
    health = Table("board", "state", "failures in a row", "reason", "since", title="health", expand=True)
    for row in found.health:
        quarantined = row["quarantined_at"] is not None
        health.add_row(named(row["board"]), Text("quarantined" if quarantined else "in service",
                                          style="red" if quarantined else "yellow"),
                       str(row["failures"]), row["reason"] or "", _when(row["quarantined_at"] or row["updated_at"]))
    history = Table("when", "board", "what", "detail", "seen by", title="history", expand=True)
    for event in found.events:
        history.add_row(_when(event["at"]), named(event["board"]), event["kind"], event["detail"], event["by"])
    for table, rows in ((held, found.held), (waiting, found.waiting), (health, found.health),
                        (history, found.events)):
        show(table if rows else Text(f"{table.title}: none", style="dim"), err=False)
