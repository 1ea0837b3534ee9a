"""Record the history the gate's proof replays: N real `orchestrate ci` jobs of one unchanged app on this
machine, each a process of its own with R runs, into a results database; then write every job's runs and
figures to a JSON file (tests/data/gate-history/), with how they were made.

    python scripts/record_gate_history.py --jobs 40 --repeat 6 --out tests/data/gate-history/frames-local.json
    python scripts/record_gate_history.py --app es2gears --jobs 30 --repeat 5 \
        --out tests/data/gate-history/es2gears-local.json

The default app is the CI example's (tests/apps/nvtx_frames.py: 150 NVTX frames of 2,000 square roots and an
8 ms sleep, the first frame four times the work); `--app NAME` takes a catalog app instead (es2gears: Mesa's
gears under Xvfb, OpenGL trace and CPU sampling). On the `local` target: nothing changes between jobs but the
machine's weather.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARGS = ["--frames", "150", "--work", "2000", "--sleep-ms", "8"]


def app_folder(folder: Path) -> Path:
    apps = folder / "apps"
    apps.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "apps" / "nvtx_frames.py", apps / "frames.py")
    (apps / "frames.yaml").write_text(json.dumps({
        "name": "frames", "command": ["{python}", "frames.py", *ARGS], "files": ["frames.py"],
        "trace": ["osrt", "nvtx"], "sample": "none", "cpuctxsw": "none", "duration_s": 30}))
    return apps


def export(database: Path) -> list[dict]:
    db = sqlite3.connect(database)
    db.row_factory = sqlite3.Row
    jobs = []
    for job in db.execute("SELECT id, started_at, finished_at, outcome FROM jobs ORDER BY id"):
        runs = []
        for run in db.execute("SELECT id, run_id, started_at, valid, status, flags FROM runs WHERE job_id = ? "
                              "ORDER BY started_at, id", (job["id"],)):
            figures = {row["name"]: row["value"] for row in
                       db.execute("SELECT name, value FROM metrics WHERE run_id = ? ORDER BY name", (run["id"],))}
            runs.append({"started_at": run["started_at"], "valid": bool(run["valid"]), "status": run["status"],
                         "flags": json.loads(run["flags"]), "metrics": figures})
        jobs.append({"job": job["id"], "started_at": job["started_at"], "runs": runs})
    return jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--app", default="frames", help="frames (the CI example's app) or a catalog app")
    parser.add_argument("--jobs", type=int, default=36)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--gap-s", type=float, default=5.0, help="seconds between two jobs")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--db", type=Path, help="a results database to add the jobs to (default: a new one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-history-") as temporary:
        folder = Path(temporary)
        apps = ["--apps-dir", str(app_folder(folder))] if args.app == "frames" else []
        database = args.db.resolve() if args.db else folder / "results.db"
        command = [sys.executable, "-m", "orchestrator", "ci", "--app", args.app, *apps, "--target", "local",
                   "--repeat", str(args.repeat), "--max-repeat", str(args.repeat), "--db", str(database),
                   "--commit", "0" * 40,
                   "--branch", "main", "--baseline", "main", "--out", str(folder / "runs"), "--retries", "3"]
        seconds = []
        for job in range(args.jobs):
            started = time.monotonic()
            done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                                  env={**os.environ, "COLUMNS": "120"})
            seconds.append(time.monotonic() - started)
            print(f"job {job + 1}/{args.jobs}: exit {done.returncode}, {seconds[-1]:.0f} s", flush=True)
            shutil.rmtree(folder / "runs", ignore_errors=True)  # the reports: the figures are in the database
            time.sleep(args.gap_s)
        jobs = export(database)
    nsys = subprocess.run(["nsys", "--version"], capture_output=True, text=True).stdout.strip()
    document = {
        "what": "real orchestrate ci jobs of one unchanged app on one machine, every run's stored figures",
        "app": {"name": "frames", "source": "tests/apps/nvtx_frames.py", "args": ARGS, "trace": ["osrt", "nvtx"]}
        if args.app == "frames" else {"name": args.app, "source": f"orchestrator/inventory/apps/{args.app}.yaml"},
        "made_by": f"python scripts/record_gate_history.py --app {args.app} --jobs {args.jobs} --repeat {args.repeat} "
                   f"--gap-s {args.gap_s:g} --out {args.out}" + (" --db DB (a database holding earlier jobs)"
                                                                if args.db else ""),
        "recorded": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
                    "nsys": nsys, "target": "local"},
        "job_seconds": [round(s, 1) for s in seconds],
        "jobs": jobs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{len(jobs)} jobs, {sum(len(j['runs']) for j in jobs)} runs: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
