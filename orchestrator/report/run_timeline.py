"""The whole-run timeline's data, as the page embeds it: two compressed binaries the page's script reads with the
browser's own decompression (DecompressionStream), base64 in data blocks the page never runs. The overview is
all the first paint needs: the header, every row's levels of detail, and the events of the rows that have no
levels (few enough to draw one by one at any zoom); the detail holds the events of the rows with levels, read
after the first paint, for when the view closes in.

Layout (little-endian), after zlib. The overview: a uint32 length and that many bytes of JSON (the header:
origin, span, rows (each with its process's index), processes, names, frames, findings, board series, the number
of stack nodes), then the CPU samples' call stacks, each stored once as a tree
(analysis/analyzers/run_events.py's StackNodes: each node's parent plus one, 0 for an outermost frame, then each
node's name index, uint32), then per row, in the header's order, each
array padded to 4 bytes: its events when it has no levels (start deltas from the previous start, uint32;
durations, uint32; name indexes, uint32, or for CPU samples their stacks' nodes, whose frames name them), per
level its runs (start deltas in bins, uint32; lengths, uint32; values,
uint8), then its float64 escapes. Every uint32 array is byte-planed: the n values' lowest bytes, then their
second bytes, then their third, then their highest. The detail: per row with levels, its events and escapes as
above, then the flows (analysis/analyzers/flows.py; the header's "links" of them): the first API events' places
(deltas from the previous), each stretch's length less one, and the GPU events' places (steps from the previous,
zigzag: a step s is 2s, or -2s - 1 below zero), uint32. A delta or length that does not
fit 32 bits is 0xFFFFFFFF and its value is the next of the row's escapes in that binary (in the order met: starts,
durations, then each level's starts and lengths).
"""
from __future__ import annotations

import base64
import json
import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.analyzers.flows import flows
from ..analysis.analyzers.run_events import GPU_TABLES, LANE_SHIFT, EventRow, RunEvents
from ..analysis.export.names import pid_of, tid_of
from .levels import level_runs, level_widths, nesting

ESCAPE = 0xFFFFFFFF
GPU_KINDS = frozenset(GPU_TABLES)  # rows of a GPU lane, keyed by device and lane rather than by thread
COMPRESSION = 1  # zlib's fastest: the page's size barely changes at 6, the report's time doubles
ONE_PAGE_BYTES = 24 * 2**20  # a timeline past this (base64) goes to a page of its own beside the report


@dataclass(frozen=True)
class TimelineData:
    overview: str         # base64 of the zlib'd overview
    detail: str           # base64 of the zlib'd detail ("" when every row is in the overview)
    events: int
    rows: int
    bytes: int            # both binaries' size before compression
    compressed: int       # after
    kinds: tuple[str, ...] = ()  # the kinds of its rows, in the order rows first have them

    @property
    def size(self) -> int:
        """Characters in the page."""
        return len(self.overview) + len(self.detail)


def timeline_data(events: RunEvents, frames: list[tuple[int, int]], findings: list[dict[str, Any]],
                  board: dict[str, list[list[float]]] | None = None, renderer: str | None = None,
                  unit: str = "frame") -> TimelineData:
    """``frames``: (start, end) ns; ``findings``: {"title", "start_ns", "end_ns"}; ``board``: series name ->
    [[ns, value], ...] on the report's clock; ``renderer``: the software renderer whose work the OpenGL GPU rows
    are, on the CPU (None: a GPU's); ``unit``: what the frames are, "frame" or "iteration"."""
    rows = [row for row in events.rows if len(row.starts)]
    origin = min((int(row.starts[0]) for row in rows), default=0)
    last = max((int(row.ends.max()) for row in rows), default=origin)
    span = max(1, last - origin)
    stacks = events.stacks
    overview: list[bytes] = [_u32(stacks.parents + 1, []), _u32(stacks.frames, [])]
    detail: list[bytes] = []
    header_rows = []
    for row in rows:
        widths = level_widths(row.starts, span)
        escapes: list[float] = []
        if widths:
            detail_escapes: list[float] = []
            detail += [*_events(row, origin, detail_escapes), _f64(detail_escapes)]
        else:
            overview += _events(row, origin, escapes)
        levels = []
        for width in widths:
            runs = level_runs(row.starts, row.ends, origin, width, row.kind == "sample")
            overview += [_u32(np.diff(runs.starts, prepend=0), escapes), _u32(runs.lengths, escapes),
                         _padded(runs.values.tobytes())]
            levels.append({"width": width, "runs": len(runs.starts)})
        overview.append(_f64(escapes))
        header_rows.append({"group": row.group, "kind": row.kind, "count": len(row.starts), "escapes": len(escapes),
                            "levels": levels, "detail": bool(widths), "lanes": nesting(row.starts, row.ends),
                            "detail_escapes": len(detail_escapes) if widths else 0})
    processes, process_of = _processes(rows, renderer)
    for meta, row in zip(header_rows, rows):
        meta["process"] = process_of[row.group]
    links = flows(rows)
    if len(links):
        no_escapes: list[float] = []  # places and stretches are below 2**32: a capture never has that many events
        gpu_steps = np.diff(links.gpu, prepend=0)  # the GPU event mostly follows the previous link's: small steps
        detail += [_u32(np.diff(links.first, prepend=0), no_escapes), _u32(links.last - links.first, no_escapes),
                   _u32((gpu_steps << 1) ^ (gpu_steps >> 63), no_escapes)]  # zigzag: -1 -> 1, 1 -> 2
    header = {"origin": origin, "span": span, "rows": header_rows, "processes": processes, "names": events.names,
              "links": len(links),
              "stacks": len(stacks.parents), "renderer": renderer, "unit": unit,
              "frames": [[int(s) - origin, int(e) - int(s)] for s, e in frames],
              "findings": [{**f, "start_ns": int(f["start_ns"]) - origin, "end_ns": int(f["end_ns"]) - origin}
                           for f in findings],
              "board": {name: [[float(t) - origin, float(v)] for t, v in points if math.isfinite(float(v))]
                        for name, points in (board or {}).items()}}
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()  # the page's JSON.parse has no NaN
    head += b" " * (-len(head) % 4)  # JSON may end in blanks: the arrays after it start 4-byte aligned
    first = len(head).to_bytes(4, "little") + head + b"".join(overview)
    second = b"".join(detail)
    packed = [zlib.compress(binary, COMPRESSION) if binary else b"" for binary in (first, second)]
    overview_text, detail_text = (base64.b64encode(part).decode("ascii") for part in packed)
    return TimelineData(overview_text, detail_text, sum(len(row.starts) for row in rows), len(header_rows),
                        len(first) + len(second), sum(map(len, packed)), tuple(dict.fromkeys(row.kind for row in rows)))


def _processes(rows: list[EventRow], renderer: str | None) -> tuple[list[str], dict[str, int]]:
    """The processes the rows belong to, as the page heads them ("es2gears_x11 (pid 7160)", "GPU 0"), in order of
    their first row, and each row group's process among them."""
    main_threads = {pid_of(row.key): row.group.rsplit(" (", 1)[0] for row in rows
                    if row.kind not in GPU_KINDS and row.key >= 0 and tid_of(row.key) == pid_of(row.key)}
    labels: dict[str, int] = {}
    process_of: dict[str, int] = {}
    for row in rows:
        if row.kind in GPU_KINDS:
            device = row.key >> LANE_SHIFT
            label = f"{renderer} (on the CPU)" if renderer and row.kind == "opengl_gpu" else f"GPU {device}"
        else:
            pid = pid_of(row.key)
            label = f"{main_threads[pid]} (pid {pid})" if pid in main_threads else f"process {pid}"
        process_of[row.group] = labels.setdefault(label, len(labels))
    return list(labels), process_of


def _events(row: EventRow, origin: int, escapes: list[float]) -> list[bytes]:
    return [_u32(np.diff(row.starts - origin, prepend=0), escapes), _u32(np.maximum(row.ends - row.starts, 0), escapes),
            _u32(row.stacks if len(row.stacks) else row.names, [])]


def _f64(values: list[float]) -> bytes:
    return np.asarray(values, dtype="<f8").tobytes()


def _u32(values: np.ndarray, escapes: list[float]) -> bytes:
    """uint32s, those that do not fit as ESCAPE with their value added to ``escapes``, byte-planed: every value's
    lowest byte, then every second byte, and so on (zlib then finds the runs of zero high bytes: a fifth smaller
    on real captures, and no slower)."""
    values = np.asarray(values, dtype=np.int64)
    big = values >= ESCAPE
    if big.any():
        escapes += values[big].astype(np.float64).tolist()
        values = np.where(big, ESCAPE, values)
    return values.astype("<u4").view(np.uint8).reshape(-1, 4).T.tobytes()


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)
