"""The CUDA GPU's work, by what a GPU engineer asks first: kernels by function (the export's short name, as
``nsys stats -r gpukernsum:base`` names them, its launch shapes summed), and how busy the GPU was over the window,
with kernel, copy and set totals per device, context and stream.

A kernel's launch shapes (name with its template arguments, grid, block) stay in the ``cuda_kernels`` section, as
``gpukernsum`` reports them; each of its rows names its function, so the page shows them under their function.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..export.durations import summarize_nested
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


def kernel_tables(trace: Trace) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Kernels by launch shape (name, grid, block: gpukernsum's default rows, each naming its ``function``) and by
    function (gpukernsum:base summed by name, with how many launch ``shapes`` each ran with), each with
    durations.STAT_COLUMNS, from one sort of the kernels' durations. None: no kernels traced."""
    rows = trace.events("CUPTI_ACTIVITY_KIND_KERNEL")
    if rows is None:
        return None
    shapes, functions = summarize_nested({"nameId": rows["nameId"], "grid": rows["grid"], "block": rows["block"]},
                                         "fn", function_names(trace, rows), rows["dur"])
    names = string_values(trace.local_conn(), np.r_[shapes["nameId"].to_numpy(dtype=np.int64),
                                                    functions["fn"].to_numpy(dtype=np.int64)])
    for column in ("grid", "block"):
        x, y, z = unpack_dims(shapes[column].to_numpy(dtype=np.int64))
        shapes[column] = [f"{a} {b} {c}" for a, b, c in zip(x, y, z)]
    shapes.insert(0, "name", [_name(names, n) for n in shapes["nameId"].tolist()])
    shapes["function"] = [_name(names, f) for f in shapes.pop("fn").tolist()]
    functions.insert(0, "name", [_name(names, f) for f in functions.pop("fn").tolist()])
    return shapes.drop(columns=["nameId"]), functions.rename(columns={"groups": "shapes"})


def _name(names: dict[int, str], string_id: int) -> str:
    return names.get(string_id, f"<string {string_id}>")


def gpu_work_tallies(trace: Trace, span: tuple[int, int]) -> dict | None:
    """The CUDA GPU's work over the span: each kind's (kernels, copies, sets) count and time, and the same per
    device, context and stream, the busiest first; its busy time is added by ``with_busy``. None: no CUDA GPU work
    traced."""
    found = {kind: trace.events(table) for kind, table in CUDA_WORK.items()}
    if all(rows is None for rows in found.values()):
        return None
    length = max(span[1] - span[0], 1)
    per_stream: dict[int, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for kind, rows in found.items():
        if rows is None:
            continue
        extent = trace.extent(CUDA_WORK[kind])
        if extent is not None and span[0] <= extent[0] and extent[1] <= span[1]:
            lengths = rows["dur"]  # the span holds every piece whole: nothing to clip
        else:
            lengths = np.clip(rows["start"] + rows["dur"], *span) - np.clip(rows["start"], *span)
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
    return {"span_ns": int(length), **{key: totals.get(key, 0) for kind in CUDA_WORK for key in (kind, f"{kind}_ns")},
            "streams": _streams(per_stream, length)}


def with_busy(tallies: dict | None, trace: Trace, span: tuple[int, int], busy: int | None = None) -> dict | None:
    """The GPU work section: the tallies of ``gpu_work_tallies`` over the span, and how busy the CUDA GPU was over
    it (kernels, copies and sets, overlaps counted once). ``busy``: that time, when the caller has it already."""
    if tallies is None:
        return None
    if busy is None:
        busy = gpu_busy_ns(trace, span, tuple(CUDA_WORK.values())) or 0
    length = tallies["span_ns"]
    return {"span_ns": length, "busy_ns": int(busy), "busy_pct": busy * 100.0 / length,
            **{key: value for key, value in tallies.items() if key != "span_ns"}}


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
