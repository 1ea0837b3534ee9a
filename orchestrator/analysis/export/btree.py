"""An export's integer columns straight from its table b-trees, several times faster than SQLite hands them over.

SQLite gives each value through its virtual machine (about 80 ns a value with group_concat and a parse,
30-40 ns even summed inside SQLite); the compiled `_btree` module walks the table's pages itself and
writes the columns into numpy arrays (a few ns a value), with the GIL released so the pieces of a table
decode on every core. It reads only what it understands: rows that fit their page and integer or NULL
values in the columns asked for, from a file no one is writing (no -wal or -journal beside it).
Everything else raises Refused, and the caller reads that table through SQLite as before: the numbers
are the same either way (tests/test_btree.py holds the two paths equal).

Without a C compiler at install time the module is absent, and every table goes through SQLite.
"""
from __future__ import annotations

import mmap
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .exprs import Raw

try:
    from . import _btree  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: SQLite reads every table
    _btree = None

MAGIC = b"SQLite format 3\x00"


class Refused(Exception):
    """The file or table is not one this reader handles: read it through SQLite."""


@dataclass(frozen=True)
class TableLayout:
    name: str
    columns: tuple[str, ...]   # in the order the records store them
    nullable: tuple[bool, ...]  # per column: not declared NOT NULL
    alias: int                 # the INTEGER PRIMARY KEY column (stored as NULL, its value is the rowid), or -1
    pages: np.ndarray          # leaf pages in rowid order
    counts: np.ndarray         # rows on each

    @property
    def rows(self) -> int:
        return int(self.counts.sum())

    def pieces(self, rows: int) -> list[tuple[int, int, int]]:
        """The leaf pages cut into runs of about ``rows`` rows: (first, end) indexes into pages, and the row
        number of the run's first row."""
        if not len(self.pages):
            return []
        ends = np.cumsum(self.counts)
        cuts = np.searchsorted(ends, np.arange(rows, int(ends[-1]), rows), side="left") + 1
        bounds = [0, *sorted(set(int(c) for c in cuts if 0 < c < len(self.pages))), len(self.pages)]
        return [(first, end, int(ends[first - 1]) if first else 0) for first, end in zip(bounds[:-1], bounds[1:])]


class BtreeFile:
    """One export file, mapped read-only."""

    def __init__(self, path: Path) -> None:
        if _btree is None:
            raise Refused("the b-tree reader is not built")
        for suffix in ("-wal", "-journal"):  # pages that may not be in the file yet
            if Path(f"{path}{suffix}").exists():
                raise Refused(f"{path.name}{suffix} exists")
        with path.open("rb") as file:
            try:
                self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError) as exc:  # an empty file cannot be mapped
                raise Refused(str(exc)) from None
        header = self._map[:100]
        if len(header) < 100 or header[:16] != MAGIC:
            self.close()
            raise Refused("not an SQLite 3 file")
        size = int.from_bytes(header[16:18], "big")
        self.page_size = 65536 if size == 1 else size
        self.usable = self.page_size - header[20]

    @classmethod
    def open(cls, path: Path | None) -> BtreeFile | None:
        if path is None:
            return None
        try:
            return cls(path)
        except (Refused, OSError):
            return None

    def close(self) -> None:
        self._map.close()

    def layout(self, conn: sqlite3.Connection, table: str) -> TableLayout:
        row = conn.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        if row is None or not row[0]:
            raise Refused(f"{table}: no such stored table")
        info = conn.execute(f'PRAGMA table_xinfo("{table}")').fetchall()
        if any(hidden for *_, hidden in info):  # generated or hidden columns are not stored as declared
            raise Refused(f"{table}: generated columns")
        keys = [(cid, kind) for cid, _, kind, _, _, pk, _ in info if pk]
        alias = keys[0][0] if len(keys) == 1 and str(keys[0][1]).upper() == "INTEGER" else -1
        try:
            pages, counts = _btree.leaves(self._map, self.page_size, self.usable, int(row[0]))
        except ValueError as exc:
            raise Refused(f"{table}: {exc}") from None
        names = tuple(name for _, name, *_ in info)
        nullable = tuple(not notnull for _, _, _, notnull, *_ in info)
        return TableLayout(table, names, nullable, alias, np.frombuffer(pages, dtype=np.int64),
                           np.frombuffer(counts, dtype=np.int64))

    def allocate(self, layout: TableLayout, columns: frozenset[str]) -> Raw:
        """Arrays for the columns' values of every row (and NULL flags, for the columns that may hold NULL)."""
        missing = columns.difference(layout.columns)
        if missing:
            raise Refused(f"{layout.name}: no column {sorted(missing)[0]}")
        rows = layout.rows
        raw: Raw = {}
        for name in columns:
            nullable = layout.nullable[layout.columns.index(name)]
            raw[name] = np.empty(rows, dtype=np.int64), np.zeros(rows, dtype=np.bool_) if nullable else None
        return raw

    def decode(self, layout: TableLayout, raw: Raw, piece: tuple[int, int, int]) -> None:
        """Decode the piece's pages into its rows of the arrays (from allocate)."""
        first, end, row = piece
        rows = int(layout.counts[first:end].sum())
        spec = sorted(((layout.columns.index(name), values[row:row + rows],
                        None if nulls is None else nulls[row:row + rows].view(np.uint8))
                       for name, (values, nulls) in raw.items()), key=lambda item: item[0])
        try:
            decoded = _btree.decode(self._map, self.page_size, self.usable, layout.pages[first:end], layout.alias, spec)
        except ValueError as exc:
            raise Refused(f"{layout.name}: {exc}") from None
        if decoded != rows:
            raise Refused(f"{layout.name}: {decoded} rows where the pages count {rows}")
        self._release(layout.pages[first:end])

    def _release(self, pages: np.ndarray) -> None:
        """Unmap the stretch of the file that held these pages: the page cache keeps them, and the process's
        memory does not grow by the whole file (a page still in use elsewhere is mapped again on its next read)."""
        if not len(pages) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start = (int(pages.min()) - 1) * self.page_size // mmap.PAGESIZE * mmap.PAGESIZE
        end = min(int(pages.max()) * self.page_size, len(self._map))
        self._map.madvise(mmap.MADV_DONTNEED, start, end - start)
