"""Statistics that hold on noisy boards: a median with its 95 % interval, and a verdict on two samples.

The interval is a percentile bootstrap of the median (scipy.stats.bootstrap, 4000 resamples, a fixed
seed so the same values always give the same interval). With fewer than three values a bootstrap says
nothing useful, so the interval is then the values' own range. A difference is called "faster" or
"slower" only when it is more than 1 % of the baseline's median and larger than the noise: the two
intervals do not overlap, or a two-sided Mann-Whitney U test rejects equal distributions at 5 %.
Anything else is "no clear difference". Pure functions on numbers.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 20240
MIN_RELATIVE = 0.01
ALPHA = 0.05
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
    verdict: str               # "faster", "slower", "no clear difference" ("higher"/"lower" when not a time)
    relative: float            # (other - base) / base, from the medians
    p_value: float | None      # Mann-Whitney U, two-sided (None below two values a side)
    intervals_apart: bool
    reason: str

    def as_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "relative": self.relative, "p_value": self.p_value,
                "intervals_apart": self.intervals_apart, "reason": self.reason}


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


def compare(base: Estimate, other: Estimate, faster_when: str | None = "lower") -> Difference:
    """Is ``other`` different from ``base`` beyond the noise? 'faster'/'slower' for a time
    (faster_when='lower') or a rate ('higher'); 'higher'/'lower' for anything else (None)."""
    relative = (other.median - base.median) / base.median if base.median else math.inf
    apart = other.ci95[0] > base.ci95[1] or other.ci95[1] < base.ci95[0]
    p_value = None
    if len(base.values) >= 2 and len(other.values) >= 2:
        p_value = float(scipy_stats.mannwhitneyu(base.values, other.values, alternative="two-sided").pvalue)
    rank_says = p_value is not None and p_value < ALPHA
    if abs(relative) <= MIN_RELATIVE:
        return Difference("no clear difference", relative, p_value, apart,
                          f"the medians differ by {abs(relative):.1%}, within 1 %")
    if not (apart or rank_says):
        why = "the 95 % intervals overlap" + (f" and the rank test gives p = {p_value:.2f}" if p_value is not None
                                               else "")
        return Difference("no clear difference", relative, p_value, apart, why)
    if faster_when is None:
        verdict = "higher" if relative > 0 else "lower"
    else:
        verdict = "faster" if (relative < 0) == (faster_when == "lower") else "slower"
    why = "the 95 % intervals do not overlap" if apart else f"the rank test gives p = {p_value:.3f}"
    return Difference(verdict, relative, p_value, apart, why)
