"""What was captured: how long, with which nsys, on what platform, which processes."""
from __future__ import annotations

import sqlite3

from .names import pid_of, pid_sql, process_aliases, thread_names
from .reads import span_exprs
from .schema import KNOWN_TABLES, Schema
from .trace import Trace

PLATFORM_FIELDS = ("Hostname", "HardwarePlatform", "SoftwarePlatform", "OsDescription", "SoftwareReleaseVersion",
                   "CpuArchitecture", "CpuDescription", "CpuCores", "CpuSpeedMhz", "NvDriverVersion")


def capture_span(conn: sqlite3.Connection, schema: Schema, trace: Trace | None = None) -> tuple[int, int]:
    """Start and end of the whole capture on the trace's own clock (ns): every event, and the session span.

    nsys 2024.x writes events outside ANALYSIS_DETAILS' startTime..stopTime (CPU samples from before it),
    so the session span alone is not the whole capture; legacy (2020.x) exports have no such table at all.
    With ``trace``, the tables it reads give their span from that same read instead of a scan of their own.
    """
    lows, highs = [], []
    if schema.has("ANALYSIS_DETAILS", "startTime", "stopTime"):
        start, stop = conn.execute("SELECT min(startTime), max(stopTime) FROM ANALYSIS_DETAILS").fetchone()
        if start is not None and stop is not None and stop > start:
            lows.append(int(start))
            highs.append(int(stop))
    for table in schema.known_tables():
        known = trace.extent(table) if trace is not None else None
        if known is not None:
            lows.append(known[0])
            highs.append(known[1])
        elif (exprs := span_exprs(schema, table)) is not None:
            low, high = conn.execute(f'SELECT min({exprs[0].sql()}), max({exprs[1].sql()}) FROM "{table}"').fetchone()
            if low is not None:
                lows.append(int(low))
                highs.append(int(high if high is not None else low))
    if not lows:
        return 0, 0
    return min(lows), max(highs)


def platform(conn: sqlite3.Connection, schema: Schema) -> dict:
    facts: dict = {}
    if schema.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
        marks = ",".join("?" * len(PLATFORM_FIELDS))
        for name, value in conn.execute(f"SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN ({marks})",
                                        PLATFORM_FIELDS):
            facts.setdefault(name, value)
    gpus = gpu_names(conn, schema)
    if gpus:
        facts["gpus"] = gpus
    return facts


def gpu_names(conn: sqlite3.Connection, schema: Schema) -> list[str]:
    """GPU names in device order; legacy exports have a 5-column TARGET_INFO_GPU (no id) and TARGET_INFO_CUDA_GPU."""
    for table, order in (("TARGET_INFO_GPU", "id"), ("TARGET_INFO_GPU", "deviceId"),
                         ("TARGET_INFO_CUDA_GPU", "deviceId")):
        if schema.has(table, "name", order):
            names = [row[0] for row in conn.execute(f"SELECT name FROM {table} ORDER BY {order}") if row[0]]
            if names:
                return names
    return []


def cpu_count(conn: sqlite3.Connection, schema: Schema) -> int:
    try:
        return int(platform(conn, schema).get("CpuCores", 0))
    except ValueError:
        return 0


def traced_processes(conn: sqlite3.Connection, schema: Schema) -> list[dict]:
    """Processes nsys saw threads of, with their name (and every other name they had: 'aliases')."""
    aliases = process_aliases(conn, schema)
    names = {pid: _shown_name(found) for pid, found in aliases.items()}
    pids = {pid_of(gtid) for gtid in thread_names(conn, schema)}
    if not pids:
        for table in KNOWN_TABLES:
            if schema.has(table, "globalTid"):
                query = f'SELECT DISTINCT {pid_sql()} FROM "{table}"'
                pids |= {int(row[0]) for row in conn.execute(query)}
    return [{"pid": pid, "name": names.get(pid, ""), "aliases": aliases.get(pid, [])} for pid in sorted(pids) if pid]


def _shown_name(aliases: list[str]) -> str:
    """The name a process is shown by: its last executable (the main thread's name, after any exec), in full
    when another of its names is that same program's path (the kernel keeps 15 characters of it)."""
    last, *others = aliases
    return next((other for other in others if other.rsplit("/", 1)[-1].startswith(last[:15])), last)


def utc_epoch_ns(conn: sqlite3.Connection, schema: Schema) -> int | None:
    """The wall-clock time (UTC, ns since 1970) of the report's time 0: checked against an app that printed
    time.time_ns() beside NVTX ranges, which landed within 0.2 ms of it."""
    if not schema.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"):
        return None
    row = conn.execute("SELECT min(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    return int(row[0]) if row and isinstance(row[0], int) else None


def capture_section(conn: sqlite3.Connection, schema: Schema, trace: Trace | None = None) -> dict:
    start, end = capture_span(conn, schema, trace)
    return {"duration_ns": end - start, "start_ns": start, "end_ns": end, "utc_epoch_ns": utc_epoch_ns(conn, schema),
            "nsys_version": schema.exporter_version,
            "export_schema": "legacy" if schema.legacy else "current",
            "platform": platform(conn, schema), "processes": traced_processes(conn, schema),
            "tables": schema.known_tables()}
