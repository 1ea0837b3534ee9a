"""The whole-run timeline's per-pixel summaries (report/levels.py) against a plain loop over every pixel."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.report.levels import FACTOR, FULL, level_runs, level_widths, nesting


def plain_bins(events: list[tuple[int, int]], origin: int, width: int, instants: bool) -> dict[int, int]:
    """bin -> value, pixel by pixel: the union of the events' pieces inside each bin, measured by merging them."""
    if not events:
        return {}
    last_bin = max((max(s, e) - origin) // width for s, e in events) + 1
    found = {}
    for b in range(min((s - origin) // width for s, _ in events), last_bin + 1):
        low, high = origin + b * width, origin + (b + 1) * width
        if instants:
            count = sum(1 for s, _ in events if low <= s < high)
            if count:
                found[b] = min(count, FULL)
            continue
        clipped = sorted((max(s, low), min(e, high)) for s, e in events if s < high and e > low)
        covered, reach = 0, low
        for s, e in clipped:
            if e > reach:
                covered += e - max(s, reach)
                reach = e
        touched = clipped or any(low <= s < high and e <= s for s, e in events)
        if touched:
            found[b] = min(FULL, max(1, -(-covered * FULL // width)))
    return found


def expanded(runs) -> dict[int, int]:
    found = {}
    for start, length, value in zip(runs.starts.tolist(), runs.lengths.tolist(), runs.values.tolist()):
        for b in range(start, start + length):
            assert b not in found, f"bin {b} in two runs"
            found[b] = value
    return found


events_strategy = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 120)).map(lambda p: (p[0], p[0] + p[1])),
                           max_size=30)


@settings(max_examples=300, deadline=None)
@given(events=events_strategy, origin=st.integers(-50, 50), width=st.sampled_from([1, 4, 16, 64]),
       instants=st.booleans())
def test_runs_hold_the_value_of_every_pixel_that_a_plain_loop_finds(events, origin, width, instants):
    if instants:
        events = [(s, s) for s, _ in events]
    starts = np.array([s for s, _ in events], dtype=np.int64)
    ends = np.array([e for _, e in events], dtype=np.int64)
    runs = level_runs(starts, ends, origin, width, instants)
    assert runs.width_ns == width
    assert expanded(runs) == plain_bins(events, origin, width, instants)
    assert (np.diff(runs.starts) > 0).all()
    joined = (runs.starts[1:] == runs.starts[:-1] + runs.lengths[:-1]) & (runs.values[1:] == runs.values[:-1])
    assert not joined.any()  # adjacent runs of one value are one run


def test_a_long_call_is_one_run_of_full_bins_between_its_partial_ends():
    runs = level_runs(np.array([10]), np.array([10 + 4_000_000]), 0, 4)
    assert runs.starts.tolist() == [2, 3, 1_000_002]
    assert runs.lengths.tolist() == [1, 999_999, 1]
    assert runs.values.tolist() == [128, FULL, 128]  # 2 ns of 4 in each end bin, rounded up


def test_a_row_that_never_has_too_many_events_in_view_needs_no_level():
    starts = np.arange(0, 100_000, 10, dtype=np.int64)
    assert level_widths(starts, 1_000_000, exact=len(starts)) == []
    widths = level_widths(starts, 1_000_000, exact=1000, pixels=1000)
    # the densest 1000 events span 10 us: 10 ns a pixel of 1000, so the finest width is 4 ns (a power of 4)
    assert widths[0] == 4
    assert all(b == a * FACTOR for a, b in zip(widths, widths[1:]))
    assert widths[-1] >= 1_000_000 // 1024 and widths[-2] < 1_000_000 // 1024 * FACTOR


@settings(max_examples=200, deadline=None)
@given(events=events_strategy)
def test_the_lanes_are_the_most_events_open_at_any_start(events):
    events = sorted(events)
    starts = np.array([s for s, _ in events], dtype=np.int64)
    ends = np.array([e for _, e in events], dtype=np.int64)
    most = 0
    for i, (s, _) in enumerate(events):  # the events open at s: begun by then and not over (itself, even at 0 ns)
        most = max(most, sum(1 for j, (s2, e2) in enumerate(events) if j <= i and (e2 > s or j == i)))
    assert nesting(starts, ends, most=100) == max(1, most)
    assert nesting(starts, ends) == min(4, max(1, most))
