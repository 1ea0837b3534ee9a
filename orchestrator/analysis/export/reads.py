"""What the analysis reads of an export's event tables, and how a read is evaluated on decoded columns.

A read is integer expressions over a table's rows (exprs.py), with filters and optionally the rows' span;
`table_plan` says, per table, which columns the analyzers use. SQLite evaluates a read's SQL (bulk.py);
`evaluate` gives the same on columns decoded from the file (btree.py).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from .bulk import EXTENT, null_error
from .exprs import FEW_ROWS, Coalesce, Col, Compare, Const, Dims, Expr, Filter, NotNull, Raw, selected, where_sql
from .schema import Schema

OSRT_CALL_CLASS = 27  # other eventClass rows are zero-length "profiling started/finished" markers
Columns = dict[str, np.ndarray]


@dataclass(frozen=True)
class Read:
    """Integer expressions over a table's rows: what one cached read fetches."""
    key: Hashable
    table: str
    exprs: dict[str, Expr] = field(hash=False)
    where: tuple[Filter, ...] = ()
    extent: tuple[Expr, Expr] | None = None  # start and end expressions: the read also finds the rows' span

    def sql(self) -> tuple[dict[str, str], str, tuple[str, str] | None]:
        """The read as SQL: its expressions, its WHERE clause and its extent expressions."""
        extent = None if self.extent is None else (self.extent[0].sql(), self.extent[1].sql())
        return {name: expr.sql() for name, expr in self.exprs.items()}, where_sql(self.where), extent

    def columns(self) -> frozenset[str]:
        """The table columns the read needs."""
        needed = [e.columns() for e in self.exprs.values()] + [f.columns() for f in self.where]
        needed += [e.columns() for e in self.extent or ()]
        return frozenset().union(*needed)


def evaluate(read: Read, raw: Raw) -> Columns:
    """The read on decoded columns, as SQLite would give it: its expressions over the selected rows, the extent."""
    rows = len(next(iter(raw.values()))[0]) if raw else 0
    chosen = selected(read.where, raw, rows)  # the selected rows' indices; None: every row
    if chosen is not None and len(chosen) < rows // FEW_ROWS:  # few rows: the expressions read those only
        needed = read.columns()
        raw = {name: (values[chosen], None if nulls is None else nulls[chosen])
               for name, (values, nulls) in raw.items() if name in needed}
        rows, chosen = len(chosen), None
    columns = {}
    if read.extent is not None:
        for key, expr, pick in zip(EXTENT, read.extent, (np.min, np.max)):
            values, nulls = expr.evaluate(raw, rows)
            present = chosen if nulls is None else np.flatnonzero(~nulls) if chosen is None else \
                chosen[~nulls[chosen]]  # min/max skip NULLs
            found = values if present is None else values[present]
            columns[key] = np.array([pick(found)] if len(found) else [], dtype=np.int64)
    for name, expr in read.exprs.items():
        values, nulls = expr.evaluate(raw, rows)
        if nulls is not None and (missing := int((nulls if chosen is None else nulls[chosen]).sum())):
            raise null_error(read.table, expr.sql(), missing)
        columns[name] = values if chosen is None else values[chosen]
    return columns


def table_plan(schema: Schema, table: str) -> tuple[dict[str, Expr], tuple[Filter, ...]] | None:
    """Which expressions to read from a table, and which rows."""
    def optional(column: str, default: int) -> Expr:
        return Coalesce(Col(column), default) if schema.has(table, column) else Const(default)

    if table == "SCHED_EVENTS":
        if not schema.has(table, "start", "cpu", "isSchedIn", "globalTid"):
            return None
        return ({"tid": Col("globalTid"), "start": Col("start"), "cpu": Col("cpu"), "in": Col("isSchedIn")},
                (NotNull(Col("globalTid")),))
    if table == "COMPOSITE_EVENTS":
        if not schema.has(table, "id", "start", "globalTid"):
            return None
        return ({"id": Col("id"), "start": Col("start"), "tid": Col("globalTid"), "cpu": optional("cpu", -1)},
                (NotNull(Col("globalTid")),))
    if table == "SAMPLING_CALLCHAINS":
        if not schema.has(table, "id", "symbol", "stackDepth"):
            return None
        return ({"id": Col("id"), "symbol": Coalesce(Col("symbol"), -1), "module": optional("module", -1),
                 "depth": Col("stackDepth")}, ())
    if not schema.has(table, "start", "end"):
        return None
    start, dur = Col("start"), Col("end") - Col("start")
    timed: tuple[Filter, ...] = (NotNull(Col("end")),)
    if table in ("OSRT_API", "OPENGL_API", "CUPTI_ACTIVITY_KIND_RUNTIME"):  # CPU-side calls: name and duration
        if not schema.has(table, "nameId"):
            return None
        if table == "OSRT_API" and schema.has(table, "eventClass"):
            timed += (Compare(Col("eventClass"), "=", OSRT_CALL_CLASS),)
        return {"dur": dur, "nameId": Col("nameId")}, timed + (NotNull(Col("nameId")),)
    if table == "OPENGL_WORKLOAD":  # GPU-side: also when, for the GPU's busy time
        if not schema.has(table, "nameId"):
            return None
        return ({"start": start, "dur": dur, "nameId": Col("nameId"), "corr": optional("correlationId", 0)},
                timed + (NotNull(Col("nameId")),))
    if table == "CUPTI_ACTIVITY_KIND_KERNEL":
        if not schema.has(table, "demangledName"):
            return None

        def dims(prefix: str) -> Expr:  # one integer each for grid and block
            x, y, z = (optional(prefix + axis, 0) for axis in "XYZ")
            return Dims(x, y, z)
        return ({"start": start, "dur": dur, "nameId": Col("demangledName"), "grid": dims("grid"),
                 "block": dims("block"), "corr": optional("correlationId", 0), "fn": optional("shortName", -1),
                 **_queue(schema, table, optional)}, timed + (NotNull(Col("demangledName")),))
    if table == "CUPTI_ACTIVITY_KIND_MEMCPY":
        if not schema.has(table, "copyKind"):
            return None
        return ({"start": start, "dur": dur, "kind": Col("copyKind"), "bytes": optional("bytes", 0),
                 "corr": optional("correlationId", 0), "src": optional("srcKind", UNKNOWN_MEMORY),
                 "dst": optional("dstKind", UNKNOWN_MEMORY), **_queue(schema, table, optional)},
                timed + (NotNull(Col("copyKind")),))
    if table == "CUPTI_ACTIVITY_KIND_MEMSET":
        return ({"start": start, "dur": dur, "bytes": optional("bytes", 0), "corr": optional("correlationId", 0),
                 **_queue(schema, table, optional)}, timed)
    return None


UNKNOWN_MEMORY = 7  # ENUM_CUDA_MEM_KIND: 0 pageable, 1 pinned, 2 device, ... 7 unknown


def _queue(schema: Schema, table: str, optional: Callable[[str, int], Expr]) -> dict[str, Expr]:
    """Where a piece of GPU work ran: its stream, context and device in one integer (Dims: the stream below 2^31,
    context and device below 2^16); and its process (globalPid: correlationIds are counted per process) unless the
    export says one process has CUDA streams."""
    found: dict[str, Expr] = {"queue": Dims(optional("streamId", 0), optional("contextId", 0),
                                            optional("deviceId", 0))}
    if schema.cuda_processes != 1 and schema.has(table, "globalPid"):
        found["pid"] = Col("globalPid")
    return found


def span_exprs(schema: Schema, table: str) -> tuple[Expr, Expr] | None:
    """A table's rows' start and end ("end", else start again), or None without times."""
    if not schema.has(table, "start"):
        return None
    return Col("start"), (Col("end") if schema.has(table, "end") else Col("start"))
