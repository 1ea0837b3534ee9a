"""Every event of a capture, row by row, as arrays: what the page's whole-run timeline is drawn from.

A row is one thread's events of one kind (OpenGL, OS runtime, NVTX, CUDA API calls; its state from the
scheduling events: on a CPU, or off one and in which OS call; CPU samples as instants) or one GPU lane's (a CUDA
stream's kernels and memory operations, an OpenGL context's GPU work).
The rows hold the same events the report's tables do (OS runtime calls of eventClass 27, NVTX ranges, rows
with an end), read by the same decoder as the analysis, so a row's count is the count SQL gives.
Events are in start order; names are indexes into one list of the names used. An API call and the GPU work it
queued carry their correlation ids (analyzers/flows.py links them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..export.exprs import Coalesce, Col, Compare, Const, Expr, Filter, NotNull
from ..export.names import ID_MASK, PID_SHIFT, PROFILER_THREAD_PREFIX, pid_of, string_values, thread_names, tid_of
from ..export.reads import OSRT_CALL_CLASS, Read
from ..export.sampling import load_samples, stack_tree
from ..export.scheduling import on_cpu_intervals
from ..export.trace import Trace
from .api_summaries import MEMCPY_KINDS, memop_name
from .frames import NVTX_RANGE_TYPES

if TYPE_CHECKING:  # pyelftools loads only when --symbols is given
    from ...symbols import Resolver

# kind -> its thread table (the GPU's are below)
THREAD_TABLES = {"opengl": "OPENGL_API", "osrt": "OSRT_API", "cuda_api": "CUPTI_ACTIVITY_KIND_RUNTIME"}
GPU_TABLES = {"cuda_kernel": "CUPTI_ACTIVITY_KIND_KERNEL", "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
              "memset": "CUPTI_ACTIVITY_KIND_MEMSET", "opengl_gpu": "OPENGL_WORKLOAD"}
ROW_KINDS = ("nvtx", "opengl", "cuda_api", "osrt", "state", "sample", "cuda_kernel", "memcpy", "opengl_gpu")
LANE_SHIFT = 32  # a GPU lane's key: device << 32 | stream (or context)
MEMORY_IDS = 1 << 20  # memory operations' names: -MEMORY_IDS - copyKind, memsets -MEMORY_IDS + 1
NO_STACK = -(1 << 22)  # a sample without a leaf function
SAMPLE_NAMES = -(1 << 23)  # the samples' leaf functions: SAMPLE_NAMES - their code in frame_names' list
NO_ID = -1  # an event without a correlation id
STATE_NAMES = -(1 << 24)  # a thread's states: on a CPU, off one (reason not recorded), off one in an OS call below
ON_CPU, OFF_CPU = "on a CPU", "off a CPU (reason not recorded)"
NO_STACK_NAME = "[no stack]"  # a sample's name when nsys kept no call stack for it
EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class EventRow:
    group: str          # the thread ("es2gears_x11 (4242)") or GPU lane ("GPU 0 stream 7") it belongs to
    kind: str           # one of ROW_KINDS
    starts: np.ndarray  # int64 ns on the report's clock, ascending
    ends: np.ndarray    # int64 ns (a sample's end is its start)
    names: np.ndarray   # int32 indexes into RunEvents.names
    # correlation: an API call's id, or the first and last ids of the API calls whose work a GPU event is (a CUDA
    # kernel's are one id; an OpenGL workload's span the calls from its first to its last); NO_ID where none;
    # the process each id belongs to. Empty arrays for rows of other kinds.
    correlation: np.ndarray = field(default_factory=lambda: EMPTY)
    correlation_last: np.ndarray = field(default_factory=lambda: EMPTY)
    pids: np.ndarray = field(default_factory=lambda: EMPTY)
    stacks: np.ndarray = field(default_factory=lambda: EMPTY)  # a CPU sample's call stack: a node of StackNodes
    key: int = -1       # the thread's globalTid, or the GPU lane's device << LANE_SHIFT | stream (or context)


@dataclass(frozen=True)
class StackNodes:
    """The CPU samples' call stacks, each stored once, as a tree from the outermost frames: node k is a frame
    (``frames[k]``, an index into RunEvents.names) called from node ``parents[k]`` (-1: outermost); a sample's
    stack is its node, then its node's parent, and so on (leaf first)."""
    parents: np.ndarray  # int64
    frames: np.ndarray   # int64

    def stack(self, node: int) -> list[int]:
        """The frames of a node's stack, leaf first."""
        found = []
        while node >= 0:
            found.append(int(self.frames[node]))
            node = int(self.parents[node])
        return found


NO_STACKS = StackNodes(EMPTY, EMPTY)


@dataclass(frozen=True)
class _Raw:
    """One table's events before they are cut into rows."""
    kind: str
    gpu: bool
    starts: np.ndarray
    ends: np.ndarray
    keys: np.ndarray      # the thread or GPU lane
    names: np.ndarray     # name ids
    correlation: np.ndarray = field(default_factory=lambda: EMPTY)
    correlation_last: np.ndarray = field(default_factory=lambda: EMPTY)
    pids: np.ndarray = field(default_factory=lambda: EMPTY)
    stacks: np.ndarray = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class RunEvents:
    rows: list[EventRow]
    names: list[str]
    stacks: StackNodes = NO_STACKS

    @property
    def count(self) -> int:
        return sum(len(row.starts) for row in self.rows)


def run_events(trace: Trace, resolver: Resolver | None = None, renderer: str | None = None) -> RunEvents:
    """Every row of the capture, threads first (in order of their first event), then the GPU's lanes; samples'
    frames named with ``resolver`` where nsys left addresses (--symbols); ``renderer``: the software renderer
    whose work the OpenGL GPU lanes are, on the CPU (they are named for it), None for a GPU."""
    conn, schema = trace.conn, trace.schema
    threads = thread_names(conn, schema)
    raw: list[_Raw] = []
    texts: dict[int, str] = {}  # name id -> text, for ids that are not StringIds (NVTX texts, memory operations)
    for kind, table in THREAD_TABLES.items():
        linked = kind != "osrt" and trace.has(table, "correlationId")
        correlation = {"correlation": Coalesce(Col("correlationId"), NO_ID)} if linked else {}
        columns = _read(trace, kind, table, {"tid": Col("globalTid"), "name": Col("nameId"), **correlation},
                        (NotNull(Col("globalTid")), NotNull(Col("nameId"))))
        if columns is not None:
            tids = columns["tid"]
            raw.append(_Raw(kind, False, columns["start"], columns["end"], tids, columns["name"],
                            *((columns["correlation"], columns["correlation"], _pids(tids)) if linked else ())))
    nvtx = _nvtx(trace, texts)
    if nvtx is not None:
        raw.append(nvtx)
    samples, stacks = _samples(trace, texts, resolver)
    if samples is not None:
        raw.append(samples)
    shown = np.unique(np.concatenate([part.keys for part in raw])) if raw else EMPTY
    states = _states(trace, texts, next((part for part in raw if part.kind == "osrt"), None), shown)
    if states is not None:
        raw.append(states)
    raw += _gpu(trace, texts)
    ids = np.unique(np.concatenate([stacks.frames, *(r.names for r in raw)]))
    strings = string_values(conn, [i for i in ids.tolist() if i not in texts and i >= 0])
    texts_of_ids = [texts.get(i) or strings.get(i) or "[unnamed]" for i in ids.tolist()]
    names = list(dict.fromkeys(texts_of_ids))  # one entry per text: a workload and its call share one name
    place = {name: k for k, name in enumerate(names)}
    name_of_id = np.array([place[text] for text in texts_of_ids], dtype=np.int32)
    rows = []
    for part in raw:
        index = name_of_id[np.searchsorted(ids, part.names)] if len(ids) else np.empty(0, dtype=np.int32)
        starts, ends, keys = part.starts, part.ends, part.keys
        for key in np.unique(keys).tolist():
            group = _lane(key, part.kind, renderer) if part.gpu else _thread(key, threads)
            if group.startswith(PROFILER_THREAD_PREFIX):
                continue
            mine = np.flatnonzero(keys == key)
            order = mine[np.lexsort((-ends[mine], starts[mine]))]  # of equal starts the longest first: the parent
            links: dict[str, np.ndarray] = {} if not len(part.correlation) else {
                "correlation": part.correlation[order], "correlation_last": part.correlation_last[order],
                "pids": part.pids[order]}
            rows.append(EventRow(group, part.kind, starts[order], ends[order], index[order], **links,
                                 stacks=part.stacks[order] if len(part.stacks) else EMPTY, key=key))
    frames = name_of_id[np.searchsorted(ids, stacks.frames)] if len(stacks.frames) else EMPTY
    return RunEvents(_ordered(rows), names, StackNodes(stacks.parents, frames.astype(np.int64)))


def _read(trace: Trace, kind: str, table: str, exprs: dict[str, Expr],
          where: tuple[Filter, ...]) -> dict[str, np.ndarray] | None:
    needed = {c for e in exprs.values() for c in e.columns()} | {c for f in where for c in f.columns()}
    if not trace.has(table, "start", "end", *sorted(needed)):
        return None
    where = (NotNull(Col("end")), *where)
    if table == "OSRT_API" and trace.has(table, "eventClass"):
        where += (Compare(Col("eventClass"), "=", OSRT_CALL_CLASS),)
    return trace.get(Read(("run-events", kind), table, {"start": Col("start"), "end": Col("end"), **exprs}, where))


def _nvtx(trace: Trace, texts: dict[int, str]) -> _Raw | None:
    """NVTX ranges (push/pop and start/end): a text inline or a StringIds id; inline texts get ids of their own
    below zero."""
    if not trace.has("NVTX_EVENTS", "start", "end", "globalTid", "eventType"):
        return None
    text = "text" if trace.has("NVTX_EVENTS", "text") else "NULL"
    text_id = "textId" if trace.has("NVTX_EVENTS", "textId") else "NULL"
    rows = trace.conn.execute(
        f'SELECT start, "end", globalTid, {text_id}, {text} FROM NVTX_EVENTS WHERE "end" IS NOT NULL AND '
        f'globalTid IS NOT NULL AND eventType IN ({",".join(map(str, NVTX_RANGE_TYPES))})').fetchall()
    if not rows:
        return None
    inline: dict[str, int] = {}
    name_ids = []
    known = string_values(trace.conn, [r[3] for r in rows if r[3] is not None])
    for *_, tid, value in rows:
        if tid is not None and (int(tid) in known or value is None):
            name_ids.append(int(tid))
        else:  # the text itself (also where a textId is not in StringIds, as the analysis falls back to it)
            key = inline.setdefault(value or "", -1 - len(inline))
            texts[key] = value or "[unnamed range]"
            name_ids.append(key)
    starts, ends, gtids = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    return _Raw("nvtx", False, starts, ends, gtids, np.array(name_ids, dtype=np.int64))


def _states(trace: Trace, texts: dict[int, str], osrt: _Raw | None, shown: np.ndarray) -> _Raw | None:
    """The state of each thread ``shown`` (those with calls, ranges or samples) from its scheduling events: on a CPU
    from a sched-in to its sched-out, off one between them, named by the OS call it was off a CPU in (nsys 2022.4
    records that a thread left a CPU, not why)."""
    events = trace.events("SCHED_EVENTS")
    if events is None or not len(events["start"]):
        return None
    on = on_cpu_intervals(trace, (int(events["start"].min()), int(events["start"].max())), None)
    if on is None or not len(on):
        return None
    on = on[on["globalTid"].isin(shown)].sort_values(["globalTid", "start"], kind="stable")
    if not len(on):
        return None
    tids, starts, ends = (on[c].to_numpy() for c in ("globalTid", "start", "end"))
    same = tids[1:] == tids[:-1]
    off_starts, off_ends, off_tids = ends[:-1][same], starts[1:][same], tids[1:][same]
    gap = off_ends > off_starts
    off_starts, off_ends, off_tids = off_starts[gap], off_ends[gap], off_tids[gap]
    off_names = np.full(len(off_starts), STATE_NAMES - 1, dtype=np.int64)
    texts[STATE_NAMES], texts[STATE_NAMES - 1] = ON_CPU, OFF_CPU
    if osrt is not None and len(osrt.starts):
        found = np.full(len(off_starts), -1, dtype=np.int64)
        order = np.lexsort((osrt.starts, osrt.keys))  # by thread, then start: each thread's calls one slice
        keys, call_starts, call_ends, call_names = (a[order] for a in (osrt.keys, osrt.starts, osrt.ends, osrt.names))
        for tid in np.unique(off_tids).tolist():
            lo, hi = np.searchsorted(keys, tid, side="left"), np.searchsorted(keys, tid, side="right")
            if lo == hi:
                continue
            mine = np.flatnonzero(off_tids == tid)
            at = lo + np.searchsorted(call_starts[lo:hi], off_starts[mine], side="right") - 1
            inside = (at >= lo) & (off_starts[mine] < call_ends[np.maximum(at, lo)])
            found[mine[inside]] = call_names[at[inside]]
        ids = np.unique(found[found >= 0])
        words = string_values(trace.conn, ids.tolist())
        for k, name_id in enumerate(ids.tolist()):
            texts[STATE_NAMES - 2 - k] = f"off a CPU in {words.get(name_id, '[unnamed]')}"
        named = found >= 0
        off_names[named] = STATE_NAMES - 2 - np.searchsorted(ids, found[named])
    return _Raw("state", False, np.r_[starts, off_starts], np.r_[ends, off_ends], np.r_[tids, off_tids],
                np.r_[np.full(len(starts), STATE_NAMES, dtype=np.int64), off_names])


def _samples(trace: Trace, texts: dict[int, str], resolver: Resolver | None) -> tuple[_Raw | None, StackNodes]:
    """CPU samples as instants on their thread, named by the function the sample was in (its stack's leaf, as the
    hotspots name it: an unresolved address grouped under its module's name, or resolved from --symbols), each
    with its call stack: a node of the stacks' tree, whose frames' names are ids in ``texts``."""
    events = trace.events("COMPOSITE_EVENTS")
    if events is None:
        return None, NO_STACKS
    texts[NO_STACK] = NO_STACK_NAME
    samples = load_samples(trace, (int(events["start"].min()), int(events["start"].max())), None, None,
                           resolver) if len(events["start"]) else None
    if samples is None or not len(samples.chain_ids):
        names = np.full(len(events["id"]), NO_STACK, dtype=np.int64)
        return _Raw("sample", False, events["start"], events["start"], events["tid"], names), NO_STACKS
    node, parents, symbols = stack_tree(samples)
    texts.update({SAMPLE_NAMES - code: name for code, name in enumerate(samples.names)})
    frames = SAMPLE_NAMES - symbols
    if (node < 0).any():  # samples without a stack: one node of their own
        node = np.where(node < 0, len(parents), node)
        parents, frames = np.r_[parents, -1], np.r_[frames, NO_STACK]
    raw = _Raw("sample", False, samples.starts, samples.starts, samples.tids, frames[node], stacks=node)
    return raw, StackNodes(parents, frames)


def _gpu(trace: Trace, texts: dict[int, str]) -> list[_Raw]:
    """The GPU's lanes: kernels, memory operations (copies and sets in one row per stream) and OpenGL work, named
    as the analysis names them, rows without a name or of a copy kind nsys leaves out skipped as it skips them;
    each event with the correlation ids of the calls that queued it."""
    found = []
    memory: list[_Raw] = []
    for kind, table in GPU_TABLES.items():
        device = _optional(trace, table, "gpu" if kind == "opengl_gpu" else "deviceId")
        lane = _optional(trace, table, "contextId" if kind == "opengl_gpu" else "streamId")
        where: tuple[Filter, ...] = ()
        if kind == "memcpy":
            name: Expr = Col("copyKind")
            where = (NotNull(name), Compare(name, ">", -1), Compare(name, "<", max(MEMCPY_KINDS) + 1))
        elif kind == "memset":
            name = Const(0)
        else:
            column = "nameId" if kind == "opengl_gpu" else next(
                (c for c in ("shortName", "demangledName") if trace.has(table, c)), "shortName")
            name = Col(column)
            where = (NotNull(name),)
        owner_column = "globalTid" if kind == "opengl_gpu" else "globalPid"
        owner = _optional(trace, table, owner_column)
        # an id means something within its process only: without the process, no links
        first = _optional(trace, table, "correlationId", NO_ID) if trace.has(table, owner_column) else Const(NO_ID)
        last = _optional(trace, table, "endCorrelationId", NO_ID) if kind == "opengl_gpu" else first
        columns = _read(trace, kind, table, {"device": device, "lane": lane, "name": name, "first": first,
                                             "last": last, "owner": owner}, where)
        if columns is None or not len(columns["start"]):
            continue
        names = columns["name"]
        if kind in ("memcpy", "memset"):  # not StringIds: ids of their own below zero
            names = -MEMORY_IDS - names if kind == "memcpy" else np.full(len(names), -MEMORY_IDS + 1)
            texts.update({int(i): memop_name(int(-MEMORY_IDS - i)) if kind == "memcpy" else "[CUDA memset]"
                          for i in np.unique(names).tolist()})
        keys = (columns["device"] << LANE_SHIFT) | columns["lane"]
        last_ids = np.where(columns["last"] == NO_ID, columns["first"], columns["last"])
        part = _Raw(kind, True, columns["start"], columns["end"], keys, names, columns["first"], last_ids,
                    _pids(columns["owner"]))
        if kind in ("memcpy", "memset"):
            memory.append(part)
        else:
            found.append(part)
    if memory:
        merged = [np.concatenate([getattr(part, name) for part in memory])
                  for name in ("starts", "ends", "keys", "names", "correlation", "correlation_last", "pids")]
        found.append(_Raw("memcpy", True, *merged))
    return found


def _pids(global_ids: np.ndarray) -> np.ndarray:
    """The process of each global thread (or process) id."""
    return (np.asarray(global_ids, dtype=np.int64) >> PID_SHIFT) & ID_MASK


def _optional(trace: Trace, table: str, column: str, default: int = 0) -> Expr:
    return Coalesce(Col(column), default) if trace.has(table, column) else Const(default)


def _thread(gtid: int, threads: dict[int, str]) -> str:
    name = threads.get(int(gtid), "")
    return f"{name} ({tid_of(gtid)})" if name else f"thread {tid_of(gtid)} of {pid_of(gtid)}"


def _lane(key: int, kind: str, renderer: str | None) -> str:
    device, lane = key >> LANE_SHIFT, key & ((1 << LANE_SHIFT) - 1)
    if kind != "opengl_gpu":
        return f"GPU {device} stream {lane}"
    return f"{renderer} (on the CPU) OpenGL context {lane}" if renderer else f"GPU {device} OpenGL context {lane}"


def _ordered(rows: list[EventRow]) -> list[EventRow]:
    """Threads in order of their first event, each thread's rows in ROW_KINDS order; GPU lanes after them."""
    first: dict[str, int] = {}
    for row in rows:
        if len(row.starts):
            first[row.group] = min(first.get(row.group, int(row.starts[0])), int(row.starts[0]))
    gpu = {row.group for row in rows if row.kind in GPU_TABLES}
    return sorted(rows, key=lambda r: (r.group in gpu, first.get(r.group, 0), r.group, ROW_KINDS.index(r.kind)))
