"""The commands over many boards of an inventory (`fleet`, `doctor`, `targets`): parse, call the library, render."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import BoardQuarantinedError, FleetBoardsFailedError, InterruptedRunError, UsageError
from .options import (
    DAY_S,
    add_app_choice,
    add_capture_options,
    add_inventory_options,
    add_lease_options,
    add_no_nsys_option,
    add_run_settings,
    add_ssh_options,
    capture_overrides,
    connect_options,
    given_capture_options,
    lease_options,
    output_folder,
    run_settings,
    seconds,
    show,
    stderr,
    vault_options,
    whole,
)
from .warehouse_commands import keep_rows


def add_parsers(sub: Any) -> None:
    fleet = sub.add_parser("fleet", help="run an app or a study on every matching board at once, with a recap",
                           description="Profile an app (or run a study) on every target --limit matches, --forks at a "
                                       "time, each board in its own run folder inside the fleet folder; a live table "
                                       "shows each board, a recap says ok / failed / unreachable and why, fleet.html "
                                       "and fleet.json hold every board's figures. Prints the fleet folder.")
    add_app_choice(fleet, study=True)
    _add_fleet_options(fleet)
    fleet.add_argument("--out", type=Path, default=Path("runs"), help="folder for fleet folders (default runs/)")
    add_capture_options(fleet)
    add_no_nsys_option(fleet)
    add_run_settings(fleet, "before each run (default: that board fails)")
    add_lease_options(fleet, pick_any=False)
    fleet.add_argument("--repeat", type=whole(1, 1000), help="with --study: runs per cell (default: the study's)")
    fleet.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                       help="with --study: other values for a matrix variable")
    fleet.add_argument("--board-timeout", type=seconds(0, 7 * DAY_S, above=True), metavar="S",
                       help="end a board's capture early (its report kept) once it has taken S seconds, and count "
                            "the board as failed (default: no limit beyond the watchdog's)")

    doctor = sub.add_parser("doctor", help="check every matching board: reachable, what it is, what would fail",
                            description="Connect to every target --limit matches, --forks at a time, deploy the agent "
                                        "and run its preflight: one table of the boards' facts and of what would make "
                                        "a capture fail on each, with the fix.")
    _add_fleet_options(doctor)
    doctor.add_argument("--json", action="store_true", help="print one JSON object per board instead of the table")

    targets = sub.add_parser("targets", help="list the inventory's hosts as a play would connect to them",
                             description="Read the inventory with Ansible's own code and list each host's groups, the "
                                         "values a play would connect with (address, port, user, key, python, become, "
                                         "ssh arguments), its variables (secrets masked), and every value orchestrate "
                                         "cannot honour.")
    add_inventory_options(targets, "Ansible inventory (as for profile)")
    targets.add_argument("--limit", metavar="PATTERN", help="only the hosts this Ansible pattern matches")
    targets.add_argument("--json", action="store_true",
                         help="print one JSON document: hosts, groups, refused and defaulted values")


def _add_fleet_options(parser: argparse.ArgumentParser) -> None:
    add_inventory_options(parser, "Ansible inventory (as for profile)")
    parser.add_argument("--limit", metavar="PATTERN",
                        help="Ansible's host pattern: group, host1:host2, group:!host, group1:&group2, globs, ~regex "
                             "(default: all)")
    parser.add_argument("--forks", type=whole(1, 256), default=5, help="boards at a time (default 5, as Ansible's)")
    add_ssh_options(parser)


def cmd_fleet(args: argparse.Namespace) -> int:
    from ..fleet.runner import FleetRequest, plan_fleet, run_fleet
    from .console import FleetTable
    settings, leases = run_settings(args), lease_options(args)  # a usage error before anything loads
    if not args.study and (args.repeat is not None or args.set):
        raise UsageError(f"{'--repeat' if args.repeat is not None else '--set'} goes with --study",
                         "give --study FILE, or leave it out")
    app_only = given_capture_options(args) + (["--needs-display"] if args.needs_display else [])
    if args.study and app_only:  # a study sets these per cell, in its file
        raise UsageError(f"{app_only[0]} goes with --app or --app-cmd", "set it in the study file, or leave it out")
    plan = plan_fleet(args.inventory, args.limit, args.apps_dir, vault=vault_options(args), study=args.study,
                      study_values=args.set, app=args.app, app_cmd=args.app_cmd, needs_display=args.needs_display,
                      **capture_overrides(args))
    output_folder(args.out)
    request = FleetRequest(
        plan=plan, out_dir=args.out, repeat=args.repeat, forks=args.forks, connect=connect_options(args),
        settings=settings, board_timeout_s=args.board_timeout, leases=leases)
    view = FleetTable(stderr(), list(plan.targets))
    try:
        outcome = run_fleet(request, view)
    finally:
        view.close()
    keep_rows(args, outcome.folder)
    _print_recap(outcome.results)
    print(outcome.folder)
    if outcome.interrupted:
        started = sum(1 for r in outcome.results if r.folder)
        raise InterruptedRunError(f"interrupted; {started} of {len(outcome.results)} boards had started, and "
                                  "kept what they captured (here, or on the board for 'orchestrate fetch')",
                                  f"see {outcome.folder / 'fleet.html'}")
    skipped = [r for r in outcome.results if r.status == "skipped"]
    if outcome.results and len(skipped) == len(outcome.results):  # nothing ran: as profile says of one board
        raise BoardQuarantinedError(f"every board the fleet matched is quarantined; the first, {skipped[0].target}: "
                                    f"{skipped[0].reason}", "see 'orchestrate boards'")
    if outcome.failed:
        first = outcome.failed[0]
        raise FleetBoardsFailedError(f"{len(outcome.failed)} of {len(outcome.results)} boards did not end well; "
                                     f"the first, {first.target}: {first.reason}",
                                     f"see {outcome.folder / 'fleet.html'}")
    return 0


def _print_recap(results: list) -> None:
    """Ansible's PLAY RECAP, one line per board: status, why, where its run folder is."""
    from rich.table import Table
    from rich.text import Text

    from .console import STATUS_STYLES
    table = Table("board", "status", "why", "doubtful figures", "folder", title="recap", expand=True)
    for result in results:
        style = STATUS_STYLES.get(result.status, "red")
        doubts = "; ".join(dict.fromkeys(f.what for cell in result.cells for f in cell.flags))
        table.add_row(result.target, Text(result.status, style=style), result.reason or "",
                      Text(doubts, style="yellow"), str(result.folder or ""))
    show(table, err=True)


def cmd_doctor(args: argparse.Namespace) -> int:

    from ..fleet.doctor import doctor
    from ..fleet.patterns import select_hosts
    from ..inventory.hosts import load_inventory
    inventory = load_inventory(args.inventory, vault_options(args))
    checks = doctor(inventory, select_hosts(inventory, args.limit),
                    connect_options(args), args.forks)
    if args.json:
        for check in checks:
            print(json.dumps(check.as_json()))
    else:
        _print_checks(checks)
    blocked = [c for c in checks if c.blocking]
    if blocked:
        raise FleetBoardsFailedError(f"{len(blocked)} of {len(checks)} boards cannot capture as they are; the first, "
                                     f"{blocked[0].target}: {blocked[0].error or blocked[0].findings[0]['what']}",
                                     "fix what the table says, then run 'orchestrate doctor' again")
    return 0


def _print_checks(checks: list) -> None:
    from rich.table import Table
    from rich.text import Text
    table = Table("board", "status", "kind", "L4T / JetPack", "power mode", "nsys", "what is wrong, and the fix",
                  title="doctor", expand=True)
    for check in checks:
        board = check.board
        problems = [Text.assemble((f["what"], "red" if f["level"] == "error" else "yellow"), f": {f['fix']}")
                    for f in check.findings] + ([Text(check.error, style="red")] if check.error else [])
        table.add_row(check.target, Text(check.status, style="green" if check.status == "ok" else "red"),
                      board.kind or "–", " / ".join(str(v or "–") for v in (board.l4t, board.jetpack)),
                      board.power_mode or "–", f"{board.nsys} ({board.nsys_path})" if board.nsys else "–",
                      Text("\n").join(problems) if problems else "nothing")
    show(table)


def cmd_targets(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..inventory.hosts import load_inventory
    from ..inventory.listing import targets_document
    inventory = load_inventory(args.inventory, vault_options(args))
    chosen = None
    if args.limit:
        from ..fleet.patterns import select_hosts
        chosen = set(select_hosts(inventory, args.limit))
    document = targets_document(inventory, chosen)
    if args.json:
        print(json.dumps(document, indent=1))
        return 0
    table = Table("target", "connection", "address", "port", "user", "key", "become", "python", "ssh arguments",
                  "groups", title=inventory.source)
    for name, host in document["hosts"].items():
        if name in document["refused"]:
            continue
        defaults = document["defaulted"].get(name, [])
        shown = {k: f"{host[k]} (default)" if k in defaults else host[k] for k in ("port", "user", "python")}
        become = f"sudo to {host['become_user']}" if host["become"] else "no"
        table.add_row(name, host["connection"], host["address"] or "", str(shown["port"] or ""), shown["user"] or "",
                      host["key_file"] or "", become, shown["python"], " ".join(host["ssh_args"]),
                      ",".join(host["groups"]))
    show(table)
    teams = Table("target", "variables (the team's own and Ansible's; secrets masked)", title="variables")
    for name, host in document["hosts"].items():
        teams.add_row(name, " ".join(f"{k}={json.dumps(v)}" for k, v in host["vars"].items()))
    show(teams)
    groups = Table("group", "hosts (with its child groups')", "child groups", title="groups")
    for group, members in document["groups"].items():
        groups.add_row(group, ",".join(members), ",".join(inventory.children.get(group, ())))
    show(groups)
    for name, reason in document["refused"].items():
        show(f"refused: {name}: {reason}")
    for warning in inventory.warnings:
        show(f"Ansible warned: {warning}", err=True)
    return 0


