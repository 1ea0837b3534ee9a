"""Frames: what delimits them, their durations, warm-up and the steady state.

An OpenGL frame ends when the app's buffer swap returns: frame k spans the end of swap k-1 to the end of
swap k, and the first frame starts at the thread's first OpenGL call (so shader compilation and first
uploads land in it, like the "first inference" of a benchmark). Apps that draw nothing delimit frames
with glFinish. An NVTX frame is one instance of a named range (push/pop or start/end). A CUDA or TensorRT run
without frames has iterations instead (iterations.py), read the same way.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from ..export.bulk import int_columns
from ..export.calls import SWAP_CALLS
from ..export.names import pid_sql
from ..export.schema import Schema
from ..export.trace import Trace
from .iterations import cuda_iterations

FINISH_CALL = "glFinish"
DEFAULT_RANGE = "frame"
NVTX_RANGE_TYPES = (59, 60, 70, 71)
WARMUP_FACTOR = 1.5  # a leading frame this much slower than the steady median is still warming up
WARMUP_MAX_SHARE = 0.25


def warmup_rule(unit: str = "frame") -> str:
    """How warm-up is told from the steady state, in the run's unit ("frame" or "iteration")."""
    return (f"{unit} 0 is reported apart as the first {unit}; the {unit}s right after it that take more than "
            f"{WARMUP_FACTOR:g}x the median of the second half of the run are warm-up (at most "
            f"{WARMUP_MAX_SHARE:.0%} of the {unit}s); all later {unit}s are steady")


@dataclass(frozen=True)
class Frames:
    source: str               # eglSwapBuffers, glXSwapBuffers, glFinish or the NVTX range name
    kind: str                 # "opengl" or "nvtx"
    global_tid: int           # the thread that delimits them
    starts: np.ndarray
    ends: np.ndarray
    warmup: int               # frames 1..warmup are warm-up; frame 0 is the first frame
    rule: str = ""            # which rule found them, in words
    unit: str = "frame"       # what one is: a "frame", or an "iteration" of a CUDA or TensorRT run

    @property
    def durations(self) -> np.ndarray:
        return self.ends - self.starts

    @property
    def steady_first(self) -> int:
        return first_steady_index(len(self.starts), self.warmup)

    def span(self, index: int) -> tuple[int, int]:
        return int(self.starts[index]), int(self.ends[index])

    def steady_span(self) -> tuple[int, int]:
        return int(self.starts[self.steady_first]), int(self.ends[-1])

    def count_within(self, span: tuple[int, int]) -> int:
        """How many frames lie wholly inside the span."""
        return int(((self.starts >= span[0]) & (self.ends <= span[1])).sum())


def first_steady_index(count: int, warmup: int) -> int:
    """Index of the first steady frame: after frame 0 and the warm-up, but never past the last frame."""
    return min(1 + warmup, count - 1) if count > 1 else 0


def find_frames(trace: Trace, pids: list[int] | None, delimiter: str | None = None) -> Frames | None:
    """Frames from the given delimiter (an OpenGL call or an NVTX range name), else from OpenGL swaps, else
    from an NVTX range called 'frame', else from glFinish (an app that marks its frames says so more surely
    than one that waits for the GPU: a GL delegate waits many times while it loads), else a CUDA or TensorRT
    run's iterations."""
    conn, schema = trace.conn, trace.schema
    if delimiter in (*SWAP_CALLS, FINISH_CALL):
        return opengl_frames(conn, schema, pids, (delimiter,))
    if delimiter:
        return nvtx_frames(conn, schema, delimiter, pids)
    found = (opengl_frames(conn, schema, pids, SWAP_CALLS) or nvtx_frames(conn, schema, DEFAULT_RANGE, pids)
             or opengl_frames(conn, schema, pids, (FINISH_CALL,)))
    if found is not None:
        return found
    cuda = cuda_iterations(trace, pids)
    if cuda is None:
        return None
    return Frames(cuda.source, cuda.kind, cuda.thread, cuda.starts, cuda.ends, warmup_frames(cuda.ends - cuda.starts),
                  cuda.rule, "iteration")


def _pid_filter(pids: list[int] | None) -> str:
    if not pids:
        return "1"
    return f"{pid_sql()} IN ({','.join(str(int(p)) for p in pids)})"


def opengl_frames(conn: sqlite3.Connection, schema: Schema, pids: list[int] | None,
                  calls: tuple[str, ...] | None = None) -> Frames | None:
    if not schema.has("OPENGL_API", "start", "end", "nameId", "globalTid"):
        return None
    for names in ((calls,) if calls else (SWAP_CALLS, (FINISH_CALL,))):
        marks = ",".join("?" * len(names))
        ids = [row[0] for row in conn.execute(f"SELECT id FROM StringIds WHERE value IN ({marks})", names)]
        if not ids:
            continue
        where = f'nameId IN ({",".join(map(str, ids))}) AND "end" IS NOT NULL AND {_pid_filter(pids)}'
        gl_calls = int_columns(conn, "OPENGL_API", {"tid": "globalTid", "end": '"end"', "name": "nameId"}, where)
        if not len(gl_calls["end"]):
            continue
        tids, counts = np.unique(gl_calls["tid"], return_counts=True)
        thread = int(tids[np.argmax(counts)])
        mine = gl_calls["tid"] == thread
        ends = np.sort(gl_calls["end"][mine])
        first_call = conn.execute("SELECT min(start) FROM OPENGL_API WHERE globalTid = ?", (thread,)).fetchone()[0]
        starts = np.r_[first_call, ends[:-1]].astype(np.int64)
        values, hits = np.unique(gl_calls["name"][mine], return_counts=True)
        source = conn.execute("SELECT value FROM StringIds WHERE id = ?", (int(values[hits.argmax()]),)).fetchone()[0]
        rule = "glFinish (the app swaps no buffers)" if names == (FINISH_CALL,) else "the app's buffer swaps"
        return _with_warmup(source, "opengl", thread, starts, ends, rule)
    return None


def nvtx_frames(conn: sqlite3.Connection, schema: Schema, range_name: str,
                pids: list[int] | None) -> Frames | None:
    if not schema.has("NVTX_EVENTS", "start", "end", "eventType", "globalTid"):
        return None
    named = ["text = :name"] if schema.has("NVTX_EVENTS", "text") else []
    if schema.has("NVTX_EVENTS", "textId"):
        named.append("textId IN (SELECT id FROM StringIds WHERE value = :name)")
    if not named:
        return None
    rows = conn.execute(
        f'SELECT start, "end", globalTid FROM NVTX_EVENTS WHERE eventType IN ({",".join(map(str, NVTX_RANGE_TYPES))})'
        f' AND "end" IS NOT NULL AND {_pid_filter(pids)} AND ({" OR ".join(named)}) ORDER BY start',
        {"name": range_name}).fetchall()
    if not rows:
        return None
    table = np.array(rows, dtype=np.int64)
    tids, counts = np.unique(table[:, 2], return_counts=True)
    thread = int(tids[np.argmax(counts)])
    return _with_warmup(range_name, "nvtx", thread, table[:, 0], table[:, 1], f"the NVTX range '{range_name}'")


def _with_warmup(source: str, kind: str, thread: int, starts: np.ndarray, ends: np.ndarray, rule: str) -> Frames:
    return Frames(source, kind, thread, starts, ends, warmup_frames(ends - starts), rule)


def warmup_frames(durations: np.ndarray) -> int:
    """How many frames after the first still run slower than the steady state (see warmup_rule)."""
    if len(durations) < 4:
        return 0
    reference = float(np.median(durations[len(durations) // 2:]))
    limit = int(len(durations) * WARMUP_MAX_SHARE)
    count = 0
    for duration in durations[1:1 + limit]:
        if duration <= WARMUP_FACTOR * reference:
            break
        count += 1
    return count


def steady_stats(frames: Frames) -> dict:
    steady = frames.durations[frames.steady_first:] if len(frames.starts) > 1 else frames.durations
    p50, p90, p99 = np.percentile(steady, [50, 90, 99])
    return {"count": int(len(steady)), "mean_ns": float(steady.mean()), "p50_ns": float(p50), "p90_ns": float(p90),
            "p99_ns": float(p99), "max_ns": int(steady.max()), "min_ns": int(steady.min())}
