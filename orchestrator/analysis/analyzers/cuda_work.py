"""The CUDA GPU's work, by what a GPU engineer asks first: kernels by function (the export's short name, as
``nsys stats -r gpukernsum:base`` names them, its launch shapes summed), and how busy the GPU was over the window,
with kernel, copy and set totals per device, context and stream.

A kernel's launch shapes (name with its template arguments, grid, block) stay in the ``cuda_kernels`` section, as
``gpukernsum`` reports them; each of its rows names its function, so the page shows them under their function.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..export.durations import summarize
from ..export.exprs import unpack_dims
from ..export.names import string_values
from ..export.reads import Columns
from ..export.trace import Trace
from .evidence import gpu_busy_ns

CUDA_WORK = {"kernels": "CUPTI_ACTIVITY_KIND_KERNEL", "copies": "CUPTI_ACTIVITY_KIND_MEMCPY",
             "sets": "CUPTI_ACTIVITY_KIND_MEMSET"}


def function_names(trace: Trace, rows: Columns) -> np.ndarray:
    """Each kernel's function as a StringId: its short name, else (an export without one) its full name."""
    return np.where(rows["fn"] >= 0, rows["fn"], rows["nameId"]) if "fn" in rows else rows["nameId"]


def kernel_functions(trace: Trace) -> pd.DataFrame | None:
    """Kernels by function, with durations.STAT_COLUMNS (how many launch shapes each ran with: with_shapes)."""
    rows = trace.events("CUPTI_ACTIVITY_KIND_KERNEL")
    if rows is None:
        return None
    table = summarize({"fn": function_names(trace, rows)}, rows["dur"])
    names = string_values(trace.local_conn(), table["fn"])
    table.insert(0, "name", [names.get(int(f), f"<string {int(f)}>") for f in table["fn"]])
    return table.drop(columns=["fn"])


def with_shapes(functions: list[dict] | None, shapes: list[dict] | None) -> list[dict] | None:
    """The function rows, each with how many launch shapes (cuda_kernels rows) it ran with."""
    if functions is None:
        return None
    counted: dict[str | None, int] = {}
    for row in shapes or []:
        counted[row.get("function")] = counted.get(row.get("function"), 0) + 1
    return [{**row, "shapes": counted.get(row["name"], 0)} for row in functions]


def kernel_function_of_names(trace: Trace) -> dict[int, str]:
    """Each kernel name's (StringId) function: the ``cuda_kernels`` rows' ``function``."""
    rows = trace.events("CUPTI_ACTIVITY_KIND_KERNEL")
    if rows is None or not len(rows["nameId"]):
        return {}
    codes, uniques = pd.factorize(rows["nameId"])  # hashing: no sort of the big column
    firsts = np.empty(len(uniques), dtype=np.int64)
    firsts[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # each name's first row
    functions = function_names(trace, {key: rows[key][firsts] for key in ("nameId", "fn") if key in rows})
    names = string_values(trace.local_conn(), functions)
    return {int(n): names.get(int(f), f"<string {int(f)}>") for n, f in zip(uniques, functions)}


def gpu_work_section(trace: Trace, span: tuple[int, int], busy: int | None = None) -> dict | None:
    """How busy the CUDA GPU was over the span (kernels, copies and sets, overlaps counted once), each kind's time
    and count, and the same per device, context and stream, the busiest first. None: no CUDA GPU work traced.
    ``busy``: the CUDA work's busy time over the span, when the caller has it already."""
    found = {kind: trace.events(table) for kind, table in CUDA_WORK.items()}
    if all(rows is None for rows in found.values()):
        return None
    length = max(span[1] - span[0], 1)
    per_stream: dict[int, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for kind, rows in found.items():
        if rows is None:
            continue
        starts, ends = np.clip(rows["start"], *span), np.clip(rows["start"] + rows["dur"], *span)
        lengths = ends - starts
        inside = lengths > 0
        every = bool(inside.all())
        lengths = lengths if every else lengths[inside]
        totals[kind], totals[f"{kind}_ns"] = int(len(lengths)), int(lengths.sum())
        if "queue" in rows and len(lengths):
            codes, queues = pd.factorize(rows["queue"] if every else rows["queue"][inside])  # hashing, no sort
            counts, times = np.bincount(codes), np.bincount(codes, weights=lengths)
            for queue, count, ns in zip(queues, counts, times):
                row = per_stream.setdefault(int(queue), {})
                row[kind], row[f"{kind}_ns"] = int(count), int(ns)
    if busy is None:
        busy = gpu_busy_ns(trace, span, tuple(CUDA_WORK.values())) or 0
    return {"span_ns": int(length), "busy_ns": int(busy), "busy_pct": busy * 100.0 / length,
            **{key: totals.get(key, 0) for kind in CUDA_WORK for key in (kind, f"{kind}_ns")},
            "streams": _streams(per_stream, length)}


def _streams(per_stream: dict[int, dict[str, int]], length: int) -> list[dict]:
    """Per (device, context, stream): each kind's count and time, and its busy time (their sum: a stream runs its
    work one piece after another)."""
    found = []
    for queue, figures in per_stream.items():
        stream, context, device = (int(v[0]) for v in unpack_dims(np.array([queue], dtype=np.int64)))
        row: dict = {"device": device, "context": context, "stream": stream}
        for kind in CUDA_WORK:
            row[kind], row[f"{kind}_ns"] = figures.get(kind, 0), figures.get(f"{kind}_ns", 0)
        busy = sum(figures.get(f"{kind}_ns", 0) for kind in CUDA_WORK)
        row.update(busy_ns=int(busy), busy_pct=busy * 100.0 / length)
        found.append(row)
    return sorted(found, key=lambda r: (-r["busy_ns"], r["device"], r["context"], r["stream"]))
