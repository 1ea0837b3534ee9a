"""The attribution of a thread's time to shares (analysis/intervals/attribution.py), held to a plain reference that
classifies every nanosecond on its own, on synthetic sets of intervals; and the sample it reads of a long
window."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.analysis.intervals.attribution import (
    CPU,
    DISPLAY,
    GPU,
    IO,
    SHARES,
    SLEEP,
    THREADS,
    UNEXPLAINED,
    Sample,
    Spans,
    Split,
    ThreadTime,
    running_from_samples,
    sample_of,
    sampled,
)

SPAN = 400


def _spans(pairs: list[tuple[int, int]]) -> Spans:
    return Spans.of([a for a, _ in pairs], [a + b for a, b in pairs])


intervals = st.lists(st.tuples(st.integers(0, SPAN - 1), st.integers(0, 60)), max_size=12)


def reference(time: ThreadTime, span: tuple[int, int]) -> np.ndarray:
    """Each ns of the span classified on its own, by the rule of precedence in the module's docstring: (SPAN,)
    share codes."""
    def inside(spans: Spans | None, t: int) -> bool:
        return spans is not None and bool(((spans.starts <= t) & (t < spans.ends)).any())
    found = []
    for t in range(*span):
        known = time.on_cpu is not None
        on = known and inside(time.on_cpu, t)
        blocked = inside(time.sync, t) or inside(time.io, t) or (known and not on)
        if inside(time.api_waits, t):
            found.append(GPU)           # a call that only waits for the GPU, spinning or not
        elif on:
            found.append(CPU)           # on a CPU anywhere else: running
        elif inside(time.sleep, t):
            found.append(SLEEP)
        elif inside(time.display, t):
            found.append(DISPLAY)
        elif inside(time.api, t) and inside(time.gpu_busy, t) and blocked:
            found.append(GPU)
        elif inside(time.sync, t):
            found.append(THREADS)
        elif inside(time.io, t):
            found.append(IO)
        elif known or not time.calls_traced:
            found.append(UNEXPLAINED)   # off a CPU outside a blocking call; or nothing says whether it ran
        else:
            found.append(CPU)           # no context switches: outside the traced blocking calls it ran
    return np.array(found)


@st.composite
def thread_times(draw) -> ThreadTime:
    with_sched = draw(st.booleans())
    return ThreadTime(sleep=_spans(draw(intervals)), display=_spans(draw(intervals)), sync=_spans(draw(intervals)),
                      io=_spans(draw(intervals)), api=_spans(draw(intervals)), api_waits=_spans(draw(intervals)),
                      gpu_busy=_spans(draw(intervals)), on_cpu=_spans(draw(intervals)) if with_sched else None,
                      calls_traced=draw(st.booleans()))


frames_strategy = st.lists(st.integers(1, SPAN - 1), min_size=1, max_size=8, unique=True).map(sorted)


@settings(max_examples=300, deadline=None)
@given(thread_times(), frames_strategy)
def test_every_frames_shares_sum_to_its_time_and_match_a_plain_per_ns_reference(time, cuts):
    starts = np.array([0, *cuts], dtype=np.int64)
    ends = np.array([*cuts, SPAN], dtype=np.int64)
    split = Split(time, (0, SPAN), Sample(starts, ends, 1, np.arange(len(starts))))
    found = split.totals(starts, ends)
    assert found.shape == (len(starts), len(SHARES))
    assert np.allclose(found.sum(axis=1), ends - starts)  # within 1 %: exactly, in fact
    truth = reference(time, (0, SPAN))
    for row, (start, end) in zip(found, zip(starts, ends)):
        part = truth[start:end]
        assert row.tolist() == [int((part == k).sum()) for k in range(len(SHARES))]
    # on a CPU: where the context switches say so (running or spinning in a GPU wait), else where it ran
    on = time.on_cpu.covering(np.arange(SPAN)) if time.on_cpu is not None else truth == CPU
    assert split.on_cpu(starts, ends).tolist() == [int(on[start:end].sum()) for start, end in zip(starts, ends)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, SPAN - 1), max_size=30), st.integers(1, 20))
def test_without_context_switches_each_sample_stands_for_the_period_before_it(sample_times, period):
    running = running_from_samples(np.array(sample_times, dtype=np.int64), period)
    [row] = Split(ThreadTime(on_cpu=running, on_cpu_estimated=True), (0, SPAN)).totals([0], [SPAN])
    ran = {t for s in sample_times for t in range(max(0, s - period), s)}
    assert (row[CPU], row[UNEXPLAINED]) == (len(ran), SPAN - len(ran))


def test_the_rules_case_by_case():
    """One thread in a 100 ns span: each share where its evidence is, and the priority between them."""
    time = ThreadTime(sleep=Spans.of([0], [10]), display=Spans.of([10], [20]), sync=Spans.of([20, 40], [30, 50]),
                      io=Spans.of([30], [40]), api=Spans.of([35, 45, 70], [60, 55, 80]),
                      api_waits=Spans.of([70], [75]), gpu_busy=Spans.of([30], [80]),
                      on_cpu=Spans.of([0, 50, 60], [30, 55, 90]))
    [row] = Split(time, (0, 100)).totals([0], [100])
    # on a CPU 0-30: cpu (running, though inside sleep, display and sync calls); io 30-35, gpu 35-40 (io inside a
    # GPU call while busy), gpu 40-50 (waiting on a thread inside a GPU call while busy), cpu 50-55 (running in a
    # call), gpu 55-60 (off a CPU in a call while busy), cpu 60-70, gpu 70-75 (a call that only waits for the GPU,
    # though on a CPU), cpu 75-90, unexplained 90-100
    assert dict(zip(SHARES, row.tolist())) == {"cpu": 60, "gpu": 25, "display": 0, "threads": 0, "io": 5,
                                                "sleep": 0, "unexplained": 10}
    time = ThreadTime(**{**time.__dict__, "on_cpu": Spans.of([50, 60], [55, 90])})
    [row] = Split(time, (0, 100)).totals([0], [100])
    # off a CPU 0-30: sleep 0-10, display 10-20, threads 20-30
    assert dict(zip(SHARES, row.tolist())) == {"cpu": 30, "gpu": 25, "display": 10, "threads": 10, "io": 5,
                                                "sleep": 10, "unexplained": 10}


def test_without_context_switches_time_outside_blocking_calls_runs_when_calls_were_traced():
    time = ThreadTime(sync=Spans.of([10], [30]), calls_traced=True)
    [row] = Split(time, (0, 100)).totals([0], [100])
    assert (row[CPU], row[THREADS], row[UNEXPLAINED]) == (80, 20, 0)
    [row] = Split(ThreadTime(sync=Spans.of([10], [30])), (0, 100)).totals([0], [100])
    assert (row[CPU], row[THREADS], row[UNEXPLAINED]) == (0, 20, 80)  # nothing says it ran: unexplained


def test_calls_by_name_share_out_their_time():
    time = ThreadTime(display=Spans.of([0, 50], [20, 60]), sync=Spans.of([20], [30]), calls_traced=True)
    split = Split(time, (0, 100))
    [by_name] = split.by_code(np.array([0, 20, 50]), np.array([20, 30, 60]), (np.array([0, 1, 0]), 2))
    assert by_name[0, DISPLAY] == 30 and by_name[1, THREADS] == 10 and by_name.sum() == 40


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500)), max_size=60),
       st.integers(1, 9), st.booleans())
def test_the_sample_keeps_every_interval_that_reaches_into_its_spans(pairs, every, disjoint):
    if disjoint:  # one thread's calls: laid end to end
        pairs = [(start, length) for start, length in pairs]
        cursor, laid = 0, []
        for gap, length in pairs:
            laid.append((cursor + gap % 50, length))
            cursor += gap % 50 + length
        pairs = laid
    starts = np.array([a for a, _ in pairs], dtype=np.int64)
    ends = starts + np.array([b for _, b in pairs], dtype=np.int64)
    frames = np.arange(0, 40_000, 400, dtype=np.int64)
    sample = sample_of((0, 40_000), 10 * every, frames, frames + 300, limit=10)
    assert sample.every == every and np.array_equal(sample.frames, np.arange(0, 100, every))
    kept = set(sampled(starts, ends, sample, disjoint).tolist())
    for i, (start, end) in enumerate(zip(starts, ends)):
        if ((start < sample.ends) & (end > sample.starts)).any():
            assert i in kept


def test_a_window_without_frames_is_read_whole_or_in_even_slices():
    whole = sample_of((100, 1100), 5, limit=10)
    assert (whole.starts.tolist(), whole.ends.tolist(), whole.every) == ([100], [1100], 1)
    slices = sample_of((0, 1024_000), 30, limit=10)
    assert slices.every == 3 and slices.frames is None
    assert slices.starts[:3].tolist() == [0, 3000, 6000] and (slices.ends - slices.starts == 1000).all()
    assert isinstance(slices, Sample)


def test_calls_are_counted_only_inside_the_spans_read():
    """A call reaching over two frames read and the gap between them counts only its time inside the frames."""
    time = ThreadTime(display=Spans.of([0], [100]), calls_traced=True)
    frames = Sample(np.array([0, 60]), np.array([20, 80]), 3, np.array([0, 3]))
    split = Split(time, (0, 100), frames)
    [by_name] = split.by_code(np.array([0]), np.array([100]), (np.array([0]), 1))
    assert by_name[0, DISPLAY] == 40 and split.totals(frames.starts, frames.ends).sum() == 40


def test_a_window_holding_no_whole_frame_is_read_as_a_window():
    frames = np.array([0, 1000]), np.array([1000, 2000])
    assert sample_of((200, 800), 5, *frames, limit=10).frames is None       # no frame inside: the window whole
    sliced = sample_of((200, 800), 50, *frames, limit=10)
    assert sliced.frames is None and sliced.every == 5 and len(sliced.starts) > 0  # or its slices, never nothing


def test_the_threads_life_takes_in_the_frames_inside_the_window():
    from orchestrator.analysis.analyzers.frames import Frames
    from orchestrator.analysis.analyzers.thread_time import _life
    frames = Frames("eglSwapBuffers", "opengl", 1, np.array([100, 200]), np.array([200, 300]), 0)
    calls = Spans.of([150], [160])  # the first call it made lies inside the first frame
    assert _life((100, 300), [calls], None, frames) == (100, 300)
    assert _life((0, 1000), [calls], None, None) == (150, 160)


def test_the_confidence_says_when_two_causes_weigh_about_the_same():
    from orchestrator.analysis.analyzers.shares import confidence_of
    from orchestrator.documents.attribution import AttributionSources
    every = AttributionSources(os_runtime=True, context_switches=True, gpu_work=True, samples=True)

    def level(**pcts: float) -> str:
        return confidence_of({name: pcts.get(name, 0.0) for name in SHARES}, every, uses_gpu=False)[0]
    assert level(cpu=70, sleep=20, threads=10) == "high"           # a clear lead
    assert level(cpu=40, sleep=31, threads=29) == "medium"         # a lead under 10 points; sleep 78 % of it
    assert level(cpu=54, sleep=44, unexplained=2) == "low"         # sleep weighs 81 % of running: no single cause
    assert level(threads=50, io=50) == "low"
    assert level(cpu=60, unexplained=30, io=10) == "low"           # a quarter of the time nothing explains
    fewer = AttributionSources(os_runtime=True, context_switches=False, samples=True)
    assert confidence_of({**{n: 0.0 for n in SHARES}, "cpu": 90.0, "io": 10.0}, fewer, uses_gpu=False)[0] == "medium"
