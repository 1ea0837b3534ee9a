"""The regression gate: is a CI job's value of a metric clearly worse than its baseline? Pure functions on
numbers.

A change is called a regression (or an improvement) only when it is both
- statistically clear against the baseline's own spread: Student's t-test of the job's runs against the
  baseline's runs with their variances pooled (scipy's t distribution) -- the job runs the same app on the
  same kind of board, so the baseline's many runs say how noisy a run is, where a CI job's two or three
  runs alone cannot (Welch's test on two runs has one degree of freedom and misses a 50 % slowdown);
  with a single new run this is the t prediction test (is the value outside where one more run of the
  baseline would fall 95 % of the time); p < 0.05, two-sided; and
- larger than a practical threshold: 5 % of the baseline's mean unless the gate says otherwise.
Fewer than three baseline runs say nothing about the spread: the metric passes, and the decision says so.
The band is where the job's mean could lie without a clear change: the baseline's mean +- t(0.975) x its
standard deviation x sqrt(1/n + 1/m) -- a noisy history widens it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special  # the t distribution without loading scipy.stats: `results history` starts faster

from ..errors import UsageError

DEFAULT_THRESHOLD = 0.05
ALPHA = 0.05
MIN_BASELINE = 3

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no clear change"
NO_BASELINE = "no baseline"

_METRIC = re.compile(r"^[A-Za-z0-9_.-]+$")
_THRESHOLD = re.compile(r"^(?P<number>[0-9]*\.?[0-9]+)(?P<pct>%?)$")


@dataclass(frozen=True)
class GateRule:
    metric: str
    threshold: float = DEFAULT_THRESHOLD


def parse_rule(text: str) -> GateRule:
    """'steady_mean_ms:5%', 'steady_mean_ms:0.05' or 'steady_mean_ms' (the default 5 %)."""
    metric, given, threshold = text.strip().partition(":")
    if not _METRIC.match(metric):
        raise UsageError(f"--gate {text!r} is not METRIC[:THRESHOLD]", "e.g. --gate steady_mean_ms:5%")
    return GateRule(metric, parse_threshold(threshold, f"--gate {metric}:") if given else DEFAULT_THRESHOLD)


def parse_threshold(text: str, option: str = "--threshold") -> float:
    """'5%' or '0.05': the practical threshold of a change, as a fraction."""
    found = _THRESHOLD.match(text.strip())
    threshold = float(found["number"]) / (100 if found["pct"] else 1) if found else -1.0
    if not 0 <= threshold < 10:
        raise UsageError(f"{option}{'' if option.endswith(':') else ' '}{text!r}: the threshold must be a fraction "
                         "or a percentage",
                         f"e.g. {option} 5% or {option} 0.05" if option == "--threshold"
                         else "e.g. --gate steady_mean_ms:5% or steady_mean_ms:0.05")
    return threshold


@dataclass(frozen=True)
class Decision:
    metric: str
    unit: str
    better: str                       # "lower" or "higher"
    verdict: str                      # REGRESSION, IMPROVEMENT, NO_CHANGE or NO_BASELINE
    values: tuple[float, ...]
    baseline: tuple[float, ...]
    threshold: float
    mean: float
    baseline_mean: float | None
    change: float | None              # relative change of the means
    p_value: float | None
    band: tuple[float, float] | None
    note: str

    @property
    def failed(self) -> bool:
        return self.verdict == REGRESSION



def decide(metric: str, values: Sequence[float], baseline: Sequence[float], better: str = "lower", unit: str = "",
           threshold: float = DEFAULT_THRESHOLD, alpha: float = ALPHA, min_baseline: int = MIN_BASELINE) -> Decision:
    new = tuple(float(v) for v in values if math.isfinite(v))
    base = tuple(float(v) for v in baseline if math.isfinite(v))
    if not new:
        raise ValueError(f"no value of {metric} to decide on")
    mean = float(np.mean(new))
    if len(base) < min_baseline:
        return Decision(metric, unit, better, NO_BASELINE, new, base, threshold, mean, None, None, None, None,
                        f"{len(base)} baseline run{'s' if len(base) != 1 else ''}, {min_baseline} needed: "
                        "passes, and this job's runs start the baseline")
    base_mean = float(np.mean(base))
    change = (mean - base_mean) / base_mean if base_mean else (math.inf if mean != base_mean else 0.0)
    p_value = _p_value(new, base)
    spread = float(np.std(base, ddof=1))
    half = float(special.stdtrit(len(base) - 1, 1 - alpha / 2)) * spread * math.sqrt(1 / len(base) + 1 / len(new))
    band = (base_mean - half, base_mean + half)
    clear = p_value < alpha
    large = abs(change) > threshold
    worse = change > 0 if better == "lower" else change < 0
    figures = f"{_fmt(mean)} against {_fmt(base_mean)} {unit}".rstrip() + f" ({change:+.1%})"
    if clear and large:
        verdict = REGRESSION if worse else IMPROVEMENT
        note = f"{figures}: beyond the noise (p = {p_value:.2g}) and the {threshold:.0%} threshold"
    else:
        verdict = NO_CHANGE
        why = f"within the noise (p = {p_value:.2g})" if not clear else f"under the {threshold:.0%} threshold"
        note = f"{figures}: {why}"
    return Decision(metric, unit, better, verdict, new, base, threshold, mean, base_mean, change, p_value, band, note)


def _p_value(new: tuple[float, ...], base: tuple[float, ...]) -> float:
    """Two-sided, Student's t with the variances pooled: n + m - 2 degrees of freedom (n - 1 with one new
    value, whose own spread is unknown: the prediction test)."""
    squares = float(np.sum((np.asarray(base) - np.mean(base)) ** 2))
    squares += float(np.sum((np.asarray(new) - np.mean(new)) ** 2)) if len(new) > 1 else 0.0
    freedom = len(base) - 1 + max(len(new) - 1, 0)
    difference = float(np.mean(new)) - float(np.mean(base))
    if squares == 0:  # no noise at all: any difference is clear
        return 0.0 if difference != 0 else 1.0
    error = math.sqrt(squares / freedom * (1 / len(base) + 1 / len(new)))
    return float(2 * special.stdtr(freedom, -abs(difference) / error))


def _fmt(value: float) -> str:
    return f"{value:.4g}"
