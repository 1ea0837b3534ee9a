"""Change points after the fact (orchestrator/stats/changepoints.py): the energy divergence it splits by equals its
definition written out pair by pair; clear steps are found where they are, a lone slow job and an unchanged
history are not; on histories whose noise is resampled from real es2gears runs (bench/changepoints.py's model, a
fixed seed), false alarms stay at most 1 in 200 and a step the noise allows (12 %) is found within 3 jobs 90 % of
the time. The numbers for the issue's 5 % step are the bench's to print."""
from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.stats.changepoints import MIN_SIZE, _best_split, change_points
from orchestrator.stats.estimates import median_interval

HISTORY = Path(__file__).parent / "data" / "gate-history" / "es2gears-local.json"


def divergence(x: list[float], y: list[float]) -> float:
    """Q of Matteson and James (alpha 1), pair by pair."""
    n, m = len(x), len(y)
    across = sum(abs(a - b) for a in x for b in y) / (n * m)
    within_x = sum(abs(a - b) for a, b in itertools.combinations(x, 2)) / (n * (n - 1) / 2)
    within_y = sum(abs(a - b) for a, b in itertools.combinations(y, 2)) / (m * (m - 1) / 2)
    return n * m / (n + m) * (2 * across - within_x - within_y)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.5, 2.0, allow_nan=False), min_size=2 * MIN_SIZE, max_size=18))
def test_the_split_is_where_the_divergence_written_out_is_largest(values):
    series = np.asarray(values)
    best = max(divergence(values[:tau], values[tau:kappa])
               for tau in range(MIN_SIZE, len(values) - MIN_SIZE + 1)
               for kappa in range(tau + MIN_SIZE, len(values) + 1))
    split = _best_split(series, 0, len(values), MIN_SIZE)
    assert split is not None
    tau, kappa = split
    found = divergence(values[:tau], values[tau:kappa])
    assert found == np.float64(best) or abs(found - best) <= 1e-9 * max(1.0, abs(best))


def wobble(count: int, seed: int = 3) -> np.ndarray:
    return 1 + np.random.default_rng(seed).normal(0, 0.01, count)


def test_clear_steps_are_found_where_they_are_with_their_levels():
    values = wobble(60)
    values[25:] *= 1.2
    values[45:] /= 1.2 * 1.1
    found = change_points(values)
    assert [c.index for c in found] == [25, 45]
    assert 0.17 < found[0].relative < 0.23 and -0.27 < found[1].relative < -0.21
    assert found[0].before == statistics.median(values[:25]) and found[0].after == statistics.median(values[25:45])
    assert all(c.pvalue < 3e-4 for c in found)
    assert change_points(values) == found  # the same answer every time


def test_a_lone_slow_job_and_an_unchanged_history_are_no_change():
    values = wobble(60)
    assert change_points(values) == []
    values[30] *= 3
    assert change_points(values) == []
    assert change_points([1.0] * 40) == [] and change_points([1.0, 2.0]) == []


def es2gears_histories(count: int, seed: int) -> np.ndarray:
    """60 jobs, each the median of 5 of the 150 real runs' ratios to their own job's median."""
    ratios = []
    for job in json.loads(HISTORY.read_text())["jobs"]:
        values = [r["metrics"]["steady_mean_ms"] for r in job["runs"] if r["valid"]]
        ratios += [v / statistics.median(values) for v in values]
    rng = np.random.default_rng(seed)
    return np.median(rng.choice(ratios, size=(count, 60, 5)), axis=2)


def test_on_real_es2gears_noise_few_false_alarms_and_a_12_percent_step_found():
    noise = es2gears_histories(200, seed=11)
    assert sum(bool(change_points(h)) for h in noise) <= 1
    stepped = noise.copy()
    stepped[:, 40:] *= 1.12
    found = sum(any(abs(c.index - 40) <= 3 for c in change_points(h)) for h in stepped)
    assert found >= 180


def test_the_order_statistic_interval_holds_the_median_95_percent_of_the_time():
    """k-th smallest to k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 2.5 %: the range up to 8 values,
    then (scipy's binomial) 2nd-8th of 9, 5th-13th of 17, 40th-61st of 100; what it covers, counted."""
    from scipy.stats import binom
    for n, k in ((1, 1), (3, 1), (5, 1), (8, 1), (9, 2), (17, 5), (100, 40)):
        values = [float(v) for v in range(n, 0, -1)]  # given in any order
        median, low, high = median_interval(values)
        assert (median, low, high) == (statistics.median(values), float(k), float(n - k + 1))
        covered = 1 - 2 * binom.cdf(k - 1, n, 0.5)
        assert covered >= 0.95 or n < 6
        assert n < 6 or 1 - 2 * binom.cdf(k, n, 0.5) < 0.95  # and no narrower pair holds it as often
    assert median_interval([1.0, float("nan"), 3.0]) == (2.0, 1.0, 3.0)
