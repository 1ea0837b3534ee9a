"""One export, opened once: the connection, its schema, and event columns read at most once per table.

Every analyzer that needs the rows of a big table (summaries, verdict evidence, GPU time, scheduling,
sampling) shares one read of it. Reads start early and run in pieces on worker threads: runs of the
table's leaf pages decoded straight from the file (btree.py), or, where that reader declines, rowid
ranges that SQLite serialises, each thread with its own read-only connection. Both release the GIL, so
they use several cores while the main thread works on what is already there.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from .btree import BtreeFile, Refused, TableLayout
from .bulk import EXTENT, concat_columns, int_columns_between, rowid_bounds, rowid_chunks
from .calls import plain_name
from .exprs import Coalesce, Col, Compare, Expr, Filter, In, NotNull, Raw
from .reads import OSRT_CALL_CLASS, Columns, Read, evaluate, span_exprs, table_plan
from .schema import Schema, connect

# Tables read in parallel from the start: the CPU-use tables first (the focus thread depends on them), then
# the big API tables of the whole-capture summaries.
EARLY_TABLES = ("SCHED_EVENTS", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS")
BIG_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "OPENGL_API",
              "OPENGL_WORKLOAD", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
# Tables whose decoded arrays stay for the focus thread's calls after the table's own read
CALL_TABLES = ("OSRT_API", "OPENGL_API", "CUPTI_ACTIVITY_KIND_RUNTIME")
PIECE_ROWS = 200_000  # small enough to spread a big table over the cores, big enough to amortise a query


class TableDecode:
    """A table's columns decoded from the file in pieces on the workers. The arrays are made when the first
    piece starts and the table's own read is evaluated by the worker that finishes the last one; the arrays
    then go (their memory serves the next table) unless the focus thread's calls will be read from them."""

    def __init__(self, reader: BtreeFile, layout: TableLayout, columns: frozenset[str], read: Read,
                 keep: bool) -> None:
        self.reader, self.layout, self.columns, self.read, self.keep = reader, layout, columns, read, keep
        self.futures: list[Future] = []
        self._lock = threading.Lock()
        self._raw: Raw | None = None
        self._left = -1  # pieces still to decode, once started
        self._table_columns: Columns | None = None

    def start(self, pool: ThreadPoolExecutor) -> None:
        pieces = self.layout.pieces(PIECE_ROWS)
        self._left = len(pieces)
        self.futures = [pool.submit(self._decode, piece) for piece in pieces]

    def _arrays(self) -> Raw:
        with self._lock:
            if self._raw is None:
                self._raw = self.reader.allocate(self.layout, self.columns)
            return self._raw

    def _decode(self, piece: tuple[int, int, int]) -> None:
        raw = self._arrays()
        self.reader.decode(self.layout, raw, piece)  # Refused if the piece holds what it does not decode
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            self._table_columns = evaluate(self.read, raw)
            if not self.keep:
                with self._lock:
                    self._raw = None

    def columns_of(self, read: Read) -> Columns:
        """A read's columns, once every piece is decoded."""
        for future in self.futures:
            future.result()
        if read.key == self.read.key and self._table_columns is not None:
            return self._table_columns
        if not self.futures:  # a table without rows
            return evaluate(read, self._arrays())
        with self._lock:
            raw = self._raw
        if raw is None:  # let go after the table's own read: SQLite reads this one
            raise Refused(f"{self.layout.name}: its decoded arrays are gone")
        return evaluate(read, raw)


@dataclass(frozen=True)
class Pieces:
    """A read as jobs for the workers, and how their results become the read's columns."""
    jobs: list[Callable[[], Columns]]
    finish: Callable[[list], Columns]


class Trace:
    def __init__(self, conn: sqlite3.Connection, schema: Schema, path: Path | None = None,
                 decode_file: bool = True) -> None:
        """``path``: the export's file, for reads on worker threads; ``decode_file=False`` reads every table
        through SQLite (the reference the tests hold the file reader to)."""
        self.conn, self.schema, self.path = conn, schema, path
        self._cache: dict[Hashable, Columns] = {}
        self._pending: dict[Hashable, tuple[Pieces, list[Future]]] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._owner = threading.current_thread()
        self._name_ids: dict[tuple[str, ...], dict[int, str]] = {}
        self._extents: dict[Hashable, tuple[int, int] | None] = {}
        self._btree = BtreeFile.open(path) if decode_file else None
        self._decodes: dict[str, TableDecode | None] = {}  # None: read through SQLite
        self._pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1) if path is not None else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._btree is not None:
            self._btree.close()
            self._btree = None

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
            self._name_ids[names] = {int(i): plain_name(v) for i, v in rows}
        return self._name_ids[names]

    # -- reads ---------------------------------------------------------------------------------------------

    def events(self, table: str) -> Columns | None:
        """The table's rows that analyzers use, as arrays (see reads.table_plan), or None without such rows."""
        read = self.table_read(table)
        return None if read is None else self.get(read)

    def start_reading(self) -> None:
        """Start reading every table the analysis needs (see EARLY_TABLES, BIG_TABLES)."""
        self.prefetch([self.table_read(t) for t in EARLY_TABLES + BIG_TABLES])

    def table_read(self, table: str) -> Read | None:
        plan = table_plan(self.schema, table)
        if plan is None:
            return None
        exprs, where = plan
        return Read(table, table, exprs, where, span_exprs(self.schema, table))  # the span comes with the read

    def extent(self, table: str) -> tuple[int, int] | None:
        """First start and last end of the table's rows the analysis reads (found by the same read), or None."""
        read = self.table_read(table)
        if read is None:
            return None
        self.get(read, keep_empty=True)
        return self._extents.get(read.key)

    def thread_calls_read(self, table: str, global_tid: int, window: tuple[int, int],
                          names: tuple[str, ...] | None = None) -> Read | None:
        """The thread's outermost calls overlapping the window, of the given names or all: nameId, start, end, the
        OS runtime calls' callchainId (0 without a stack), the CUDA calls' correlationId."""
        return self._calls_read(table, (Compare(Col("globalTid"), "=", global_tid),), window, names,
                                ("calls", table, global_tid, window, names), with_chain=True)

    def named_calls_read(self, table: str, names: tuple[str, ...], window: tuple[int, int]) -> Read | None:
        """Every thread's outermost calls of the given names overlapping the window: nameId, start, end, tid."""
        return self._calls_read(table, (), window, names, ("named calls", table, names, window), with_tid=True)

    def _calls_read(self, table: str, where: tuple[Filter, ...], window: tuple[int, int],
                    names: tuple[str, ...] | None, key: Hashable, with_chain: bool = False,
                    with_tid: bool = False) -> Read | None:
        if not self.has(table, "start", "end", "nameId", "globalTid"):
            return None
        if names is not None:
            ids = self.name_ids(names)
            if not ids:
                return None
            where = (In(Col("nameId"), tuple(sorted(ids))), *where)
        where += (Compare(Col("end"), ">", window[0]), Compare(Col("start"), "<", window[1]),
                  NotNull(Col("nameId")))
        if self.has(table, "nestingLevel"):
            where += (Compare(Col("nestingLevel"), "=", 0),)
        if table == "OSRT_API" and self.has(table, "eventClass"):
            where += (Compare(Col("eventClass"), "=", OSRT_CALL_CLASS),)
        exprs: dict[str, Expr] = {"nameId": Col("nameId"), "start": Col("start"), "end": Col("end")}
        if with_chain and self.has(table, "callchainId"):
            exprs["chain"] = Coalesce(Col("callchainId"), 0)
        if with_chain and table == "CUPTI_ACTIVITY_KIND_RUNTIME" and self.has(table, "correlationId"):
            exprs["corr"] = Coalesce(Col("correlationId"), 0)
        if with_tid:
            exprs["tid"] = Col("globalTid")
        return Read(key, table, exprs, where)

    def calls_of_thread(self, table: str, global_tid: int, window: tuple[int, int],
                        names: tuple[str, ...] | None = None) -> Columns | None:
        """thread_calls_read's columns, or None when the table cannot have them."""
        read = self.thread_calls_read(table, global_tid, window, names)
        return None if read is None else self.get(read, keep_empty=True)

    def named_calls(self, table: str, names: tuple[str, ...], window: tuple[int, int]) -> Columns | None:
        read = self.named_calls_read(table, names, window)
        return None if read is None else self.get(read, keep_empty=True)

    def prefetch(self, reads: list[Read | None]) -> None:
        """Start the reads in pieces on the worker threads; get() waits for them."""
        if self._pool is None:
            return
        for read in reads:
            if read is None or self._known(read):
                continue
            plan = self._plan_read(read)
            with self._lock:
                if read.key not in self._cache and read.key not in self._pending:
                    self._pending[read.key] = (plan, [self._pool.submit(job) for job in plan.jobs])

    def _known(self, read: Read) -> bool:
        with self._lock:
            return read.key in self._cache or read.key in self._pending

    def _plan_read(self, read: Read) -> Pieces:
        """The read as jobs: evaluated on the table's decoded columns once they are there, else rowid ranges
        through SQLite."""
        decode = self._table_decode(read.table)
        if decode is not None and read.columns() <= decode.columns:
            return Pieces([], lambda _: self._evaluated(read, decode))
        spans = rowid_chunks(self.local_conn(), read.table, PIECE_ROWS)
        return Pieces([partial(self._read_piece, read, span) for span in spans],
                      lambda parts: concat_columns(read.exprs, parts))

    def _table_decode(self, table: str) -> TableDecode | None:
        """The decoding of every column the analysis reads of the table (started once, on the workers)."""
        if self._btree is None or self._pool is None:
            return None
        with self._lock:
            if table in self._decodes:
                return self._decodes[table]
            self._decodes[table] = None
            read = self.table_read(table)
            if read is None:
                return None
            columns = read.columns()
            if table in CALL_TABLES:  # the focus thread's calls come from the same arrays
                calls = self.thread_calls_read(table, 0, (0, 0))
                columns |= calls.columns() if calls is not None else frozenset()
            try:
                layout = self._btree.layout(self.local_conn(), table)
            except Refused:
                return None
            decode = TableDecode(self._btree, layout, columns, read, keep=table in CALL_TABLES)
            decode.start(self._pool)
            self._decodes[table] = decode
            return decode

    def _evaluated(self, read: Read, decode: TableDecode) -> Columns:
        try:
            columns = decode.columns_of(read)
        except Refused:
            with self._lock:
                self._decodes[read.table] = None  # later reads of the table go through SQLite at once
            raise
        if not decode.keep:  # no other read of it follows
            with self._lock:
                self._decodes[read.table] = None
        return columns

    def get(self, read: Read, keep_empty: bool = False) -> Columns | None:
        with self._lock:
            columns = self._cache.get(read.key)
            pending = self._pending.pop(read.key, None)
        if columns is None:
            plan, futures = pending if pending is not None else (self._plan_read(read), None)
            try:
                columns = plan.finish([future.result() for future in futures] if futures is not None
                                      else [job() for job in plan.jobs])
            except Refused:  # a value the file reader does not decode: SQLite reads the whole table
                columns = self._sql_columns(read)
        if EXTENT[0] in columns:
            firsts, lasts = columns.pop(EXTENT[0]), columns.pop(EXTENT[1])
            with self._lock:
                self._extents[read.key] = (int(firsts.min()), int(lasts.max())) if len(firsts) else None
        with self._lock:
            self._cache[read.key] = columns
        return columns if keep_empty or len(next(iter(columns.values()))) else None

    def _read_piece(self, read: Read, span: tuple[int, int]) -> Columns:
        exprs, where, extent = read.sql()
        return int_columns_between(self.local_conn(), read.table, exprs, span, where, extent=extent)

    def _sql_columns(self, read: Read) -> Columns:
        spans = rowid_chunks(self.local_conn(), read.table, PIECE_ROWS)
        return concat_columns(read.exprs, [self._read_piece(read, span) for span in spans])

    def sampled_threads(self, table: str, samples: int = 8, rows: int = 5000) -> np.ndarray:
        """Threads of calls read from a few rowid stretches spread over the table (a cheap, even sample)."""
        if not self.has(table, "globalTid"):
            return np.empty(0, dtype=np.int64)
        lo, hi = rowid_bounds(self.conn, table) or (0, -1)
        step = max(1, (hi - lo + 1) // samples)
        parts = [int_columns_between(self.conn, table, {"tid": "globalTid"}, (start, start + rows - 1),
                                     '"globalTid" IS NOT NULL') for start in range(lo, hi + 1, step)]
        return concat_columns({"tid": ""}, parts)["tid"]
