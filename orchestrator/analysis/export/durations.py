"""Count, total, mean, median, extremes and spread of durations per group, the way `nsys stats` defines them.

Median of an even count is the mean of the two middle values; the standard deviation is the sample one
(n - 1), 0 for a single call. Percentages are of the summed totals of the listed groups.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

STAT_COLUMNS = ["calls", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns", "pct"]


def group_ids(keys: dict[str, np.ndarray]) -> tuple[np.ndarray, pd.DataFrame]:
    """One dense integer id per distinct combination of the key columns, and the table of those combinations."""
    columns = list(keys.values())
    ids, uniques = pd.factorize(columns[0])
    for values in columns[1:]:  # hash-factorize each column, then fold the codes into one dense id
        codes, seen = pd.factorize(values)
        ids, uniques = pd.factorize(ids.astype(np.int64) * len(seen) + codes)
    ids = ids.astype(np.int64, copy=False)
    firsts = np.empty(len(uniques), dtype=np.int64)
    firsts[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)  # the first row of each group
    return ids, pd.DataFrame({name: values[firsts] for name, values in keys.items()})


def summarize(keys: dict[str, np.ndarray], durations: np.ndarray) -> pd.DataFrame:
    """Rows of key columns + STAT_COLUMNS, largest total first."""
    if len(durations) == 0:
        return pd.DataFrame(columns=[*keys, *STAT_COLUMNS])
    ids, combos = group_ids(keys)
    ids, values = _sorted_by_group(ids, durations.astype(np.int64, copy=False))
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    counts = np.diff(np.r_[starts, len(ids)])
    totals = np.add.reduceat(values, starts)
    means = totals / counts
    deviations = np.repeat(means, counts)  # in place from here: a big table's temporaries are pages to fault in
    np.subtract(values, deviations, out=deviations)
    np.multiply(deviations, deviations, out=deviations)
    squares = np.add.reduceat(deviations, starts)
    del deviations
    std = np.where(counts > 1, np.sqrt(squares / np.maximum(counts - 1, 1)), 0.0)
    lower, upper = values[starts + (counts - 1) // 2], values[starts + counts // 2]
    table = combos.iloc[ids[starts]].reset_index(drop=True)
    table["calls"] = counts
    table["total_ns"] = totals
    table["avg_ns"] = means
    table["med_ns"] = (lower + upper) / 2
    table["min_ns"] = values[starts]
    table["max_ns"] = values[starts + counts - 1]
    table["std_ns"] = std
    grand = totals.sum()
    table["pct"] = totals * 100.0 / grand if grand else 0.0
    return table.sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)


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
