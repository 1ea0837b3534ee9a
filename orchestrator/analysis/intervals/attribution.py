"""Where a thread's time goes: each instant of the thread goes to one share, by whether it ran and what it waited
for. Pure: sets of intervals in, ns per share out.

One rule of precedence at each instant (first match wins):
  gpu       inside a call that only waits for the GPU (glFinish, cuda*Synchronize, cuEventSynchronize, synchronous
            copies), on a CPU or off: a spinning wait is a wait too
  cpu       on a CPU anywhere else: running, inside a call (named for it: "running inside writev") or outside
  and off a CPU, the wait of the call it is in:
  sleep     a sleep call (nanosleep, usleep...)
  display   socket traffic with the display server (X11, Wayland)
  gpu       a GPU or driver call (OpenGL, EGL, CUDA) while the GPU, or a software renderer's threads, is busy
  threads   the app's other threads (condition variables, mutexes, futexes, joins, barriers)
  io        another blocking call (files, sockets that are not the display's, ioctl, waitpid...)
  unexplained  off a CPU outside any blocking call (waiting for a CPU, or blocked in a call nsys did not trace:
            the reason is not recorded)

When the thread was on a CPU comes from its context switches; without them it is estimated: where its CPU samples
fall (they land only on a running thread, each standing for the sampling period before it) and, when its blocking
OS calls were traced, everywhere outside them (samples miss the time a thread spends in the kernel); with neither
samples nor context switches, the thread ran outside the traced blocking calls, and nothing says so otherwise
(unexplained).

Every instant of a span goes to exactly one share, so a frame's shares add up to the frame's time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...documents.shares import SHARES

# each share's column in the arrays below (a share declared after these has no rule here yet: no time)
CPU, GPU, DISPLAY, THREADS, IO, SLEEP, UNEXPLAINED = (SHARES.index(name) for name in (
    "cpu", "gpu", "display", "threads", "io", "sleep", "unexplained"))


@dataclass(frozen=True)
class Spans:
    """A set of [start, end) intervals in ns, in any order, overlaps allowed."""
    starts: np.ndarray
    ends: np.ndarray

    @staticmethod
    def of(starts, ends) -> Spans:
        starts = np.asarray(starts, dtype=np.int64)
        return Spans(starts, np.maximum(np.asarray(ends, dtype=np.int64), starts))

    def __len__(self) -> int:
        return len(self.starts)

    def covering(self, times: np.ndarray) -> np.ndarray:
        """Whether each time lies inside an interval: more intervals begun than ended by then."""
        begun = np.searchsorted(np.sort(self.starts), times, side="right")
        ended = np.searchsorted(np.sort(self.ends), times, side="right")
        return begun > ended

    def __or__(self, other: Spans) -> Spans:
        return Spans(np.r_[self.starts, other.starts], np.r_[self.ends, other.ends])


NO_SPANS = Spans(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


@dataclass(frozen=True)
class ThreadTime:
    """What a capture says about one thread's time, as sets of intervals."""
    sleep: Spans = NO_SPANS
    display: Spans = NO_SPANS
    sync: Spans = NO_SPANS       # waits on the app's other threads
    io: Spans = NO_SPANS         # other blocking calls
    api: Spans = NO_SPANS        # GPU and driver calls (OpenGL, EGL, GLX, CUDA)
    api_waits: Spans = NO_SPANS  # those of them that only wait for the GPU
    gpu_busy: Spans = NO_SPANS   # the GPU's recorded work, and a software renderer's threads on a CPU
    on_cpu: Spans | None = None  # the thread on a CPU (context switches, else estimated from samples); None: unknown
    on_cpu_estimated: bool = False  # on_cpu is an estimate from the thread's CPU samples
    calls_traced: bool = False   # blocking OS calls were traced: without on_cpu, outside them the thread ran


def running_from_samples(times: np.ndarray, period_ns: float) -> Spans:
    """When a thread ran, estimated from its CPU samples: each stands for the sampling period of the thread's CPU
    time before it (a sample is taken when the thread's clock has run one period), so a thread sampled without a
    break ran throughout and a thread never sampled in a wait did not run there."""
    ends = np.sort(np.asarray(times, dtype=np.int64))
    return Spans.of(ends - int(round(period_ns)), ends)


# The attribution reads at most this many of the thread's intervals (calls, times on a CPU, GPU work): past it, an
# even sample of the window (every k-th frame, else every k-th of SLICES slices of it), so that a capture of
# millions of events costs the analysis a bounded time (bench/analysis_speed.py) while the shares of a frame
# it reads stay exact
LIMIT = 1 << 17
SLICES = 1024


@dataclass(frozen=True)
class Sample:
    """The spans of the window the attribution reads (sorted, disjoint): all of it, or every k-th frame or slice;
    and frames read whole besides (a frame told on its own: the slowest...), which the shares do not count."""
    starts: np.ndarray
    ends: np.ndarray
    every: int                   # 1: the whole window
    frames: np.ndarray | None    # the frames these spans are, by index (None: the window, or slices of it)
    also_starts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    also_ends: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def reach(self) -> tuple[np.ndarray, np.ndarray]:
        """Every span read, those the shares count and those besides, in order."""
        if not len(self.also_starts):
            return self.starts, self.ends
        starts, ends = np.r_[self.starts, self.also_starts], np.r_[self.ends, self.also_ends]
        order = np.argsort(starts, kind="stable")
        return starts[order], ends[order]


def sample_of(window: tuple[int, int], intervals: int, frame_starts: np.ndarray | None = None,
              frame_ends: np.ndarray | None = None, limit: int = LIMIT, also: list[int] | None = None) -> Sample:
    """Every frame inside the window (else, without one, the window) when the intervals are within the limit; else
    every k-th, and the frames ``also`` names besides."""
    every = max(1, -(-intervals // limit))
    lo, hi = window
    if frame_starts is not None and frame_ends is not None:
        inside = np.flatnonzero((frame_starts >= lo) & (frame_ends <= hi))[::every]
        if len(inside):
            extra = np.setdiff1d(np.asarray(also or [], dtype=np.int64), inside) if every > 1 else inside[:0]
            extra = extra[(extra >= 0) & (extra < len(frame_starts))]
            return Sample(frame_starts[inside], frame_ends[inside], every, inside, frame_starts[extra],
                          frame_ends[extra])
    if every == 1:
        return Sample(np.array([lo], dtype=np.int64), np.array([hi], dtype=np.int64), 1, None)
    edges = np.linspace(lo, hi, SLICES + 1).astype(np.int64)
    return Sample(edges[:-1][::every], edges[1:][::every], every, None)


def sampled(starts: np.ndarray, ends: np.ndarray, sample: Sample, disjoint: bool = False) -> np.ndarray:
    """The indices of the intervals that may overlap the sample's spans (all of them when it has every one): for
    each span, the intervals from the first whose end, or an earlier one's, passes its start, to the last that
    begins before its end. ``disjoint``: the intervals never overlap (one thread's calls), so only the one begun
    last before a span's start can reach into it."""
    if sample.every == 1 or not len(starts):
        return np.arange(len(starts))
    lows, highs = sample.reach
    order = None if len(starts) < 2 or not (starts[1:] < starts[:-1]).any() else np.argsort(starts, kind="stable")
    if order is not None:
        starts, ends = starts[order], ends[order]
    if disjoint:
        first = np.maximum(np.searchsorted(starts, lows, side="right") - 1, 0)
    else:
        first = np.searchsorted(np.maximum.accumulate(ends), lows, side="right")
    last = np.searchsorted(starts, highs, side="left")
    sizes = np.maximum(last - first, 0)
    picked = np.sort(np.repeat(first - np.r_[0, np.cumsum(sizes)[:-1]], sizes) + np.arange(int(sizes.sum())))
    picked = picked[np.r_[True, picked[1:] != picked[:-1]]] if len(picked) else picked  # spans may share one
    return picked if order is None else order[picked]


def _covered(bounds: np.ndarray, spans: Spans) -> np.ndarray:
    """Whether each piece [bounds[i], bounds[i+1]) lies inside one of the spans, whose ends are all among the bounds
    (more spans begun than ended at the piece's start)."""
    size = len(bounds)
    if not len(spans):
        return np.zeros(size - 1, dtype=bool)
    depth = (np.bincount(np.searchsorted(bounds, spans.starts), minlength=size + 1)[:size]
             - np.bincount(np.searchsorted(bounds, spans.ends), minlength=size + 1)[:size])
    return np.cumsum(depth[:-1]) > 0


def _clipped(spans: Spans, lo: int, hi: int) -> Spans:
    return Spans(np.clip(spans.starts, lo, hi), np.clip(spans.ends, lo, hi))


def _span_of(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The index of the (sorted, disjoint) span each time lies in, -1 outside them all."""
    index = np.searchsorted(starts, times, side="right") - 1
    inside = (index >= 0) & (times < ends[np.maximum(index, 0)]) if len(starts) else np.zeros(len(times), bool)
    return np.where(inside, index, -1)


class Split:
    """A thread's time over a span, cut where any interval begins or ends, each piece given its share."""

    def __init__(self, time: ThreadTime, span: tuple[int, int], sample: Sample | None = None) -> None:
        lo, hi = span
        layers = [_clipped(spans, lo, hi) for spans in (time.sleep, time.display, time.sync, time.io, time.api,
                                                        time.api_waits, time.gpu_busy)]
        on_cpu = None if time.on_cpu is None else _clipped(time.on_cpu, lo, hi)
        edges = [np.array([lo, hi], dtype=np.int64)]
        if sample is not None:  # no piece straddles the edge of a span read
            lows, highs = sample.reach
            edges += [np.clip(lows, lo, hi), np.clip(highs, lo, hi)]
        for spans in layers + ([on_cpu] if on_cpu is not None else []):
            edges += [spans.starts, spans.ends]
        bounds = np.sort(np.concatenate(edges))  # np.unique hashes: far slower on millions of times
        bounds = bounds[np.r_[True, bounds[1:] != bounds[:-1]]]
        self.bounds = bounds
        sleep, display, sync, io, api, waits, busy = (_covered(bounds, spans) for spans in layers)
        on = _covered(bounds, on_cpu) if on_cpu is not None else np.zeros(len(bounds) - 1, dtype=bool)
        if time.on_cpu_estimated and time.calls_traced:  # samples miss the kernel: outside blocking calls it ran
            on |= ~(sleep | display | sync | io)
        if on_cpu is not None:
            rules = [(waits, GPU), (on, CPU), (sleep, SLEEP), (display, DISPLAY), (api & busy, GPU), (sync, THREADS),
                     (io, IO)]
            otherwise = UNEXPLAINED
        else:
            rules = [(waits, GPU), (sleep, SLEEP), (display, DISPLAY), (api & busy & (sync | io), GPU),
                     (sync, THREADS), (io, IO)]
            otherwise = CPU if time.calls_traced else UNEXPLAINED
        self.share = np.select([when for when, _ in rules], [share for _, share in rules], otherwise).astype(np.int64)
        self.running = (self.share == CPU) | (waits & on)
        self.lengths = np.diff(bounds)
        # the pieces inside the spans read: what the calls' and threads' shares are counted over
        self.read = (_span_of(sample.starts, sample.ends, bounds[:-1]) >= 0 if sample is not None
                     else np.ones(len(bounds) - 1, dtype=bool))

    def totals(self, starts, ends) -> np.ndarray:
        """ns per share (columns in SHARES' order) of each span (sorted, disjoint, its ends among the split's
        bounds: the span's or its sample's); a span's row adds up to its length inside the split."""
        starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
        count, width = len(starts), len(SHARES)
        of_piece = _span_of(starts, ends, self.bounds[:-1])
        mine = of_piece >= 0
        return np.bincount(of_piece[mine] * width + self.share[mine], weights=self.lengths[mine],
                           minlength=count * width).reshape(count, width)

    def on_cpu(self, starts, ends) -> np.ndarray:
        """ns on a CPU in each span (as totals reads them): running, and spinning in a call that waits for the
        GPU."""
        starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
        of_piece = _span_of(starts, ends, self.bounds[:-1])
        mine = (of_piece >= 0) & self.running
        return np.bincount(of_piece[mine], weights=self.lengths[mine], minlength=len(starts))

    def by_code(self, starts: np.ndarray, ends: np.ndarray, *groupings: tuple[np.ndarray, int]) -> list[np.ndarray]:
        """ns per share of calls grouped by code, for each grouping (codes per call, how many codes): a
        (codes, len(SHARES)) array each, counted inside the spans read. The calls are one thread's: where two
        overlap, a piece counts for the one begun last."""
        order = np.argsort(starts, kind="stable") if len(starts) > 1 and (starts[1:] < starts[:-1]).any() else None
        if order is not None:
            starts, ends = starts[order], ends[order]
        of_piece = _span_of(starts, ends, self.bounds[:-1])
        inside = (of_piece >= 0) & self.read
        call, share, length = of_piece[inside], self.share[inside], self.lengths[inside]
        width = len(SHARES)
        found = []
        for codes, size in groupings:
            codes = codes if order is None else codes[order]
            total = np.bincount(codes[call] * width + share, weights=length, minlength=size * width)
            found.append(total.reshape(size, width))
        return found
