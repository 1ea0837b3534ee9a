"""Each read expression gives on arrays what its SQL gives in SQLite, NULLs included (analysis/export/exprs.py)."""
from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.analysis.export.bulk import EXTENT
from orchestrator.analysis.export.exprs import (
    Coalesce,
    Col,
    Compare,
    Const,
    Dims,
    In,
    NotNull,
    Raw,
    is_in,
    selected,
    where_sql,
)
from orchestrator.analysis.export.reads import Read, evaluate

SMALL = st.one_of(st.none(), st.integers(-6, 12), st.integers(-2**20, 2**20))  # small: equal values common
ROWS = st.lists(st.tuples(SMALL, SMALL, SMALL), min_size=1, max_size=60)
EXPRS = [Col("a"), Const(-1), Coalesce(Col("b"), -1), Col("end") - Col("a"), Coalesce(Col("b"), 0) - Col("a"),
         Dims(Coalesce(Col("a"), 0), Coalesce(Col("b"), 0), Coalesce(Col("end"), 0)),
         Dims(Col("a"), Const(2), Col("b"))]
FILTERS = [NotNull(Col("end")), NotNull(Col("end") - Col("a")), Compare(Col("a"), "=", 3), Compare(Col("b"), ">", 0),
           Compare(Col("end"), "<", 10), In(Col("a"), (1, 2, 3, -5))]


def in_sqlite(rows: list[tuple]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE t (a INTEGER, b INTEGER, "end" INTEGER)')
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    return conn


def as_raw(rows: list[tuple]) -> Raw:
    raw: Raw = {}
    for i, name in enumerate(["a", "b", "end"]):
        column = [row[i] for row in rows]
        raw[name] = (np.array([0 if v is None else v for v in column], dtype=np.int64),
                     np.array([v is None for v in column], dtype=bool))
    return raw


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, expr=st.sampled_from(EXPRS))
def test_an_expression_is_its_sql(rows, expr):
    expected = [row[0] for row in in_sqlite(rows).execute(f"SELECT {expr.sql()} FROM t ORDER BY rowid")]
    values, nulls = expr.evaluate(as_raw(rows), len(rows))
    got = [None if nulls is not None and nulls[i] else int(values[i]) for i in range(len(rows))]
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, filters=st.lists(st.sampled_from(FILTERS), max_size=3, unique=True))
def test_filters_select_the_rows_their_where_clause_selects(rows, filters):
    filters = tuple(filters)
    expected = [row[0] - 1 for row in in_sqlite(rows).execute(f"SELECT rowid FROM t WHERE {where_sql(filters)}")]
    keep = selected(filters, as_raw(rows), len(rows))
    got = list(range(len(rows))) if keep is None else keep.tolist()  # the selected rows, by index
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-40, 40), st.integers(-2**40, 2**40)), max_size=80),
       wanted=st.lists(st.one_of(st.integers(-40, 40), st.integers(-2**40, 2**40)), max_size=6))
def test_is_in_is_numpys_isin_through_a_table_or_not(values, wanted):
    array = np.array(values, dtype=np.int64)
    assert is_in(array, tuple(wanted)).tolist() == np.isin(array, np.array(wanted, dtype=np.int64)).tolist()


@settings(max_examples=200, deadline=None)
@given(rows=ROWS, filters=st.lists(st.sampled_from(FILTERS), max_size=3, unique=True))
def test_a_read_gives_what_its_select_gives_few_rows_selected_or_many(rows, filters):
    read = Read("r", "t", {"a": Coalesce(Col("a"), 0), "span": Coalesce(Col("end") - Col("a"), -1)}, tuple(filters),
                (Coalesce(Col("a"), 0), Coalesce(Col("end"), 0)))
    where = where_sql(read.where)
    expected = in_sqlite(rows).execute(
        f'SELECT coalesce(a, 0), coalesce("end" - a, -1) FROM t WHERE {where} ORDER BY rowid').fetchall()
    got = evaluate(read, as_raw(rows))
    assert list(zip(got["a"].tolist(), got["span"].tolist())) == [tuple(row) for row in expected]
    if expected:  # the selected rows' span
        ends = in_sqlite(rows).execute(f'SELECT min(coalesce(a, 0)), max(coalesce("end", 0)) FROM t WHERE {where}'
                                       ).fetchone()
        assert (int(got[EXTENT[0]][0]), int(got[EXTENT[1]][0])) == ends
