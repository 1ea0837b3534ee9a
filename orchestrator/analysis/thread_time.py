"""The focus thread's time as the attribution reads it (attribution.ThreadTime), from one export: its blocking OS
calls by what they wait for, its GPU and driver calls, when the GPU (or a software renderer's threads) worked,
when the thread was on a CPU, and when its samples were taken; with what each share is made of (the calls,
the threads that woke it) for the evidence.

What counts as the display server's traffic: a socket call (poll, writev, recvmsg...) made inside a GPU or
window-system call (eglSwapBuffers, glXSwapBuffers, glClear on an X11 window...), or with libX11, libxcb or
libwayland-client on its stack, in a capture of an app that has a display. A software renderer's threads
(llvmpipe-0...) count as the GPU of a thread that makes OpenGL calls in their process, while they are on a CPU
(context switches), else while they are not blocked (OS runtime calls), else around their samples. The GPU's
busy time matters only inside the thread's GPU calls, so only the work that overlaps one is kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .attribution import DISPLAY, IO, SLEEP, THREADS, Sample, Spans, ThreadTime, sample_of, sampled
from .calls import (
    API_TABLES,
    BLOCKING_CALLS,
    DISPLAY_LIBRARY,
    OTHER_BLOCKING_CALLS,
    SLEEP_CALLS,
    SOCKET_CALLS,
    SYNC_CALLS,
    WAIT_SYMBOL,
    WAKE_CALLS,
)
from .coverage import Coverage
from .evidence import GPU_WORK_TABLES, SOFTWARE_GPU_THREAD
from .frames import Frames
from .names import PROFILER_THREAD_PREFIX, pid_of, string_values
from .reads import Columns
from .sampling import Samples
from .scheduling import sampling_period_ns
from .trace import Trace

NOT_BLOCKING = -1
_KIND_OF = {**{n: SLEEP for n in SLEEP_CALLS}, **{n: THREADS for n in SYNC_CALLS},
            **{n: IO for n in SOCKET_CALLS + OTHER_BLOCKING_CALLS}}
_VERSIONED = re.compile(r"_v\d+$")
OWN_WORK_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


@dataclass(frozen=True)
class Calls:
    """One thread's calls, clipped to the span: a code per call (an index into ``names``), starts and ends."""
    codes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    names: tuple[str, ...] = ()
    corr: np.ndarray | None = None  # CUDA calls: the correlationId of the GPU work each queued

    def spans(self, mask: np.ndarray | None = None) -> Spans:
        return Spans(self.starts, self.ends) if mask is None else Spans(self.starts[mask], self.ends[mask])

    def taken(self, index: np.ndarray) -> Calls:
        return Calls(self.codes[index], self.starts[index], self.ends[index], self.names,
                     None if self.corr is None else self.corr[index])

    def named(self, wanted: tuple[str, ...]) -> np.ndarray:
        """Which calls have one of the names."""
        table = np.array([name in wanted for name in self.names] + [False], dtype=bool)
        return table[self.codes]


def _empty() -> Calls:
    return Calls(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def _coded(trace: Trace, name_ids: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Dense codes for StringIds ids, and the plain name of each code ("cudaMemcpy_v3020" -> "cudaMemcpy")."""
    if not len(name_ids):
        return np.empty(0, dtype=np.int64), ()
    low = int(name_ids.min())
    present = np.flatnonzero(np.bincount(name_ids - low)) + low  # ids are small: no hashing, no sort
    found = string_values(trace.local_conn(), present)
    code_of = np.zeros(int(present[-1]) - low + 1, dtype=np.int64)
    code_of[present - low] = np.arange(len(present))
    return code_of[name_ids - low], tuple(_VERSIONED.sub("", found.get(int(i), "")) for i in present)


def calls_of(trace: Trace, table: str, gtid: int, span: tuple[int, int],
             sample: Sample | None = None) -> tuple[Calls, np.ndarray | None]:
    """The thread's calls of the table (those the sample reads), and their stacks' callchainId where the table has
    them."""
    return calls_from(trace, trace.calls_of_thread(table, gtid, span), span, sample)


def calls_from(trace: Trace, columns: Columns | None, span: tuple[int, int],
               sample: Sample | None = None) -> tuple[Calls, np.ndarray | None]:
    if columns is None or not len(columns["start"]):
        return _empty(), None
    if sample is not None and sample.every > 1:  # one thread's outermost calls: they never overlap
        index = sampled(columns["start"], columns["end"], sample, disjoint=True)
        columns = {name: values[index] for name, values in columns.items()}
    codes, names = _coded(trace, columns["nameId"])
    return (Calls(codes, np.clip(columns["start"], *span), np.clip(columns["end"], *span), names,
                  columns.get("corr")), columns.get("chain"))


def _joined(parts: list[Calls]) -> Calls:
    """Calls of several tables as one set, their codes kept apart."""
    codes, offset = [], 0
    for part in parts:
        codes.append(part.codes + offset)
        offset += len(part.names)
    return Calls(np.concatenate(codes), np.concatenate([p.starts for p in parts]),
                 np.concatenate([p.ends for p in parts]), tuple(n for p in parts for n in p.names))


@dataclass(frozen=True)
class Gathered:
    """The thread's time, and what the evidence names: the OS calls (each with the share it counts for, and the
    thread whose call woke it), the GPU and driver calls, the GPU's recorded work, the software renderer."""
    time: ThreadTime
    os_calls: Calls
    kinds: np.ndarray             # per OS call: SLEEP, DISPLAY, THREADS, IO or NOT_BLOCKING
    wakers: np.ndarray            # per OS call: the globalTid whose call woke it, 0 when none did
    api_calls: Calls
    recorded_gpu: Spans           # the GPU work nsys recorded (without a software renderer's threads)
    renderer_threads: tuple[str, ...]
    has_display: bool
    wait_samples: int             # the thread's samples inside a function that waits for the GPU
    life: tuple[int, int]         # the part of the span the thread was seen in (it may start late, end early)
    sample: Sample                # what of it the attribution reads
    # with a software renderer, the process's other busiest threads on a CPU (context switches): who ran while the
    # thread waited for the renderer (Mesa's compute threads have no name)
    beside: dict[int, Spans] = field(default_factory=dict)


def display_in_capture(trace: Trace) -> bool:
    """Whether the captured app talks to a display server: a GLX call, a display library on a stack, or DISPLAY or
    WAYLAND_DISPLAY in the environment the capture ran in."""
    conn = trace.local_conn()
    found = conn.execute("SELECT 1 FROM StringIds WHERE value GLOB 'glX*' OR value LIKE '%libX11%' "
                         "OR value LIKE '%libxcb%' OR value LIKE '%libwayland-client%' LIMIT 1").fetchone()
    if found:
        return True
    if not trace.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
        return False
    rows = conn.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'").fetchall()
    return any(re.search(r"(^|\x00)(WAYLAND_)?DISPLAY=\S", str(value or "")) for (value,) in rows)


def _display_stacks(trace: Trace, chains: np.ndarray) -> np.ndarray:
    """Which of the calls' stacks (callchainId, 0 for none) pass through a display library."""
    wanted = np.unique(chains[chains > 0])
    if not len(wanted) or not trace.has("OSRT_CALLCHAINS", "id", "module"):
        return np.zeros(len(chains), dtype=bool)
    conn = trace.local_conn()
    modules = [i for i, v in conn.execute("SELECT id, value FROM StringIds WHERE value LIKE '%lib%.so%'")
               if DISPLAY_LIBRARY.search(v)]
    if not modules:
        return np.zeros(len(chains), dtype=bool)
    hits: set[int] = set()
    for start in range(0, len(wanted), 500):
        part = [int(i) for i in wanted[start:start + 500]]
        rows = conn.execute(f"SELECT DISTINCT id FROM OSRT_CALLCHAINS WHERE id IN ({','.join('?' * len(part))}) "
                            f"AND module IN ({','.join(map(str, modules))})", part)
        hits.update(int(row[0]) for row in rows)
    return np.isin(chains, np.fromiter(hits, dtype=np.int64, count=len(hits)))


def _os_kinds(trace: Trace, calls: Calls, chains: np.ndarray | None, api: Spans, has_display: bool) -> np.ndarray:
    """The share each of the thread's OS runtime calls counts for."""
    kinds = np.array([_KIND_OF.get(name, NOT_BLOCKING) for name in calls.names] + [NOT_BLOCKING],
                     dtype=np.int64)[calls.codes]
    if has_display and len(kinds):
        inside = calls.named(SOCKET_CALLS) & api.covering(calls.starts)
        blocking = kinds != NOT_BLOCKING
        stacked = (_display_stacks(trace, np.where(blocking & ~inside, chains, 0)) if chains is not None
                   else np.zeros(len(kinds), dtype=bool))
        kinds = np.where(inside | (stacked & blocking), DISPLAY, kinds)
    return kinds


def _wakers(trace: Trace, calls: Calls, kinds: np.ndarray, gtid: int, span: tuple[int, int]) -> np.ndarray:
    """For each wait on another thread, the thread whose wake call (pthread_cond_signal...) came last before
    the wait ended, after it began; 0 where none did."""
    wakers = np.zeros(len(kinds), dtype=np.int64)
    waits = np.flatnonzero(kinds == THREADS)
    if not len(waits):
        return wakers
    found = trace.named_calls("OSRT_API", WAKE_CALLS, span)
    if found is None or not len(found["start"]):
        return wakers
    other = found["tid"] != gtid
    if not other.any():
        return wakers
    starts, tids = found["start"][other], found["tid"][other]
    order = np.argsort(starts, kind="stable")
    starts, tids = starts[order], tids[order]
    last = np.searchsorted(starts, calls.ends[waits], side="right") - 1
    ok = (last >= 0) & (starts[np.maximum(last, 0)] >= calls.starts[waits])
    wakers[waits[ok]] = tids[last[ok]]
    return wakers


# a call shorter than this is a launch, not a wait: its own work's overlap is left unread
OWN_WORK_MIN_NS = 20_000


def own_work_waits(calls: Calls, work: dict[str, Columns]) -> Spans:
    """Where a CUDA call lasts while the GPU runs the work that call queued (a synchronous copy, a launch that
    waits for room): the call waits for it, on a CPU or not. ``work``: the GPU's rows by table."""
    if calls.corr is None or not len(calls.corr):
        return Spans.of([], [])
    long = calls.ends - calls.starts >= OWN_WORK_MIN_NS
    order = np.argsort(calls.corr[long], kind="stable")  # the few long calls, by correlation id
    corr, starts, ends = calls.corr[long][order], calls.starts[long][order], calls.ends[long][order]
    lows, highs = [], []
    for table in OWN_WORK_TABLES:
        rows = work.get(table)
        if rows is None or "corr" not in rows or not len(corr):
            continue
        at = np.minimum(np.searchsorted(corr, rows["corr"]), len(corr) - 1)
        mine = np.flatnonzero(corr[at] == rows["corr"])
        first, last = rows["start"][mine], rows["start"][mine] + rows["dur"][mine]
        low, high = np.maximum(first, starts[at[mine]]), np.minimum(last, ends[at[mine]])
        lows.append(low[high > low])
        highs.append(high[high > low])
    if not lows:
        return Spans.of([], [])
    return Spans.of(np.concatenate(lows), np.concatenate(highs))


def gpu_work(trace: Trace, span: tuple[int, int], sample: Sample) -> dict[str, Columns]:
    """The GPU's rows (kernels, memory copies and sets, OpenGL workloads) overlapping the span, those the sample
    reads."""
    found = {}
    for table in GPU_WORK_TABLES:
        rows = trace.events(table)
        if rows is None:
            continue
        first, finish = rows["start"], rows["start"] + rows["dur"]
        if sample.every > 1:
            index = sampled(first, finish, sample)
            rows, first, finish = {k: v[index] for k, v in rows.items()}, first[index], finish[index]
        inside = (finish > span[0]) & (first < span[1])
        found[table] = {k: v[inside] for k, v in rows.items()}
    return found


def recorded_spans(work: dict[str, Columns], span: tuple[int, int]) -> Spans:
    """The GPU work as intervals, clipped to the span."""
    if not work:
        return Spans.of([], [])
    starts = np.concatenate([rows["start"] for rows in work.values()])
    ends = np.concatenate([rows["start"] + rows["dur"] for rows in work.values()])
    return Spans.of(np.clip(starts, *span), np.clip(ends, *span))


def gpu_work_count(trace: Trace, span: tuple[int, int]) -> int:
    """How many pieces of GPU work overlap the span."""
    return sum(int(((rows["start"] < span[1]) & (rows["start"] + rows["dur"] > span[0])).sum())
               for table in GPU_WORK_TABLES if (rows := trace.events(table)) is not None)


def within(spans: Spans, pieces: tuple[np.ndarray, np.ndarray]) -> Spans:
    """The spans that overlap one of the (sorted, disjoint) pieces."""
    lows, highs = pieces
    if not len(spans) or not len(lows):
        return Spans.of([], [])
    at = np.searchsorted(highs, spans.starts, side="right")  # the first piece ending after the span begins
    keep = (at < len(lows)) & (lows[np.minimum(at, len(lows) - 1)] < spans.ends)
    return Spans(spans.starts[keep], spans.ends[keep])


def renderer_busy(trace: Trace, tids: list[int], span: tuple[int, int], intervals: pd.DataFrame | None,
                  samples: Samples | None, period: float) -> Spans:
    """When a software renderer's threads worked: on a CPU, else outside their blocking calls, else around
    their samples."""
    if not tids:
        return Spans.of([], [])
    if intervals is not None and len(intervals):
        mine = intervals["globalTid"].isin(tids).to_numpy()
        return Spans.of(intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine])
    starts, ends = [], []
    for tid in tids:  # busy from the end of one blocking call to the start of the next
        calls, _ = calls_of(trace, "OSRT_API", tid, span)
        if not len(calls.starts):
            continue
        blocking = calls.named(BLOCKING_CALLS)
        order = np.argsort(calls.starts[blocking], kind="stable")
        waits_from, waits_to = calls.starts[blocking][order], calls.ends[blocking][order]
        starts.append(np.r_[calls.starts.min(), waits_to])
        ends.append(np.r_[waits_from, calls.ends.max()])
    if starts:
        return Spans.of(np.clip(np.concatenate(starts), *span), np.clip(np.concatenate(ends), *span))
    if samples is not None:
        times = samples.starts[np.isin(samples.tids, tids)]
        return Spans.of(times - int(period / 2), times + int(period / 2))
    return Spans.of([], [])


def _wait_samples(samples: Samples | None, gtid: int) -> int:
    """How many of the thread's samples are inside a function that waits for the GPU (WaitForCompletion...)."""
    if samples is None:
        return 0
    codes = [i for i, name in enumerate(samples.names) if WAIT_SYMBOL.search(name)]
    if not codes:
        return 0
    holding = np.unique(samples.chain_ids[np.isin(samples.symbols, codes)])
    return int(((samples.tids == gtid) & np.isin(samples.ids, holding)).sum())


def _picked(spans: Spans, sample: Sample, disjoint: bool = False) -> Spans:
    index = sampled(spans.starts, spans.ends, sample, disjoint)
    return spans if sample.every == 1 else Spans(spans.starts[index], spans.ends[index])


def gather(trace: Trace, gtid: int, span: tuple[int, int], intervals: pd.DataFrame | None,
           samples: Samples | None, names: dict[int, str], frames: Frames | None = None) -> Gathered:
    """The thread's time over the span, from every table the export has, for the part of it the attribution
    reads (attribution.sample_of)."""
    raw = {table: trace.calls_of_thread(table, gtid, span) for table in (*API_TABLES, "OSRT_API")}
    on_cpu = None
    if intervals is not None and len(intervals):
        mine = (intervals["globalTid"] == gtid).to_numpy()
        if mine.any():
            on_cpu = Spans.of(intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine])
    period = sampling_period_ns(samples) if samples is not None and len(samples.ids) else 1e6
    mine_samples = samples.starts[samples.tids == gtid] if samples is not None else None
    # a software renderer's threads are the GPU of a thread that makes OpenGL calls, in its own process
    gl = raw["OPENGL_API"]
    draws = gl is not None and len(gl["start"]) > 0
    renderer = sorted((t for t, n in names.items() if draws and pid_of(t) == pid_of(gtid)
                       and SOFTWARE_GPU_THREAD.match(n)), key=lambda t: (names[t], t))
    rendering = renderer_busy(trace, renderer, span, intervals, samples, period)
    calls_seen = [Spans(c["start"], c["end"]) for c in raw.values() if c is not None and len(c["start"])]
    life = _life(span, calls_seen + ([on_cpu] if on_cpu is not None else []), mine_samples, frames)
    count = sum(len(c) for c in calls_seen) + len(rendering) + len(on_cpu or ()) + gpu_work_count(trace, life)
    sample = sample_of(life, count, *((frames.starts, frames.ends) if frames is not None else ()))
    found = {table: calls_from(trace, raw[table], span, sample)[0] for table in API_TABLES}
    os_calls, chains = calls_from(trace, raw["OSRT_API"], span, sample)
    api = _joined(list(found.values()))
    waits = np.concatenate([calls.named(API_TABLES[table]) for table, calls in found.items()])
    work = gpu_work(trace, span, sample)
    own = own_work_waits(found["CUPTI_ACTIVITY_KIND_RUNTIME"], work)
    has_display = display_in_capture(trace)
    kinds = _os_kinds(trace, os_calls, chains, api.spans(), has_display)
    in_calls = Coverage(api.starts, api.ends).pieces() if len(api.starts) else (api.starts, api.ends)
    recorded = recorded_spans(work, span)

    def of_kind(kind: int) -> Spans:
        return os_calls.spans(kinds == kind)
    time = ThreadTime(sleep=of_kind(SLEEP), display=of_kind(DISPLAY), sync=of_kind(THREADS), io=of_kind(IO),
                      api=api.spans() | own, api_waits=api.spans(waits) | own,
                      gpu_busy=within(recorded | _picked(rendering, sample), in_calls),
                      on_cpu=None if on_cpu is None else _picked(on_cpu, sample, disjoint=True),
                      calls_traced=_osrt_rows(trace),
                      samples=mine_samples, sample_period_ns=period)
    beside = _threads_beside(intervals, gtid, names, sample) if renderer else {}
    return Gathered(time, os_calls, kinds, _wakers(trace, os_calls, kinds, gtid, span), api, recorded,
                    tuple(names[t] for t in renderer), has_display, _wait_samples(samples, gtid), life, sample, beside)


BESIDE = 8  # the process's threads busiest on a CPU that the evidence weighs


def _threads_beside(intervals: pd.DataFrame | None, gtid: int, names: dict[int, str],
                    sample: Sample) -> dict[int, Spans]:
    """The focus thread's process's other threads (nsys's left out), the busiest on a CPU first, their times on
    one, as the sample reads them."""
    if intervals is None or not len(intervals):
        return {}
    tids = intervals["globalTid"].to_numpy()
    mine = ((tids >> 24) & 0xFFFFFF) == pid_of(gtid)
    mine &= tids != gtid
    if not mine.any():
        return {}
    starts, ends, tids = intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine], tids[mine]
    busy = pd.Series(ends - starts).groupby(tids).sum().sort_values(ascending=False)
    chosen = [int(t) for t in busy.index if not names.get(int(t), "").startswith(PROFILER_THREAD_PREFIX)][:BESIDE]
    return {tid: _picked(Spans(starts[tids == tid], ends[tids == tid]), sample, disjoint=True) for tid in chosen}


def _life(span: tuple[int, int], seen: list[Spans], samples: np.ndarray | None,
          frames: Frames | None = None) -> tuple[int, int]:
    """The part of the span between the thread's first and last sign of life, the frames inside the span (which the
    thread's calls end) included whole."""
    firsts = [int(part.starts.min()) for part in seen if len(part)]
    lasts = [int(part.ends.max()) for part in seen if len(part)]
    if frames is not None:
        inside = (frames.starts >= span[0]) & (frames.ends <= span[1])
        if inside.any():
            firsts.append(int(frames.starts[inside].min()))
            lasts.append(int(frames.ends[inside].max()))
    if samples is not None and len(samples):
        firsts.append(int(samples.min()))
        lasts.append(int(samples.max()))
    if not firsts:
        return span
    return max(span[0], min(firsts)), min(span[1], max(lasts))


def _osrt_rows(trace: Trace) -> bool:
    rows = trace.events("OSRT_API")
    return rows is not None and len(rows["dur"]) > 0
