"""The CI gate (`ci`): parse, call the library, render."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CiRunFailedError, GateRegressionError, InterruptedRunError, OrchestratorError, UsageError
from ..stats.gate import BASELINE_JOBS, MIN_JOBS

if TYPE_CHECKING:
    from ..inventory.host import Host

from .options import (
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
    stderr,
    target_hosts,
    vault_options,
    whole,
    write_output,
)
from .warehouse_commands import add_site_options, provenance_of, update_site, warehouse_of


def add_parsers(sub: Any) -> None:
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
    ci.add_argument("--site", type=Path, metavar="DIR", help="after the job, bring the results dashboard in DIR up to "
                                                               "date (as 'orchestrate results site DIR')")
    add_site_options(ci)



def cmd_ci(args: argparse.Namespace) -> int:
    outcome, summary = ci_job(args)
    print(summary, end="")  # the verdict first: a file that cannot be written after all does not hide it
    write_ci_files(args, outcome, summary)
    if outcome.folder:
        stderr().print(f"runs: {outcome.folder}", markup=False, highlight=False)
    site_error = update_job_site(args) if args.site is not None else None  # a regression is drawn too
    failure = ci_failure(outcome) or site_error
    if failure is not None:
        raise failure
    if outcome.unsure:
        names = ", ".join(f"{c.name} {c.metric}" for c in outcome.unsure)
        stderr().print(f"not sure yet after the most runs ({names}): passes; the next jobs will tell",
                       markup=False, highlight=False)
    return 0


def update_job_site(args: argparse.Namespace) -> OrchestratorError | None:
    """The dashboard brought up to date with the job's runs; why not, when it cannot be (the job's verdict goes
    first)."""
    from ..database.connection import open_database
    try:
        database = open_database(args.db, read_only=True)
        try:
            update_site(args, args.site, database)
        finally:
            database.close()
    except OrchestratorError as exc:
        return exc
    return None


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
    provenance = provenance_of(args)
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
                        candidates=tuple(hosts) if args.target else (), warehouse=warehouse_of(args))
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
