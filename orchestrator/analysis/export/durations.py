"""Count, total, mean, median, extremes and spread of durations per group, the way `nsys stats` defines them.

Median of an even count is the mean of the two middle values; the standard deviation is the sample one
(n - 1), 0 for a single call. Percentages are of the summed totals of the listed groups.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

STAT_COLUMNS = ["calls", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns", "pct"]


def group_ids(keys: dict[str, np.ndarray], carried: dict[str, np.ndarray] | None = None
              ) -> tuple[np.ndarray, pd.DataFrame]:
    """One dense integer id per distinct combination of the key columns, numbered in the order rows first show
    them, and the table of those combinations (with the ``carried`` columns' values at each one's first row)."""
    columns = list(keys.values())
    ids, uniques = pd.factorize(columns[0])  # hashing each column, no sort: numbered as rows first show them
    ids, size = ids.astype(np.int64, copy=False), len(uniques)
    for values in columns[1:]:
        codes, seen = pd.factorize(values)
        ids = ids * len(seen) + codes  # every combination a number of its own, below the product of the counts
        size *= len(seen)
        if size > max(len(ids), 1 << 16):  # too many to number through a table: hash the combinations
            ids, uniques = pd.factorize(ids)
            ids, size = ids.astype(np.int64, copy=False), len(uniques)
    firsts = np.full(size, len(ids), dtype=np.int64)
    firsts[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)  # the first row of each combination
    if len(columns) > 1:  # numbered again in the order rows first show them
        present = np.flatnonzero(firsts < len(ids))
        order = present[np.argsort(firsts[present], kind="stable")]
        dense = np.empty(size, dtype=np.int64)
        dense[order] = np.arange(len(order))
        ids, firsts = dense[ids], firsts[order]
    return ids, pd.DataFrame({name: values[firsts] for name, values in {**keys, **(carried or {})}.items()})


def summarize(keys: dict[str, np.ndarray], durations: np.ndarray) -> pd.DataFrame:
    """Rows of key columns + STAT_COLUMNS, largest total first."""
    if len(durations) == 0:
        return pd.DataFrame(columns=[*keys, *STAT_COLUMNS])
    ids, combos = group_ids(keys)
    ids, values = _sorted_by_group(ids, durations.astype(np.int64, copy=False))
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    table = combos.iloc[ids[starts]].reset_index(drop=True)
    return _ranked(_with_stats(table, _group_stats(values, starts)), np.arange(len(starts)))


def summarize_nested(keys: dict[str, np.ndarray], outer: str, outer_values: np.ndarray,
                     durations: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows of key columns + STAT_COLUMNS, and rows of the ``outer`` column + STAT_COLUMNS + ``groups`` (how many
    rows of the first it sums), each largest total first, from one sort of the durations. ``outer_values``: per
    duration, a value the keys determine (a group's is that of its first row), e.g. a kernel's function."""
    if len(durations) == 0:
        return (pd.DataFrame(columns=[*keys, outer, *STAT_COLUMNS]),
                pd.DataFrame(columns=[outer, *STAT_COLUMNS, "groups"]))
    ids, combos = group_ids(keys, {outer: outer_values})
    codes, _ = pd.factorize(combos[outer].to_numpy())  # the outer values in the order rows first show them
    order = np.argsort(codes, kind="stable")  # groups numbered again, those of one outer value next to each other
    renumbered = np.empty_like(order)
    renumbered[order] = np.arange(len(order))
    ids, values = _sorted_by_group(renumbered[ids], durations.astype(np.int64, copy=False))
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    stats = _group_stats(values, starts)
    inner = _ranked(_with_stats(combos.iloc[order].reset_index(drop=True), stats), order)
    within = codes[order]
    firsts = np.flatnonzero(np.r_[True, within[1:] != within[:-1]])  # each outer value's first group
    table = _with_stats(pd.DataFrame({outer: combos[outer].to_numpy()[order][firsts]}),
                        _outer_stats(stats, firsts, values, starts))
    table["groups"] = np.diff(np.r_[firsts, len(starts)])
    return inner, _ranked(table, np.arange(len(firsts)))


@dataclass(frozen=True)
class _Stats:
    """Per group: count, total, mean, the sum of squared deviations from the mean, the two middle values (the same
    one for an odd count), least and most."""
    counts: np.ndarray
    totals: np.ndarray
    means: np.ndarray
    squares: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    least: np.ndarray
    most: np.ndarray


def _group_stats(values: np.ndarray, starts: np.ndarray) -> _Stats:
    """Each group's figures: its values from its start to the next group's, ascending."""
    counts = np.diff(np.r_[starts, len(values)])
    totals = np.add.reduceat(values, starts)
    means = totals / counts
    deviations = np.repeat(means, counts)  # in place from here: a big table's temporaries are pages to fault in
    np.subtract(values, deviations, out=deviations)
    np.multiply(deviations, deviations, out=deviations)
    squares = np.add.reduceat(deviations, starts)
    del deviations
    return _Stats(counts, totals, means, squares, values[starts + (counts - 1) // 2], values[starts + counts // 2],
                  values[starts], values[starts + counts - 1])


def _outer_stats(inner: _Stats, firsts: np.ndarray, values: np.ndarray, starts: np.ndarray) -> _Stats:
    """The figures of runs of groups (each from a first group to the next run's), from the groups' own: the spread
    by the groups' squares and how far each group's mean is from the run's (no second pass over the values), the
    middle values selected among the run's values when it has more than one group."""
    counts = np.add.reduceat(inner.counts, firsts)
    totals = np.add.reduceat(inner.totals, firsts)
    means = totals / counts
    apart = inner.means - np.repeat(means, np.diff(np.r_[firsts, len(inner.counts)]))
    squares = np.add.reduceat(inner.squares + inner.counts * apart * apart, firsts)
    lower, upper = inner.lower[firsts], inner.upper[firsts]
    for k in np.flatnonzero(np.diff(np.r_[firsts, len(inner.counts)]) > 1):  # several groups: select the middle
        start, count = starts[firsts[k]], counts[k]
        low, high = (count - 1) // 2, count // 2
        chosen = np.partition(values[start:start + count], (low, high))
        lower[k], upper[k] = chosen[low], chosen[high]
    return _Stats(counts, totals, means, squares, lower, upper, np.minimum.reduceat(inner.least, firsts),
                  np.maximum.reduceat(inner.most, firsts))


def _with_stats(table: pd.DataFrame, stats: _Stats) -> pd.DataFrame:
    """The table (a row per group) with its STAT_COLUMNS."""
    counts = stats.counts
    table["calls"] = counts
    table["total_ns"] = stats.totals
    table["avg_ns"] = stats.means
    table["med_ns"] = (stats.lower + stats.upper) / 2
    table["min_ns"] = stats.least
    table["max_ns"] = stats.most
    table["std_ns"] = np.where(counts > 1, np.sqrt(stats.squares / np.maximum(counts - 1, 1)), 0.0)
    grand = stats.totals.sum()
    table["pct"] = stats.totals * 100.0 / grand if grand else 0.0
    return table


def _ranked(table: pd.DataFrame, first_seen: np.ndarray) -> pd.DataFrame:
    """Largest total first; of equal totals, the group its rows showed first."""
    return table.iloc[np.lexsort((first_seen, -table["total_ns"].to_numpy()))].reset_index(drop=True)


def _sorted_by_group(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by (group, value); one sort of a packed key when both fit in 63 bits."""
    value_bits = int(values.max()).bit_length() if len(values) else 0
    id_bits = int(ids.max()).bit_length() if len(ids) else 0
    if values.min() >= 0 and value_bits + id_bits <= 63:
        packed = ids << value_bits
        packed |= values
        packed.sort()
        values = packed & ((1 << value_bits) - 1)
        packed >>= value_bits
        return packed, values
    order = np.lexsort((values, ids))
    return ids[order], values[order]


def argsort_pairs(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """argsort by (major, minor): one sort of a packed key when both fit in 62 bits, else a lexsort."""
    if len(major) and major.min() >= 0 and minor.min() >= 0:
        shift = int(minor.max()).bit_length()
        if shift + int(major.max()).bit_length() <= 62:
            return np.argsort((major << shift) | minor, kind="stable")
    return np.lexsort((minor, major))
