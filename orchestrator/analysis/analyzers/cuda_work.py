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
from ..export.names import string_values
from ..export.reads import Columns
from ..export.trace import Trace
from ..intervals.coverage import Coverage
from .evidence import gpu_busy_ns

CUDA_WORK = {"kernels": "CUPTI_ACTIVITY_KIND_KERNEL", "copies": "CUPTI_ACTIVITY_KIND_MEMCPY",
             "sets": "CUPTI_ACTIVITY_KIND_MEMSET"}


def function_names(trace: Trace, rows: Columns) -> np.ndarray:
    """Each kernel's function as a StringId: its short name, else (an export without one) its full name."""
    return np.where(rows["fn"] >= 0, rows["fn"], rows["nameId"]) if "fn" in rows else rows["nameId"]


def kernel_functions(trace: Trace) -> pd.DataFrame | None:
    """Kernels by function, with durations.STAT_COLUMNS and how many launch shapes each ran with."""
    rows = trace.events("CUPTI_ACTIVITY_KIND_KERNEL")
    if rows is None:
        return None
    functions = function_names(trace, rows)
    table = summarize({"fn": functions}, rows["dur"])
    shapes = pd.DataFrame({"fn": functions, "name": rows["nameId"], "grid": rows["grid"], "block": rows["block"]})
    counted = shapes.drop_duplicates().groupby("fn").size()
    table["shapes"] = [int(counted[f]) for f in table["fn"]]
    names = string_values(trace.local_conn(), table["fn"])
    table.insert(0, "name", [names.get(int(f), f"<string {int(f)}>") for f in table["fn"]])
    return table.drop(columns=["fn"])


def kernel_function_of_names(trace: Trace) -> dict[int, str]:
    """Each kernel name's (StringId) function: the ``cuda_kernels`` rows' ``function``."""
    rows = trace.events("CUPTI_ACTIVITY_KIND_KERNEL")
    if rows is None or not len(rows["nameId"]):
        return {}
    pairs = pd.DataFrame({"name": rows["nameId"], "fn": function_names(trace, rows)}).drop_duplicates("name")
    names = string_values(trace.local_conn(), pairs["fn"])
    return {int(n): names.get(int(f), f"<string {int(f)}>") for n, f in zip(pairs["name"], pairs["fn"])}


def gpu_work_section(trace: Trace, span: tuple[int, int]) -> dict | None:
    """How busy the CUDA GPU was over the span (kernels, copies and sets, overlaps counted once), each kind's time
    and count, and the same per device, context and stream, the busiest first. None: no CUDA GPU work traced."""
    found = {kind: trace.events(table) for kind, table in CUDA_WORK.items()}
    if all(rows is None for rows in found.values()):
        return None
    length = max(span[1] - span[0], 1)
    clipped: dict[str, tuple[np.ndarray, np.ndarray, Columns]] = {}
    for kind, rows in found.items():
        if rows is None:
            continue
        starts, ends = np.clip(rows["start"], *span), np.clip(rows["start"] + rows["dur"], *span)
        inside = ends > starts
        clipped[kind] = (starts[inside], ends[inside], {k: v[inside] for k, v in rows.items()})
    totals = {kind: {"count": int(len(parts[0])), "ns": int((parts[1] - parts[0]).sum())}
              for kind, parts in clipped.items()}
    busy = gpu_busy_ns(trace, span, tuple(CUDA_WORK.values())) or 0
    return {"span_ns": int(length), "busy_ns": int(busy), "busy_pct": busy * 100.0 / length,
            **{f"{kind}_ns": totals.get(kind, {}).get("ns", 0) for kind in CUDA_WORK},
            **{f"{kind}": totals.get(kind, {}).get("count", 0) for kind in CUDA_WORK},
            "streams": _streams(clipped, length)}


def _streams(clipped: dict[str, tuple[np.ndarray, np.ndarray, Columns]], length: int) -> list[dict]:
    """Per (device, context, stream): each kind's time and count, and its busy time."""
    parts = []
    for kind, (starts, ends, rows) in clipped.items():
        if len(starts) and "stream" in rows:
            parts.append(pd.DataFrame({"device": rows["device"], "context": rows["ctx"], "stream": rows["stream"],
                                       "kind": kind, "start": starts, "end": ends}))
    if not parts:
        return []
    frame = pd.concat(parts, ignore_index=True)
    found = []
    for (device, context, stream), rows in frame.groupby(["device", "context", "stream"], sort=True):
        row: dict = {"device": int(device), "context": int(context), "stream": int(stream)}
        for kind in CUDA_WORK:
            mine = rows[rows["kind"] == kind]
            row[kind] = int(len(mine))
            row[f"{kind}_ns"] = int((mine["end"] - mine["start"]).sum())
        busy = Coverage(rows["start"].to_numpy(), rows["end"].to_numpy()).total
        row.update(busy_ns=int(busy), busy_pct=busy * 100.0 / length)
        found.append(row)
    return sorted(found, key=lambda r: (-r["busy_ns"], r["device"], r["context"], r["stream"]))
