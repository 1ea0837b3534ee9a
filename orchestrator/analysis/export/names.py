"""Ids become names last: StringIds, thread and process names."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from .schema import Schema

PID_SHIFT, ID_MASK = 24, 0xFFFFFF
PROFILER_THREAD_PREFIX = "[NSys"  # nsys's own threads inside the app: overhead, not the app's work


def pid_sql(column: str = "globalTid") -> str:
    """SQL for the process id inside a globalTid column."""
    return f"(({column} >> {PID_SHIFT}) & {ID_MASK})"


def pid_of(global_tid: int) -> int:
    return (int(global_tid) >> PID_SHIFT) & ID_MASK


def tid_of(global_tid: int) -> int:
    return int(global_tid) & ID_MASK


def string_values(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted({int(i) for i in ids})
    found: dict[int, str] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        marks = ",".join("?" * len(part))
        found.update(conn.execute(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", part).fetchall())
    return found


def thread_names(conn: sqlite3.Connection, schema: Schema) -> dict[int, str]:
    """globalTid -> thread name, where the export names the thread."""
    if not schema.has("ThreadNames"):
        return {}
    rows = conn.execute("SELECT t.globalTid, s.value FROM ThreadNames AS t JOIN StringIds AS s ON s.id = t.nameId")
    return {int(gtid): name for gtid, name in rows}


def process_aliases(conn: sqlite3.Connection, schema: Schema) -> dict[int, list[str]]:
    """pid -> every name the capture gives the process: its main thread's (the executable it ran last, as
    the kernel names it after an exec: 'es2gears_x11' where PROCESSES still says '/bin/sh'), then PROCESSES'."""
    names: dict[int, list[str]] = {}
    for gtid, name in thread_names(conn, schema).items():
        if tid_of(gtid) == pid_of(gtid) and name:
            names.setdefault(pid_of(gtid), []).append(name)
    if schema.has("PROCESSES", "pid", "name"):
        for pid, name in conn.execute("SELECT pid, name FROM PROCESSES WHERE name IS NOT NULL"):
            if name not in names.setdefault(int(pid), []):
                names[int(pid)].append(name)
    return names
