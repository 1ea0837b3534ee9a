"""Per-pixel summaries of a row of events, at levels of detail: what the whole-run timeline draws when a pixel
holds more events than it can show. Pure.

A level cuts time into bins of one width (powers of 4 ns) from the row's origin. A bin's value says how much of
it the row's events cover, overlaps counted once: 1 to 255 (255: all of it; any event touching the bin makes it
at least 1, so a short call never vanishes); for a row of instants (CPU samples) it is the number of samples in
the bin, up to 255. Bins are stored as runs of equal values (start bin, length, value): a call that spans a
million bins is one run, so a level never holds many more runs than the row has events.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.intervals.coverage import Coverage

FACTOR = 4           # one level's bins are 4 of the next finer level's
EXACT_EVENTS = 16384  # a row shows its events themselves once no more than this many are in view
WIDEST_PIXELS = 4096  # the widest canvas in device pixels a level is made for
FULL = 255
MAX_LANES = 4  # nesting deeper than this shares the last lane


@dataclass(frozen=True)
class Runs:
    """One level of a row: bins [starts[i], starts[i] + lengths[i]) all hold values[i]; starts ascending."""
    width_ns: int
    starts: np.ndarray   # int64 bin indexes from the origin
    lengths: np.ndarray  # int64
    values: np.ndarray   # uint8


def level_widths(starts: np.ndarray, span_ns: int, exact: int = EXACT_EVENTS,
                 pixels: int = WIDEST_PIXELS) -> list[int]:
    """The widths a row needs, finest first: none when it never has more than ``exact`` events in view; else from
    the finest pixel at which its densest stretch of ``exact`` events is still more than the canvas shows, to
    the level at which the whole span fits a canvas of a thousand pixels."""
    if len(starts) <= exact:
        return []
    densest = int(np.min(starts[exact:] - starts[:-exact]))  # starts ascending
    finest = _power_at_most(max(1, densest // pixels))
    coarsest = max(finest, _power_at_most(max(1, span_ns // 1024)) * FACTOR)
    widths = [finest]
    while widths[-1] < coarsest:
        widths.append(widths[-1] * FACTOR)
    return widths


def _power_at_most(value: int) -> int:
    width = 1
    while width * FACTOR <= value:
        width *= FACTOR
    return width


def level_runs(starts: np.ndarray, ends: np.ndarray, origin: int, width: int, instants: bool = False) -> Runs:
    """The row's bins of ``width`` ns from ``origin`` that its events touch, as runs (see the module's words)."""
    starts = np.asarray(starts, dtype=np.int64) - origin
    ends = np.asarray(ends, dtype=np.int64) - origin
    if instants:
        bins, counts = np.unique(starts // width, return_counts=True)
        return _merged(bins, np.ones(len(bins), dtype=np.int64), np.minimum(counts, FULL), width)
    pieces_start, pieces_end = Coverage(starts, ends).pieces()  # the union's disjoint pieces
    first, last = pieces_start // width, (pieces_end - 1) // width
    single = first == last
    edge_bins = np.concatenate([first[single], first[~single], last[~single]])
    edge_ns = np.concatenate([pieces_end[single] - pieces_start[single],
                              (first[~single] + 1) * width - pieces_start[~single],
                              pieces_end[~single] - last[~single] * width])
    points = starts[ends <= starts]  # events without length touch their bin, where no piece covers it already
    if len(pieces_start):
        inside = np.searchsorted(pieces_start, points, side="right") - 1
        points = points[(inside < 0) | (points >= pieces_end[np.maximum(inside, 0)])]
    points = np.unique(points // width)
    edge_bins = np.concatenate([edge_bins, points])
    edge_ns = np.concatenate([edge_ns, np.zeros(len(points), dtype=np.int64)])
    bins, where = np.unique(edge_bins, return_inverse=True)
    covered = np.zeros(len(bins), dtype=np.int64)
    np.add.at(covered, where, edge_ns)
    values = np.clip(-(-covered * FULL // width), 1, FULL)  # rounded up: a touched bin is at least 1
    inner = ~single & (last - first >= 2)
    run_starts = np.concatenate([bins, first[inner] + 1])
    run_lengths = np.concatenate([np.ones(len(bins), dtype=np.int64), last[inner] - first[inner] - 1])
    run_values = np.concatenate([values, np.full(int(inner.sum()), FULL, dtype=np.int64)])
    order = np.argsort(run_starts, kind="stable")
    return _merged(run_starts[order], run_lengths[order], run_values[order], width)


def _merged(starts: np.ndarray, lengths: np.ndarray, values: np.ndarray, width: int = 0) -> Runs:
    """Adjacent runs of one value as one run."""
    if not len(starts):
        empty = np.empty(0, dtype=np.int64)
        return Runs(width, empty, empty, np.empty(0, dtype=np.uint8))
    joins = (starts[1:] == starts[:-1] + lengths[:-1]) & (values[1:] == values[:-1])
    heads = np.flatnonzero(np.concatenate([[True], ~joins]))
    return Runs(width, starts[heads], np.add.reduceat(lengths, heads), values[heads].astype(np.uint8))


def nesting(starts: np.ndarray, ends: np.ndarray, most: int = MAX_LANES) -> int:
    """How many of a row's events (starts ascending) are open at once at most, up to ``most``: the lanes the page
    stacks them in (a call inside a call, a range inside a range)."""
    if not len(starts):
        return 1
    instant = ends <= starts
    closed = np.searchsorted(np.sort(ends[~instant]), starts, side="right")  # events over by each start
    open_at = np.arange(1, len(starts) + 1) - closed - np.cumsum(instant)  # those of no length close at once
    return int(min(most, int((open_at + instant).max())))  # an event of no length sits above those open
