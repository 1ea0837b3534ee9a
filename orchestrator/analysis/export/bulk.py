"""Move integer columns out of SQLite into numpy arrays quickly: the selective reads, and the tables the
file reader (btree.py) declines or cannot be built for.

Fetching rows through the sqlite3 module builds a Python tuple per row (about 0.5 us each); having
SQLite itself serialise a column with group_concat and parsing that text with numpy is 3-4x faster.
Rows are read in rowid chunks so a huge table never becomes one huge string.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Mapping

import numpy as np

from ...errors import ReportError

CHUNK_ROWS = 2_000_000
EXTENT = ("_first", "_last")  # keys of the extent columns int_columns_between adds when asked


def rowid_bounds(conn: sqlite3.Connection, table: str) -> tuple[int, int] | None:
    # two queries: SQLite answers a lone min() or max() from the b-tree's ends, but scans for both at once
    lo = conn.execute(f'SELECT min(rowid) FROM "{table}"').fetchone()[0]
    hi = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
    return None if lo is None else (int(lo), int(hi))


def rowid_chunks(conn: sqlite3.Connection, table: str, rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """The table's rowid span cut into pieces of about ``rows`` rows (inclusive bounds)."""
    bounds = rowid_bounds(conn, table)
    if bounds is None:
        return []
    lo, hi = bounds
    return [(start, min(start + rows - 1, hi)) for start in range(lo, hi + 1, rows)]


def int_columns(conn: sqlite3.Connection, table: str, exprs: dict[str, str], where: str = "1",
                params: dict | None = None, extent: tuple[str, str] | None = None) -> dict[str, np.ndarray]:
    """Evaluate integer SQL expressions over the rows of ``table`` matching ``where``."""
    parts = [int_columns_between(conn, table, exprs, span, where, params, extent)
             for span in rowid_chunks(conn, table)]
    return concat_columns(exprs, parts)


def concat_columns(exprs: Mapping[str, object], parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not parts:
        return {name: np.empty(0, dtype=np.int64) for name in exprs}
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def int_columns_between(conn: sqlite3.Connection, table: str, exprs: dict[str, str], span: tuple[int, int],
                        where: str = "1", params: dict | None = None,
                        extent: tuple[str, str] | None = None) -> dict[str, np.ndarray]:
    """int_columns for the rows whose rowid lies in ``span``.

    Every expression must be non-NULL for the selected rows (wrap it in coalesce otherwise): a NULL would
    be skipped by group_concat and shift the columns against each other, which is checked. With ``extent``
    (a start and an end expression), the same pass also gives the first start and the last end of the rows,
    as one-value columns under EXTENT's keys (empty without rows).
    """
    select = ", ".join(f"group_concat({expr})" for expr in exprs.values())
    bounds = f"min({extent[0]}), max({extent[1]})" if extent else "NULL, NULL"
    sql = f'SELECT count(*), {bounds}, {select} FROM "{table}" WHERE rowid BETWEEN :_lo AND :_hi AND ({where})'
    count, first, last, *texts = conn.execute(sql, {**(params or {}), "_lo": span[0], "_hi": span[1]}).fetchone()
    columns = {}
    if extent:
        columns[EXTENT[0]] = np.array([] if first is None else [first], dtype=np.int64)
        columns[EXTENT[1]] = np.array([] if last is None else [last], dtype=np.int64)
    for name, text in zip(exprs, texts):
        columns[name] = _parse(text)
        if len(columns[name]) != count:
            raise null_error(table, exprs[name], count - len(columns[name]))
    return columns


def null_error(table: str, expr: str, rows: int) -> ReportError:
    return ReportError(f"{table}: {expr} is NULL in {rows} rows where it never is in the exports this version knows",
                       "please report it with the export attached")


def _parse(text: str | None) -> np.ndarray:
    # no count=: given one, numpy pads a short text with garbage instead of showing the shortfall
    if not text:
        return np.empty(0, dtype=np.int64)
    return np.fromstring(text, sep=",", dtype=np.int64)
