"""`results query`, `results compact` and `results site`: SQL over every run's rows, the warehouse's small files
merged, the dashboard; and the rows of the runs a command made kept in the warehouse. Parse, call the library,
render."""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .options import DB_HELP, add_warehouse_option, show, stderr, whole

QUERY_EXAMPLES = """views (each row starts with the run's keys: run_uid, run_id, started_at, app, target, board_kind,
jetpack, l4t, git_commit, git_branch, study, cell, valid, flags):
  runs         one row per run: status, folder, frames, steady_mean_ms, steady_p50_ms .. steady_p99_ms, verdict
  metrics      every figure the results database keeps of a run: name, value, unit, better
  frames       one row per frame: frame, start_ns, ns, steady, gpu_ns, share_cpu_ns .. share_unexplained_ns
  shares       the focus thread's time by what it waits for: share, ns, pct, ms_per_frame
  threads      each thread's CPU time: tid, name, cpu_ns, cpu_pct, top_symbol
  api          the API tables (api: osrt, opengl, nvtx, cuda_api...): name, calls, total_ns, avg_ns, med_ns
  frame_calls  each frame's calls and GPU work by name (from the export): frame, kind, name, calls, total_ns
  gpu_work     each frame's GPU work by kind: frame, kind, ns, count
  kernels      CUDA kernels by launch shape: function, grid, block, calls, total_ns
  hotspots     CPU samples by function: view (self, inclusive), rank, symbol, module, samples, pct
  board        the board's samples: series, clock, t_ns, value
  app_records  the app's own figures as its parser read them: record, name, value, unit
  db_runs, db_metrics, db_jobs   the results database's tables (--db)

examples:
  orchestrate results query "SELECT board_kind, jetpack, app, quantile_cont(ns, 0.99) / 1e6 AS p99_ms
      FROM frames WHERE steady AND valid AND started_at > now() - INTERVAL 30 DAY GROUP BY ALL ORDER BY ALL"
  orchestrate results query "SELECT git_commit, avg(ms_per_frame) FROM shares WHERE share = 'display'
      AND board_kind LIKE '%Orin Nano%' GROUP BY ALL" --csv
  orchestrate results query "SELECT j.outcome, count(*) FROM runs r JOIN db_runs d ON d.uid = r.run_uid
      JOIN db_jobs j ON j.id = d.job_id GROUP BY ALL"
"""


def add_warehouse_parsers(what: Any) -> None:
    query = what.add_parser("query", help="SQL over every run's rows (DuckDB), joined with the results database",
                            description="Run one SQL statement (DuckDB's dialect) over every run's rows in the "
                                        "warehouse and the results database's tables. Nothing is downloaded: DuckDB "
                                        "loads no extension.",
                            epilog=QUERY_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    query.add_argument("sql", help="the statement, e.g. \"SELECT app, count(*) FROM runs GROUP BY app\"")
    form = query.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print a JSON list of rows instead of a table")
    form.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    query.add_argument("--db", help=DB_HELP)
    add_warehouse_option(query)
    compact = what.add_parser("compact", help="merge the warehouse's small files (one per run) into one per partition",
                              description="Merge each partition's files (a table's runs of one board kind and month) "
                                          "into one. Queries running meanwhile see the files before or after.")
    add_warehouse_option(compact)
    site = what.add_parser("site", help="the results dashboard: a static, offline site of every history",
                           description="Write (or bring up to date) a static dashboard of the results database: a "
                                       "page per app or study cell on each board kind with every metric's history "
                                       "(each job's median and interval, flagged runs hollow, the gate's decisions, "
                                       "change points found after the fact), and a front page of what moved. Only "
                                       "histories with new runs are read and drawn again.")
    site.add_argument("folder", type=Path, metavar="DIR", help="the site's folder (index.html is its front page)")
    add_site_options(site)
    site.add_argument("--db", help=DB_HELP)


def add_site_options(parser: argparse.ArgumentParser) -> None:
    """The site's options, for `results site` and for `ci --site`."""
    parser.add_argument("--report-url", metavar="TEMPLATE",
                        help="where run reports are, for reports kept on another machine: e.g. "
                             "https://ci.example/runs/{folder_name}/report.html ({run_id}, {uid}, {folder}, "
                             "{folder_name}, {commit}; default: each run folder's report.html here)")
    parser.add_argument("--days", type=whole(1, 100_000), default=14,
                        help="the front page shows what moved in the last N days (default 14)")


def update_site(args: argparse.Namespace, folder: Path, database: Any) -> None:
    """The dashboard brought up to date, and where it is said."""
    from ..site.build import SiteRequest, build_site
    built = build_site(database, SiteRequest(folder, args.report_url, args.days))
    stderr().print(f"site: {built.index} ({built.drawn} histor{'y' if built.drawn == 1 else 'ies'} drawn, "
                   f"{built.kept} as they were; {built.runs} runs)", markup=False, highlight=False, soft_wrap=True)


def cmd_site(args: argparse.Namespace) -> int:
    from ..database.connection import open_database
    database = open_database(args.db, read_only=True)
    try:
        update_site(args, args.folder, database)
    finally:
        database.close()
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from ..database.connection import open_database
    from ..warehouse.query import DATABASE_VIEWS, run_query
    warehouse = _needed(args)
    named = any(view in args.sql.lower() for view in DATABASE_VIEWS)
    database = open_database(args.db, read_only=True) if named else None
    try:
        answer = run_query(warehouse, args.sql, database)
    finally:
        if database is not None:
            database.close()
    if args.json:
        names = _unique(answer.columns)
        print(json.dumps([{name: _finite(value) for name, value in zip(names, row)} for row in answer.rows],
                         default=_plain, indent=1, allow_nan=False))
    elif args.csv:
        out = csv.writer(sys.stdout)
        out.writerow(answer.columns)
        out.writerows([[_plain(v) if v is not None else "" for v in row] for row in answer.rows])
    else:
        from rich.table import Table
        table = Table(*answer.columns, title=f"{len(answer.rows)} row{'' if len(answer.rows) == 1 else 's'}")
        for row in answer.rows:
            table.add_row(*("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(_plain(v))
                            for v in row))
        show(table)
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from ..warehouse.store import compact
    warehouse = _needed(args)
    done = compact(warehouse)
    stderr().print(f"{warehouse.root}: {done.files_before} files, now {done.files_after} "
                   f"({done.partitions} partition{'s' if done.partitions != 1 else ''} merged)",
                   markup=False, highlight=False, soft_wrap=True)
    return 0


def keep_rows(args: argparse.Namespace, folder: Path | None) -> None:
    """The rows of the runs ``folder`` holds that ended (a run, study or fleet folder) into the warehouse; a
    warehouse that cannot be written is a warning (the runs are kept in their folders either way)."""
    from ..warehouse.importing import store_runs
    warehouse = warehouse_of(args)
    if warehouse is None or folder is None:
        return
    try:
        store_runs(warehouse, folder, provenance_of(args))
    except (UsageError, OSError) as exc:
        message = exc.one_line() if isinstance(exc, UsageError) else str(exc)
        stderr().print(f"warning: the runs' rows were not kept: {message}; "
                       f"'orchestrate results import {folder}' keeps them later", markup=False, highlight=False,
                       soft_wrap=True)


def warehouse_of(args: argparse.Namespace) -> Any:
    """The warehouse --warehouse names (None: 'none')."""
    from ..warehouse.store import open_warehouse
    given = getattr(args, "warehouse", None)
    if given == "none" or (given is None and os.environ.get("ORCHESTRATE_WAREHOUSE") == "none"):
        return None
    return open_warehouse(given)


def provenance_of(args: argparse.Namespace) -> Any:
    """The commit and branch the runs measured: --commit and --branch, else the CI system's variables, else git."""
    from dataclasses import replace

    from ..results.records import git_head, provenance_from
    found = provenance_from(os.environ, git_head(Path.cwd()))
    return replace(found, commit=getattr(args, "commit", None) or found.commit,
                   branch=getattr(args, "branch", None) or found.branch)


def _needed(args: argparse.Namespace) -> Any:
    warehouse = warehouse_of(args)
    if warehouse is None:
        raise UsageError("--warehouse none: there are no rows to read", "give the warehouse's folder")
    if not warehouse.root.is_dir():
        raise UsageError(f"no warehouse at {warehouse.root}",
                         "runs go there as they end; 'orchestrate results import FOLDER' brings older ones")
    return warehouse


def _unique(columns: list[str]) -> list[str]:
    """Column names as JSON keys: a name given twice (two tables' run_id) is kept, the second as name_2."""
    seen: dict[str, int] = {}
    names = []
    for column in columns:
        seen[column] = seen.get(column, 0) + 1
        names.append(column if seen[column] == 1 else f"{column}_{seen[column]}")
    return names


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _plain(value: Any) -> Any:
    """A DuckDB value as JSON and CSV write it: times in ISO 8601, decimals as numbers."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


WAREHOUSE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"query": cmd_query, "compact": cmd_compact,
                                                                      "site": cmd_site}
