"""The study's statistics on fixed data: medians, intervals, and when a difference between variants run in
turns is called one."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from orchestrator.stats.estimates import Estimate, compare_rounds, estimate

# the seed's GPU-delegate figures, as five runs each of a noisy board (ms per frame)
DELEGATE_ON = [81.2, 80.4, 82.9, 81.0, 83.5]
DELEGATE_OFF = [165.3, 162.8, 170.1, 164.0, 166.7]


def test_median_and_bootstrap_interval_of_five_runs():
    on = estimate(DELEGATE_ON)
    assert on.median == 81.2
    low, high = on.ci95
    assert 80.4 <= low <= 81.2 <= high <= 83.5
    assert estimate(DELEGATE_ON) == on  # a fixed seed: the same values, the same interval
    assert on.as_json() == {"values": DELEGATE_ON, "median": 81.2, "ci95": [low, high], "n": 5}


def test_two_or_one_values_give_their_range():
    assert estimate([10.0, 14.0]).ci95 == (10.0, 14.0) and estimate([10.0, 14.0]).median == 12.0
    assert estimate([7.0]).ci95 == (7.0, 7.0)
    assert estimate([3.0, 3.0, 3.0]).ci95 == (3.0, 3.0)
    assert estimate([1.0, float("nan"), 2.0]).values == (1.0, 2.0)
    with pytest.raises(ValueError):
        estimate([float("nan")])


def test_delegate_on_is_faster_beyond_the_noise_of_the_rounds():
    diff = compare_rounds(DELEGATE_OFF, DELEGATE_ON)
    logs = np.log(np.asarray(DELEGATE_ON) / np.asarray(DELEGATE_OFF))
    assert diff.verdict == "faster" and diff.rounds == 5
    assert diff.relative == pytest.approx(np.exp(logs.mean()) - 1) and diff.relative == pytest.approx(-0.5066, abs=1e-4)
    # the paired t-test on the ratios' logarithms, as scipy does it
    assert diff.p_value == pytest.approx(stats.ttest_rel(np.log(DELEGATE_ON), np.log(DELEGATE_OFF)).pvalue)
    assert diff.p_value < 1e-7
    assert compare_rounds(DELEGATE_ON, DELEGATE_OFF).verdict == "slower"


def test_drift_shared_by_both_variants_is_not_a_difference():
    """The machine slowed down during the study, both variants alike: round by round they stay equal (the
    unpaired spread, 100 to 130 ms, would have hidden a real 3 % change, and here says nothing)."""
    base = [100.0, 110.0, 120.0, 130.0]
    other = [100.2, 109.8, 120.3, 129.9]
    diff = compare_rounds(base, other)
    assert diff.verdict == "no clear difference" and diff.p_value > 0.2
    slower = compare_rounds(base, [v * 1.03 for v in base[:2]] + [v * 1.031 for v in base[2:]])
    assert slower.verdict == "slower" and slower.relative == pytest.approx(0.0305, abs=1e-3)


def test_noisy_rounds_are_not_sure_and_one_round_never_is():
    diff = compare_rounds([100, 120, 90, 110, 105], [98, 125, 95, 108, 101])
    assert diff.verdict == "no clear difference" and diff.reason == "+0.4%: within the noise of 5 rounds (p = 0.86)"
    unsure = compare_rounds([100, 100, 100], [104, 109, 102])  # +5 % on average, rounds that disagree
    assert unsure.verdict == "not sure yet" and 0.01 < unsure.p_value < 0.2
    assert unsure.reason.endswith("more repeats would tell")
    one = compare_rounds([100.0], [200.0])
    assert one.verdict == "not sure yet" and one.p_value is None and "run more repeats" in one.reason


def test_a_tiny_difference_is_never_called_one_however_sure():
    diff = compare_rounds([100.0, 100.01, 100.02, 100.03, 100.04], [100.5, 100.51, 100.52, 100.53, 100.54])
    assert diff.p_value < 1e-9 and diff.verdict == "no clear difference"
    assert diff.reason.startswith("+0.5%: under 1% even at the far end of its interval")


def test_rates_and_plain_amounts_get_their_own_words():
    fps_low, fps_high = [12.0, 12.2, 12.1], [24.0, 24.4, 24.1]
    assert compare_rounds(fps_low, fps_high, faster_when="higher").verdict == "faster"
    assert compare_rounds(fps_low, fps_high, faster_when=None).verdict == "higher"
    assert compare_rounds(fps_high, fps_low, faster_when=None).verdict == "lower"


finite = st.floats(min_value=0.1, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=30))
def test_the_interval_holds_the_median_within_the_values(values):
    found = estimate(values)
    assert min(values) <= found.ci95[0] <= found.median <= found.ci95[1] <= max(values)


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=12))
def test_b_against_a_is_a_against_b_turned_round(pairs):
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    there, back = compare_rounds(first, second), compare_rounds(second, first)
    assert there.rounds == back.rounds == len(pairs)
    assert back.verdict == {"faster": "slower", "slower": "faster"}.get(there.verdict, there.verdict)
    assert there.p_value == back.p_value
    if there.verdict in ("faster", "slower"):
        assert (there.verdict == "slower") == (there.relative > 0)
    assert math.copysign(1, there.relative) != math.copysign(1, back.relative) or there.relative == 0


def test_figures_that_can_be_zero_are_compared_by_their_differences():
    busy = compare_rounds([0.0, 1.0, 1.0], [1.0, 2.0, 2.0], faster_when=None)  # cores busy: one more each round
    assert busy.verdict == "higher" and busy.relative == pytest.approx(1 / (2 / 3)) and busy.p_value == 0.0
    assert compare_rounds([0.0, 0.0], [0.0, 0.0], faster_when=None).verdict == "no clear difference"
    assert compare_rounds([math.nan, 1.0], [2.0, math.inf]).verdict == "not sure yet"


def test_an_estimate_reads_back_as_written():
    found = estimate(DELEGATE_ON)
    assert Estimate.from_json(found.as_json()) == found
