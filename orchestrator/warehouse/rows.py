"""One run's rows of every warehouse table, from its folder's documents (run.json's record, summary.json, the app's
output) and, for each frame's calls, its export. Each table's rows carry the run's keys."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from ..analysis.analyzers.frames import first_steady_index
from ..documents.shares import SHARES
from ..documents.summary import Summary, read_summary
from ..errors import ParseError, UsageError
from ..parsers import parse
from ..results.records import Provenance, RunRecord
from .columns import KEYS, OWN, SCHEMAS, share_column
from .frame_calls import frame_calls

API_TABLES = ("osrt", "opengl", "opengl_gpu", "nvtx", "khr_debug", "cuda_api", "memcpy")
APP_OUTPUT = ("app.stdout.log", "app.stderr.log")


def run_keys(record: RunRecord, provenance: Provenance) -> dict[str, Any]:
    return {"run_uid": record.uid, "run_id": record.run_id, "started_at": record.started_at, "app": record.app,
            "target": record.target, "board_kind": record.board_kind, "jetpack": record.jetpack, "l4t": record.l4t,
            "git_commit": provenance.commit, "git_branch": provenance.branch, "study": record.study,
            "cell": record.cell, "valid": record.valid, "flags": ",".join(flag.code for flag in record.flags)}


def run_tables(record: RunRecord, provenance: Provenance, run_dir: Path) -> dict[str, pa.Table]:
    """Every table's rows of the run (a table the run has nothing for has no rows)."""
    summary = _summary(run_dir)
    own: dict[str, list[dict[str, Any]]] = {
        "runs": [_run_row(record, summary)],
        "metrics": [{"name": name, "value": m.value, "unit": m.unit, "better": m.better}
                    for name, m in record.metrics.items()],
        "frames": _frames(summary), "frame_calls": _frame_calls(run_dir, summary), "shares": _shares(summary),
        "threads": _threads(summary), "api": _api(summary),
        "gpu_work": _gpu_work(summary), "kernels": _kernels(summary), "hotspots": _hotspots(summary),
        "board": _board(summary), "app_records": _app_records(run_dir, record.parser)}
    keys = run_keys(record, provenance)
    return {name: _table(name, keys, rows) for name, rows in own.items()}


def _table(name: str, keys: dict[str, Any], rows: list[dict[str, Any]]) -> pa.Table:
    """The rows as columns in the table's order, each key repeated."""
    columns: dict[str, list[Any]] = {field: [keys[field]] * len(rows) for field in KEYS.names}
    for field, _ in OWN[name]:
        columns[field] = [row.get(field) for row in rows]
    return pa.Table.from_pydict(columns, schema=SCHEMAS[name])


def _summary(run_dir: Path) -> Summary:
    try:
        return read_summary(run_dir) or Summary()
    except UsageError:  # a damaged summary.json: the run keeps its keys and figures, no rows of it
        return Summary()


def _run_row(record: RunRecord, summary: Summary) -> dict[str, Any]:
    frames, steady = summary.frames, summary.steady
    return {"status": record.status, "folder": record.folder, "kind_fingerprint": record.kind_fingerprint,
            "software_fingerprint": record.software_fingerprint, "unit": summary.unit,
            "frames": frames.count if frames else None, "warmup_frames": frames.warmup.frames if frames else None,
            "steady_frames": steady.count if steady else None,
            **{f"steady_{stat}_ms": getattr(steady, f"{stat}_ns") / 1e6 if steady else None
               for stat in ("mean", "p50", "p90", "p99")},
            "first_frame_ms": summary.first_frame_ns / 1e6 if summary.first_frame_ns is not None else None,
            "verdict": summary.verdict_kind, "top_function": summary.top_function,
            "nsys_version": summary.capture.nsys_version}


def _frames(summary: Summary) -> list[dict[str, Any]]:
    """Each frame: its time, start, whether it is steady (the analysis's steady frames: after frame 0 and the
    warm-up), its GPU time and shares (of the frames the attribution read: every k-th of the window's, from its
    first)."""
    frames = summary.frames
    if frames is None:
        return []
    times, starts = frames.per_frame_ns, frames.frame_starts_ns
    first = first_steady_index(len(times), summary.warmup_frames)
    rows = [{"frame": index, "ns": ns, "start_ns": starts[index] if index < len(starts) else None,
             "steady": index >= first} for index, ns in enumerate(times)]
    gpu = summary.gpu_frames
    if gpu is not None:
        for index, ns in enumerate(gpu.per_frame_ns):
            if index < len(rows):
                rows[index]["gpu_ns"] = ns
    found = summary.attribution
    if found is not None and found.first_frame is not None and found.frames is not None:
        for name in SHARES:
            for offset, ns in enumerate(found.share(name).per_frame_ns):
                index = found.first_frame + offset * found.frames.every
                if index < len(rows):
                    rows[index][share_column(name)] = ns
    return rows


def _frame_calls(run_dir: Path, summary: Summary) -> list[dict[str, Any]]:
    frames = summary.frames
    return frame_calls(run_dir, list(frames.frame_starts_ns), list(frames.per_frame_ns)) if frames else []


def _shares(summary: Summary) -> list[dict[str, Any]]:
    found = summary.attribution
    if found is None:
        return []
    return [{"share": name, "ns": share.ns, "pct": share.pct, "ms_per_frame": found.ms_per_frame(name),
             "frames": found.frame_count, "thread": found.thread}
            for name, share in ((name, found.share(name)) for name in SHARES) if name in found.shares]


def _threads(summary: Summary) -> list[dict[str, Any]]:
    return [{"tid": t.tid, "pid": t.pid, "name": t.name, "cpu_ns": t.cpu_ns, "cpu_pct": t.cpu_pct,
             "top_symbol": t.top_symbol} for t in summary.threads or []]


def _api(summary: Summary) -> list[dict[str, Any]]:
    return [{"api": table, "name": row.name, "calls": row.calls, "total_ns": row.total_ns, "avg_ns": row.avg_ns,
             "med_ns": row.med_ns, "min_ns": row.min_ns, "max_ns": row.max_ns}
            for table in API_TABLES for row in summary.api_rows(table) or []]


def _gpu_work(summary: Summary) -> list[dict[str, Any]]:
    gpu = summary.gpu_frames
    if gpu is None:
        return []
    return [{"frame": index, "kind": kind.name, "ns": ns,
             "count": kind.count_per_frame[index] if index < len(kind.count_per_frame) else None}
            for kind in gpu.kinds for index, ns in enumerate(kind.per_frame_ns)]


def _kernels(summary: Summary) -> list[dict[str, Any]]:
    return [{"function": row.function or row.name, "grid": row.grid, "block": row.block, "calls": row.calls,
             "total_ns": row.total_ns, "avg_ns": row.avg_ns, "med_ns": row.med_ns, "min_ns": row.min_ns,
             "max_ns": row.max_ns} for row in summary.cuda_kernels or []]


def _hotspots(summary: Summary) -> list[dict[str, Any]]:
    hot = summary.hotspots
    if hot is None:
        return []
    return [{"view": view, "rank": rank, "symbol": f.symbol, "module": f.module, "samples": f.samples, "pct": f.pct}
            for view, found in (("self", hot.self_), ("inclusive", hot.inclusive))
            for rank, f in enumerate(found, 1)]


def _board(summary: Summary) -> list[dict[str, Any]]:
    """Each series' points: on the report's clock (ns) when the export says when its time 0 was, else from the
    first sample (the seconds written as ns)."""
    board = summary.board
    if board is None:
        return []
    series, clock, scale = (board.series_ns, "report", 1.0) if board.series_ns else \
        (board.series_s or {}, "first_sample", 1e9)
    return [{"series": name, "clock": clock, "t_ns": float(t) * scale, "value": float(value)}
            for name, points in series.items() for t, value in points]


def _app_records(run_dir: Path, parser: str | None) -> list[dict[str, Any]]:
    """What the app's output parser read: its summary figures (record ""), then each record's, in order."""
    if not parser:
        return []
    text = "".join((run_dir / name).read_text(errors="replace") for name in APP_OUTPUT if (run_dir / name).is_file())
    try:
        parsed = parse(parser, text, "the app's output")
    except ParseError:
        return []
    rows = [{"record": "", "position": 0, "name": name, "value": f.value, "unit": f.unit}
            for name, f in parsed.figures.items()]
    rows += [{"record": record.label, "position": position, "name": name, "value": f.value, "unit": f.unit}
             for position, record in enumerate(parsed.records, 1) for name, f in record.figures.items()]
    return rows
