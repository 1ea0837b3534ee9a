"""The warehouse: real run folders (an es2gears run, a posebench study, a fleet, from three releases: tests/data's
written-before-* folders) imported as Parquet and queried with DuckDB give each run's own figures back; a run is
stored once however often and by however many writers it is imported; compaction changes no answer; DuckDB loads no
extension; a SQL error is one line that names the views."""
from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import DATA, run_cli

from orchestrator.database.connection import open_database
from orchestrator.documents.summary import read_summary
from orchestrator.errors import UsageError
from orchestrator.results.records import Provenance, run_record, runs_in
from orchestrator.warehouse.columns import SCHEMAS, TABLES
from orchestrator.warehouse.importing import import_folders, store_runs
from orchestrator.warehouse.query import VIEWS, run_query
from orchestrator.warehouse.store import compact, open_warehouse

OLD = sorted(p for p in DATA.glob("written-before-*/*") if p.is_dir())
RUN_FOLDERS = [run_dir for folder in OLD for run_dir, _ in runs_in(folder)]
STEADY = """SELECT run_id, count(*) AS n, avg(ns) AS mean, quantile_cont(ns, 0.5) AS p50, quantile_cont(ns, 0.9) AS p90,
    quantile_cont(ns, 0.99) AS p99, min(ns) AS low, max(ns) AS high FROM frames WHERE steady GROUP BY run_id"""


@pytest.fixture
def imported(tmp_path):
    """Every old folder imported through the command line (commit abc1234 on main)."""
    done = run_cli("results", "import", *map(str, OLD), "--db", str(tmp_path / "r.db"), "--warehouse",
                   str(tmp_path / "wh"), "--commit", "abc1234", "--branch", "main")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_old_folders_import_and_each_runs_frame_statistics_come_back_as_its_summary_says(imported):
    assert len(OLD) == 7 and len(RUN_FOLDERS) == 9  # three releases: 3 es2gears runs, 2 studies of 2, 2 fleets of 1
    warehouse = open_warehouse(imported / "wh")
    answer = run_query(warehouse, STEADY)
    found = {row[0]: row[1:] for row in answer.rows}
    assert len(found) == len(RUN_FOLDERS)
    for run_dir in RUN_FOLDERS:
        summary = read_summary(run_dir)
        assert summary is not None and summary.steady is not None
        steady = summary.steady
        n, mean, p50, p90, p99, low, high = found[run_dir.name]
        assert n == steady.count
        assert (mean, p50, p90, p99) == pytest.approx((steady.mean_ns, steady.p50_ns, steady.p90_ns, steady.p99_ns),
                                                      rel=1e-12)
        assert (low, high) == (steady.min_ns, steady.max_ns)
    first = dict(run_query(warehouse, "SELECT run_id, ns FROM frames WHERE frame = 0").rows)
    assert all(first[d.name] == read_summary(d).first_frame_ns for d in RUN_FOLDERS)  # type: ignore[union-attr]


def test_every_row_carries_the_runs_keys_as_the_database_stored_them(imported):
    warehouse = open_warehouse(imported / "wh")
    database = open_database(str(imported / "r.db"), read_only=True)
    try:
        rows = run_query(warehouse, """SELECT r.run_id, r.app, r.cell, r.board_kind, r.git_commit, r.git_branch,
            r.valid, d.run_id, d.app, d.cell, d.board_kind, d.git_commit, d.git_branch, d.valid
            FROM runs r JOIN db_runs d ON d.uid = r.run_uid""", database).rows
        metrics = run_query(warehouse, """SELECT count(*), sum(CASE WHEN m.value = d.value THEN 1 ELSE 0 END)
            FROM metrics m JOIN db_runs r ON r.uid = m.run_uid JOIN db_metrics d ON d.run_id = r.id AND d.name = m.name
            """, database).rows
        stored = run_query(warehouse, "SELECT count(*) FROM db_metrics", database).rows
    finally:
        database.close()
    assert len(rows) == len(RUN_FOLDERS)
    assert all(row[:7] == row[7:] for row in rows)
    assert {row[4:6] for row in rows} == {("abc1234", "main")}
    assert {row[1] for row in rows} == {"es2gears", "posebench"}
    assert metrics[0][0] == metrics[0][1] == stored[0][0] > 10 * len(RUN_FOLDERS)  # every figure, equal
    posebench = run_query(warehouse, "SELECT DISTINCT cell FROM runs WHERE app = 'posebench' ORDER BY 1").rows
    assert posebench == [("delegate=none, threads=1, frames=20",), ("delegate=xnnpack, threads=1, frames=20",)]


def test_each_table_holds_what_the_summary_says(imported):
    warehouse = open_warehouse(imported / "wh")
    run_dir = next(d for d in RUN_FOLDERS if d.name == "20261206T143333Z-local-es2gears")
    summary = read_summary(run_dir)
    assert summary is not None and summary.attribution is not None and summary.hotspots is not None
    where = f"WHERE run_id = '{run_dir.name}'"
    shares = dict(run_query(warehouse, f"SELECT share, ns FROM shares {where}").rows)
    assert shares == {name: share.ns for name, share in summary.attribution.shares.items()}
    per_frame = dict(run_query(warehouse, f"SELECT frame, share_display_ns FROM frames {where} AND "
                                          "share_display_ns IS NOT NULL").rows)
    attribution = summary.attribution
    assert attribution.frames is not None and attribution.first_frame is not None
    expected = {attribution.first_frame + i * attribution.frames.every: ns
                for i, ns in enumerate(attribution.share("display").per_frame_ns)}
    assert per_frame == expected and len(per_frame) == attribution.frame_count
    hot = run_query(warehouse, f"SELECT symbol, samples FROM hotspots {where} AND view = 'self' ORDER BY rank").rows
    assert hot == [(f.symbol, f.samples) for f in summary.hotspots.self_]
    api = run_query(warehouse, f"SELECT api, name, calls, total_ns FROM api {where} AND api = 'opengl'").rows
    assert api == [("opengl", r.name, r.calls, r.total_ns) for r in summary.opengl or []] and api
    threads = run_query(warehouse, f"SELECT tid, cpu_ns FROM threads {where}").rows
    assert threads == [(t.tid, t.cpu_ns) for t in summary.threads or []] and threads
    board = run_query(warehouse, f"SELECT count(*) FROM board {where}").rows[0][0]
    assert board == sum(len(points) for points in summary.board_series_ns.values()) > 0
    gpu = run_query(warehouse, f"SELECT kind, sum(ns) FROM gpu_work {where} GROUP BY kind").rows
    assert summary.gpu_frames is not None
    assert dict(gpu) == {k.name: sum(k.per_frame_ns) for k in summary.gpu_frames.kinds if k.per_frame_ns}
    posebench = run_query(warehouse, "SELECT name, value FROM app_records WHERE app = 'posebench' AND record = '' "
                                     "AND name = 'inference_mean_ms'").rows
    stored = run_query(warehouse, "SELECT value FROM metrics WHERE name = 'app.inference_mean_ms'").rows
    assert sorted(v for _, v in posebench) == sorted(v for (v,) in stored) and posebench


def test_imported_again_no_run_counts_twice_before_or_after_compaction(imported):
    warehouse = open_warehouse(imported / "wh")
    before = run_query(warehouse, STEADY).rows
    files = sum(len(warehouse.files(t)) for t in TABLES)
    compacted = compact(warehouse)
    assert compacted.files_before == files and compacted.files_after < files
    assert sum(len(warehouse.files(t)) for t in TABLES) == compacted.files_after
    again = run_cli("results", "import", *map(str, OLD), "--db", str(imported / "r.db"), "--warehouse",
                    str(imported / "wh"))
    assert again.returncode == 0, again.stderr
    assert "0 runs stored" in again.stdout and "new in the warehouse" not in again.stdout
    assert sorted(run_query(warehouse, STEADY).rows) == sorted(before)
    assert run_query(warehouse, "SELECT count(*), count(DISTINCT run_uid) FROM runs").rows == [(9, 9)]
    # a compaction that died between renaming its file in and removing the ones it merged: the next one keeps
    # each run's rows once
    merged = warehouse.files("frames")[0]
    shutil.copy(merged, merged.with_name("left-behind.parquet"))
    doubled = run_query(warehouse, "SELECT count(*) FROM frames").rows[0][0]
    compact(warehouse)
    assert run_query(warehouse, "SELECT count(*) FROM frames").rows[0][0] < doubled
    assert sorted(run_query(warehouse, STEADY).rows) == sorted(before)
    for table in TABLES:  # every file has the table's own columns
        for path in warehouse.files(table):
            assert pq.read_schema(path).remove_metadata() == SCHEMAS[table]


def _import_copy(root: str, folders: list[str]) -> int:
    warehouse = open_warehouse(root)
    return sum(store_runs(warehouse, Path(folder), Provenance("abc1234", "main")) for folder in folders)


def test_writers_at_once_store_each_run_once_and_a_reader_never_sees_half_a_run(tmp_path):
    root = str(tmp_path / "wh")
    folders = [str(f) for f in OLD]
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        pending = pool.starmap_async(_import_copy, [(root, folders), (root, folders[::-1]), (root, folders)])
        warehouse = open_warehouse(root)
        seen = []
        while not pending.ready():
            if warehouse.root.is_dir():  # each run whole: its runs row, and all its frames, or neither
                seen.append(run_query(warehouse, """SELECT r.run_id, r.frames, count(f.frame) FROM runs r
                    LEFT JOIN frames f USING (run_uid) GROUP BY ALL""").rows)
            pending.wait(0.05)
        stored = pending.get(timeout=120)
    assert seen and sum(stored) == len(RUN_FOLDERS)  # each run written by exactly one of the three
    assert all(frames == counted for rows in seen for _, frames, counted in rows)
    final = run_query(warehouse, "SELECT count(*), count(DISTINCT run_uid) FROM runs").rows
    assert final == [(len(RUN_FOLDERS), len(RUN_FOLDERS))]


def test_no_extension_is_fetched_or_loaded_and_a_bad_query_is_one_line_naming_the_views(imported):
    warehouse = open_warehouse(imported / "wh")
    settings = run_query(warehouse, "SELECT current_setting('autoinstall_known_extensions'), "
                                    "current_setting('autoload_known_extensions')").rows
    assert settings == [(False, False)]
    with pytest.raises(UsageError) as remote:  # reading a URL needs httpfs: refused, not downloaded
        run_query(warehouse, "SELECT * FROM read_parquet('https://example.invalid/runs.parquet')")
    assert "httpfs" in remote.value.message
    loaded = run_query(warehouse, "SELECT extension_name FROM duckdb_extensions() WHERE loaded").rows
    assert "httpfs" not in {name for (name,) in loaded}
    for sql, said in (("INSTALL httpfs", "loads none"), ("LOAD httpfs", "loads none"),
                      ("SET autoload_known_extensions = true", "locked"), ("SELECT 1; SELECT 2", "2 statements")):
        with pytest.raises(UsageError) as refused:
            run_query(warehouse, sql)
        assert said in refused.value.message
    done = run_cli("results", "query", "SELECT nothing FROM nowhere", "--warehouse", str(imported / "wh"))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "nowhere" in done.stderr
    assert all(view in done.stderr for view in VIEWS)


def test_query_prints_a_table_json_and_csv(imported):
    common = ("results", "query", "SELECT app, count(*) AS runs FROM runs GROUP BY app ORDER BY app",
              "--warehouse", str(imported / "wh"))
    table, as_json, as_csv = (run_cli(*common, *extra) for extra in ((), ("--json",), ("--csv",)))
    assert all(done.returncode == 0 for done in (table, as_json, as_csv)), table.stderr
    assert "es2gears" in table.stdout and "2 rows" in table.stdout
    assert json.loads(as_json.stdout) == [{"app": "es2gears", "runs": 5}, {"app": "posebench", "runs": 4}]
    assert as_csv.stdout.splitlines() == ["app,runs", "es2gears,5", "posebench,4"]
    odd = run_cli("results", "query", "SELECT 1 AS a, 2 AS a, 'inf'::DOUBLE AS b", "--json", "--warehouse",
                  str(imported / "wh"))
    assert odd.returncode == 0 and json.loads(odd.stdout) == [{"a": 1, "a_2": 2, "b": None}]
    nowhere = run_cli("results", "query", "SELECT 1", "--warehouse", str(imported / "nowhere"))
    assert nowhere.returncode == 2 and "no warehouse at" in nowhere.stderr


def test_a_run_keeps_its_keys_and_figures_whichever_way_it_comes_in(tmp_path):
    """Stored as it ends (store_runs: a study folder's runs) and imported later, the rows are the same."""
    study = next(f for f in OLD if f.name.endswith("posebench-delegate"))
    one, two = open_warehouse(tmp_path / "one"), open_warehouse(tmp_path / "two")
    provenance = Provenance("abc1234", "main")
    assert store_runs(one, study, provenance) == 2 and store_runs(one, study, provenance) == 0
    database = open_database(str(tmp_path / "r.db"))
    try:
        [found] = import_folders(database, two, [study], provenance)
    finally:
        database.close()
    assert (found.runs, found.stored, found.rows) == (2, 2, 2)
    for table in TABLES:
        sql = f"SELECT * EXCLUDE (folder) FROM {table} ORDER BY ALL" if table == "runs" else \
            f"SELECT * FROM {table} ORDER BY ALL"
        assert run_query(one, sql).rows == run_query(two, sql).rows
    record = run_record(study / "20261206T143350Z-local-posebench")
    assert record is not None
    rows = run_query(one, f"SELECT name, value FROM metrics WHERE run_uid = '{record.uid}'").rows
    assert dict(rows) == {name: m.value for name, m in record.metrics.items()}
    assert np.isfinite([v for _, v in rows]).all()


def test_a_copy_of_a_run_folder_elsewhere_is_the_same_run(tmp_path, imported):
    copy = tmp_path / "copy"
    shutil.copytree(OLD[0], copy / OLD[0].name)
    done = run_cli("results", "import", str(copy), "--db", str(imported / "r.db"), "--warehouse",
                   str(imported / "wh"))
    assert done.returncode == 0 and "already there" in done.stdout and "new in the warehouse" not in done.stdout


def test_each_frames_calls_are_the_exports_own(tmp_path, export):
    """A run folder with its export (the real es2gears capture, analysed as a run's end analyses it): each frame's
    calls are the export's OSRT_API and OPENGL_API rows that start in it, counted by SQLite itself; every frame
    swaps once and draws its three gears."""
    import sqlite3

    from orchestrator.analysis import AnalysisOptions, analyze_report
    from orchestrator.documents.summary import write_summary
    run_dir = tmp_path / "run"
    shutil.copytree(next(d for d in RUN_FOLDERS if d.name == "20261206T143333Z-local-es2gears"), run_dir)
    shutil.copy(export("es2gears-opengl"), run_dir / "report.sqlite")
    summary = analyze_report(run_dir / "report.sqlite", AnalysisOptions())
    write_summary(run_dir, summary)
    warehouse = open_warehouse(tmp_path / "wh")
    assert store_runs(warehouse, run_dir, Provenance("abc1234", "main")) == 1
    assert summary.frames is not None and summary.frames.count == 2445
    spans = [(i, start, start + ns) for i, (start, ns) in
             enumerate(zip(summary.frames.frame_starts_ns, summary.frames.per_frame_ns))]
    connection = sqlite3.connect(run_dir / "report.sqlite")
    try:
        connection.execute("CREATE TEMP TABLE frames (i INTEGER, s INTEGER, e INTEGER)")
        connection.executemany("INSERT INTO frames VALUES (?, ?, ?)", spans)
        for table, kind in (("OSRT_API", "osrt"), ("OPENGL_API", "opengl")):
            counted = dict(connection.execute(f"SELECT f.i, count(*) FROM frames f JOIN {table} o "
                                              "ON o.start >= f.s AND o.start < f.e GROUP BY f.i").fetchall())
            ours = dict(run_query(warehouse, f"SELECT frame, sum(calls) FROM frame_calls WHERE kind = '{kind}' "
                                             "GROUP BY frame").rows)
            assert ours == counted and sum(ours.values()) > 10_000
    finally:
        connection.close()
    per_frame = run_query(warehouse, "SELECT name, min(calls), max(calls), count(*) FROM frame_calls "
                                     "WHERE kind = 'opengl' AND name IN ('eglSwapBuffers', 'glDrawArrays') "
                                     "GROUP BY name ORDER BY name").rows
    assert per_frame == [("eglSwapBuffers", 1, 1, 2445), ("glDrawArrays", 3, 3, 2445)]
