"""Analysis speed on a 5-million-event export: `orchestrate analyze` against the equivalent `nsys stats` reports.

Builds the export from a real one in tests/data/nsys by replicating its event rows along the time axis
(each copy shifted by the capture's length, sample ids shifted so stacks stay whole), until it holds at
least --events rows of trace events. Then, in the same run and on the same file, times:
- nsys stats in one process: the 2022.4 reports our sections equal (osrtsum, nvtxsum, khrdebugsum,
  cudaapisum, gpukernsum, gpumemtimesum) in one `nsys stats` run, the baseline the targets are held to;
- nsys stats one report at a time: the same six, one process after another, as a user would run them
  (printed for information);
- orchestrate: one `orchestrate analyze --json` process doing the whole analysis (every API section plus
  frames, hotspots, cores, threads and verdict: more than nsys computes);
and prints the ratio and the analysis's peak memory. With --against REV, also the same `orchestrate analyze` of
the tree at REV (a git revision: its files only, the compiled b-tree reader built for it when its C source
differs), in the same rounds on the same file, and the ratio of today's time to it: the analysis's speed against
an earlier release's, measured side by side (a target of at most +10 % sets the exit status): AGAINST_PAIRS pairs a
round, each side first in turn, the medians compared (a 2-core virtual machine has slow spells of a few hundred
milliseconds that a few samples would put on one side).

Workloads: "cuda" grows the abacus CUDA report (kernels, runtime API, memcpy, memset, OS runtime): nsys has
a report for every event table, so both sides read the same rows; this one is held to the targets (>= 5x
against the one-process baseline, peak memory < 1 GB) and sets the exit status. "opengl" grows the es2gears
report (OpenGL, OS runtime, CPU sampling, context switches): nsys's reports cover only its OS runtime rows
(osrtsum), while the analysis reads all of them; its ratio is printed for information, with how many events
each side covers.

    python bench/analysis_speed.py [--workload cuda|opengl|both] [--events 5000000] [--rounds 3] [--nsys PATH]
                                   [--against REV]
"""
from __future__ import annotations

import argparse
import compileall
import gzip
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "nsys"
SOURCES = {"cuda": "abacus_titanrtx_2020.export2022_4", "opengl": "es2gears-opengl"}
NSYS_REPORTS = ["osrtsum", "nvtxsum", "khrdebugsum", "cudaapisum", "gpukernsum", "gpumemtimesum"]
NSYS_COVERED = {"OSRT_API", "NVTX_EVENTS", "KHR_DEBUG_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}
GATED = "cuda"
EVENT_TABLES = ["OSRT_API", "OPENGL_API", "OPENGL_WORKLOAD", "KHR_DEBUG_EVENTS", "NVTX_EVENTS", "SCHED_EVENTS",
                "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS", "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"]
TARGET_RATIO, MEMORY_LIMIT = 5.0, 2**30
AGAINST_LIMIT = 1.10  # today's analysis takes at most this much of the earlier release's time
AGAINST_PAIRS = 4  # per round, the two analyses one after the other this many times, each first in turn
BTREE = Path("orchestrator/analysis/export/_btree.c")


def tree_at(revision: str, folder: Path) -> Path:
    """The repository's files at a revision, in a folder of their own, with its compiled b-tree reader: today's
    when the C source is the same, else built for it."""
    tree = folder / f"tree-{revision}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    built = sorted((REPO / BTREE.parent).glob("_btree*.so"))
    same = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", revision, "--", str(BTREE)]).returncode == 0
    if built and same:
        shutil.copy(built[0], tree / BTREE.parent / built[0].name)
    else:
        subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "build_ext", "--inplace"],
                       cwd=tree, check=True, capture_output=True)
    compileall.compile_dir(tree / "orchestrator", quiet=1)
    return tree


def build_export(source: str, events: int, folder: Path) -> tuple[Path, int, int]:
    path = folder / f"{source}-x.sqlite"
    with gzip.open(DATA / f"{source}.sqlite.gz", "rb") as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    conn = sqlite3.connect(path)
    tables = [t for t in EVENT_TABLES if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    start, stop = conn.execute("SELECT startTime, stopTime FROM ANALYSIS_DETAILS").fetchone()
    span = stop - start
    max_id = conn.execute("SELECT max(id) FROM COMPOSITE_EVENTS").fetchone()[0] if "COMPOSITE_EVENTS" in counts else 0
    linked = {t: [c for c in ("correlationId", "endCorrelationId") if c in _columns(conn, t)] for t in tables}
    max_link = max([conn.execute(f"SELECT max({c}) FROM {t}").fetchone()[0] or 0 for t, cs in linked.items()
                    for c in cs], default=0)  # each copy's calls and GPU work get ids of their own, as in one long run
    copies = -(-events // sum(counts.values()))
    for table in tables:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        shifted = []
        for column in columns:
            if column in ("start", "end"):
                shifted.append(f'"{column}" + :shift')
            elif column == "id" and table in ("COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"):
                shifted.append("id + :ids")
            elif column in linked[table]:
                shifted.append(f'CASE WHEN "{column}" > 0 THEN "{column}" + :links ELSE "{column}" END')
            else:
                shifted.append(f'"{column}"')
        names = ", ".join(f'"{c}"' for c in columns)
        for copy in range(1, copies):
            conn.execute(f"INSERT INTO {table} ({names}) SELECT {', '.join(shifted)} FROM {table} WHERE rowid <= :n",
                         {"shift": copy * span, "ids": copy * max_id, "links": copy * max_link, "n": counts[table]})
    conn.execute("UPDATE ANALYSIS_DETAILS SET stopTime = startTime + :d, duration = :d", {"d": copies * span})
    conn.commit()
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    conn.close()
    return path, sum(counts.values()), sum(n for t, n in counts.items() if t in NSYS_COVERED)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def run_measured(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {child.stderr.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss * 1024


def measure(workload: str, events: int, rounds: int, nsys: str, folder: Path, before: Path | None = None) -> bool:
    started = time.perf_counter()
    export, total, covered = build_export(SOURCES[workload], events, folder)
    print(f"\n[{workload}] {total:,} events in {export.stat().st_size / 2**20:.0f} MB "
          f"(built in {time.perf_counter() - started:.0f} s from {SOURCES[workload]}); nsys's reports cover "
          f"{covered:,} of them")
    ours_argv = [sys.executable, "-m", "orchestrator", "analyze", "--json", str(export)]
    # Python's own cache of compiled modules, as a first run writes it (an editable install has none, and
    # PYTHONDONTWRITEBYTECODE, set on some machines, keeps the runs from writing it)
    compileall.compile_dir(REPO / "orchestrator", quiet=1)
    run_measured(ours_argv)  # warm the page cache for both sides
    one_argv = [nsys, "stats", *(arg for r in NSYS_REPORTS for arg in ("--report", r)), "--format", "csv",
                "--output", "-", str(export)]
    # the earlier release's analysis, run from its own tree (the environment's packages are today's)
    # (-P: not the working folder's package first)
    before_argv = ["env", f"PYTHONPATH={before}", sys.executable, "-P", "-m", "orchestrator", "analyze", "--json",
                   str(export)] if before is not None else []
    one_times, each_times, ours_times, peaks, before_times, ours_against = [], [], [], [], [], []
    for _ in range(rounds):
        one_times.append(run_measured(one_argv)[0])
        each = [run_measured([nsys, "stats", "--report", r, "--format", "csv", "--output", "-", str(export)])[0]
                for r in NSYS_REPORTS]
        each_times.append(sum(each))
        seconds, peak = run_measured(ours_argv)
        ours_times.append(seconds)
        peaks.append(peak)
        for pair in range(AGAINST_PAIRS if before_argv else 0):  # each side first in turn: a slow spell of the
            order = ("ours", "before") if pair % 2 else ("before", "ours")  # machine falls on both
            took = {side: run_measured(ours_argv if side == "ours" else before_argv)[0] for side in order}
            ours_against.append(took["ours"])
            before_times.append(took["before"])
        print(f"  nsys stats, one process {one_times[-1]:.2f} s; one per report "
              f"{' + '.join(f'{s:.2f}' for s in each)} = {sum(each):.2f} s | analyze {seconds:.2f} s, "
              f"peak {peak / 2**20:.0f} MB")
    ours = statistics.median(ours_times)
    ratio = statistics.median(one_times) / ours
    peak = max(peaks)
    ok = ratio >= TARGET_RATIO and peak < MEMORY_LIMIT
    verdict = ("ok" if ok else "MISSED") if workload == GATED else "for information"
    if before_times and before is not None:
        here = statistics.median(ours_against)
        against = here / statistics.median(before_times)
        print(f"  against {before.name.removeprefix('tree-')} ({len(before_times)} pairs): analyze "
              f"{statistics.median(before_times):.2f} s there, {here:.2f} s here -> {against:.2f}x its time "
              f"(target <= {AGAINST_LIMIT:.2f}x) -> {'ok' if against <= AGAINST_LIMIT else 'MISSED'}")
        ok_against = against <= AGAINST_LIMIT
    else:
        ok_against = True
    print(f"  median: nsys stats {statistics.median(one_times):.2f} s in one process "
          f"({statistics.median(each_times):.2f} s one report at a time: {statistics.median(each_times) / ours:.2f}x), "
          f"analyze {ours:.2f} s -> ratio {ratio:.2f}x (target >= {TARGET_RATIO:g}x); peak memory "
          f"{peak / 2**30:.2f} GB (target < {MEMORY_LIMIT / 2**30:g} GB) -> {verdict}")
    return (ok or workload != GATED) and ok_against


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["cuda", "opengl", "both"], default="both")
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nsys", default=shutil.which("nsys"))
    parser.add_argument("--against", metavar="REV", help="also time the analysis of this git revision, side by side")
    args = parser.parse_args()
    if not args.nsys:
        raise SystemExit("no nsys on PATH: install Nsight Systems (scripts/setup.sh) or pass --nsys")
    workloads = ["cuda", "opengl"] if args.workload == "both" else [args.workload]
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as folder:
        before = tree_at(args.against, Path(folder)) if args.against else None
        results = [measure(w, args.events, args.rounds, args.nsys, Path(folder), before) for w in workloads]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
