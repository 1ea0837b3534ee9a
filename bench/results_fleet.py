"""The results database when every board's own CI runner writes to it: 1,000 boards x 100 runs stored by 50
concurrent jobs into one PostgreSQL, against one job writing alone, in the same run.

A PostgreSQL server of its own is started (Debian's binaries, a cluster in a temporary folder, fsync on as a
real server has it; --fast turns it off). Each writer is a process of its own, as a CI runner is: it opens the
database as `orchestrate ci` does, and for each of its jobs stores a job and its runs one run per transaction
(`results.store.start_job`, `add_run`, `finish_job`), each run with six figures. 1,000 boards of 4 kinds run
10 apps; each job is one board's 10 runs of one app. First one writer alone stores 1,000 runs (the baseline's
rate); then 50 writers store all 100,000. Printed: runs per second alone and with 50 at once, each store's
latency (median and 99th percentile), and what the gate and `results history` then cost on the full database
against the same queries on the first 1,000 runs (flat when the indexes work).

    python bench/results_fleet.py [--boards 1000] [--runs 100] [--jobs 50] [--fast]
"""
from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from postgres_server import make_postgres  # noqa: E402

from orchestrator.database.connection import open_database  # noqa: E402
from orchestrator.results.records import Metric, Provenance, RunRecord  # noqa: E402
from orchestrator.results.store import Series, add_run, baseline, count_runs, finish_job, history, start_job  # noqa: E402

KINDS = [(f"kind-{i}", f"{i:016x}") for i in range(4)]
APPS = [f"app-{i}" for i in range(10)]
RUNS_PER_JOB = 10
METRICS = (("steady_mean_ms", "ms", "lower"), ("steady_p50_ms", "ms", "lower"), ("steady_p90_ms", "ms", "lower"),
           ("first_frame_ms", "ms", "lower"), ("frames_per_s", "frames/s", "higher"), ("cores_busy", "cores", None))
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def record(board: int, job: int, run: int) -> RunRecord:
    kind, fingerprint = KINDS[board % len(KINDS)]
    rng = random.Random(board * 1_000_003 + job * 101 + run)
    mean = 80.0 + rng.gauss(0, 1.5)
    values = {"frames_per_s": 1000 / mean, "cores_busy": 1.2, "first_frame_ms": mean * 3}
    uid = f"b{board:04d}-j{job:03d}-r{run:02d}"
    return RunRecord(
        uid=uid, run_id=uid, started_at=START + timedelta(minutes=job * RUNS_PER_JOB + run),
        target=f"board-{board:04d}",
        board_kind=kind, kind_fingerprint=fingerprint, software_fingerprint=fingerprint,
        app=APPS[(board + job) % len(APPS)], status="ok", valid=True, flags=[], folder=f"runs/{uid}",
        metrics={name: Metric(values.get(name, mean), unit, better) for name, unit, better in METRICS})


def write_jobs(url: str, jobs: list[tuple[int, int]], latencies, ready) -> None:
    """One CI runner: its jobs (board, job number), each a job row and its runs, one transaction per run. It
    starts once every runner has its connection (``ready``: a barrier), so that the timing is the database's."""
    database = open_database(url)
    mine: list[float] = []
    ready.wait()
    try:
        for board, job in jobs:
            provenance = Provenance(commit=f"{job:040x}", branch="main", default_branch="main")
            job_id = start_job(database, f"job-{board}-{job}", provenance, "main", f"board-{board:04d}", "app")
            for run in range(RUNS_PER_JOB):
                began = time.perf_counter()
                add_run(database, record(board, job, run), provenance, job_id)
                mine.append(time.perf_counter() - began)
            finish_job(database, job_id, "pass")
    finally:
        database.close()
    latencies.extend(mine)


def run_writers(url: str, jobs: list[tuple[int, int]], writers: int) -> tuple[float, list[float]]:
    """Seconds to store jobs with this many writer processes, and every store's latency."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        latencies = manager.list()
        shares = [share for share in (jobs[i::writers] for i in range(writers)) if share]
        ready = manager.Barrier(len(shares) + 1)
        processes = [context.Process(target=write_jobs, args=(url, share, latencies, ready)) for share in shares]
        for process in processes:
            process.start()
        ready.wait()
        began = time.perf_counter()
        for process in processes:
            process.join()
        seconds = time.perf_counter() - began
        if any(p.exitcode != 0 for p in processes):
            raise SystemExit("a writer failed")
        return seconds, list(latencies)


def gate_queries(url: str, rounds: int = 5) -> tuple[float, float]:
    """Median seconds of history() and baseline() for one app on one board kind."""
    database = open_database(url)
    try:
        series = Series("app-3", board_kind=KINDS[1][1])
        timings = []
        for call in (lambda: history(database, series, "steady_mean_ms"),
                     lambda: baseline(database, series, "steady_mean_ms", "main", 10)):
            samples = []
            for _ in range(rounds):
                began = time.perf_counter()
                call()
                samples.append(time.perf_counter() - began)
            timings.append(statistics.median(samples))
        return timings[0], timings[1]
    finally:
        database.close()


def p99(values: list[float]) -> float:
    return sorted(values)[int(0.99 * (len(values) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100, help="runs per board (default 100)")
    parser.add_argument("--jobs", type=int, default=50, help="concurrent writers (default 50)")
    parser.add_argument("--fast", action="store_true", help="the server without fsync (as the tests run it)")
    args = parser.parse_args()
    jobs_per_board = args.runs // RUNS_PER_JOB
    every = [(board, job) for job in range(jobs_per_board) for board in range(args.boards)]
    with tempfile.TemporaryDirectory() as folder:
        server = make_postgres(Path(folder) / "pg")
        if server is None:
            raise SystemExit("needs Debian's postgresql (scripts/setup.sh installs it)")
        server.durable = not args.fast
        server.start()
        try:
            url = server.new_database()
            open_database(url).close()  # the schema, as the first job would make it
            alone_jobs = every[:100]
            alone_s, alone = run_writers(url, alone_jobs, 1)
            small = gate_queries(url)
            many_s, many = run_writers(url, every[100:], args.jobs)
            large = gate_queries(url)
            database = open_database(url)
            stored = count_runs(database)
            database.close()
        finally:
            server.stop()
    alone_rate, many_rate = len(alone) / alone_s, len(many) / many_s
    print(f"{stored:,} runs of {args.boards:,} boards stored ({'fsync off' if args.fast else 'fsync on'})")
    print(f"1 writer:   {alone_rate:7.0f} runs/s; a store takes {statistics.median(alone) * 1000:.1f} ms "
          f"(p99 {p99(alone) * 1000:.1f} ms)")
    print(f"{args.jobs} writers: {many_rate:7.0f} runs/s = {many_rate / alone_rate:.2f}x one writer; a store takes "
          f"{statistics.median(many) * 1000:.1f} ms (p99 {p99(many) * 1000:.1f} ms); {many_s:.0f} s for "
          f"{len(many):,} runs")
    for name, before, after in (("history()", small[0], large[0]), ("baseline()", small[1], large[1])):
        print(f"{name:11s} on 1,000 runs {before * 1000:6.1f} ms, on {stored:,} {after * 1000:6.1f} ms: "
              f"{after / before:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
