"""GPU time per NVTX range: each range projected through the CUDA calls made inside it to the GPU work they queued,
as ``nsys stats -r nvtxgpuproj`` defines it (the question a TensorRT user asks first: which layer, which stage
costs what on the GPU); and the same through OpenGL calls to their workloads (nsys has no such report for them).

A GPU operation (kernel, copy, set) belongs to a range when the CUDA call that queued it (same process and
correlationId) lies inside the range, on the range's thread; an OpenGL workload, when the call that submitted it
(its endCorrelationId: the swap or flush that ended the calls it holds) does. Only ranges that start and end on one
thread count. A
range's projection runs from its first operation's start to its last one's end. Ranges nest by the tightest range
around them on their thread (push/pop ranges always nest). The summary keeps the projections summed by the path of
names from the outermost range (a tree), the GPU's time first among siblings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..export.exprs import Coalesce, Col, NotNull
from ..export.names import string_values
from ..export.reads import Columns, Read
from ..export.trace import Trace
from .api_summaries import NVTX_DOMAIN_CREATE, NVTX_RANGE_STYLES

GPU_OPERATIONS = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
PID_MASK = ~0xFFFFFF  # a globalTid's process part (a globalPid)


def nvtx_ranges(trace: Trace) -> pd.DataFrame | None:
    """The NVTX ranges that start and end on one thread: rangeId (the row's rowid), start, end (an open range ends
    at the last NVTX timestamp), tid (globalTid), name ("domain:name" in a named domain), style."""
    conn, schema = trace.local_conn(), trace.schema
    if not schema.has("NVTX_EVENTS", "start", "end", "eventType", "globalTid"):
        return None
    styles = ",".join(str(t) for t in NVTX_RANGE_STYLES)
    one_thread = "AND endGlobalTid IS NULL" if schema.has("NVTX_EVENTS", "endGlobalTid") else ""
    text = "text" if schema.has("NVTX_EVENTS", "text") else "NULL AS text"
    text_id = "textId" if schema.has("NVTX_EVENTS", "textId") else "NULL AS textId"
    domain = "domainId" if schema.has("NVTX_EVENTS", "domainId") else "0 AS domainId"
    last = conn.execute('SELECT max(max(start), max(coalesce("end", start))) FROM NVTX_EVENTS').fetchone()[0]
    frame = pd.read_sql_query(
        f'SELECT rowid AS rangeId, start, coalesce("end", :last) AS "end", globalTid AS tid, eventType, {text}, '
        f"{text_id}, {domain} FROM NVTX_EVENTS WHERE eventType IN ({styles}) {one_thread}", conn,
        params={"last": last})
    if frame.empty:
        return None
    texts = string_values(conn, frame["textId"].dropna())
    labels = [texts.get(int(i), t) if not pd.isna(i) else t for i, t in zip(frame["textId"], frame["text"])]
    domains = _domains(trace)
    pids = frame["tid"].to_numpy(dtype=np.int64) & PID_MASK
    frame["name"] = [f"{domains[(int(d), int(p))]}:{label}" if (int(d), int(p)) in domains else label
                     for d, p, label in zip(frame["domainId"], pids, labels)]
    frame["style"] = frame["eventType"].map(NVTX_RANGE_STYLES)
    return frame[["rangeId", "start", "end", "tid", "name", "style"]]


def nested_ranges(trace: Trace) -> pd.DataFrame | None:
    """nvtx_ranges with each one's parent and level (_nesting)."""
    ranges = nvtx_ranges(trace)
    if ranges is None:
        return None
    ranges = ranges.copy()
    ranges["parent"], ranges["level"] = _nesting(ranges)
    return ranges


def _domains(trace: Trace) -> dict[tuple[int, int], str]:
    """Each (domainId, globalPid)'s name, from its first creation row in the process."""
    if not trace.schema.has("NVTX_EVENTS", "domainId", "text"):
        return {}
    rows = trace.local_conn().execute(
        "SELECT domainId, globalTid, text FROM NVTX_EVENTS WHERE eventType = ? AND text IS NOT NULL ORDER BY start",
        (NVTX_DOMAIN_CREATE,))
    found: dict[tuple[int, int], str] = {}
    for domain, tid, text in rows:
        found.setdefault((int(domain), int(tid) & PID_MASK), text)
    return found


def _operations(trace: Trace, tables: tuple[str, ...], corr: str, process: str) -> pd.DataFrame | None:
    """The GPU operations of the tables: start, end, corr (the correlationId of the call that queued each), pid
    (the globalPid of its process)."""
    parts = []
    for table in tables:
        if not trace.has(table, "start", "end", corr, process):
            continue
        read = Read(("projected operations", table), table,
                    {"start": Col("start"), "end": Col("end"), "corr": Col(corr), "pid": Col(process)},
                    (NotNull(Col("end")), NotNull(Col(corr))))
        rows = trace.get(read, keep_empty=True)
        if rows is not None and len(rows["start"]):
            rows = dict(rows)
            rows["pid"] = rows["pid"] & PID_MASK
            parts.append(pd.DataFrame(rows))
    return pd.concat(parts, ignore_index=True) if parts else None


def _calls(trace: Trace, table: str) -> Columns | None:
    """Every call of the table: start, end, tid (globalTid), corr."""
    if not trace.has(table, "start", "end", "globalTid", "correlationId"):
        return None
    read = Read(("projecting calls", table), table, {"start": Col("start"), "end": Col("end"),
                                                     "tid": Col("globalTid"),
                                                     "corr": Coalesce(Col("correlationId"), 0)},
                (NotNull(Col("end")),))
    return trace.get(read, keep_empty=True)


def _queued(trace: Trace) -> pd.DataFrame | None:
    """Each call that queued GPU work (the innermost of a correlationId's calls on a thread: the driver's inside the
    runtime's), with its work's first start and last end: tid, start, end, api, corr, first, last. A CUDA
    operation's call shares its correlationId; an OpenGL workload's is the call that ended it
    (endCorrelationId), the one that submitted it."""
    found = []
    for api, table, operations in (
            ("cuda", RUNTIME, _operations(trace, GPU_OPERATIONS, "correlationId", "globalPid")),
            ("opengl", "OPENGL_API", _operations(trace, ("OPENGL_WORKLOAD",), "endCorrelationId", "globalTid"))):
        calls = _calls(trace, table) if operations is not None else None
        if operations is None or calls is None or not len(calls["start"]):
            continue
        work = operations.groupby(["pid", "corr"]).agg(first=("start", "min"), last=("end", "max")).reset_index()
        made = pd.DataFrame(calls)
        made["pid"] = made["tid"] & PID_MASK
        made = made.merge(work, on=["pid", "corr"], how="inner").assign(api=api)
        found.append(made)
    if not found:
        return None
    made = pd.concat(found, ignore_index=True)
    made = made.assign(length=made["end"] - made["start"]).sort_values("length", kind="stable")
    return made.drop_duplicates(["api", "tid", "corr"]).sort_values(["tid", "start"], kind="stable")


def projections(trace: Trace, ranges: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """One row per NVTX range holding GPU work (nvtxgpuproj's rows): rangeId, name, style, tid, start, end,
    proj_start, proj_end, ops (distinct correlationIds), parent (rangeId, -1 for none), level. None: no NVTX range
    or no GPU work. ``ranges``: nested_ranges' table, when read already."""
    ranges = nested_ranges(trace) if ranges is None else ranges
    if ranges is None:
        return None
    made = _queued(trace)
    if made is None:
        return None
    found = []
    calls_of = dict(tuple(made.groupby("tid", sort=False)))
    for tid, mine in ranges.groupby("tid", sort=False):
        inside = calls_of.get(tid)
        if inside is None or inside.empty:
            continue
        found.append(_projected(mine, inside))
    if not found:
        return None
    table = pd.concat(found, ignore_index=True)
    table = table[table["ops"] > 0]
    return table.sort_values(["proj_start", "proj_end"], ascending=[True, False], kind="stable").reset_index(drop=True)


def _projected(ranges: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Each range's calls (starting inside it and ending by its end: one thread's calls do not overlap, so only the
    last may end past it) and their work's first start, last end, count."""
    starts, ends = calls["start"].to_numpy(), calls["end"].to_numpy()
    firsts, lasts = calls["first"].to_numpy(), calls["last"].to_numpy()
    lows = np.searchsorted(starts, ranges["start"].to_numpy(), side="left")
    highs = np.searchsorted(starts, ranges["end"].to_numpy(), side="right")
    proj_start, proj_end, ops = [], [], []
    for low, high, end in zip(lows, highs, ranges["end"].to_numpy()):
        held = np.flatnonzero(ends[low:high] <= end) + low
        ops.append(len(held))
        proj_start.append(int(firsts[held].min()) if len(held) else 0)
        proj_end.append(int(lasts[held].max()) if len(held) else 0)
    return ranges.assign(proj_start=proj_start, proj_end=proj_end, ops=ops)


def _nesting(ranges: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each range's parent (the tightest range around it on its thread: rangeId, -1 for none) and level. Push/pop
    ranges nest, and a stack finds it; start/end ranges that cross (A 0-10, B 2-30, C 3-9) may get the range
    opened later (B) where nsys takes the tighter one (A)."""
    parent = np.full(len(ranges), -1, dtype=np.int64)
    level = np.zeros(len(ranges), dtype=np.int64)
    starts, ends = ranges["start"].to_numpy(), ranges["end"].to_numpy()
    ids, tids = ranges["rangeId"].to_numpy(), ranges["tid"].to_numpy()
    order = np.lexsort((-ends, starts, tids))  # by thread, then start, the longer first
    stack: list[int] = []
    thread = None
    for i in order:
        if tids[i] != thread:
            stack, thread = [], tids[i]
        while stack and ends[stack[-1]] < ends[i]:
            stack.pop()
        if stack:
            parent[i], level[i] = ids[stack[-1]], level[stack[-1]] + 1
        stack.append(int(i))
    return parent, level


def nvtx_gpu_section(trace: Trace) -> list[dict] | None:
    """The projections summed by the path of range names from the outermost one: a tree, depth-first, the GPU's
    time first among siblings. None: no NVTX range holds GPU work."""
    ranges = nested_ranges(trace)
    table = projections(trace, ranges) if ranges is not None else None
    if ranges is None or table is None or table.empty:
        return None
    names = dict(zip(ranges["rangeId"], ranges["name"]))
    parents = dict(zip(ranges["rangeId"], ranges["parent"]))
    paths = []
    for range_id in table["rangeId"]:
        path, at = [], int(range_id)
        while at != -1:
            path.append(names[at])
            at = int(parents[at])
        paths.append(tuple(reversed(path)))
    table = table.assign(path=paths, gpu=table["proj_end"] - table["proj_start"], cpu=table["end"] - table["start"])
    rows = {}
    for path, group in table.groupby("path", sort=False):
        rows[path] = {"name": path[-1], "path": list(path), "depth": len(path) - 1, "ranges": int(len(group)),
                      "gpu_ops": int(group["ops"].sum()), "gpu_ns": int(group["gpu"].sum()),
                      "gpu_avg_ns": float(group["gpu"].mean()), "gpu_med_ns": float(group["gpu"].median()),
                      "range_ns": int(group["cpu"].sum())}
    return _depth_first(rows)


def _depth_first(rows: dict[tuple[str, ...], dict]) -> list[dict]:
    """The rows as a tree, depth-first; a path whose parent holds no GPU work hangs from the nearest one that does."""
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for path in rows:
        up = path[:-1]
        while up and up not in rows:
            up = up[:-1]
        children.setdefault(up, []).append(path)
    found: list[dict] = []

    def visit(path: tuple[str, ...], depth: int) -> None:
        for child in sorted(children.get(path, []), key=lambda p: -rows[p]["gpu_ns"]):
            found.append({**rows[child], "depth": depth})  # under the nearest row shown above it
            visit(child, depth + 1)
    visit((), 0)
    return found
