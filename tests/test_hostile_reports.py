"""Reports made to hurt: a zip bomb named .nsys-rep, files that are not reports, and real exports whose
tables hold what no exporter writes. Each is a clean one-line error (or a summary)."""
from __future__ import annotations

import shutil
import sqlite3
import zipfile
from pathlib import Path

import pytest
from board_state import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.analysis import analyze_report
from orchestrator.errors import ReportError


def test_a_zip_bomb_named_nsys_rep_is_refused_before_anything_reads_it(tmp_path):
    bomb = tmp_path / "capture.nsys-rep"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(8):  # 8 entries of 256 MB of zeros each: 2 GB from a few MB
            with archive.open(f"stream{n}", "w", force_zip64=True) as entry:
                block = b"\0" * 2**20
                for _ in range(256):
                    entry.write(block)
    assert bomb.stat().st_size < 20 * 2**20
    # refused by its first bytes (a zip's), so nothing was inflated
    with pytest.raises(ReportError, match=r"capture.nsys-rep is not an Nsight Systems report \(it is a zip archive\)"):
        analyze_report(bomb).as_json()
    assert not bomb.with_suffix(".sqlite").exists()


@pytest.mark.parametrize("content, kind", [(b"SQLite format 3\0" + b"\0" * 200, "an SQLite file"),
                                           (b"\x7fELF\x02\x01\x01", "a program"), (b"hello", "something else")])
def test_other_files_named_like_reports_are_refused(tmp_path, content, kind):
    fake = tmp_path / "capture.qdrep"
    fake.write_bytes(content)
    with pytest.raises(ReportError, match=rf"is not an Nsight Systems report \(it is {kind}\)"):
        analyze_report(fake).as_json()


TABLES_AND_COLUMNS = [("OPENGL_API", "start"), ("OPENGL_API", '"end"'), ("OPENGL_API", "nameId"),
                      ("OPENGL_API", "globalTid"), ("OSRT_API", "start"), ("OSRT_API", '"end"'),
                      ("COMPOSITE_EVENTS", "start"), ("SCHED_EVENTS", "cpu"), ("StringIds", "value"),
                      ("SAMPLING_CALLCHAINS", "symbol"), ("ThreadNames", "nameId")]
HOSTILE_VALUES = [None, "text", "<script>alert(1)</script>", -1, 0, 2**63 - 1, -(2**63), 1.5, b"\xff\xfe",
                  "x" * 100_000]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(st.sampled_from(TABLES_AND_COLUMNS), st.sampled_from(HOSTILE_VALUES),
                                  st.integers(1, 400)), min_size=1, max_size=4))
def test_hostile_table_contents_give_a_summary_or_one_clean_error(export, tmp_path, changes):
    copy = tmp_path / "hostile.sqlite"
    shutil.copyfile(export("es2gears-opengl"), copy)
    with sqlite3.connect(copy) as db:
        for (table, column), value, every in changes:
            try:
                db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid % ? = 0", (value, every))
            except sqlite3.IntegrityError:  # a NOT NULL column: the schema itself refuses that value
                pass
    record("hostile_input", injected=False)
    try:
        summary = analyze_report(copy).as_json()
    except ReportError as exc:
        assert "\n" not in exc.one_line() and str(copy) in exc.message
    else:
        assert summary["capture"]["export"] == str(copy)


def test_a_report_with_its_tables_emptied_says_what_is_missing(export, tmp_path):
    copy = tmp_path / "empty.sqlite"
    shutil.copyfile(export("es2gears-opengl"), copy)
    with sqlite3.connect(copy) as db:
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            db.execute(f'DELETE FROM "{name}"')
    with pytest.raises(ReportError) as err:
        analyze_report(copy).as_json()
    assert "\n" not in err.value.one_line()


def test_a_huge_declared_size_is_called_truncated(tmp_path):
    data = Path(tmp_path / "cut.sqlite")
    header = bytearray(b"SQLite format 3\0" + b"\0" * 84)
    header[16:18] = (4096).to_bytes(2, "big")
    header[28:32] = (2**31 - 1).to_bytes(4, "big")  # says it holds 8 TB of pages
    data.write_bytes(bytes(header) + b"\0" * 4000)
    with pytest.raises(ReportError, match="is truncated"):
        analyze_report(data).as_json()
