"""One export, opened once: the connection, its schema, and event columns read at most once per table.

Every analyzer that needs the rows of a big table (summaries, verdict evidence, GPU time, scheduling,
sampling) shares one read of it. Reads start early and run in rowid pieces on worker threads, each with
its own read-only connection: SQLite serialises the columns with the GIL released, so they use several
cores while the main thread works on what is already there.
"""
from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .bulk import EXTENT, concat_columns, int_columns, int_columns_between, rowid_bounds, rowid_chunks
from .schema import Schema, connect

# Tables read in parallel from the start: the CPU-use tables first (the focus thread depends on them), then
# the big API tables of the whole-capture summaries.
EARLY_TABLES = ("SCHED_EVENTS", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS")
BIG_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "OPENGL_API",
              "OPENGL_WORKLOAD", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
OSRT_CALL_CLASS = 27  # other eventClass rows are zero-length "profiling started/finished" markers
PIECE_ROWS = 200_000  # small enough to spread a big table over the cores, big enough to amortise a query
Columns = dict[str, np.ndarray]


@dataclass(frozen=True)
class Read:
    """Integer expressions over a table's rows: what one cached read fetches."""
    key: Hashable
    table: str
    exprs: dict[str, str] = field(hash=False)
    where: str = "1"
    extent: tuple[str, str] | None = None  # start and end expressions: the read also finds the rows' span


class Trace:
    def __init__(self, conn: sqlite3.Connection, schema: Schema, path: Path | None = None) -> None:
        self.conn, self.schema, self.path = conn, schema, path
        self._cache: dict[Hashable, Columns] = {}
        self._pending: dict[Hashable, tuple[Read, list[Future]]] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._owner = threading.current_thread()
        self._name_ids: dict[tuple[str, ...], dict[int, str]] = {}
        self._extents: dict[Hashable, tuple[int, int] | None] = {}
        workers = os.cpu_count() or 1
        self._pool = ThreadPoolExecutor(max_workers=workers) if path is not None and workers > 1 else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def local_conn(self) -> sqlite3.Connection:
        """A connection for the calling thread: one sqlite3 connection is never used by two threads at once."""
        if threading.current_thread() is self._owner or self.path is None:
            return self.conn
        if not hasattr(self._local, "conn"):
            self._local.conn = connect(self.path)
        return self._local.conn

    def has(self, table: str, *columns: str) -> bool:
        return self.schema.has(table, *columns)

    def name_ids(self, names: tuple[str, ...]) -> dict[int, str]:
        """StringIds of the given names, also in their versioned spelling (cudaMemcpy_v3020) -> plain name."""
        if names not in self._name_ids:  # looked up once per list: each lookup scans StringIds for the GLOBs
            marks = ",".join("?" * len(names))
            rows = self.local_conn().execute(f"SELECT id, value FROM StringIds WHERE value IN ({marks}) OR "
                                             + " OR ".join("value GLOB ?" for _ in names),
                                             (*names, *(f"{n}_v[0-9]*" for n in names)))
            self._name_ids[names] = {int(i): re.sub(r"_v\d+$", "", v) for i, v in rows}
        return self._name_ids[names]

    # -- reads ---------------------------------------------------------------------------------------------

    def events(self, table: str) -> Columns | None:
        """The table's rows that analyzers use, as arrays (see _plan), or None without such rows."""
        read = self.table_read(table)
        return None if read is None else self.get(read)

    def start_reading(self) -> None:
        """Start reading every table the analysis needs (see EARLY_TABLES, BIG_TABLES)."""
        self.prefetch([self.table_read(t) for t in EARLY_TABLES + BIG_TABLES])

    def table_read(self, table: str) -> Read | None:
        plan = _plan(self.schema, table)
        if plan is None:
            return None
        exprs, where = plan
        timed = "start" in exprs  # the span follows from the columns read; otherwise the read finds it too
        return Read(table, table, exprs, where, None if timed else span_exprs(self.schema, table))

    def extent(self, table: str) -> tuple[int, int] | None:
        """First start and last end of the table's rows the analysis reads (found by the same read), or None."""
        read = self.table_read(table)
        if read is None:
            return None
        columns = self.get(read, keep_empty=True)
        if read.extent is not None:
            return self._extents.get(read.key)
        assert columns is not None
        starts = columns.get("start")
        if starts is None or not len(starts):  # a table without times (SAMPLING_CALLCHAINS), or without rows
            return None
        ends = starts + columns["dur"] if "dur" in columns else starts
        return int(starts.min()), int(ends.max())

    def thread_calls_read(self, table: str, names: tuple[str, ...], global_tid: int,
                          window: tuple[int, int]) -> Read | None:
        """The thread's outermost calls of the given names overlapping the window: nameId, start, end."""
        ids = self.name_ids(names)
        if not ids or not self.has(table, "start", "end", "nameId", "globalTid"):
            return None
        where = (f'nameId IN ({",".join(map(str, sorted(ids)))}) AND globalTid = {int(global_tid)}'
                 f' AND "end" > {int(window[0])} AND start < {int(window[1])}'
                 + (" AND nestingLevel = 0" if self.has(table, "nestingLevel") else "")
                 + (f" AND eventClass = {OSRT_CALL_CLASS}" if table == "OSRT_API" and self.has(table, "eventClass")
                    else ""))
        return Read(("calls", table, names, global_tid, window), table,
                    {"nameId": "nameId", "start": "start", "end": '"end"'}, where)

    def calls_of_thread(self, table: str, names: tuple[str, ...], global_tid: int,
                        window: tuple[int, int]) -> tuple[Columns, dict[int, str]] | None:
        read = self.thread_calls_read(table, names, global_tid, window)
        if read is None:
            return None
        columns = self.get(read, keep_empty=True)
        assert columns is not None  # keep_empty: always the columns, empty or not
        return columns, self.name_ids(names)

    def prefetch(self, reads: list[Read | None]) -> None:
        """Start the reads in rowid pieces on the worker threads; get() waits for them."""
        if self._pool is None:
            return
        for read in reads:
            with self._lock:
                if read is None or read.key in self._cache or read.key in self._pending:
                    continue
                spans = rowid_chunks(self.conn, read.table, PIECE_ROWS)
                self._pending[read.key] = (read, [self._pool.submit(self._read_piece, read, s) for s in spans])

    def get(self, read: Read, keep_empty: bool = False) -> Columns | None:
        with self._lock:
            columns = self._cache.get(read.key)
            pending = self._pending.pop(read.key, None)
        if columns is None and pending is not None:
            columns = concat_columns(read.exprs, [future.result() for future in pending[1]])
        elif columns is None:
            columns = int_columns(self.local_conn(), read.table, read.exprs, read.where, extent=read.extent)
        if EXTENT[0] in columns:
            firsts, lasts = columns.pop(EXTENT[0]), columns.pop(EXTENT[1])
            with self._lock:
                self._extents[read.key] = (int(firsts.min()), int(lasts.max())) if len(firsts) else None
        with self._lock:
            self._cache[read.key] = columns
        return columns if keep_empty or len(next(iter(columns.values()))) else None

    def _read_piece(self, read: Read, span: tuple[int, int]) -> Columns:
        return int_columns_between(self.local_conn(), read.table, read.exprs, span, read.where, extent=read.extent)

    def sampled_threads(self, table: str, samples: int = 8, rows: int = 5000) -> np.ndarray:
        """Threads of calls read from a few rowid stretches spread over the table (a cheap, even sample)."""
        if not self.has(table, "globalTid"):
            return np.empty(0, dtype=np.int64)
        lo, hi = rowid_bounds(self.conn, table) or (0, -1)
        step = max(1, (hi - lo + 1) // samples)
        parts = [int_columns_between(self.conn, table, {"tid": "globalTid"}, (start, start + rows - 1),
                                     "globalTid IS NOT NULL") for start in range(lo, hi + 1, step)]
        return concat_columns({"tid": ""}, parts)["tid"]


def _plan(schema: Schema, table: str) -> tuple[dict[str, str], str] | None:
    """Which expressions to read from a table, and which rows."""
    if table == "SCHED_EVENTS":
        if not schema.has(table, "start", "cpu", "isSchedIn", "globalTid"):
            return None
        return {"tid": "globalTid", "start": "start", "cpu": "cpu", "in": "isSchedIn"}, "globalTid IS NOT NULL"
    if table == "COMPOSITE_EVENTS":
        if not schema.has(table, "id", "start", "globalTid"):
            return None
        cpu = "coalesce(cpu, -1)" if schema.has(table, "cpu") else "-1"
        return {"id": "id", "start": "start", "tid": "globalTid", "cpu": cpu}, "globalTid IS NOT NULL"
    if table == "SAMPLING_CALLCHAINS":
        if not schema.has(table, "id", "symbol", "stackDepth"):
            return None
        module = "coalesce(module, -1)" if schema.has(table, "module") else "-1"
        return {"id": "id", "symbol": "coalesce(symbol, -1)", "module": module, "depth": "stackDepth"}, "1"
    if not schema.has(table, "start", "end"):
        return None
    base = {"start": "start", "dur": '"end" - start'}
    where = '"end" IS NOT NULL'
    if table in ("OSRT_API", "OPENGL_API", "CUPTI_ACTIVITY_KIND_RUNTIME"):  # CPU-side calls: name and duration
        if not schema.has(table, "nameId"):
            return None
        if table == "OSRT_API" and schema.has(table, "eventClass"):
            where += f" AND eventClass = {OSRT_CALL_CLASS}"
        return {"dur": base["dur"], "nameId": "nameId"}, where + " AND nameId IS NOT NULL"
    if table == "OPENGL_WORKLOAD":  # GPU-side: also when, for the GPU's busy time
        if not schema.has(table, "nameId"):
            return None
        return {**base, "nameId": "nameId"}, where + " AND nameId IS NOT NULL"
    if table == "CUPTI_ACTIVITY_KIND_KERNEL":
        if not schema.has(table, "demangledName"):
            return None

        def dims(prefix: str) -> str:  # x < 2^31, y and z < 2^16: one integer each for grid and block
            parts = [f"coalesce({prefix}{axis}, 0)" if schema.has(table, prefix + axis) else "0" for axis in "XYZ"]
            return f"({parts[0]}) * 4294967296 + ({parts[1]}) * 65536 + ({parts[2]})"  # faster than shifts here
        return {**base, "nameId": "demangledName", "grid": dims("grid"), "block": dims("block")}, \
            where + " AND demangledName IS NOT NULL"
    if table == "CUPTI_ACTIVITY_KIND_MEMCPY":
        if not schema.has(table, "copyKind"):
            return None
        size = "coalesce(bytes, 0)" if schema.has(table, "bytes") else "0"
        return {**base, "kind": "copyKind", "bytes": size}, where + " AND copyKind IS NOT NULL"
    if table == "CUPTI_ACTIVITY_KIND_MEMSET":
        return {**base, "bytes": "coalesce(bytes, 0)" if schema.has(table, "bytes") else "0"}, where
    return None


def span_exprs(schema: Schema, table: str) -> tuple[str, str] | None:
    """SQL for a table's rows' start and end ("end", else start again), or None without times."""
    if not schema.has(table, "start"):
        return None
    return "start", ('"end"' if schema.has(table, "end") else "start")


def unpack_dims(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return packed >> 32, (packed >> 16) & 0xFFFF, packed & 0xFFFF
