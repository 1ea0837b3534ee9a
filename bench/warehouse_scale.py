"""Thousands of runs in one place: 10,000 runs' rows in the warehouse and the results database, queried and drawn.

The runs are made from real captures: the run folders in tests/data/written-before-*/ (es2gears runs, posebench study
cells and fleet runs of three releases, see their SOURCES.md) read into the warehouse's tables as `results import`
reads them, then copied with varied keys (20 apps x 5 board kinds with their JetPack, 6 months, CI jobs of 3 runs
with their commits, 1 run in 25 flagged) and their times scaled per board kind and app, with each run's own noise
and, in some histories, a step. The warehouse is written as `results compact` leaves it (a file per table, board kind
and month); the database gets the same runs with their figures and jobs.

Printed, all measured in this one run:
- a p99 of steady frame times by board kind, over the partitioned warehouse (the `frames` view, as `results query`
  runs it) against the same statement over one file holding every frame (target: within 2x, and under 2 s);
- the dashboard (`results site`) built from scratch, then brought up to date after a CI job of 10 more runs (target:
  the update under a tenth of the build);
- the process's peak memory (target: under 1 GB).

    python bench/warehouse_scale.py [--runs 10000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.database.connection import open_database  # noqa: E402
from orchestrator.database.schema import jobs, metrics, runs  # noqa: E402
from orchestrator.results.records import Provenance, run_record, runs_in  # noqa: E402
from orchestrator.site.build import SiteRequest, build_site  # noqa: E402
from orchestrator.warehouse.columns import SCHEMAS, TABLES  # noqa: E402
from orchestrator.warehouse.query import run_query  # noqa: E402
from orchestrator.warehouse.rows import run_tables  # noqa: E402
from orchestrator.warehouse.store import COMPRESSION, Warehouse, open_warehouse  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
KINDS = {"NVIDIA Jetson Nano Developer Kit": ("4.6.4", 2.6), "NVIDIA Jetson Xavier NX Developer Kit": ("5.1.3", 1.4),
         "NVIDIA Jetson AGX Orin Developer Kit": ("6.1", 0.6), "NVIDIA Jetson Orin Nano Developer Kit": ("6.0", 1.0),
         "NVIDIA Jetson Orin NX Developer Kit": ("6.1", 0.8)}
APPS, RUNS_PER_JOB, MONTHS = 20, 3, 6
P99 = "SELECT board_kind, quantile_cont(ns, 0.99) / 1e6 AS p99_ms FROM {frames} WHERE steady AND valid " \
      "GROUP BY board_kind ORDER BY board_kind"
TIME_METRICS = ("_ms", "_mj")
T = TypeVar("T")
ROW_GROUP = 250_000     # rows written at once: compact writes a partition whole, in row groups of this order


def seeds() -> list[tuple[dict[str, pa.Table], dict[str, tuple[float, str, str | None]]]]:
    """The real runs' tables and figures."""
    found = []
    for folder in sorted(p for p in DATA.glob("written-before-*/*") if p.is_dir()):
        for run_dir, study in runs_in(folder):
            record = run_record(run_dir, study)
            if record is not None:
                figures = {name: (m.value, m.unit, m.better) for name, m in record.metrics.items()}
                found.append((run_tables(record, Provenance("0" * 40, "main"), run_dir), figures))
    return found


def plan(count: int, now: datetime) -> list[dict]:
    """Every run's keys and scale: histories of app x board kind, CI jobs of 3 runs, a step in every third."""
    rng = np.random.default_rng(7)
    per_history = count // (APPS * len(KINDS))
    made: list[dict[str, Any]] = []
    for app in range(APPS):
        for kind, (jetpack, speed) in KINDS.items():
            step_at = per_history * 2 // 3 if (app + len(made)) % 3 == 0 else None
            for index in range(per_history):
                job = index // RUNS_PER_JOB
                started = now - timedelta(days=MONTHS * 30) + timedelta(days=MONTHS * 30 * index / per_history)
                scale = speed * (1 + app / 10) * float(rng.normal(1, 0.02)) * (1.08 if step_at and index >= step_at
                                                                                else 1.0)
                made.append({"app": f"app{app:02d}", "kind": kind, "jetpack": jetpack, "started": started,
                             "commit": hashlib.sha1(f"{app} {kind} {job}".encode()).hexdigest(),
                             "job": (app, kind, job), "scale": scale, "valid": bool(rng.random() > 0.04),
                             "uid": uuid.uuid4().hex, "seed": int(rng.integers(0, 1 << 30))})
    return made


def keyed(table: pa.Table, run: dict, name: str) -> pa.Table:
    """A seed run's table with this run's keys, its times scaled."""
    keys = {"run_uid": run["uid"], "run_id": f"{run['started']:%Y%m%dT%H%M%SZ}-{run['app']}",
            "started_at": run["started"], "app": run["app"], "target": f"{run['kind'].split()[2].lower()}-01",
            "board_kind": run["kind"], "jetpack": run["jetpack"], "git_commit": run["commit"], "git_branch": "main",
            "study": None, "cell": "", "valid": run["valid"], "flags": "" if run["valid"] else "clocks_dropped"}
    for field, value in keys.items():
        index = table.schema.get_field_index(field)
        table = table.set_column(index, field, pa.array([value] * table.num_rows, type=table.schema.field(field).type))
    if name == "frames":
        index = table.schema.get_field_index("ns")
        table = table.set_column(index, "ns", pc.cast(pc.multiply(table["ns"], run["scale"]), pa.int64(),
                                                      safe=False))
    return table


def write_warehouse(root: Path, planned: list[dict], tables: list[dict[str, pa.Table]]) -> Warehouse:
    """The runs' rows as compact leaves them: a file per table, board kind and month."""
    warehouse = open_warehouse(root)
    groups: dict[tuple[str, str], list[int]] = {}
    for index, run in enumerate(planned):
        groups.setdefault((run["kind"], f"{run['started']:%Y-%m}"), []).append(index)
    for name in TABLES:
        for (kind, _), members in groups.items():
            folder = warehouse.partition(name, kind, planned[members[0]]["started"])
            writer, batch = None, []
            for i in members:
                part = keyed(tables[planned[i]["seed"] % len(tables)][name], planned[i], name)
                if part.num_rows:
                    batch.append(part)
                if sum(b.num_rows for b in batch) >= ROW_GROUP or (i == members[-1] and batch):
                    if writer is None:
                        folder.mkdir(parents=True, exist_ok=True)
                        writer = pq.ParquetWriter(folder / "part-bench.parquet", SCHEMAS[name],
                                                  compression=COMPRESSION)
                    writer.write_table(pa.concat_tables(batch))
                    batch = []
            if writer is not None:
                writer.close()
    for run in planned:
        mark = warehouse.stored_mark(run["uid"])
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    return warehouse


def fill_database(url: str, planned: list[dict], figures: list[dict]) -> None:
    database = open_database(url)
    try:
        job_ids: dict[tuple, int] = {}
        with database.engine.begin() as connection:
            for run in planned:
                if run["job"] not in job_ids:
                    job_ids[run["job"]] = connection.execute(insert(jobs).values(
                        uid=uuid.uuid4().hex, started_at=run["started"], git_commit=run["commit"], git_branch="main",
                        base="main", target="bench", subject=run["app"], outcome="pass").returning(jobs.c.id)
                    ).scalar_one()
            rows = [{"uid": run["uid"], "run_id": f"{run['started']:%Y%m%dT%H%M%SZ}-{run['app']}",
                     "started_at": run["started"], "recorded_at": run["started"], "target": "bench",
                     "board_kind": run["kind"], "kind_fingerprint": "k", "software_fingerprint": "s", "app": run["app"],
                     "study": None, "cell": "", "variables": "{}", "git_commit": run["commit"], "git_branch": "main",
                     "job_id": job_ids[run["job"]], "status": "ok", "valid": run["valid"], "flags": "[]",
                     "folder": None} for run in planned]
            ids = connection.execute(insert(runs).returning(runs.c.id, sort_by_parameter_order=True), rows).scalars()
            values = []
            for run_id, run in zip(ids, planned):
                for name, (value, unit, better) in figures[run["seed"] % len(figures)].items():
                    scaled = value * run["scale"] if name.endswith(TIME_METRICS) else value
                    values.append({"run_id": run_id, "name": name, "value": scaled, "unit": unit, "better": better})
            connection.execute(insert(metrics), values)
    finally:
        database.close()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(work: Callable[[], T]) -> tuple[float, T]:
    began = time.perf_counter()
    found = work()
    return time.perf_counter() - began, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="make everything in this folder and leave it there")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="warehouse-bench-"))
    try:
        now = datetime(2026, 12, 1, tzinfo=timezone.utc)
        found = seeds()
        tables, figures = [t for t, _ in found], [f for _, f in found]
        planned = plan(args.runs, now)
        seconds, warehouse = timed(lambda: write_warehouse(folder / "warehouse", planned, tables))
        frames = run_query(warehouse, "SELECT count(*) FROM frames").rows[0][0]
        print(f"{len(planned)} runs from {len(found)} real ones, {frames:,} frames: warehouse written in "
              f"{seconds:.1f} s, {sum(len(warehouse.files(t)) for t in TABLES)} files (peak memory so far "
              f"{peak_mb():.0f} MB)")
        one = folder / "one-file.parquet"
        with pq.ParquetWriter(one, SCHEMAS["frames"], compression=COMPRESSION) as writer:
            for path in warehouse.files("frames"):
                writer.write_table(pq.read_table(path, schema=SCHEMAS["frames"]))
        run_query(warehouse, P99.format(frames="frames"))  # both read once first: the same page cache
        single = P99.format(frames=f"read_parquet('{one}')")
        run_query(warehouse, single)
        partitioned, by_kind = min(timed(lambda: run_query(warehouse, P99.format(frames="frames")))
                                   for _ in range(3))
        whole, by_kind_one = min(timed(lambda: run_query(warehouse, single)) for _ in range(3))
        assert by_kind.rows == by_kind_one.rows
        print(f"p99 steady frame time by board kind: partitioned {partitioned:.2f} s, one file {whole:.2f} s: "
              f"{partitioned / whole:.2f}x (target within 2x, and under 2 s)")
        for kind, p99 in by_kind.rows:
            print(f"  {kind}: {p99:.3f} ms")
        print(f"  (peak memory so far {peak_mb():.0f} MB)")
        url = str(folder / "results.db")
        fill_database(url, planned, figures)
        database = open_database(url, read_only=True)
        try:
            build, built = timed(lambda: build_site(database, SiteRequest(folder / "site", now=now)))
            print(f"site from scratch: {build:.1f} s, {built.drawn} histories")
        finally:
            database.close()
        last = max(planned, key=lambda r: r["started"])
        more = [{**last, "uid": uuid.uuid4().hex, "started": last["started"] + timedelta(minutes=i + 1),
                 "job": (*last["job"][:2], 10_000 + i // 5)} for i in range(10)]  # a CI job's 10 runs, one board
        fill_database(url, more, figures)
        database = open_database(url, read_only=True)
        try:
            update, again = timed(lambda: build_site(database, SiteRequest(folder / "site", now=now)))
        finally:
            database.close()
        print(f"site updated for 10 new runs: {update:.2f} s, {again.drawn} history drawn, "
              f"{again.kept} as they were: {update / build:.3f} of the build (target under 0.1)")
        peak = peak_mb()
        print(f"peak memory: {peak:.0f} MB (target under 1024 MB)")
        ok = partitioned <= 2 * whole and partitioned < 2 and update < build / 10 and peak < 1024
        return 0 if ok else 1
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
