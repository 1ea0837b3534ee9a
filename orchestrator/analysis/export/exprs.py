"""Integer expressions over a table's columns, written once: as SQL for SQLite, and evaluated on arrays.

A read of an event table names what it wants in these terms (`Col("end") - Col("start")`, a filter such
as `NotNull(Col("end"))`). SQLite evaluates the rendered SQL when it reads the table; when the table's
columns come straight from the file (btree.py), the same expression is evaluated on the decoded arrays
with SQL's rules: NULL in, NULL out; a row whose filter is NULL is not selected.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A decoded table: column name -> (values, is NULL or None for a column that never is); a NULL's value is 0.
Raw = dict[str, tuple[np.ndarray, np.ndarray | None]]
Value = tuple[np.ndarray, np.ndarray | None]  # values and where they are NULL (None: nowhere)


class Expr:
    def sql(self) -> str:
        raise NotImplementedError

    def columns(self) -> frozenset[str]:
        raise NotImplementedError

    def evaluate(self, raw: Raw, rows: int) -> Value:
        raise NotImplementedError

    def __sub__(self, other: Expr) -> Expr:
        return Minus(self, other)


@dataclass(frozen=True)
class Col(Expr):
    name: str

    def sql(self) -> str:
        return f'"{self.name}"'

    def columns(self) -> frozenset[str]:
        return frozenset([self.name])

    def evaluate(self, raw: Raw, rows: int) -> Value:
        values, nulls = raw[self.name]
        return values, nulls if nulls is not None and nulls.any() else None


@dataclass(frozen=True)
class Const(Expr):
    value: int

    def sql(self) -> str:
        return str(int(self.value))

    def columns(self) -> frozenset[str]:
        return frozenset()

    def evaluate(self, raw: Raw, rows: int) -> Value:
        return np.full(rows, self.value, dtype=np.int64), None


@dataclass(frozen=True)
class Coalesce(Expr):
    expr: Expr
    default: int

    def sql(self) -> str:
        return f"coalesce({self.expr.sql()}, {int(self.default)})"

    def columns(self) -> frozenset[str]:
        return self.expr.columns()

    def evaluate(self, raw: Raw, rows: int) -> Value:
        values, nulls = self.expr.evaluate(raw, rows)
        return (values if nulls is None else np.where(nulls, self.default, values)), None


@dataclass(frozen=True)
class Minus(Expr):
    left: Expr
    right: Expr

    def sql(self) -> str:
        return f"({self.left.sql()}) - ({self.right.sql()})"

    def columns(self) -> frozenset[str]:
        return self.left.columns() | self.right.columns()

    def evaluate(self, raw: Raw, rows: int) -> Value:
        (a, a_null), (b, b_null) = self.left.evaluate(raw, rows), self.right.evaluate(raw, rows)
        return a - b, _either(a_null, b_null)


@dataclass(frozen=True)
class Dims(Expr):
    """Three dimensions in one integer (x < 2^31, y and z < 2^16), as kernels' grid and block sizes."""
    x: Expr
    y: Expr
    z: Expr

    def sql(self) -> str:  # multiplications: faster than shifts in SQLite
        return f"({self.x.sql()}) * 4294967296 + ({self.y.sql()}) * 65536 + ({self.z.sql()})"

    def columns(self) -> frozenset[str]:
        return self.x.columns() | self.y.columns() | self.z.columns()

    def evaluate(self, raw: Raw, rows: int) -> Value:
        (x, xn), (y, yn), (z, zn) = (part.evaluate(raw, rows) for part in (self.x, self.y, self.z))
        packed = x * 4294967296  # in place from here: each temporary of a big table is pages to fault in
        packed += y * 65536
        packed += z
        return packed, _either(_either(xn, yn), zn)


def unpack_dims(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return packed >> 32, (packed >> 16) & 0xFFFF, packed & 0xFFFF


class Filter:
    def sql(self) -> str:
        raise NotImplementedError

    def columns(self) -> frozenset[str]:
        raise NotImplementedError

    def mask(self, raw: Raw, rows: int) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class NotNull(Filter):
    expr: Expr

    def sql(self) -> str:
        return f"{self.expr.sql()} IS NOT NULL"

    def columns(self) -> frozenset[str]:
        return self.expr.columns()

    def mask(self, raw: Raw, rows: int) -> np.ndarray:
        nulls = self.expr.evaluate(raw, rows)[1]
        return np.ones(rows, dtype=bool) if nulls is None else ~nulls


COMPARISONS = {"=": np.equal, ">": np.greater, "<": np.less}


@dataclass(frozen=True)
class Compare(Filter):
    """expr = value, expr > value or expr < value."""
    expr: Expr
    op: str
    value: int

    def sql(self) -> str:
        return f"{self.expr.sql()} {self.op} {int(self.value)}"

    def columns(self) -> frozenset[str]:
        return self.expr.columns()

    def mask(self, raw: Raw, rows: int) -> np.ndarray:
        values, nulls = self.expr.evaluate(raw, rows)
        hit = COMPARISONS[self.op](values, self.value)  # the one comparison asked for, over the whole column
        return hit if nulls is None else hit & ~nulls


@dataclass(frozen=True)
class In(Filter):
    expr: Expr
    values: tuple[int, ...]

    def sql(self) -> str:
        return f"{self.expr.sql()} IN ({','.join(str(int(v)) for v in self.values)})"

    def columns(self) -> frozenset[str]:
        return self.expr.columns()

    def mask(self, raw: Raw, rows: int) -> np.ndarray:
        values, nulls = self.expr.evaluate(raw, rows)
        hit = is_in(values, self.values)
        return hit if nulls is None else hit & ~nulls


def is_in(values: np.ndarray, wanted: tuple[int, ...]) -> np.ndarray:
    """np.isin for integers: through a table of the values' range when it is small (a StringId, a thread's
    number), a lookup per value where np.isin sorts."""
    if not len(values) or not wanted:
        return np.zeros(len(values), dtype=bool)
    low, high = int(values.min()), int(values.max())
    if high - low >= 1 << 24:
        return np.isin(values, np.array(wanted, dtype=np.int64))
    table = np.zeros(high - low + 1, dtype=bool)
    table[[w - low for w in wanted if low <= w <= high]] = True
    return table[values - low]


def where_sql(filters: tuple[Filter, ...]) -> str:
    return " AND ".join(f"({f.sql()})" for f in filters) or "1"


def selected(filters: tuple[Filter, ...], raw: Raw, rows: int) -> np.ndarray | None:
    """The rows the filters select, as their indices in order, or None for all of them. Once few rows are left
    (a thread's calls, a few names'), the next filters read those rows only."""
    keep: np.ndarray | None = None   # a mask over every row, while many are selected
    chosen: np.ndarray | None = None  # the selected rows' indices, once few are
    for f in filters:
        if isinstance(f, NotNull) and f.expr.evaluate(raw, rows)[1] is None:
            continue  # never NULL here: every row passes
        if chosen is not None:
            part = {name: (values[chosen], None if nulls is None else nulls[chosen])
                    for name, (values, nulls) in raw.items() if name in f.columns()}
            chosen = chosen[f.mask(part, len(chosen))]
            continue
        keep = f.mask(raw, rows) if keep is None else keep & f.mask(raw, rows)
        if np.count_nonzero(keep) < rows // FEW_ROWS:
            chosen, keep = np.flatnonzero(keep), None
    if chosen is not None:
        return chosen
    return None if keep is None or keep.all() else np.flatnonzero(keep)


FEW_ROWS = 4  # under a quarter of the rows selected, the later filters look at those rows only


def _either(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    return a if b is None else a | b
