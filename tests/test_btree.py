"""The b-tree reader (orchestrator/analysis/export/btree.py and its C module) against SQLite itself.

Every value it decodes must be the one SQLite returns, for tables SQLite writes (values of every integer
width, NULLs, INTEGER PRIMARY KEY, text beside the integers, trees of several levels, page sizes from 512
to 65536); what it does not handle must be refused, so the analysis reads that table through SQLite; a
damaged file must never crash the process. On every export in tests/data/nsys, the analysis with the
reader equals the analysis without it.
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.analysis.export import btree
from orchestrator.analysis.export.btree import BtreeFile, Refused
from orchestrator.analysis.export.report_input import open_report
from orchestrator.analysis.export.trace import BIG_TABLES, EARLY_TABLES, Trace
from orchestrator.analysis.summary import analyze_trace

pytestmark = pytest.mark.skipif(btree._btree is None and not os.environ.get("CI"),
                                reason="the b-tree reader is not built (no C compiler at install)")

EXPORTS = ["abacus_titanrtx_2020.export2022_4", "cpuonly_sampling_2024", "es2gears-opengl",
           "flux_gtx1650_2019.export2022_4", "nsu_v100_2022.export2022_4", "ompoffload_t4_2023",
           "openacc_rtx3080_2020", "python-cpu-sampling", "tflite-pose-xnnpack"]
EDGES = [0, 1, -1, 127, 128, -128, -129, 32767, 32768, -32768, -32769, 2**23 - 1, 2**23, -2**23, -2**23 - 1,
         2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**47 - 1, 2**47, -2**47, -2**47 - 1, 2**63 - 1, -2**63]
INTEGERS = st.one_of(st.sampled_from(EDGES), st.integers(-2**63, 2**63 - 1), st.integers(-300, 300))
VALUES = st.one_of(st.none(), INTEGERS)


def test_the_reader_is_built_where_ci_runs():
    if os.environ.get("CI"):
        assert btree._btree is not None, "scripts/setup.sh builds it (pip install compiles the C module)"


def decode_all(path: Path, table: str, columns: list[str], piece_rows: int = 700) -> dict:
    conn = sqlite3.connect(path)
    try:
        reader = BtreeFile(path)
        try:
            layout = reader.layout(conn, table)
            raw = reader.allocate(layout, frozenset(columns))
            for piece in layout.pieces(piece_rows):
                reader.decode(layout, raw, piece)
            return raw
        finally:
            reader.close()
    finally:
        conn.close()


def sqlite_columns(path: Path, table: str, columns: list[str]) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


def as_rows(raw: dict, columns: list[str]) -> list[tuple]:
    def value(name: str, i: int) -> int | None:
        values, nulls = raw[name]
        return None if nulls is not None and nulls[i] else int(values[i])
    count = len(raw[columns[0]][0])
    return [tuple(value(name, i) for name in columns) for i in range(count)]


def write_table(path: Path, page_size: int, rows: list[tuple], notes: list[str]) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, note TEXT, b INTEGER, c INTEGER NOT NULL)")
    conn.executemany("INSERT INTO t (a, note, b, c) VALUES (?, ?, ?, ?)",
                     [(a, note, b, 0 if c is None else c) for (a, b, c), note in zip(rows, notes)])
    conn.commit()
    conn.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(VALUES, VALUES, VALUES), max_size=1500),
       note=st.text(max_size=40), page_size=st.sampled_from([512, 1024, 4096, 65536]))
def test_decoded_values_and_nulls_are_sqlites(rows, note, page_size):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.sqlite"
        write_table(path, page_size, rows, [note[: i % 41] for i in range(len(rows))])
        columns = ["id", "a", "b", "c"]
        assert as_rows(decode_all(path, "t", columns), columns) == sqlite_columns(path, "t", columns)


def test_a_deep_tree_of_small_pages(tmp_path):
    path = tmp_path / "deep.sqlite"
    rng = np.random.default_rng(7)
    values = rng.integers(-2**62, 2**62, size=(60_000, 3)).tolist()
    write_table(path, 512, [tuple(v) for v in values], [""] * len(values))
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM t WHERE id % 7 = 0")  # gaps in the rowids and half-empty pages
    conn.commit()
    conn.close()
    columns = ["id", "a", "b", "c"]
    raw = decode_all(path, "t", columns, piece_rows=5000)
    assert len(raw["id"][0]) == 60_000 - 60_000 // 7
    assert as_rows(raw, columns) == sqlite_columns(path, "t", columns)


@pytest.mark.parametrize("change, columns", [
    ("UPDATE t SET a = 'text' WHERE id = 3", ["a"]),                # text where an integer was asked for
    ("UPDATE t SET b = 2.5 WHERE id = 4", ["b"]),                   # a real
    ("UPDATE t SET note = hex(randomblob(3000)) WHERE id = 5", ["a"]),  # a row that overflows its page
    ("ALTER TABLE t ADD COLUMN d INTEGER", ["d"]),                  # old rows without the new column
])
def test_what_it_does_not_decode_is_refused(tmp_path, change, columns):
    path = tmp_path / "t.sqlite"
    write_table(path, 4096, [(i, i, i) for i in range(20)], ["n"] * 20)
    conn = sqlite3.connect(path)
    conn.execute(change)
    conn.commit()
    conn.close()
    with pytest.raises(Refused):
        decode_all(path, "t", columns)


def test_a_table_without_rowid_and_a_file_with_a_wal_are_refused(tmp_path):
    path = tmp_path / "t.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE k (a INTEGER PRIMARY KEY, b INTEGER) WITHOUT ROWID")
    conn.execute("INSERT INTO k VALUES (1, 2)")
    conn.commit()
    conn.close()
    with pytest.raises(Refused):
        decode_all(path, "k", ["b"])
    Path(f"{path}-wal").write_bytes(b"")
    with pytest.raises(Refused):
        BtreeFile(path)
    assert BtreeFile.open(path) is None


@settings(max_examples=150, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=40))
def test_a_damaged_file_gives_an_error_or_numbers_never_a_crash(flips):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.sqlite"
        write_table(path, 1024, [(i * 1000003, -i, i % 5) for i in range(2000)], ["abc"] * 2000)
        data = bytearray(path.read_bytes())
        for offset, byte in flips:
            data[1024 + offset % (len(data) - 1024)] = byte  # page 1 (the schema) stays whole
        path.write_bytes(bytes(data))
        try:
            raw = decode_all(path, "t", ["id", "a", "b", "c"])
        except (Refused, sqlite3.DatabaseError):
            return
        assert len(raw["id"][0]) == len(raw["c"][0])


# -- the analysis with the reader and without it --------------------------------------------------------------

def table_reads(path: Path, decode_file: bool) -> dict:
    conn, schema, export = open_report(path, None)
    trace = Trace(conn, schema, export, decode_file=decode_file)
    trace.start_reading()
    try:
        reads = {}
        for table in EARLY_TABLES + BIG_TABLES:
            columns = trace.events(table)
            reads[table] = (None if columns is None else {k: v.tolist() for k, v in columns.items()},
                            trace.extent(table))
        return reads
    finally:
        trace.close()
        conn.close()


def summary(path: Path, decode_file: bool) -> dict:
    conn, schema, export = open_report(path, None)
    try:
        return analyze_trace(Trace(conn, schema, export, decode_file=decode_file))
    finally:
        conn.close()


@pytest.mark.parametrize("name", EXPORTS)
def test_every_export_reads_and_analyses_the_same_with_and_without_the_reader(export, name):
    path = export(name)
    assert table_reads(path, True) == table_reads(path, False)
    assert summary(path, True) == summary(path, False)


def test_a_table_the_reader_refuses_is_read_through_sqlite(export, tmp_path):
    path = tmp_path / "abacus.sqlite"
    path.write_bytes(export("abacus_titanrtx_2020.export2022_4").read_bytes())
    expected = table_reads(path, False)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN note TEXT")
    conn.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET note = hex(randomblob(4000)) WHERE rowid = 100")
    conn.commit()
    conn.close()
    with pytest.raises(Refused, match="overflows"):
        decode_all(path, "CUPTI_ACTIVITY_KIND_RUNTIME", ["start", "end", "nameId"])
    assert table_reads(path, True) == expected
    runtime = expected["CUPTI_ACTIVITY_KIND_RUNTIME"][0]
    assert runtime is not None and len(runtime["dur"]) == sqlite_count(path, "CUPTI_ACTIVITY_KIND_RUNTIME")


def sqlite_count(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f'SELECT count(*) FROM {table} WHERE "end" IS NOT NULL').fetchone()[0]
    finally:
        conn.close()
