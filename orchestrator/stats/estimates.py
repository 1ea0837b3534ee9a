"""Statistics that hold on noisy boards: a median with its 95 % interval, and a verdict on two variants.

The interval is a percentile bootstrap of the median (scipy.stats.bootstrap, 4000 resamples, a fixed
seed so the same values always give the same interval). With fewer than three values a bootstrap says
nothing useful, so the interval is then the values' own range.

Two variants are compared round by round (``compare_rounds``): a study runs its cells in turns (A B A B),
so the k-th run of each shared the machine's weather, and the noise is how much their ratio moves from
round to round (a paired t-test on the ratios' logarithms, k - 1 degrees of freedom: A against B
is B against A turned round), not how much runs differ across
a drifting study. The verdict is ``verdicts.classify``'s, as the CI gate's: "faster"/"slower" (beyond the
noise, p < 0.01, and more than 1 %), "no clear difference", or "not sure yet" (more rounds would tell; one
round alone always is). Pure functions on numbers.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from .verdicts import SAME, SAME_P, UNSURE, classify

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 20240
MIN_RELATIVE = 0.01
BATCH = 50  # resamples at once in compare_samples' bootstrap
NO_DIFFERENCE, NOT_SURE = "no clear difference", "not sure yet"
INTERVAL_METHOD = "percentile bootstrap of the median (4000 resamples); the range of the values below 3 of them"


@dataclass(frozen=True)
class Estimate:
    values: tuple[float, ...]
    median: float
    ci95: tuple[float, float]

    def as_json(self) -> dict[str, object]:
        return {"values": list(self.values), "median": self.median, "ci95": list(self.ci95), "n": len(self.values)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Estimate:
        """What as_json wrote, read back as it was (no second bootstrap)."""
        low, high = data["ci95"]
        return cls(tuple(float(v) for v in data["values"]), float(data["median"]), (float(low), float(high)))


@dataclass(frozen=True)
class Difference:
    verdict: str               # "faster", "slower", NO_DIFFERENCE, NOT_SURE ("higher"/"lower" when not a time)
    relative: float            # other / base - 1, the rounds' geometric mean
    p_value: float | None      # the paired t-test's, two-sided (None below two rounds)
    rounds: int                # the pairs compared
    reason: str

    def as_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "relative": self.relative, "p_value": self.p_value,
                "rounds": self.rounds, "reason": self.reason}


def estimate(values: Sequence[float]) -> Estimate:
    clean = tuple(float(v) for v in values if v is not None and math.isfinite(v))
    if not clean:
        raise ValueError("no finite values to estimate from")
    middle = float(median(clean))
    if len(clean) < 3 or len(set(clean)) == 1:
        return Estimate(clean, middle, (min(clean), max(clean)))
    result = scipy_stats.bootstrap((np.asarray(clean),), np.median, confidence_level=CONFIDENCE,
                                   n_resamples=RESAMPLES, method="percentile", vectorized=True,
                                   random_state=np.random.default_rng(SEED))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    # a resampled median lies within the values; the percentile's interpolation can step an ulp outside
    low, high = max(low, min(clean)), min(high, max(clean))
    return Estimate(clean, middle, (min(low, middle), max(high, middle)))


def compare_rounds(base: Sequence[float], other: Sequence[float], faster_when: str | None = "lower",
                   threshold: float = MIN_RELATIVE) -> Difference:
    """Is ``other`` different from ``base`` beyond the noise? Their k-th values are one round (run back to
    back); 'faster'/'slower' for a time (faster_when='lower') or a rate ('higher'); 'higher'/'lower' for
    anything else (None)."""
    pairs = [(a, b) for a, b in zip(base, other) if math.isfinite(a) and math.isfinite(b)]
    if not pairs:
        return Difference(NOT_SURE, math.nan, None, 0, "no round has both values")
    if all(a > 0 and b > 0 for a, b in pairs):  # ratios, as logarithms: log b - log a = -(log a - log b)
        steps, limit, to_change = [math.log(b) - math.log(a) for a, b in pairs], math.log1p(threshold), math.expm1
    else:  # a figure that can be 0 (cores busy): differences, in units of the base's mean size
        scale = float(np.mean([abs(a) for a, _ in pairs])) or 1.0
        steps, limit, to_change = [(b - a) / scale for a, b in pairs], threshold, float
    middle = float(np.mean(steps))
    change = to_change(middle)
    if len(steps) < 2:
        return Difference(NOT_SURE, change, None, 1, f"one round ({change:+.1%}): no noise to judge it by; "
                                                     "run more repeats")
    error = float(np.std(steps, ddof=1)) / math.sqrt(len(steps))
    freedom = len(steps) - 1
    if error == 0:
        p_value = 0.0 if middle else 1.0
    else:
        p_value = float(2 * scipy_stats.t.sf(abs(middle) / error, freedom))
    far = abs(middle) + float(scipy_stats.t.ppf(0.975, freedom)) * error
    kind = classify(p_value, middle, far, limit)
    ratios = len(steps)
    rounds = f"{ratios} rounds"
    if kind == SAME:
        why = f"within the noise of {rounds} (p = {p_value:.2g})" if p_value >= SAME_P else \
            f"under {threshold:.0%} even at the far end of its interval ({to_change(far):.1%})"
        return Difference(NO_DIFFERENCE, change, p_value, ratios, f"{change:+.1%}: {why}")
    if kind == UNSURE:
        return Difference(NOT_SURE, change, p_value, ratios,
                          f"{change:+.1%}: between the noise of {rounds} and a clear change (p = {p_value:.2g}); "
                          "more repeats would tell")
    if faster_when is None:
        verdict = "higher" if change > 0 else "lower"
    else:
        verdict = "faster" if (change < 0) == (faster_when == "lower") else "slower"
    return Difference(verdict, change, p_value, ratios,
                      f"{change:+.1%} (the rounds' mean ratio): beyond the noise of {rounds} (p = {p_value:.2g})")


def compare_samples(base: Sequence[float], other: Sequence[float], faster_when: str | None = "lower",
                    threshold: float = MIN_RELATIVE) -> Difference:
    """Is ``other`` different from ``base`` beyond the noise, when their values are not rounds but two runs' own
    samples (the steady iterations or frames of each)? The change is the ratio of their medians; the noise, a
    Mann-Whitney U test (two-sided) and the percentile bootstrap of that ratio (its far end against the threshold);
    the verdict is ``verdicts.classify``'s."""
    a = np.asarray([v for v in base if math.isfinite(v) and v > 0], dtype=np.float64)
    b = np.asarray([v for v in other if math.isfinite(v) and v > 0], dtype=np.float64)
    if len(a) < 3 or len(b) < 3:
        return Difference(NOT_SURE, math.nan, None, min(len(a), len(b)), "fewer than 3 values on a side")
    change = float(np.median(b) / np.median(a) - 1.0)
    p_value = float(scipy_stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)

    def log_ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.log(np.median(y, axis=axis)) - np.log(np.median(x, axis=axis))
    found = scipy_stats.bootstrap((a, b), log_ratio, n_resamples=RESAMPLES // 4, paired=False, vectorized=True,
                                  confidence_level=CONFIDENCE, method="percentile", random_state=SEED,
                                  batch=BATCH)  # bounded memory for runs of many thousand frames
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    far = math.expm1(max(abs(low), abs(high)))
    kind = classify(p_value, change, far, threshold)
    sizes = f"{len(a)} and {len(b)} values (one run each: the noise between runs is not in it)"
    if kind == SAME:
        why = f"within the noise of {sizes} (p = {p_value:.2g})" if p_value >= SAME_P else \
            f"under {threshold:.0%} even at the far end of its interval ({far:.1%})"
        return Difference(NO_DIFFERENCE, change, p_value, min(len(a), len(b)), f"{change:+.1%}: {why}")
    if kind == UNSURE:
        return Difference(NOT_SURE, change, p_value, min(len(a), len(b)),
                          f"{change:+.1%}: between the noise of {sizes} and a clear change (p = {p_value:.2g})")
    verdict = ("higher" if change > 0 else "lower") if faster_when is None else \
        ("faster" if (change < 0) == (faster_when == "lower") else "slower")
    return Difference(verdict, change, p_value, min(len(a), len(b)),
                      f"{change:+.1%} (the medians' ratio): beyond the noise of {sizes} (p = {p_value:.2g})")


ORDER_INTERVAL_METHOD = "the order statistics around the median that hold it at least 95 % of the time (binomial); " \
                        "below 6 runs no pair does, and the bar is their range (3 runs: 75 %, 5 runs: 94 %)"


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, low, high) without resampling, for many small samples at once (a dashboard's jobs): the k-th
    smallest and k-th largest values, k the largest with P(Binomial(n, 1/2) < k) <= 2.5 % (the range up to 8
    values); the range too when no k holds (below 6 values, where it holds the median 1 - 2^(1-n) of the time).
    ValueError without a finite value."""
    found = sorted(v for v in values if math.isfinite(v))
    if not found:
        raise ValueError("median_interval needs a finite value")
    n = len(found)
    k = int(scipy_stats.binom.ppf((1 - CONFIDENCE) / 2, n, 0.5))  # P(X <= k - 1) <= 2.5 % for this k
    k = max(k, 1) if scipy_stats.binom.cdf(k - 1, n, 0.5) <= (1 - CONFIDENCE) / 2 else max(k - 1, 1)
    return float(median(found)), found[k - 1], found[n - k]
