"""What was captured: how long, with which nsys, on what platform, which processes."""
from __future__ import annotations

import sqlite3

from .names import pid_of, pid_sql, process_names, thread_names
from .schema import KNOWN_TABLES, Schema

PLATFORM_FIELDS = ("Hostname", "HardwarePlatform", "SoftwarePlatform", "OsDescription", "SoftwareReleaseVersion",
                   "CpuArchitecture", "CpuDescription", "CpuCores", "CpuSpeedMhz", "NvDriverVersion")


def capture_span(conn: sqlite3.Connection, schema: Schema) -> tuple[int, int]:
    """Start and end of the capture on the trace's own clock (ns)."""
    if schema.has("ANALYSIS_DETAILS", "startTime", "stopTime"):
        start, stop = conn.execute("SELECT min(startTime), max(stopTime) FROM ANALYSIS_DETAILS").fetchone()
        if start is not None and stop is not None and stop > start:
            return int(start), int(stop)
    lows, highs = [], []
    for table in schema.known_tables():
        if schema.has(table, "start"):
            end = '"end"' if schema.has(table, "end") else "start"
            low, high = conn.execute(f'SELECT min(start), max({end}) FROM "{table}"').fetchone()
            lows.append(low)
            highs.append(high)
    return int(min(lows)), int(max(highs))


def platform(conn: sqlite3.Connection, schema: Schema) -> dict:
    facts: dict = {}
    if schema.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
        marks = ",".join("?" * len(PLATFORM_FIELDS))
        for name, value in conn.execute(f"SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN ({marks})",
                                        PLATFORM_FIELDS):
            facts.setdefault(name, value)
    if schema.has("TARGET_INFO_GPU", "name"):
        facts["gpus"] = [row[0] for row in conn.execute("SELECT name FROM TARGET_INFO_GPU ORDER BY id")]
    return facts


def cpu_count(conn: sqlite3.Connection, schema: Schema) -> int:
    try:
        return int(platform(conn, schema).get("CpuCores", 0))
    except ValueError:
        return 0


def traced_processes(conn: sqlite3.Connection, schema: Schema) -> list[dict]:
    """Processes nsys saw threads of, with their names."""
    names = process_names(conn, schema)
    pids = {pid_of(gtid) for gtid in thread_names(conn, schema)}
    if not pids:
        for table in KNOWN_TABLES:
            if schema.has(table, "globalTid"):
                query = f'SELECT DISTINCT {pid_sql()} FROM "{table}"'
                pids |= {int(row[0]) for row in conn.execute(query)}
    return [{"pid": pid, "name": names.get(pid, "")} for pid in sorted(pids) if pid]


def capture_section(conn: sqlite3.Connection, schema: Schema) -> dict:
    start, end = capture_span(conn, schema)
    return {"duration_ns": end - start, "start_ns": start, "end_ns": end, "nsys_version": schema.exporter_version,
            "platform": platform(conn, schema), "processes": traced_processes(conn, schema),
            "tables": schema.known_tables()}
