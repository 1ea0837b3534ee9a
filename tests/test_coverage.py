"""The union of intervals (orchestrator/analysis/intervals/coverage.py) against a plain-Python sweep."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.analysis.intervals.coverage import Coverage, union_ns

INTERVAL = st.tuples(st.integers(0, 60), st.integers(0, 15)).map(lambda p: (p[0], p[0] + p[1]))
SET = st.lists(INTERVAL, max_size=40)


def swept(intervals: list[tuple[int, int]], before: int | None = None) -> int:
    """Covered time (before an instant, if given), one unit at a time."""
    covered = {t for start, end in intervals for t in range(start, end)}
    return len(covered if before is None else {t for t in covered if t < before})


def arrays(intervals: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([s for s, _ in intervals], dtype=np.int64), np.array([e for _, e in intervals], dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(intervals=SET, times=st.lists(st.integers(-5, 90), min_size=1, max_size=10))
def test_covered_time_before_each_instant_is_the_sweeps(intervals, times):
    coverage = Coverage(*arrays(intervals))
    assert coverage.total == swept(intervals)
    got = coverage.covered_before(np.array(times, dtype=np.int64)).tolist()
    assert got == [swept(intervals, t) for t in times]
    starts, ends = coverage.pieces()
    assert (ends > starts).all() and (starts[1:] >= ends[:-1]).all()  # disjoint, in time order


@settings(max_examples=300, deadline=None)
@given(sets=st.lists(SET, max_size=4))
def test_the_union_of_several_sets_counts_each_instant_once(sets):
    assert union_ns([arrays(s) for s in sets]) == swept([i for s in sets for i in s])
