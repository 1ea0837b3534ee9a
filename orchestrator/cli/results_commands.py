"""The results commands (`results import|list|history`, and through warehouse_commands `results
query|compact|site`): parse, call the library, render."""
from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    pass

from .options import (
    DB_HELP,
    add_warehouse_option,
    show,
    stderr,
    whole,
)
from .warehouse_commands import WAREHOUSE_COMMANDS, add_warehouse_parsers, provenance_of, warehouse_of

IMPORT_PROGRESS_FROM, IMPORT_PROGRESS_EVERY = 50, 100   # an import of this many runs says how far it is


def add_parsers(sub: Any) -> None:
    results = sub.add_parser("results", help="store runs in the results database and read their history",
                             description="The results database: runs and study cells with their board, commit and "
                                         "figures, in SQLite or PostgreSQL.")
    what = results.add_subparsers(dest="results_command", required=True, parser_class=type(results),
                                  help="import run folders, list runs, show a metric's history, query every run's "
                                       "rows, or build the dashboard")
    imp = what.add_parser("import", help="store run or study folders (a run already stored is left as it is)",
                          description="Store run folders, study folders, or folders of runs in the results database "
                                      "and their rows in the warehouse. The commit and branch come from the CI "
                                      "system's variables, else from git. A run stored before is passed over: an "
                                      "import stopped half way goes on where it was when run again.")
    imp.add_argument("folders", nargs="+", type=Path, help="run, study or ci folders")
    imp.add_argument("--commit", help="the commit the runs measured (default: from CI variables, else git)")
    imp.add_argument("--branch", help="the branch the runs measured (default: from CI variables, else git)")
    imp.add_argument("--db", help=DB_HELP)
    add_warehouse_option(imp)
    listing = what.add_parser("list", help="the newest stored runs", description="The newest stored runs, newest "
                                                                                 "first, with their headline figures.")
    listing.add_argument("--app", help="only this app")
    listing.add_argument("--target", help="only this target")
    listing.add_argument("--since", help="only runs since: an ISO date (2026-11-30) or an age (7d, 12h)")
    listing.add_argument("--limit", type=whole(1, 1_000_000), default=50, help="runs to show (default 50)")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.add_argument("--db", help=DB_HELP)
    hist = what.add_parser("history", help="one metric of one app over time, judged as the gate would",
                           description="A metric's stored values, oldest first; with --judge or --html each against "
                                       "the baseline of the valid runs before it: its band and the change points.")
    hist.add_argument("--app", required=True, help="the app's name, or the study's, whose runs to show")
    hist.add_argument("--metric", required=True, help="e.g. steady_mean_ms, first_frame_ms, app.inference_mean_ms")
    hist.add_argument("--board-kind", help="only this board kind (its name, or its kind fingerprint)")
    hist.add_argument("--cell", help="only this study cell (its label)")
    hist.add_argument("--branch", help="only runs of this branch")
    hist.add_argument("--last", type=whole(1, 1_000_000), default=500, help="the newest N runs (default 500)")
    hist.add_argument("--judge", action="store_true",
                      help="judge each job as the gate would, against the valid jobs before it: its band, and the "
                           "change points (the trend page always does)")
    hist.add_argument("--threshold",
                      help="with --judge or --html: the practical threshold of a change (default: the metric's, "
                           "as the gate's)")
    hist.add_argument("--base", metavar="BRANCH",
                      help="with --judge or --html: only this branch's valid runs make the baseline, as the gate's "
                           "do; other branches' runs are judged against it (default: every valid run before)")
    hist.add_argument("--json", action="store_true", help="print JSON instead of a table")
    hist.add_argument("--html", type=Path, metavar="FILE", help="also write the trend page")
    hist.add_argument("--db", help=DB_HELP)
    add_warehouse_parsers(what)

def _since(text: str | None) -> datetime | None:
    if not text:
        return None
    units = {"d": "days", "h": "hours", "m": "minutes"}
    if text[:-1].isdecimal() and text[:-1].isascii() and text[-1] in units:
        try:
            return datetime.now(timezone.utc) - timedelta(**{units[text[-1]]: int(text[:-1])})
        except OverflowError:
            raise UsageError(f"--since {text}: longer ago than dates go", "e.g. --since 30d") from None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since {text!r} is neither a date nor an age", "e.g. --since 2026-11-30 or 7d") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def cmd_results(args: argparse.Namespace) -> int:
    from ..database.connection import open_database
    if args.results_command in WAREHOUSE_COMMANDS:
        return WAREHOUSE_COMMANDS[args.results_command](args)
    if args.results_command == "import":
        _check_folders(args.folders)  # before the database is opened: a mistyped folder creates no database
    database = open_database(args.db, read_only=args.results_command != "import")  # a reader writes nothing
    try:
        if args.results_command == "import":
            return _import(args, database)
        return {"list": _list, "history": _history}[args.results_command](args, database)
    finally:
        database.close()


def _check_folders(folders: list[Path]) -> None:
    from ..results.records import run_uid, runs_in
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder", "give run, study or ci folders")
        if not any(run_uid(run_dir) for run_dir, _ in runs_in(folder)):
            raise UsageError(f"{folder} holds no run (no run folder with a run.json)",
                             "give a run folder, a study folder or a folder of them")


def _import(args: argparse.Namespace, database: Any) -> int:
    from ..warehouse.importing import import_folders
    warehouse = warehouse_of(args)
    console = stderr()

    def progress(done: int, total: int) -> None:
        if total >= IMPORT_PROGRESS_FROM and (done % IMPORT_PROGRESS_EVERY == 0 or done == total):
            console.print(f"{done}/{total} runs read", markup=False, highlight=False)
    for found in import_folders(database, warehouse, args.folders, provenance_of(args), progress):
        print(f"{found.folder}: {found.stored} run{'s' if found.stored != 1 else ''} stored"
              + (f", {found.already} already there" if found.already else "")
              + (f", {found.nothing} never reached a board" if found.nothing else "")
              + (f"; {found.rows} new in the warehouse" if warehouse is not None and found.rows else "")
              + (f"; {found.pending} still on their boards ('orchestrate fetch' brings them and their rows)"
                 if found.pending else ""))
    return 0


def _list(args: argparse.Namespace, database: Any) -> int:
    from rich.table import Table
    from rich.text import Text

    from ..results.store import list_runs
    found = list_runs(database, args.app, args.target, _since(args.since), args.limit)
    if args.json:
        print(json.dumps(found, default=str, indent=2))
        return 0
    table = Table("started (UTC)", "target", "board kind", "app", "cell", "commit", "branch", "steady mean ms",
                  "valid", title=f"{len(found)} run{'' if len(found) == 1 else 's'} in {database.describe()}")
    for row in found:
        mean = row["metrics"].get("steady_mean_ms")
        table.add_row(f"{row['started_at']:%Y-%m-%d %H:%M}", row["target"], row["board_kind"], row["app"],
                      row["cell"], (row["git_commit"] or "")[:9], row["git_branch"] or "",
                      f"{mean:.4g}" if mean is not None else "", "yes" if row["valid"] else Text("flagged", "yellow"))
    show(table)
    return 0


def _history(args: argparse.Namespace, database: Any) -> int:
    from ..results.store import Series, history, metric_unit
    if not (args.judge or args.html) and args.threshold is not None:
        raise UsageError("--threshold goes with --judge or --html", "add --judge, or leave --threshold out")
    points = history(database, Series(args.app, cell=args.cell, board_kind=args.board_kind), args.metric,
                     args.last, args.branch)
    judged = None
    if args.judge or args.html:  # the gate's statistics load scipy: only when asked for
        from ..results.trend import replay
        from ..stats.gate import default_threshold, parse_threshold
        threshold = parse_threshold(args.threshold) if args.threshold is not None else default_threshold(args.metric)
        unit, better = metric_unit(database, args.metric)
        judged = replay(points, better, threshold, base_branch=args.base, metric=args.metric)
        if args.html:
            from ..results.trend_page import trend_page, write_trend_page
            page = trend_page(judged, args.app, args.metric, unit, args.board_kind, threshold, args.base)
            try:
                written = write_trend_page(page, args.html)
            except OSError as exc:
                raise UsageError(f"cannot write {args.html}: {exc.strerror}",
                                 "give a path in a folder you can write") from None
            stderr().print(f"trend page: {written}", markup=False, highlight=False)
    if args.json:
        print(json.dumps([t.as_json() for t in judged] if judged is not None else [p.as_json() for p in points],
                         indent=2))
        return 0
    from rich.table import Table
    from rich.text import Text
    table = Table("started (UTC)", "commit", "branch", "board", "value", *(("band", "verdict") if judged else ()),
                  title=f"{args.app}: {args.metric}, {len(points)} run{'' if len(points) == 1 else 's'}")
    for index, point in enumerate(points):
        row: list[str | Text] = [
            f"{point.started_at:%Y-%m-%d %H:%M}", (point.commit or "")[:9], point.branch or "", point.target,
            Text.assemble(f"{point.value:.4g}", ("" if point.valid else (" (flagged)", "yellow")))]
        if judged is not None:
            item = judged[index]
            style = {"regression": "red", "improvement": "green", "flagged": "yellow"}.get(item.verdict, "")
            row += [f"{item.band[0]:.4g}-{item.band[1]:.4g}" if item.band else "",
                    Text(item.verdict, style=style)]
        table.add_row(*row)
    show(table)
    return 0

