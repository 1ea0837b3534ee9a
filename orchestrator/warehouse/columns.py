"""The warehouse's tables and their columns, declared once: every table starts with the run's keys (which run,
where, on what board and commit, whether its figures count), then its own. Files of one table always have its
columns in this order and of these types, so a query reads thousands of files as one."""
from __future__ import annotations

import pyarrow as pa

from ..documents.shares import SHARES

KEYS = pa.schema([
    ("run_uid", pa.string()),          # the results database's runs.uid: the same run wherever it is imported from
    ("run_id", pa.string()),
    ("started_at", pa.timestamp("us", tz="UTC")),
    ("app", pa.string()),
    ("target", pa.string()),
    ("board_kind", pa.string()),
    ("jetpack", pa.string()),
    ("l4t", pa.string()),
    ("git_commit", pa.string()),
    ("git_branch", pa.string()),
    ("study", pa.string()),
    ("cell", pa.string()),             # the study cell's label ("" outside a study)
    ("valid", pa.bool_()),             # False: a flag makes its figures doubtful (throttled, clocks dropped...)
    ("flags", pa.string()),            # the validity flags' codes, comma-separated ("" when none)
])


def share_column(name: str) -> str:
    """A frame's time in one share (the focus thread waiting for the GPU...): 'share_gpu_ns'."""
    return f"share_{name}_ns"


OWN: dict[str, list[tuple[str, pa.DataType]]] = {
    # one row per run: where its folder was, its status and headline figures
    "runs": [("status", pa.string()), ("folder", pa.string()), ("kind_fingerprint", pa.string()),
             ("software_fingerprint", pa.string()), ("unit", pa.string()), ("frames", pa.int64()),
             ("warmup_frames", pa.int64()), ("steady_frames", pa.int64()), ("steady_mean_ms", pa.float64()),
             ("steady_p50_ms", pa.float64()), ("steady_p90_ms", pa.float64()), ("steady_p99_ms", pa.float64()),
             ("first_frame_ms", pa.float64()), ("verdict", pa.string()), ("top_function", pa.string()),
             ("nsys_version", pa.string())],
    # every figure the results database keeps of the run (the same names, units and direction)
    "metrics": [("name", pa.string()), ("value", pa.float64()), ("unit", pa.string()), ("better", pa.string())],
    # one row per frame (or iteration): its time, whether it is steady, its GPU time and its time per share
    "frames": [("frame", pa.int64()), ("start_ns", pa.int64()), ("ns", pa.int64()), ("steady", pa.bool_()),
               ("gpu_ns", pa.int64()), *((share_column(name), pa.int64()) for name in SHARES)],
    # the focus thread's time by what it waits for, over the window
    "shares": [("share", pa.string()), ("ns", pa.int64()), ("pct", pa.float64()), ("ms_per_frame", pa.float64()),
               ("frames", pa.int64()), ("thread", pa.string())],
    # each thread's time on a CPU over the window
    "threads": [("tid", pa.int64()), ("pid", pa.int64()), ("name", pa.string()), ("cpu_ns", pa.int64()),
                ("cpu_pct", pa.float64()), ("top_symbol", pa.string())],
    # the API tables as `nsys stats` reports them: calls of one name over the window (api: osrt, opengl, nvtx...)
    "api": [("api", pa.string()), ("name", pa.string()), ("calls", pa.int64()), ("total_ns", pa.int64()),
            ("avg_ns", pa.float64()), ("med_ns", pa.float64()), ("min_ns", pa.int64()), ("max_ns", pa.int64())],
    # each frame's calls and GPU work by name (kind: opengl, osrt, nvtx, cuda_api, cuda_kernel, memcpy, opengl_gpu):
    # the events that started in the frame, on any thread or GPU lane, from the run's export
    "frame_calls": [("frame", pa.int64()), ("kind", pa.string()), ("name", pa.string()), ("calls", pa.int64()),
                    ("total_ns", pa.int64())],
    # the GPU's work of each frame by kind (a queue's name): its time and how many pieces of work
    "gpu_work": [("frame", pa.int64()), ("kind", pa.string()), ("ns", pa.int64()), ("count", pa.int64())],
    # CUDA kernels by launch shape (gpukernsum)
    "kernels": [("function", pa.string()), ("grid", pa.string()), ("block", pa.string()), ("calls", pa.int64()),
                ("total_ns", pa.int64()), ("avg_ns", pa.float64()), ("med_ns", pa.float64()), ("min_ns", pa.int64()),
                ("max_ns", pa.int64())],
    # the CPU samples by function over the window: by their own samples (self) and with their callees (inclusive)
    "hotspots": [("view", pa.string()), ("rank", pa.int64()), ("symbol", pa.string()), ("module", pa.string()),
                 ("samples", pa.int64()), ("pct", pa.float64())],
    # the board's samples during the capture (tegrastats' series: clocks, temperatures, power)
    "board": [("series", pa.string()), ("clock", pa.string()), ("t_ns", pa.float64()), ("value", pa.float64())],
    # the app's own figures as its output parser read them: the summary (record "") and each record's
    "app_records": [("record", pa.string()), ("position", pa.int64()), ("name", pa.string()), ("value", pa.float64()),
                    ("unit", pa.string())],
}

SCHEMAS: dict[str, pa.Schema] = {name: pa.schema([*KEYS, *(pa.field(n, t) for n, t in own)])
                                 for name, own in OWN.items()}
TABLES = tuple(SCHEMAS)
