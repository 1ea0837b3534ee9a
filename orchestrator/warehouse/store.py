"""The warehouse on disk: every run's rows as Parquet under ROOT/table=NAME/board_kind=KIND/month=YYYY-MM/, a file
per run until ``compact`` merges a partition's files into one.

Writers and readers share ROOT/.lock (flock): a writer holds it exclusively while it renames its files into place and
marks the run stored (ROOT/stored/UID), so a query (which holds it shared) sees a run whole or not at all, and never
one run twice: a run marked stored is never written again, whoever imports it. Files are written under a name no
reader lists (.NAME.tmp) and renamed: nothing reads a half-written file."""
from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..database.connection import data_folder
from ..errors import UsageError
from .columns import SCHEMAS, TABLES

LOCK_FILE = ".lock"
STORED = "stored"
COMPRESSION = "zstd"


def default_root() -> Path:
    """$ORCHESTRATE_WAREHOUSE, else warehouse/ in the user's data folder (beside the default results database)."""
    given = os.environ.get("ORCHESTRATE_WAREHOUSE")
    if given:
        return Path(given).expanduser()
    return data_folder() / "warehouse"


@dataclass(frozen=True)
class Warehouse:
    root: Path

    def table_dir(self, table: str) -> Path:
        return self.root / f"table={table}"

    def partition(self, table: str, board_kind: str, started_at: datetime) -> Path:
        return self.table_dir(table) / f"board_kind={quote(board_kind, safe='')}" / f"month={started_at:%Y-%m}"

    def files(self, table: str) -> list[Path]:
        """The table's Parquet files (never one being written), in a stable order."""
        return sorted(self.table_dir(table).glob("board_kind=*/month=*/*.parquet"))

    def stored_mark(self, uid: str) -> Path:
        return self.root / STORED / uid[:2] / uid

    def is_stored(self, uid: str) -> bool:
        return self.stored_mark(uid).exists()

    def stored_count(self) -> int:
        folder = self.root / STORED
        return sum(1 for _ in folder.glob("*/*")) if folder.is_dir() else 0

    def board_kinds(self, table: str = "runs") -> list[str]:
        return sorted({unquote(p.name.split("=", 1)[1]) for p in self.table_dir(table).glob("board_kind=*")})

    @contextmanager
    def locked(self, exclusive: bool) -> Iterator[None]:
        """ROOT/.lock held: exclusively to change files, shared to read them (a warehouse this user may only read
        is read under its existing lock, opened read-only; one that was never written needs none)."""
        lock = self.root / LOCK_FILE
        try:
            if exclusive:
                self.root.mkdir(parents=True, exist_ok=True)
                handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            elif lock.exists():
                handle = os.open(lock, os.O_RDONLY)
            else:
                yield
                return
        except OSError as exc:
            raise UsageError(f"cannot use the warehouse {self.root}: {exc.strerror}",
                             "give --warehouse a folder you can write (or set $ORCHESTRATE_WAREHOUSE)") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(handle)  # closing lets the lock go


def open_warehouse(given: Path | str | None = None) -> Warehouse:
    return Warehouse(Path(given).expanduser() if given else default_root())


def write_run(warehouse: Warehouse, uid: str, board_kind: str, started_at: datetime,
              tables: dict[str, pa.Table]) -> bool:
    """The run's tables written (a table without rows has no file), then the run marked stored; False when it
    was stored before (nothing written). The files are made first under names no reader lists, then renamed into
    place and the run marked while the lock is held: a query sees the run whole or not at all."""
    if warehouse.is_stored(uid):
        return False
    placed: list[tuple[Path, Path]] = []
    try:
        for name, table in tables.items():
            if table.num_rows:
                folder = warehouse.partition(name, board_kind, started_at)
                folder.mkdir(parents=True, exist_ok=True)
                final = folder / f"{uid}.parquet"
                placed.append((_write_hidden(table, final), final))
        with warehouse.locked(exclusive=True):
            if warehouse.is_stored(uid):  # another writer stored it meanwhile
                return False
            for temporary, final in placed:
                temporary.replace(final)
            mark = warehouse.stored_mark(uid)
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()
    except OSError as exc:
        for temporary, final in placed:
            for path in (temporary, final):
                path.unlink(missing_ok=True)
        raise UsageError(f"cannot write to the warehouse {warehouse.root}: {exc.strerror}",
                         "check that it is writable and has room") from None
    finally:
        for temporary, _ in placed:
            temporary.unlink(missing_ok=True)  # the files of a run another writer stored first
    return True


def _write_hidden(table: pa.Table, final: Path) -> Path:
    temporary = final.with_name(f".{final.stem}.{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(table, temporary, compression=COMPRESSION)
    return temporary


@dataclass(frozen=True)
class Compacted:
    partitions: int     # partitions whose files were merged
    files_before: int
    files_after: int


def compact(warehouse: Warehouse, tables: tuple[str, ...] = TABLES) -> Compacted:
    """Each partition's files merged into one (sorted by start time), under the exclusive lock: a query sees the
    files before or after, never both. A run's rows are kept from one file only (merged files first): a compaction
    or a writer that died half way leaves no run counted twice once the next compaction has run. Leftovers of a
    writer that died (.tmp) go too."""
    merged = before = after = 0
    with warehouse.locked(exclusive=True):
        for table in tables:
            for folder in sorted(warehouse.table_dir(table).glob("board_kind=*/month=*")):
                for leftover in folder.glob(".*.tmp"):
                    leftover.unlink(missing_ok=True)
                files = sorted(folder.glob("*.parquet"), key=lambda f: (not f.name.startswith("part-"), f.name))
                before += len(files)
                if len(files) > 1:
                    whole = _one_copy_of_each_run([pq.read_table(f, schema=SCHEMAS[table]) for f in files])
                    whole = whole.sort_by([("started_at", "ascending"), ("run_uid", "ascending")])
                    final = folder / f"part-{uuid.uuid4().hex[:12]}.parquet"
                    _write_hidden(whole, final).replace(final)
                    for path in files:
                        path.unlink()
                    merged += 1
                after += min(len(files), 1)
    return Compacted(merged, before, after)


def _one_copy_of_each_run(parts: list[pa.Table]) -> pa.Table:
    """The files' rows, each run's from the first file that holds it."""
    seen: set[str] = set()
    kept = []
    for part in parts:
        uids = part.column("run_uid")
        if seen:
            part = part.filter(pc.invert(pc.is_in(uids, value_set=pa.array(sorted(seen), pa.string()))))
        seen.update(uids.unique().to_pylist())
        kept.append(part)
    return pa.concat_tables(kept)
