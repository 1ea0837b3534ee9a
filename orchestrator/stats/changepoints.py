"""Change points found after the fact over a whole history: E-divisive means (Matteson and James, "A Nonparametric
Approach for Multiple Change Point Analysis of Multivariate Data", 2014) with the practical turns Hunter and Apache
Otava give it (Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance Regressions", 2023):
a candidate split is judged by a test of the two pieces it separates rather than by permutations (the answer is the
same every time it is asked), and weak candidates are found first and judged strictly after.

1. Candidates: the series is split where the energy divergence between a piece and the piece after it is largest
   (over every start of the second piece and every end of it, within the segment being split); the split is a
   candidate when those two pieces differ by a two-sided Mann-Whitney U test below ``WEAK_P`` (a rank test: a job
   slowed by other work on the machine weighs no more than any other), and the segment's two sides are split again.
2. Judging: each candidate is tested between the candidates beside it; the weakest above ``P_VALUE`` goes, and the
   rest are tested again, until every one left is below it.

Pure: values in, change points out."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

WEAK_P = 0.05       # a candidate split below this
P_VALUE = 3e-4      # a change point below this, between its neighbours (bench/changepoints.py: at most 1 false
#                     alarm in 200 unchanged histories of es2gears' noise)
MIN_SIZE = 3        # points on each side of a split


@dataclass(frozen=True)
class ChangePoint:
    index: int          # the first point of the new level
    before: float       # the median of the piece before it (up to the change point before, or the start)
    after: float        # the median of the piece after it (up to the next one, or the end)
    pvalue: float       # the test of the pieces on either side, up to the change points beside it

    @property
    def relative(self) -> float:
        """The change against the level before: +0.05 is 5 % up (inf from a level of 0)."""
        return (self.after - self.before) / abs(self.before) if self.before else float("inf")


def change_points(values: Sequence[float], p_value: float = P_VALUE, min_size: int = MIN_SIZE) -> list[ChangePoint]:
    """The change points of the series, oldest first."""
    series = np.asarray(values, dtype=float)
    if not np.isfinite(series).all():
        raise ValueError("change_points needs finite values")
    if min_size < 2:
        raise ValueError("change_points needs at least 2 points on each side of a split")
    candidates: list[int] = []
    pending = [(0, len(series))]
    while pending:
        start, end = pending.pop()
        found = _best_split(series, start, end, min_size)
        if found is None:
            continue
        tau, kappa = found
        if _pvalue(series[start:tau], series[tau:kappa]) < WEAK_P:
            candidates.append(tau)
            pending += [(start, tau), (tau, end)]
    candidates.sort()
    while candidates:
        edges = [0, *candidates, len(series)]
        pvalues = [_pvalue(series[edges[i]:edges[i + 1]], series[edges[i + 1]:edges[i + 2]])
                   for i in range(len(candidates))]
        weakest = int(np.argmax(pvalues))
        if pvalues[weakest] < p_value:
            return [ChangePoint(tau, float(np.median(series[edges[i]:tau])),
                                float(np.median(series[tau:edges[i + 2]])), pvalues[i])
                    for i, tau in enumerate(candidates)]
        candidates.pop(weakest)
    return []


def _pvalue(before: np.ndarray, after: np.ndarray) -> float:
    return float(mannwhitneyu(before, after, alternative="two-sided").pvalue)


def _best_split(series: np.ndarray, start: int, end: int, min_size: int) -> tuple[int, int] | None:
    """(tau, kappa): where series[start:tau] and series[tau:kappa] are the most different, by the energy
    divergence Q = n m / (n + m) * (2 mean|x - y| - mean|x - x'| - mean|y - y'|) (alpha 1); None when the segment
    is too short to split."""
    piece = series[start:end]
    size = len(piece)
    if size < 2 * min_size:
        return None
    distances = np.abs(piece[:, None] - piece[None, :])
    summed = np.zeros((size + 1, size + 1))
    summed[1:, 1:] = distances.cumsum(0).cumsum(1)  # summed[a, b]: distances[:a, :b] added up

    def block(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> np.ndarray:
        return summed[a1, b1] - summed[a0, b1] - summed[a1, b0] + summed[a0, b0]
    taus, kappas = np.meshgrid(np.arange(min_size, size - min_size + 1), np.arange(2 * min_size, size + 1),
                               indexing="ij")
    valid = kappas - taus >= min_size
    taus, kappas = taus[valid], kappas[valid]
    zero = np.zeros_like(taus)
    n, m = taus.astype(float), (kappas - taus).astype(float)
    across = block(zero, taus, taus, kappas) / (n * m)
    within_x = block(zero, taus, zero, taus) / (n * (n - 1))        # each pair twice over n (n - 1) ordered pairs
    within_y = block(taus, kappas, taus, kappas) / (m * (m - 1))
    q = n * m / (n + m) * (2 * across - within_x - within_y)
    best = int(np.argmax(q))
    return start + int(taus[best]), start + int(kappas[best])
