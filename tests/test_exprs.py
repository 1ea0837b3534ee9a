"""Each read expression gives on arrays what its SQL gives in SQLite, NULLs included (analysis/export/exprs.py)."""
from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.analysis.export.exprs import (
    Coalesce,
    Col,
    Compare,
    Const,
    Dims,
    In,
    NotNull,
    Raw,
    selected,
    where_sql,
)

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
    got = list(range(len(rows))) if keep is None else np.flatnonzero(keep).tolist()
    assert got == expected
