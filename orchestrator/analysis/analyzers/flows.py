"""Which API calls queued which GPU work, over the whole-run timeline's rows: a CUDA kernel, copy or set and the
runtime call with its correlation id; an OpenGL workload and the calls from its first correlation id to its last
(nsys records a workload as the work of a run of calls, glClear to eglSwapBuffers), in the same process. Pure.

Events are named by their place in all rows laid end to end (the row's offset plus the event's index), as the
page numbers them. A link joins one GPU event to a stretch of consecutive events of one API row; calls without
an id (nsys gives glClearColor none) that fall inside a workload's span break it into several stretches. A GPU
event thus links to at most one call per id in its span, whatever the export repeats.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .run_events import EventRow

API_KINDS = ("opengl", "cuda_api")
ID_BITS = 38  # a correlation id's bits in a (process, id) key; the process's 24 bits go above them


@dataclass(frozen=True)
class Flows:
    """Link k: GPU event ``gpu[k]`` was queued by API events ``first[k]`` to ``last[k]`` (inclusive), all of one
    row. Sorted by ``first``."""
    gpu: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def __len__(self) -> int:
        return len(self.gpu)


def offsets(rows: Sequence[EventRow]) -> np.ndarray:
    """Each row's first event's place among all rows' events."""
    return np.concatenate([[0], np.cumsum([len(row.starts) for row in rows])[:-1]]).astype(np.int64)


def flows(rows: Sequence[EventRow]) -> Flows:
    at = offsets(rows)
    api = [(row, at[i]) for i, row in enumerate(rows) if row.kind in API_KINDS and len(row.correlation)]
    gpu = [(row, at[i]) for i, row in enumerate(rows) if row.kind not in API_KINDS and len(row.correlation)]
    empty = np.empty(0, dtype=np.int64)
    if not api or not gpu:
        return Flows(empty, empty, empty)
    api_keys = np.concatenate([_keys(row.pids, row.correlation) for row, _ in api])
    api_places = np.concatenate([start + np.arange(len(row.starts)) for row, start in api])
    known = np.concatenate([row.correlation > 0 for row, _ in api])  # 0: a call that queued nothing
    # a correlation id names one call of its process; should an export repeat one, its first call keeps it
    keys, first_of = np.unique(api_keys[known], return_index=True)
    places = api_places[known][first_of]
    gpu_places = np.concatenate([start + np.arange(len(row.starts)) for row, start in gpu])
    low = np.concatenate([_keys(row.pids, row.correlation) for row, _ in gpu])
    high = np.concatenate([_keys(row.pids, np.maximum(row.correlation_last, row.correlation)) for row, _ in gpu])
    valid = np.concatenate([row.correlation > 0 for row, _ in gpu])
    lo = np.searchsorted(keys, low, side="left")
    hi = np.where(valid, np.searchsorted(keys, high, side="right"), lo)
    counts = np.maximum(hi - lo, 0)
    if not counts.sum():
        return Flows(empty, empty, empty)
    owner = np.repeat(gpu_places, counts)  # one pair per (GPU event, API call)
    index = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    call = places[index]
    pairs = np.lexsort((call, owner))
    owner, call = owner[pairs], call[pairs]
    row_of = np.searchsorted(at, call, side="right")  # a stretch never crosses rows
    breaks = np.flatnonzero((np.diff(owner) != 0) | (np.diff(call) != 1) | (np.diff(row_of) != 0)) + 1
    heads = np.concatenate([[0], breaks])
    tails = np.concatenate([breaks - 1, [len(call) - 1]])
    by_first = np.argsort(call[heads], kind="stable")
    return Flows(owner[heads][by_first], call[heads][by_first], call[tails][by_first])


def _keys(pids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return (np.asarray(pids, dtype=np.int64) << ID_BITS) | (np.asarray(ids, dtype=np.int64) & ((1 << ID_BITS) - 1))
