"""What an nsys SQLite export holds: which tables have rows, their columns, and the exporter's version.

Exports only create a table when it has rows, and columns differ between exporter versions (2020-2021
"beta" exports, 2022.x, 2023.x+), so every analyzer asks the schema before it writes SQL.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ReportError

# Tables an analyzer can use; an export with none of them is not something we can summarise.
KNOWN_TABLES = (
    "OSRT_API", "OPENGL_API", "OPENGL_WORKLOAD", "KHR_DEBUG_EVENTS", "NVTX_EVENTS", "COMPOSITE_EVENTS",
    "SAMPLING_CALLCHAINS", "SCHED_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
)
METADATA_TABLES = ("EXPORT_META_DATA", "META_DATA_EXPORT")


@dataclass(frozen=True)
class Schema:
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)  # only tables that have rows
    exporter_version: str | None = None
    cuda_processes: int | None = None  # processes with CUDA streams (None: the export does not say)

    def has(self, table: str, *columns: str) -> bool:
        present = self.columns.get(table)
        return present is not None and all(c in present for c in columns)

    @property
    def legacy(self) -> bool:
        """The 2020.x exporter's schema: no ENUM_* tables, no ANALYSIS_DETAILS (so no session span)."""
        return "ANALYSIS_DETAILS" not in self.columns and not any(t.startswith("ENUM_") for t in self.columns)

    def known_tables(self) -> list[str]:
        return [t for t in KNOWN_TABLES if t in self.columns]


def open_export(path: Path) -> sqlite3.Connection:
    """Open an export read-only; a file that is not SQLite (or is cut short) is a ReportError."""
    if path.is_dir():
        raise ReportError(f"{path} is a folder, not a report", "give the report file, or a run folder")
    if not path.is_file():
        raise ReportError(f"{path}: no such file", "give the path of a .sqlite, .nsys-rep or .qdrep report")
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(b"SQLite format 3\x00"):
        raise ReportError(f"{path} is not an SQLite file",
                          "give an export made by 'nsys export --type sqlite', or the .nsys-rep itself")
    if len(header) < 100 or path.stat().st_size < _declared_size(header):
        raise ReportError(f"{path} is truncated ({path.stat().st_size} bytes, the file says "
                          f"{_declared_size(header)})", "copy or export it again: 'nsys export --type sqlite'")
    try:
        conn = connect(path)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{path} is damaged or truncated ({exc})",
                          "export it again from the .nsys-rep with 'nsys export --type sqlite'") from None
    return conn


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    return conn


def _declared_size(header: bytes) -> int:
    """Page size x page count from the SQLite header (0 when the count is not trustworthy)."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the count is only valid when written by a recent SQLite
    return page_size * pages if valid else 0


def probe(conn: sqlite3.Connection, source: str = "the export") -> Schema:
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = {}
        for name in names:
            if conn.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone() is None:
                continue
            columns[name] = tuple(row[1] for row in conn.execute(f'PRAGMA table_info("{name}")'))
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{source} is damaged or truncated ({exc})",
                          "export it again from the .nsys-rep with 'nsys export --type sqlite'") from None
    schema = Schema(columns=columns, exporter_version=_exporter_version(conn, columns),
                    cuda_processes=_cuda_processes(conn, columns))
    if not schema.known_tables():
        raise ReportError(f"{source} holds no trace events ({len(names)} tables, none with OS runtime, OpenGL, "
                          "NVTX, CUDA, scheduling or sampling rows): an empty capture",
                          "profile again with traces on (e.g. --trace osrt,nvtx --sample cpu) while the app runs")
    return schema


def _cuda_processes(conn: sqlite3.Connection, columns: dict[str, tuple[str, ...]]) -> int | None:
    """How many processes have CUDA streams, from the export's small stream table (None: it has none)."""
    if "processId" not in columns.get("TARGET_INFO_CUDA_STREAM", ()):
        return None
    return int(conn.execute("SELECT count(DISTINCT processId) FROM TARGET_INFO_CUDA_STREAM").fetchone()[0])


def _exporter_version(conn: sqlite3.Connection, columns: dict[str, tuple[str, ...]]) -> str | None:
    for table in METADATA_TABLES:
        if table in columns:
            row = conn.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()
            if row:
                return str(row[0])
    return None
