"""The focus thread's calls as the attribution reads them, from one export: its GPU, driver and OS runtime calls
clipped to the span, each OS call by the share it counts for (sleep, display, threads, io, or not blocking), and the
thread whose call woke each wait on another thread.

What counts as the display server's traffic: a socket call (poll, writev, recvmsg...) made inside a GPU or
window-system call (eglSwapBuffers, glXSwapBuffers, glClear on an X11 window...), or with libX11, libxcb or
libwayland-client on its stack, in a capture of an app that has a display.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..export.calls import (
    DISPLAY_LIBRARY,
    OTHER_BLOCKING_CALLS,
    SLEEP_CALLS,
    SOCKET_CALLS,
    SYNC_CALLS,
    WAKE_CALLS,
    plain_name,
)
from ..export.names import string_values
from ..export.reads import Columns
from ..export.trace import Trace
from ..intervals.attribution import DISPLAY, IO, SLEEP, THREADS, Sample, Spans, sampled

NOT_BLOCKING = -1


_KIND_OF = {**{n: SLEEP for n in SLEEP_CALLS}, **{n: THREADS for n in SYNC_CALLS},
            **{n: IO for n in SOCKET_CALLS + OTHER_BLOCKING_CALLS}}




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

    def made_in(self, starts: np.ndarray) -> np.ndarray:
        """For each time (an OS call's start), the index of the call of these (sorted by start, one thread's: none
        inside another) it falls in, -1 for none."""
        at = np.searchsorted(self.starts, starts, side="right") - 1
        if not len(self.starts):
            return np.full(len(starts), -1, dtype=np.int64)
        return np.where((at >= 0) & (starts < self.ends[np.maximum(at, 0)]), at, -1)

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
    return code_of[name_ids - low], tuple(plain_name(found.get(int(i), "")) for i in present)


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


def joined(parts: list[Calls]) -> Calls:
    """Calls of several tables as one set, their codes kept apart."""
    codes, offset = [], 0
    for part in parts:
        codes.append(part.codes + offset)
        offset += len(part.names)
    return Calls(np.concatenate(codes), np.concatenate([p.starts for p in parts]),
                 np.concatenate([p.ends for p in parts]), tuple(n for p in parts for n in p.names))


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


def os_kinds(trace: Trace, calls: Calls, chains: np.ndarray | None, api: Spans, has_display: bool) -> np.ndarray:
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


def wakers(trace: Trace, calls: Calls, kinds: np.ndarray, gtid: int, span: tuple[int, int]) -> np.ndarray:
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
