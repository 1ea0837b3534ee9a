"""`orchestrate results history` on a large results database against a small one, in the same run.

Two databases of the same shape are filled: 1,000 runs (the baseline) and 100,000 runs (the target: the
answer in under a second), each run with six metrics, spread over 10 apps x 4 board kinds x 3 branches.
For each, the median of several timings of (a) the library's history() for one app, metric and board kind
(the newest 500 values) and the gate's baseline() for it, and (b) the whole command line, process start
included, as a user waits for it. Printed: seconds, and the 100k/1k ratios (flat when the indexes work).

    python bench/results_history.py [--runs 100000] [--rounds 5] [--db postgresql://...]

With --db the large database is that one (emptied first: give a scratch database); the default is a SQLite
file in a temporary folder.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sqlalchemy import delete, insert  # noqa: E402

from orchestrator.database.connection import Database, open_database  # noqa: E402
from orchestrator.database.schema import jobs, metrics, runs  # noqa: E402
from orchestrator.results.store import Series, baseline, history  # noqa: E402

APPS = [f"app-{i}" for i in range(10)]
KINDS = [(f"kind-{i}", f"{i:016x}") for i in range(4)]
BRANCHES = ["main", "feature-a", "feature-b"]
METRICS = [("steady_mean_ms", "ms", "lower"), ("steady_p50_ms", "ms", "lower"), ("steady_p90_ms", "ms", "lower"),
           ("first_frame_ms", "ms", "lower"), ("frames_per_s", "frames/s", "higher"), ("cores_busy", "cores", None)]
CHUNK = 5000


def fill(database: Database, count: int) -> None:
    rng = random.Random(count)
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    with database.engine.begin() as connection:
        connection.execute(delete(metrics))
        connection.execute(delete(runs))
        connection.execute(delete(jobs))
    for first in range(0, count, CHUNK):
        run_rows, metric_rows = [], []
        for index in range(first, min(first + CHUNK, count)):
            kind, fingerprint = KINDS[index % len(KINDS)]
            run_rows.append({
                "id": index + 1, "uid": f"u{index}", "run_id": f"run-{index}",
                "started_at": start + timedelta(minutes=index), "recorded_at": start + timedelta(minutes=index),
                "target": f"board-{index % 16}", "board_kind": kind, "kind_fingerprint": fingerprint,
                "software_fingerprint": fingerprint, "app": APPS[(index // len(KINDS)) % len(APPS)], "study": None,
                "cell": "", "variables": "{}", "git_commit": f"{index:040x}", "git_branch": BRANCHES[index % 3],
                "job_id": None, "status": "ok", "valid": index % 50 != 0, "flags": "[]", "folder": None})
            mean = 80.0 + rng.gauss(0, 1.5)
            for name, unit, better in METRICS:
                value = {"frames_per_s": 1000 / mean, "cores_busy": 1.2, "first_frame_ms": mean * 3}.get(name, mean)
                metric_rows.append({"run_id": index + 1, "name": name, "value": value, "unit": unit, "better": better})
        with database.engine.begin() as connection:
            connection.execute(insert(runs), run_rows)
            connection.execute(insert(metrics), metric_rows)
    with database.engine.begin() as connection:  # the planner's statistics, as autovacuum would gather them
        connection.exec_driver_sql("ANALYZE")


def timed(call, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def measure(url: str, count: int, rounds: int) -> dict[str, float]:
    database = open_database(url)
    try:
        fill(database, count)
        series = Series("app-3", board_kind=KINDS[1][1])
        points = history(database, series, "steady_mean_ms")
        assert points and len(points) <= 500, len(points)
        library = timed(lambda: history(database, series, "steady_mean_ms"), rounds)
        base = timed(lambda: baseline(database, series, "steady_mean_ms", "main", 10), rounds)
    finally:
        database.close()
    argv = [sys.executable, "-m", "orchestrator", "results", "history", "--app", "app-3", "--metric",
            "steady_mean_ms", "--board-kind", KINDS[1][0], "--json", "--db", url]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = timed(lambda: subprocess.run(argv, env=env, capture_output=True, check=True), rounds)
    return {"history": library, "baseline": base, "command": command, "points": len(points)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", help="the large database (default: a SQLite file in a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        small = measure(str(Path(scratch) / "small.db"), 1_000, args.rounds)
        started = time.perf_counter()
        large = measure(args.db or str(Path(scratch) / "large.db"), args.runs, args.rounds)
        print(f"filled and measured {args.runs} runs in {time.perf_counter() - started:.0f} s")
    for key, label in (("history", "history() of one series (newest 500)"), ("baseline", "baseline() of the gate"),
                       ("command", "`orchestrate results history --json`")):
        print(f"{label:44s} 1,000 runs {small[key] * 1000:8.1f} ms   {args.runs:,} runs {large[key] * 1000:8.1f} ms"
              f"   ratio {large[key] / small[key]:5.2f}")
    verdict = "met" if large["command"] < 1.0 else "NOT met"
    print(f"target: history on {args.runs:,} runs answers in under 1 s: {large['command']:.2f} s, {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
