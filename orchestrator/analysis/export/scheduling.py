"""Which cores are busy and which threads use them.

SCHED_EVENTS are points: a thread is on a CPU from its sched-in to its next sched-out. A thread already
running when tracing started shows up first as a sched-out (it ran since the window start); one still
running at the end has a sched-in without a sched-out (it runs to the window end). Reports recorded
without context-switch tracing get an estimate from CPU sampling: a sampled thread was running, so each
sample stands for one sampling period on its CPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .durations import argsort_pairs
from .names import ID_MASK, PID_SHIFT
from .sampling import Samples
from .trace import Trace


@dataclass(frozen=True)
class CpuUse:
    source: str                # "context switches" or "sampling (estimated)"
    cores: pd.DataFrame        # cpu, busy_pct
    threads: pd.DataFrame      # globalTid, cpu_ns, cpu_pct


def on_cpu_intervals(trace: Trace, window: tuple[int, int], pids: list[int] | None) -> pd.DataFrame | None:
    """(globalTid, cpu, start, end) on-CPU intervals clipped to the window."""
    ev = trace.events("SCHED_EVENTS")
    if ev is None:
        return None
    if pids:
        mine = np.isin((ev["tid"] >> PID_SHIFT) & ID_MASK, np.asarray(pids, dtype=np.int64))
        ev = {name: values[mine] for name, values in ev.items()}
        if not mine.any():
            return None
    lo, hi = window
    codes = pd.factorize(ev["tid"])[0].astype(np.int64)
    order = argsort_pairs(codes, ev["start"])
    tid, at, cpu, is_in = (ev[k][order] for k in ("tid", "start", "cpu", "in"))
    first = np.r_[True, tid[1:] != tid[:-1]]
    last = np.r_[tid[1:] != tid[:-1], True]
    # paired: a sched-in followed by the same thread's sched-out
    paired = (is_in[:-1] == 1) & (is_in[1:] == 0) & (tid[:-1] == tid[1:])
    starts, ends = [at[:-1][paired]], [at[1:][paired]]
    tids, cpus = [tid[:-1][paired]], [cpu[:-1][paired]]
    leading = first & (is_in == 0)                      # running since before the first event
    starts.append(np.full(leading.sum(), lo))
    ends.append(at[leading])
    tids.append(tid[leading])
    cpus.append(cpu[leading])
    trailing = last & (is_in == 1)                      # still running at the end
    starts.append(at[trailing])
    ends.append(np.full(trailing.sum(), hi))
    tids.append(tid[trailing])
    cpus.append(cpu[trailing])
    frame = pd.DataFrame({"globalTid": np.concatenate(tids), "cpu": np.concatenate(cpus),
                          "start": np.clip(np.concatenate(starts), lo, hi),
                          "end": np.clip(np.concatenate(ends), lo, hi)})
    return frame[frame["end"] > frame["start"]].reset_index(drop=True)


def cpu_use_from_sched(intervals: pd.DataFrame, window: tuple[int, int], cpu_count: int) -> CpuUse:
    length = window[1] - window[0]
    busy = (intervals["end"] - intervals["start"]).groupby(intervals["cpu"]).sum()
    per_thread = (intervals["end"] - intervals["start"]).groupby(intervals["globalTid"]).sum()
    return CpuUse("context switches", _cores(busy, length, cpu_count), _threads(per_thread, length))


def cpu_use_from_samples(samples: Samples, window: tuple[int, int], cpu_count: int) -> CpuUse:
    length = window[1] - window[0]
    period = sampling_period_ns(samples)
    counts = pd.Series(samples.cpus).value_counts()
    busy = counts[counts.index >= 0] * period
    per_thread = pd.Series(samples.tids).value_counts() * period
    return CpuUse(f"sampling (estimated, {period / 1e6:.3g} ms per sample)", _cores(busy, length, cpu_count),
                  _threads(per_thread, length))


# The sampling period is the gap between two samples of a thread that runs on: nsys samples a thread each period of
# its CPU clock (2022.4: every 1,000,000 CPU-clock ns by default, 2,000,000 with DWARF backtraces). A thread that also
# waits is sampled further apart, so the period is a low quantile of the gaps, not their median (which a thread on
# a CPU half the time would double).
PERIOD_QUANTILE = 10


def sampling_period_ns(samples: Samples) -> float:
    """The gap between two samples of one thread running on, from the gaps of every thread."""
    order = np.lexsort((samples.starts, samples.tids))
    tids, starts = samples.tids[order], samples.starts[order]
    gaps = np.diff(starts)[tids[1:] == tids[:-1]]
    return float(np.percentile(gaps, PERIOD_QUANTILE)) if len(gaps) else 1e6


def _cores(busy: pd.Series, length: int, cpu_count: int) -> pd.DataFrame:
    cpus = sorted(set(range(cpu_count)) | {int(c) for c in busy.index})
    return pd.DataFrame({"cpu": cpus, "busy_pct": [min(100.0, float(busy.get(c, 0)) * 100.0 / length) for c in cpus]})


def _threads(per_thread: pd.Series, length: int) -> pd.DataFrame:
    table = pd.DataFrame({"globalTid": per_thread.index.astype(np.int64), "cpu_ns": per_thread.to_numpy()})
    table["cpu_pct"] = np.minimum(100.0, table["cpu_ns"] * 100.0 / length)
    return table.sort_values("cpu_ns", ascending=False, kind="stable").reset_index(drop=True)
