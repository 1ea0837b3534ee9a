"""The results database's commands (`results import|list|history`) and the CI gate (`ci`): parse, call the
library, render."""
from __future__ import annotations

import argparse
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CiRunFailedError, GateRegressionError, InterruptedRunError, OrchestratorError, UsageError
from ..stats.gate import BASELINE_JOBS, MIN_JOBS

if TYPE_CHECKING:
    from ..inventory.host import Host

from .options import (
    DB_HELP,
    add_inventory_options,
    add_lease_options,
    add_no_nsys_option,
    add_run_settings,
    add_ssh_options,
    connect_options,
    existing_folder,
    lease_options,
    output_file,
    output_folder,
    recorded_inventory,
    run_settings,
    show,
    stderr,
    target_hosts,
    vault_options,
    whole,
    write_output,
)


def add_parsers(sub: Any) -> None:
    results = sub.add_parser("results", help="store runs in the results database and read their history",
                             description="The results database: runs and study cells with their board, commit and "
                                         "figures, in SQLite or PostgreSQL.")
    what = results.add_subparsers(dest="results_command", required=True, parser_class=type(results),
                                  help="import run folders, list runs, or show a metric's history")
    imp = what.add_parser("import", help="store run or study folders (a run already stored is left as it is)",
                          description="Store run folders, study folders, or folders of runs. The commit and "
                                      "branch come from the CI system's variables, else from git.")
    imp.add_argument("folders", nargs="+", type=Path, help="run, study or ci folders")
    imp.add_argument("--commit", help="the commit the runs measured (default: from CI variables, else git)")
    imp.add_argument("--branch", help="the branch the runs measured (default: from CI variables, else git)")
    imp.add_argument("--db", help=DB_HELP)
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

    ci = sub.add_parser("ci", help="measure a commit on a board, store it, and fail only on a clear regression",
                        description="Run the app (or study) on the target, store every run, compare each gated "
                                    "metric with the jobs before it on the same board kind and decide: regression, "
                                    "improvement, no clear change, or not sure yet (then the cell runs again, up to "
                                    "--max-repeat). Exit 0 passes, 22 is a regression, 23 a run that failed.")
    which = ci.add_mutually_exclusive_group(required=True)
    which.add_argument("--app", help="app name from the catalog")
    which.add_argument("--study", type=Path, help="a study file: every cell is gated")
    where = ci.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", help="host name from the inventory; with --any, a pattern of them")
    where.add_argument("--limit", metavar="PATTERN",
                       help="every board this Ansible pattern matches (as for fleet), one after the other: each gated "
                            "against its own board kind's baseline, one JUnit/JSON/summary with a case per board")
    add_inventory_options(ci, "Ansible inventory (as for profile)")
    ci.add_argument("--apps-dir", type=existing_folder, help="extra folder of app specs")
    ci.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                    help="with --study: other values for a matrix variable")
    ci.add_argument("--repeat", type=whole(1, 1000), help="runs per cell (default: the study's repeat; 3 for --app)")
    ci.add_argument("--baseline", help="compare with: a branch (default: the CI system's default or target branch, "
                                       "else main), 'last-good' (runs of jobs that passed), or a run id or commit")
    ci.add_argument("--max-repeat", type=whole(1, 1000),
                    help="runs per cell at most: a cell the gate is not sure about yet runs once more, and again, up "
                         "to this (default: twice --repeat)")
    ci.add_argument("--baseline-jobs", type=whole(2, 1000), default=BASELINE_JOBS,
                    help=f"newest valid jobs a baseline holds (default {BASELINE_JOBS})")
    ci.add_argument("--min-jobs", type=whole(2, 1000), default=MIN_JOBS,
                    help=f"baseline jobs needed to judge; fewer pass with 'no baseline' (default {MIN_JOBS})")
    ci.add_argument("--gate", action="append", default=[], metavar="METRIC[:THRESHOLD]",
                    help="gate this metric at this threshold, e.g. steady_mean_ms:5%% (repeatable; default: every "
                         "metric where lower or higher is better, each at its own default threshold)")
    ci.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML: a test case per board x app x metric")
    ci.add_argument("--json", type=Path, metavar="FILE", help="write github-action-benchmark JSON "
                                                              "(customSmallerIsBetter)")
    ci.add_argument("--summary", type=Path, metavar="FILE", help="append a Markdown summary ($GITHUB_STEP_SUMMARY)")
    ci.add_argument("--commit", help="the commit measured (default: from CI variables, else git)")
    ci.add_argument("--branch", help="the branch measured (default: from CI variables, else git)")
    ci.add_argument("--out", type=Path, default=Path("runs"), help="folder for the job's runs (default runs/)")
    add_lease_options(ci)
    add_run_settings(ci, "before each run (default 0)")
    add_no_nsys_option(ci)
    add_ssh_options(ci)


def _provenance(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from ..results.records import git_head, provenance_from
    found = provenance_from(os.environ, git_head(Path.cwd()))
    return replace(found, commit=args.commit or found.commit, branch=args.branch or found.branch)


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
    # the folders are read before the database is opened: a mistyped one creates no database
    found = _import_records(args.folders) if args.results_command == "import" else []
    database = open_database(args.db, read_only=args.results_command != "import")  # a reader writes nothing
    try:
        if args.results_command == "import":
            return _import(args, database, found)
        return {"list": _list, "history": _history}[args.results_command](args, database)
    finally:
        database.close()


def _import_records(folders: list[Path]) -> list[tuple[Path, list[Any]]]:
    from ..results.records import records_in
    found = []
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder", "give run, study or ci folders")
        records = records_in(folder)
        if not records:
            raise UsageError(f"{folder} holds no run that reached its board (no run.json with the board's facts)",
                             "give a run folder, a study folder or a folder of them")
        found.append((folder, records))
    return found


def _import(args: argparse.Namespace, database: Any, found: list[tuple[Path, list[Any]]]) -> int:
    from ..results.store import add_runs
    provenance = _provenance(args)
    for folder, records in found:
        stored, skipped = add_runs(database, records, provenance)
        print(f"{folder}: {stored} run{'s' if stored != 1 else ''} stored"
              + (f", {skipped} already there" if skipped else ""))
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


def cmd_ci(args: argparse.Namespace) -> int:
    outcome, summary = ci_job(args)
    print(summary, end="")  # the verdict first: a file that cannot be written after all does not hide it
    write_ci_files(args, outcome, summary)
    if outcome.folder:
        stderr().print(f"runs: {outcome.folder}", markup=False, highlight=False)
    failure = ci_failure(outcome)
    if failure is not None:
        raise failure
    if outcome.unsure:
        names = ", ".join(f"{c.name} {c.metric}" for c in outcome.unsure)
        stderr().print(f"not sure yet after the most runs ({names}): passes; the next jobs will tell",
                       markup=False, highlight=False)
    return 0


def ci_job(args: argparse.Namespace, hosts: list[Host] | None = None) -> tuple[Any, str]:
    """The job ci's options describe, on ``hosts`` (default: --target's, or those --limit matches), and its
    Markdown summary."""
    from ..ci.fleet_job import run_fleet_ci
    from ..ci.job import CiRequest, gated_names, job_study, run_ci
    from ..ci.outputs import markdown_summary
    from ..database.connection import open_database
    from ..fleet.patterns import select_hosts
    from ..inventory.catalog import load_catalog
    from ..inventory.hosts import load_inventory
    from ..stats.gate import parse_rule
    from ..study.runner import StudyRequest
    from ..study.spec import cells, without_nsys
    from .console import StudyView
    settings = run_settings(args)
    rules = tuple(parse_rule(text) for text in args.gate)
    catalog = load_catalog(args.apps_dir)
    study, repeat = job_study(catalog, args.app, args.study, args.set, args.repeat)
    if args.no_nsys:
        study = without_nsys(study)
    gated_names(rules, study, catalog)
    leases = lease_options(args)
    if args.any and not args.target:
        raise UsageError("--any takes one free board of --target's pattern; --limit runs every board it matches",
                         "give --target PATTERN --any, or --limit PATTERN")
    if hosts is None and args.target:
        hosts = target_hosts(args, args.target)
    elif hosts is None:
        inventory = load_inventory(args.inventory, vault_options(args))
        hosts = [inventory.host(name) for name in select_hosts(inventory, args.limit)]
    output_folder(args.out)
    for path, option in ((args.junit, "--junit"), (args.json, "--json"), (args.summary, "--summary")):
        output_file(path, option)
    provenance = _provenance(args)
    base = args.baseline or provenance.default_branch or "main"
    run = StudyRequest(spec=study, host=hosts[0], catalog=catalog,
                       out_dir=args.out, repeat=repeat, fresh=True,
                       connect=connect_options(args),
                       inventory=recorded_inventory(args), settings=settings)
    if args.min_jobs > args.baseline_jobs:
        raise UsageError(f"--min-jobs {args.min_jobs} is more than the {args.baseline_jobs} jobs a baseline holds: "
                         "no job would ever be judged", f"give --baseline-jobs {args.min_jobs} or more")
    max_repeat = args.max_repeat if args.max_repeat is not None else 2 * repeat
    if max_repeat < repeat:
        raise UsageError(f"--max-repeat {max_repeat} is below the {repeat} runs a cell has anyway",
                         f"give --max-repeat {repeat} or more")
    request = CiRequest(run, provenance, base, rules, args.baseline_jobs, args.min_jobs, max_repeat, leases=leases,
                        candidates=tuple(hosts) if args.target else ())
    database = open_database(args.db)
    view = StudyView(stderr(), len(cells(study)) * repeat * (1 if args.target else len(hosts)))
    try:
        outcome = run_ci(request, database, view) if args.target else run_fleet_ci(request, hosts, database, view)
    finally:
        view.close()
        database.close()
    return outcome, markdown_summary(outcome)


def write_ci_files(args: argparse.Namespace, outcome: Any, summary: str) -> None:
    from ..ci.outputs import benchmark_json, junit_xml
    for path, text in ((args.junit, junit_xml(outcome)), (args.json, benchmark_json(outcome))):
        if path:
            write_output(path, text)
    if args.summary:
        write_output(args.summary, summary, append=True)


def ci_failure(outcome: Any) -> OrchestratorError | None:
    """Why the job fails, in one line: interrupted, a run that measured nothing, or a clear regression."""
    from ..ci.job import FAILED
    if isinstance(outcome.error, InterruptedRunError):
        return outcome.error
    if outcome.outcome == FAILED:
        first = next((c for c in outcome.checks if c.status == "failed"), None)
        why = outcome.error.one_line() if outcome.error else (first.reason if first else "a run failed")
        return CiRunFailedError(f"the job did not measure everything: {why}", "see the summary and the run folders")
    if outcome.regressions:
        first_regression = outcome.regressions[0]
        return GateRegressionError(f"{len(outcome.regressions)} metric{'s' if len(outcome.regressions) != 1 else ''} "
                                   f"regressed; the first, {first_regression.name} {first_regression.metric}: "
                                   f"{first_regression.decision.note if first_regression.decision else ''}",
                                   "see the summary")
    return None
