"""The study's statistics on fixed data: medians, intervals, and when a difference is called one."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.study.stats import Estimate, compare, estimate

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


def test_delegate_on_is_faster_beyond_the_noise():
    diff = compare(estimate(DELEGATE_OFF), estimate(DELEGATE_ON))
    assert diff.verdict == "faster" and diff.intervals_apart
    assert diff.relative == pytest.approx((81.2 - 165.3) / 165.3)
    assert diff.p_value == pytest.approx(0.0079, abs=1e-3)  # 5 vs 5 fully separated: 2/252
    assert compare(estimate(DELEGATE_ON), estimate(DELEGATE_OFF)).verdict == "slower"


def test_overlapping_noise_is_no_clear_difference():
    diff = compare(estimate([100, 120, 90, 110, 105]), estimate([98, 125, 95, 108, 101]))
    assert diff.verdict == "no clear difference" and not diff.intervals_apart
    assert diff.reason.startswith("the 95 % intervals overlap and the rank test gives p = ")


def test_a_tiny_difference_is_never_called_one_however_sure():
    base = estimate([100.0, 100.01, 100.02, 100.03, 100.04])
    other = estimate([100.5, 100.51, 100.52, 100.53, 100.54])
    diff = compare(base, other)
    assert diff.intervals_apart and diff.verdict == "no clear difference"
    assert diff.reason == "the medians differ by 0.5%, within 1 %"


def test_rates_and_plain_amounts_get_their_own_words():
    fps_low, fps_high = estimate([12.0, 12.2, 12.1]), estimate([24.0, 24.4, 24.1])
    assert compare(fps_low, fps_high, faster_when="higher").verdict == "faster"
    assert compare(fps_low, fps_high, faster_when=None).verdict == "higher"
    assert compare(fps_high, fps_low, faster_when=None).verdict == "lower"


def test_two_runs_a_side_need_apart_intervals():
    # Mann-Whitney cannot reach 5 % with 2 against 2 (its smallest p is 1/3): only the ranges decide
    assert compare(estimate([10, 11]), estimate([20, 21])).verdict == "slower"
    diff = compare(estimate([10, 21]), estimate([11, 22]))
    assert diff.verdict == "no clear difference" and diff.p_value == pytest.approx(2 / 3)


finite = st.floats(min_value=0.1, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=30))
def test_the_interval_holds_the_median_within_the_values(values):
    found = estimate(values)
    assert min(values) <= found.ci95[0] <= found.median <= found.ci95[1] <= max(values)


@given(st.lists(finite, min_size=1, max_size=12), st.lists(finite, min_size=1, max_size=12))
def test_a_verdict_is_symmetric(first, second):
    a, b = estimate(first), estimate(second)
    there, back = compare(a, b), compare(b, a)
    flipped = {"faster": "slower", "slower": "faster"}
    if there.verdict != "no clear difference" and back.verdict != "no clear difference":
        assert flipped[there.verdict] == back.verdict
    assert there.intervals_apart == back.intervals_apart
    assert math.copysign(1, there.relative) != math.copysign(1, back.relative) or there.relative == 0


def test_an_estimate_reads_back_as_written():
    found = estimate(DELEGATE_ON)
    assert Estimate.from_json(found.as_json()) == found
