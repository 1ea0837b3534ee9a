"""How much of the time a set of [start, end) intervals covers, overlaps counted once (GPU busy time).

The intervals in start order become disjoint pieces: piece i runs from max(start_i, the furthest end
before it) to the furthest end up to it (empty when interval i adds nothing). With their running total,
the time covered before any instant is one binary search, so the union of a big set with a small one is
the big one's total plus the small one's pieces minus the big one's time inside them: no merged copy of
the big set, and three arrays of its length in all (a kernel table has millions of rows).
"""
from __future__ import annotations

import numpy as np


class Coverage:
    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        if len(starts) > 1 and (starts[1:] < starts[:-1]).any():
            order = np.argsort(starts, kind="stable")  # stable: fast on nearly sorted starts
            starts, ends = starts[order], ends[order]
        self.ends = np.maximum.accumulate(ends) if len(ends) else np.empty(0, dtype=np.int64)
        self.starts = np.empty_like(self.ends)
        if len(starts):
            self.starts[0] = starts[0]
            np.maximum(starts[1:], self.ends[:-1], out=self.starts[1:])
        lengths = self.ends - self.starts
        np.maximum(lengths, 0, out=lengths)
        self.before = np.cumsum(lengths, out=lengths)  # covered time up to the end of each piece

    @property
    def total(self) -> int:
        return int(self.before[-1]) if len(self.before) else 0

    def covered_before(self, times: np.ndarray) -> np.ndarray:
        """The covered time before each instant."""
        if not len(self.before):
            return np.zeros(len(times), dtype=np.int64)
        k = np.searchsorted(self.starts, times, side="left")  # pieces starting before the instant
        whole = np.where(k >= 2, self.before[np.maximum(k - 2, 0)], 0)
        last = np.maximum(k - 1, 0)
        partial = np.where(k >= 1, np.clip(np.minimum(times, self.ends[last]) - self.starts[last], 0, None), 0)
        return whole + partial

    def pieces(self) -> tuple[np.ndarray, np.ndarray]:
        """The non-empty disjoint pieces, in time order."""
        keep = self.ends > self.starts
        return self.starts[keep], self.ends[keep]


def union_ns(sets: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Time covered by the union of several sets of intervals (starts, ends)."""
    sets = [(s, e) for s, e in sets if len(s)]
    if not sets:
        return 0
    sets.sort(key=lambda pair: len(pair[0]))
    big = Coverage(*sets.pop())
    if not sets:
        return big.total
    rest = Coverage(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))
    lows, highs = rest.pieces()
    shared = big.covered_before(highs) - big.covered_before(lows)
    return big.total + rest.total - int(shared.sum())
