"""A span's statistics per name, over the whole-run timeline's rows: what the page's range selection shows
(templates/timeline_stats.js's rangeStats), computed once in Python for `analyze --window` and the MCP server.

Per (kind, name), the events of the chosen rows that overlap [a, b) as SQL has it (end > a and start < b; a CPU
sample: a <= start < b): count, total, self (less the time of the events directly inside each on its thread), mean,
min and max, whole events' durations (not cut at the span's edges). Heaviest total first, then the most events.
Pure: rows in, figures out.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .run_events import EventRow, RunEvents

NESTING_KINDS = ("nvtx", "opengl", "cuda_api", "osrt")  # rows whose events nest (GPU work overlaps, never nests)
# the kinds asked of by default: calls, ranges, samples and GPU work (a thread's states are the scheduler's
# reading, not events of the export's: the page shows them, the SQL has no table of them)
SPAN_KINDS = ("nvtx", "opengl", "cuda_api", "osrt", "sample", "cuda_kernel", "memcpy", "opengl_gpu")


@dataclass(frozen=True)
class SpanStat:
    kind: str
    name: str
    count: int
    total_ns: int | None     # None for CPU samples: instants, counted only
    self_ns: int | None
    min_ns: int | None
    max_ns: int | None
    keys: tuple[int, ...] = field(default=(), compare=False)   # the rows' keys (threads, GPU lanes) they came from

    @property
    def mean_ns(self) -> float | None:
        return None if self.total_ns is None else self.total_ns / self.count

    def as_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "count": self.count, "total_ns": self.total_ns,
                "self_ns": self.self_ns, "mean_ns": self.mean_ns, "min_ns": self.min_ns, "max_ns": self.max_ns}


def self_times(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each event's time less that of the events directly inside it, clipped to it where they cross its end (starts
    ascending, of equal starts the longest first): an event's parent is the latest event before it still open at its
    start, as the page's script has it."""
    own = (ends - starts).astype(np.int64)
    if len(starts) < 2 or not (starts[1:] < np.maximum.accumulate(ends)[:-1]).any():
        return own  # nothing nests
    stack: list[int] = []
    start_list, end_list = starts.tolist(), ends.tolist()
    for i, start in enumerate(start_list):
        while stack and end_list[stack[-1]] <= start:
            stack.pop()
        if stack:
            parent = stack[-1]
            own[parent] -= min(end_list[i], end_list[parent]) - start
        stack.append(i)
    return own


def thread_self_times(rows: Sequence[EventRow]) -> list[np.ndarray]:
    """The self times of one thread's rows of calls and ranges, each less the events directly inside it on that
    thread whatever row holds them (an OS call inside eglSwapBuffers is on the OS runtime row): the rows merged by
    start, of equal starts the longest first, as the page's script merges them."""
    starts = np.concatenate([row.starts for row in rows])
    ends = np.concatenate([row.ends for row in rows])
    order = np.lexsort((-ends, starts))  # by start, then the longest first; ties after that keep the rows' order
    own = np.empty(len(starts), dtype=np.int64)
    own[order] = self_times(starts[order], ends[order])
    return np.split(own, np.cumsum([len(row.starts) for row in rows])[:-1])


@dataclass
class SelfCache:
    """Each thread's self times, computed once (a server asks of the same rows again and again)."""
    found: dict[int, np.ndarray] = field(default_factory=dict)

    def of(self, events: RunEvents, index: int) -> np.ndarray:
        if index not in self.found:
            group = events.rows[index].group
            mine = [i for i, row in enumerate(events.rows) if row.group == group and row.kind in NESTING_KINDS]
            self.found.update(zip(mine, thread_self_times([events.rows[i] for i in mine])))
        return self.found[index]


def chosen_rows(events: RunEvents, thread: str | None = None, kinds: Iterable[str] | None = None) -> list[int]:
    """The rows (their indexes) of the given kinds on the threads or GPU lanes ``thread`` names: a label as the
    page shows it, whole ("GPU 0 stream 15", "es2gears_x11 (7188)"); a thread id ("7188"); else a part of the labels
    (case-insensitive: "llvmpipe" names every llvmpipe thread)."""
    wanted = set(kinds) if kinds is not None else None
    rows = [i for i, row in enumerate(events.rows) if wanted is None or row.kind in wanted]
    needle = (thread or "").strip().lower()
    if not needle:
        return rows
    labels = {i: events.rows[i].group.lower() for i in rows}
    whole = [i for i in rows if labels[i] == needle]
    if whole:
        return whole
    if needle.isdecimal():  # a thread id: "name (tid)", or "thread tid of pid" when it has no name
        return [i for i in rows if labels[i].endswith(f"({needle})") or labels[i].startswith(f"thread {needle} of ")]
    return [i for i in rows if needle in labels[i]]


def span_stats(events: RunEvents, span: tuple[int, int], rows: Sequence[int], name: str | None = None,
               selves: SelfCache | None = None) -> list[SpanStat]:
    """Per (kind, name), the events of ``rows`` in the span whose names hold ``name`` (case-insensitive, as the
    page's search matches), heaviest total first."""
    a, b = span
    needle = (name or "").strip().lower()
    matched = np.array([needle in text.lower() for text in events.names], dtype=bool) if needle else None
    cache = selves or SelfCache()
    parts: dict[tuple[str, int], list[tuple[np.ndarray, np.ndarray | None, int]]] = {}
    for index in rows:
        row = events.rows[index]
        if row.kind == "sample":
            inside = (row.starts >= a) & (row.starts < b)
        else:
            inside = (row.ends > a) & (row.starts < b)
        if matched is not None:
            inside &= matched[row.names]
        where = np.flatnonzero(inside)
        if not len(where):
            continue
        durations = (row.ends[where] - row.starts[where]).astype(np.int64)
        own = cache.of(events, index)[where] if row.kind in NESTING_KINDS else None
        names = row.names[where]
        for key in np.unique(names).tolist():
            mine = names == key
            parts.setdefault((row.kind, key), []).append(
                (durations[mine], None if own is None else own[mine], row.key))
    found = []
    for (kind, key), pieces in parts.items():
        durations = np.concatenate([p[0] for p in pieces])
        keys = tuple(sorted({p[2] for p in pieces}))
        if kind == "sample":
            found.append(SpanStat(kind, events.names[key], len(durations), None, None, None, None, keys))
            continue
        own = np.concatenate([p[1] if p[1] is not None else p[0] for p in pieces])
        found.append(SpanStat(kind, events.names[key], len(durations), int(durations.sum()), int(own.sum()),
                              int(durations.min()), int(durations.max()), keys))
    found.sort(key=lambda s: (-(s.total_ns or 0), -s.count))
    return found
