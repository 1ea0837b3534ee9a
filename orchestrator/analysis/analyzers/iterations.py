"""Iterations of a CUDA or TensorRT run that has no frames, found by the first of these rules that holds:

  graph launches    a cudaGraphLaunch (or cuGraphLaunch) per iteration: iteration k runs from launch k to
                    launch k+1, on the thread that launches most
  TensorRT          TensorRT's own NVTX ranges (ExecutionContext::enqueue, execute and their V2/V3): one per
                    inference (TensorRT's enqueue calls are not CUDA API calls nsys traces); iteration k runs from
                    range k's start to range k+1's (an enqueue returns before the GPU is done), when they come at a
                    steady period as the synchronising calls must (bursts of enqueues on several streams do not)
  synchronisation   a call that waits for the GPU (cudaStreamSynchronize, cuEventSynchronize, a synchronous copy...)
                    seen at least MIN_CALLS times on one thread at a steady period: the times between them within a
                    factor of STEADY_FACTOR of their median cover at least MIN_COVERAGE of the time from the first
                    to the last (a call made now and then, with long stretches between, does not pace a loop); of
                    several covering within COVERAGE_MARGIN of the most, the fewest calls (the outer loop). A call
                    made twice an iteration at uneven times (an upload and a read-back by one name) may still pass:
                    its iterations are then halves.
                    Iteration k ends when call k returns and starts when call k-1 did (the first when the
                    thread's first CUDA call started)

The NVTX range a user names, or one called "frame", comes before all of these (frames.find_frames). Pure over
the export: each rule returns the thread, the iterations' starts and ends, and its words.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

import numpy as np

from ..export.calls import CUDA_WAIT_CALLS
from ..export.durations import argsort_pairs, group_ids
from ..export.names import pid_sql
from ..export.reads import Read
from ..export.schema import Schema
from ..export.trace import Trace

RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")
TENSORRT_RANGE = re.compile(r"^ExecutionContext::(enqueue|execute)(V\d)?$")
NVTX_RANGE_TYPES = (59, 60, 70, 71)
MIN_CALLS = 20
ITERATION_CALLS = GRAPH_LAUNCHES + CUDA_WAIT_CALLS
WHOLE = (-(2**62), 2**62)  # every call
STEADY_FACTOR = 2.0   # a period within a factor of 2 of the median is a steady one
MIN_COVERAGE = 0.5    # the steady periods cover at least half the time from the first call to the last
COVERAGE_MARGIN = 0.1  # calls covering within this of the best are as steady: the fewest calls, the outer loop, wins
MIN_RANGES = 3


@dataclass(frozen=True)
class Found:
    source: str         # what marks them: cudaGraphLaunch, the TensorRT range's name, the synchronising call
    kind: str           # "cuda" or "nvtx"
    rule: str           # which rule found them, in words
    thread: int
    starts: np.ndarray
    ends: np.ndarray


def cuda_iterations(trace: Trace, pids: list[int] | None) -> Found | None:
    """The iterations by the first rule that holds, or None (the calls the rules look at are read once, in
    parallel with the analysis's other reads: iteration_calls_read)."""
    return graph_launches(trace, pids) or tensorrt_ranges(trace.conn, trace.schema, pids) or \
        steady_synchronisation(trace, pids)


def iteration_calls_read(trace: Trace) -> Read | None:
    """The read of every thread's calls the rules look at (graph launches, synchronising calls), whole capture."""
    return trace.named_calls_read(RUNTIME, ITERATION_CALLS, WHOLE)


def _pid_filter(pids: list[int] | None) -> str:
    return "1" if not pids else f"{pid_sql()} IN ({','.join(str(int(p)) for p in pids)})"


def _calls(trace: Trace, pids: list[int] | None, names: tuple[str, ...]
           ) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
    """The calls of those names (their versioned spellings too): threads, starts, ends and StringIds, with each
    StringId's plain name; None when there are none."""
    if not trace.schema.has(RUNTIME, "start", "end", "nameId", "globalTid"):
        return None
    ids = {i: name for i, name in trace.name_ids(ITERATION_CALLS).items() if name in names}
    request = iteration_calls_read(trace) if ids else None
    read = trace.get(request, keep_empty=True) if request is not None else None
    if read is None or not len(read["start"]):
        return None
    wanted = np.isin(read["nameId"], list(ids))
    calls = {"tid": read["tid"][wanted], "start": read["start"][wanted], "end": read["end"][wanted],
             "name": read["nameId"][wanted]}
    if pids:
        mine = np.isin((calls["tid"] >> 24) & 0xFFFFFF, pids)
        calls = {key: values[mine] for key, values in calls.items()}
    return (calls, ids) if len(calls["start"]) else None


def graph_launches(trace: Trace, pids: list[int] | None) -> Found | None:
    found = _calls(trace, pids, GRAPH_LAUNCHES)
    if found is None:
        return None
    calls, ids = found
    tids, counts = np.unique(calls["tid"], return_counts=True)
    thread = int(tids[np.argmax(counts)])
    starts = np.sort(calls["start"][calls["tid"] == thread])
    if len(starts) < 3:
        return None
    source = ids[int(calls["name"][calls["tid"] == thread][0])]
    return Found(source, "cuda", "a CUDA graph launched per iteration: each runs from one launch to the next",
                 thread, starts[:-1], starts[1:])


def tensorrt_ranges(conn: sqlite3.Connection, schema: Schema, pids: list[int] | None) -> Found | None:
    if not schema.has("NVTX_EVENTS", "start", "end", "eventType", "globalTid"):
        return None
    text = "coalesce(s.value, e.text)" if schema.has("NVTX_EVENTS", "text") else "s.value"
    join = "LEFT JOIN StringIds AS s ON s.id = e.textId" if schema.has("NVTX_EVENTS", "textId") else \
        "LEFT JOIN (SELECT NULL AS id, NULL AS value) AS s ON 0"
    rows = conn.execute(
        f'SELECT e.start, e."end", e.globalTid, {text} FROM NVTX_EVENTS AS e {join} '
        f'WHERE e.eventType IN ({",".join(map(str, NVTX_RANGE_TYPES))}) AND e."end" IS NOT NULL '
        f"AND {_pid_filter(pids).replace('globalTid', 'e.globalTid')} ORDER BY e.start").fetchall()
    mine = [row for row in rows if row[3] and TENSORRT_RANGE.match(row[3])]
    if len(mine) < 3:
        return None
    names, counts = np.unique([row[3] for row in mine], return_counts=True)
    name = str(names[np.argmax(counts)])
    table = np.array([row[:3] for row in mine if row[3] == name], dtype=np.int64)
    tids, per_thread = np.unique(table[:, 2], return_counts=True)
    thread = int(tids[np.argmax(per_thread)])
    starts = np.sort(table[table[:, 2] == thread][:, 0])
    if len(starts) < 3 or steady_coverage(starts, MIN_RANGES) < MIN_COVERAGE:  # bursts of enqueues pace no loop
        return None
    return Found(name, "nvtx", f"TensorRT's NVTX range {name}, one per inference: each iteration runs from one to "
                 "the next", thread, starts[:-1], starts[1:])


def steady_synchronisation(trace: Trace, pids: list[int] | None) -> Found | None:
    found = _calls(trace, pids, CUDA_WAIT_CALLS)
    if found is None:
        return None
    calls, ids = found
    plain = sorted(set(ids.values()))  # a call's versioned spellings are one call
    known = np.array(sorted(ids), dtype=np.int64)
    codes = np.array([plain.index(ids[int(i)]) for i in known])[np.searchsorted(known, calls["name"])]
    groups, pairs = group_ids({"tid": calls["tid"], "name": codes})  # each (thread, call)
    order = argsort_pairs(groups, calls["end"])
    groups, all_ends = groups[order], calls["end"][order]
    bounds = np.r_[np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]), len(groups)]
    candidates = []  # (coverage, calls, thread, name, first, last) of each steady call
    for group, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):
        covered = steady_coverage(all_ends[first:last])
        if covered >= MIN_COVERAGE:
            candidates.append((covered, int(last - first), int(pairs["tid"][group]), plain[pairs["name"][group]],
                               first, last))
    if not candidates:
        return None
    most = max(c[0] for c in candidates)  # of those covering about as much as the best, the outer loop
    _, _, thread, name, first, last = min((c for c in candidates if c[0] >= most - COVERAGE_MARGIN),
                                          key=lambda c: (c[1], -c[0], c[2], c[3]))
    ends = all_ends[first:last]
    earliest = trace.conn.execute(f"SELECT min(start) FROM {RUNTIME} WHERE globalTid = ?", (thread,)).fetchone()[0]
    starts = np.r_[min(int(earliest), int(ends[0])), ends[:-1]].astype(np.int64)
    return Found(name, "cuda", f"{name} at a steady period: each iteration ends when one returns", thread, starts,
                 ends)


def steady_coverage(ends: np.ndarray, least: int = MIN_CALLS) -> float:
    """How much of the time from the first mark to the last the periods near their median (within a factor of
    STEADY_FACTOR) cover: 0 for fewer than ``least`` marks."""
    if len(ends) < least:
        return 0.0
    periods = np.diff(ends)
    median = float(np.median(periods))
    total = float(periods.sum())
    if median <= 0 or total <= 0:
        return 0.0
    near = (periods >= median / STEADY_FACTOR) & (periods <= median * STEADY_FACTOR)
    return float(periods[near].sum()) / total
