"""Runs into the results database and the warehouse: one run as it ends, or every run of many folders (``results
import``): a run both already hold is passed over from its run.json alone, so an import stopped half way goes on
where it was, and a run is never stored twice in either."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..database.connection import Database
from ..documents.run import read_run_or_none
from ..documents.study import StudyDocument
from ..results.records import Provenance, RunRecord, run_record, runs_in, uid_of
from ..results.store import add_run, stored_uids
from .rows import run_tables
from .store import Warehouse, write_run


def store_record(warehouse: Warehouse, record: RunRecord, provenance: Provenance, run_dir: Path) -> bool:
    """The run's rows written; False when it was stored before."""
    return write_run(warehouse, record.uid, record.board_kind, record.started_at,
                     run_tables(record, provenance, run_dir))


PENDING_STAGES = ("capturing", "on_board")  # its report is still on the board: 'orchestrate fetch' brings it


def uid_and_settled(run_dir: Path) -> tuple[str | None, bool]:
    """The run's uid (records.uid_of), and whether it is as it stays: not a capture whose report is still on its
    board (its rows wait for the fetch, which keeps them: a run's rows are written once). One read of run.json."""
    run = read_run_or_none(run_dir)
    return uid_of(run), run is not None and run.stage not in PENDING_STAGES


def store_runs(warehouse: Warehouse, folder: Path, provenance: Provenance) -> int:
    """The rows of every run ``folder`` holds (a run, study or fleet folder) that the warehouse has not, once it
    is settled; how many."""
    stored = 0
    for run_dir, study in runs_in(folder):
        uid, settled = uid_and_settled(run_dir)
        if uid is not None and settled and not warehouse.is_stored(uid):
            record = run_record(run_dir, study)
            stored += record is not None and store_record(warehouse, record, provenance, run_dir)
    return stored


@dataclass
class Imported:
    """What an import did with one of the folders it was given."""
    folder: Path
    runs: int = 0         # run folders found
    stored: int = 0       # runs newly in the database
    already: int = 0      # runs the database held before
    rows: int = 0         # runs newly in the warehouse
    pending: int = 0      # runs whose report is still on the board (their rows wait for 'orchestrate fetch')
    nothing: int = 0      # run folders without a run to keep (it never reached its board)


def import_folders(database: Database, warehouse: Warehouse | None, folders: Sequence[Path], provenance: Provenance,
                   progress: Callable[[int, int], None] | None = None) -> list[Imported]:
    """Every run of the folders (run, study or CI job folders, or folders of them) into the database and the
    warehouse; ``progress(done, total)`` after each run. A database or warehouse that cannot be written stops it
    (the runs before are kept: run it again to go on)."""
    places = [(Imported(folder), runs_in(folder)) for folder in folders]
    total, done = sum(len(found) for _, found in places), 0
    known = stored_uids(database)
    for imported, found in places:
        imported.runs = len(found)
        for run_dir, study in found:
            _import_one(database, warehouse, run_dir, study, provenance, known, imported)
            done += 1
            if progress is not None:
                progress(done, total)
    return [imported for imported, _ in places]


def _import_one(database: Database, warehouse: Warehouse | None, run_dir: Path, study: StudyDocument | None,
                provenance: Provenance, known: set[str], imported: Imported) -> None:
    uid, settled = uid_and_settled(run_dir)
    if uid is None:
        imported.nothing += 1
        return
    in_warehouse = warehouse is None or warehouse.is_stored(uid)
    if uid in known and in_warehouse:
        imported.already += 1
        return
    record = run_record(run_dir, study)
    if record is None:
        imported.nothing += 1
        return
    if uid in known or not add_run(database, record, provenance):
        imported.already += 1
    else:
        imported.stored += 1
    known.add(uid)
    if warehouse is not None and not in_warehouse:
        if settled:
            imported.rows += store_record(warehouse, record, provenance, run_dir)
        else:
            imported.pending += 1
