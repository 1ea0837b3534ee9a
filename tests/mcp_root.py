"""The root the MCP tests serve: a real es2gears export in a run folder, a real CUDA export (instant-ngp) as a bare
report, run folders an earlier release wrote (a copy with every frame time scaled by 1.2, as test_compare_gate.py
makes it), a study folder, and a results database holding the run after six jobs like it. Also the stdio session
the tests ask it through."""
from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from test_compare_gate import run_copy

from orchestrator.database.connection import open_database
from orchestrator.results.records import Metric, Provenance, run_record
from orchestrator.results.store import add_run, start_job

REPO = Path(__file__).parent.parent
WRITTEN = REPO / "tests" / "data" / "written-before-one-record-type"
RUN = WRITTEN / "20261206T143333Z-local-es2gears"
STUDY = WRITTEN / "20261206T143350Z-posebench-delegate"
T = TypeVar("T")
EXPORTS = {"es2gears": "es2gears/report.sqlite", "instantngp": "instantngp.sqlite"}


def make_root(folder: Path, export: Callable[[str], Path]) -> Path:
    (folder / "es2gears").mkdir()
    shutil.copy(export("es2gears-opengl"), folder / EXPORTS["es2gears"])
    shutil.copy(export("instantngp_rtx3070_2021.export2022_4"), folder / EXPORTS["instantngp"])
    shutil.copytree(RUN, folder / "kept" / "base")
    run_copy(folder / "kept", "slower", 1.2)  # an hour later, every frame time 1.2x
    shutil.copytree(STUDY, folder / "study")
    return folder


def make_results_db(root: Path, path: Path) -> Path:
    """The base run stored in a job of its own on main (commit 1111111...) after six jobs of two runs within a percent
    of it; then a job of commit 2222222... on a branch, two runs 20 % slower."""
    record = run_record(root / "kept" / "base")
    assert record is not None
    main = Provenance("1" * 40, "main")
    database = open_database(str(path))
    try:
        mean = record.metrics["steady_mean_ms"]
        for number in range(6):
            job = start_job(database, f"main-{number}", main, "main", record.target, record.app)
            for run in range(2):
                add_run(database, replace(record, uid=f"j{number}-{run}", run_id=f"j{number}-{run}",
                                          started_at=record.started_at - timedelta(hours=6 - number, minutes=-run),
                                          metrics={"steady_mean_ms": Metric(mean.value * (1 + 0.001 * (number + run)),
                                                                            mean.unit, mean.better)}), main, job)
        add_run(database, record, main, start_job(database, "main-base", main, "main", record.target, record.app))
        feature = Provenance("2" * 40, "feature")
        job = start_job(database, "feature", feature, "main", record.target, record.app)
        for run in range(2):
            add_run(database, replace(record, uid=f"f-{run}", run_id=f"f-{run}",
                                      started_at=record.started_at + timedelta(hours=2, minutes=run),
                                      metrics={"steady_mean_ms": Metric(mean.value * (1.2 + 0.001 * run), mean.unit,
                                                                        mean.better)}), feature, job)
    finally:
        database.close()
    return path


def in_a_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """The coroutine run to its end on an event loop of its own thread: a worker that opened a page in Chromium
    runs Playwright's loop in its main thread, where asyncio.run refuses to start another."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def server_params(root: Path, db: Path | None = None) -> StdioServerParameters:
    args = ["-m", "orchestrator", "mcp", "--root", str(root), *(["--db", str(db)] if db else [])]
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO),
                                 env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def ask(root: Path, calls: list[tuple[str, dict[str, Any]]], db: Path | None = None) -> list[tuple[bool, Any]]:
    """Each call's (is an error, its JSON or its text), from one server session over stdio."""
    async def session() -> list[tuple[bool, Any]]:
        found = []
        async with Client(server_params(root, db), read_timeout_seconds=300) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text
                found.append((bool(result.is_error), text if result.is_error else json.loads(text)))
        return found
    return in_a_thread(session)
