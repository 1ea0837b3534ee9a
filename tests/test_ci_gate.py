"""The regression gate's decisions on fixed histories, what CI systems read of them, and the trend replay."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ci.gate import IMPROVEMENT, NO_BASELINE, NO_CHANGE, REGRESSION, GateRule, decide, parse_rule
from orchestrator.ci.job import Check, CiOutcome, job_outcome
from orchestrator.ci.outputs import benchmark_json, junit_xml, markdown_summary
from orchestrator.errors import OrchestratorError, UsageError
from orchestrator.results.records import Provenance
from orchestrator.results.store import Point
from orchestrator.results.trend import replay
from orchestrator.results.trend_page import trend_page

STEADY = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 10.02, 9.98]
NOISY = [8.0, 12.0, 9.0, 11.5, 10.0, 13.0, 7.5, 9.0]


def test_a_steady_history_and_the_same_value_pass():
    decision = decide("steady_mean_ms", [10.01, 9.99, 10.03], STEADY, unit="ms")
    assert decision.verdict == NO_CHANGE and not decision.failed
    assert decision.baseline_mean == pytest.approx(10.0) and abs(decision.change) < 0.005
    assert decision.p_value > 0.05 and "within the noise" in decision.note


def test_a_shifted_value_fails_with_its_figures():
    decision = decide("steady_mean_ms", [11.0, 11.1, 10.9], STEADY, unit="ms")
    assert decision.verdict == REGRESSION and decision.failed
    # by hand: pooled variance (7 x 0.003686 + 2 x 0.01) / 9 = 0.005089, standard error
    # sqrt(0.005089 x (1/8 + 1/3)) = 0.0483, t = 20.7 on 9 degrees of freedom
    assert decision.change == pytest.approx(0.10, abs=0.001) and 0 < decision.p_value < 1e-7
    assert decision.note == f"11 against 10 ms (+10.0%): beyond the noise (p = {decision.p_value:.2g}) and the 5% " \
                            "threshold"
    faster = decide("steady_mean_ms", [9.0, 9.1, 8.9], STEADY)
    assert faster.verdict == IMPROVEMENT and not faster.failed


def test_two_new_runs_far_outside_a_steady_baseline_are_clear():
    """A CI job's usual two runs: their own spread has one degree of freedom; the baseline's says the noise."""
    decision = decide("steady_mean_ms", [13.38, 12.81], [8.368, 8.328, 8.398])
    assert decision.verdict == REGRESSION and decision.p_value < 0.001


def test_a_noisy_history_widens_the_band_and_the_same_shift_passes():
    steady = decide("steady_mean_ms", [11.0, 11.1, 10.9], STEADY)
    noisy = decide("steady_mean_ms", [11.0, 11.1, 10.9], NOISY)
    assert noisy.verdict == NO_CHANGE and noisy.p_value > 0.05
    steady_width = steady.band[1] - steady.band[0]
    noisy_width = noisy.band[1] - noisy.band[0]
    assert noisy_width > 20 * steady_width
    assert noisy.band[0] < noisy.mean < noisy.band[1]
    assert not steady.band[0] < steady.mean < steady.band[1]


def test_a_clear_change_under_the_threshold_passes_and_the_threshold_is_per_metric():
    decision = decide("steady_mean_ms", [10.3, 10.31, 10.29], STEADY)  # +3 %: clear, but small
    assert decision.verdict == NO_CHANGE and decision.p_value < 0.001 and "under the 5% threshold" in decision.note
    assert decide("steady_mean_ms", [10.3, 10.31, 10.29], STEADY, threshold=0.02).verdict == REGRESSION


def test_too_few_baseline_runs_pass_with_a_note():
    decision = decide("steady_mean_ms", [50.0], [10.0, 10.1])
    assert decision.verdict == NO_BASELINE and not decision.failed and decision.band is None
    assert decision.note == "2 baseline runs, 3 needed: passes, and this job's runs start the baseline"
    assert decide("steady_mean_ms", [50.0], []).note.startswith("0 baseline runs")


def test_one_new_run_is_judged_by_where_one_more_baseline_run_would_fall():
    inside = decide("steady_mean_ms", [10.15], STEADY)
    outside = decide("steady_mean_ms", [11.0], STEADY)
    assert inside.verdict == NO_CHANGE and outside.verdict == REGRESSION
    assert inside.band == outside.band and inside.band[0] < 10.15 < inside.band[1]


def test_higher_is_better_metrics_regress_when_they_drop():
    rates = [1000 / v for v in STEADY]
    assert decide("frames_per_s", [90.0, 90.5], rates, better="higher").verdict == REGRESSION
    assert decide("frames_per_s", [110.0, 110.5], rates, better="higher").verdict == IMPROVEMENT


def test_a_baseline_without_any_spread_calls_any_large_difference_clear():
    assert decide("m", [12.0, 12.0], [10.0, 10.0, 10.0]).verdict == REGRESSION
    assert decide("m", [10.0, 10.0], [10.0, 10.0, 10.0]).verdict == NO_CHANGE


@settings(max_examples=60, deadline=None)
@given(scale=st.floats(min_value=1e-3, max_value=1e3), shift=st.floats(min_value=-0.5, max_value=0.5))
def test_the_decision_does_not_depend_on_the_unit(scale, shift):
    """ms or s, a Nano or an Orin: scaling every value by the same factor changes no verdict or p-value."""
    values = [v * (1 + shift) for v in (10.0, 10.2, 9.9)]
    plain = decide("m", values, NOISY[:5] + STEADY[:3])
    scaled = decide("m", [v * scale for v in values], [v * scale for v in NOISY[:5] + STEADY[:3]])
    assert scaled.verdict == plain.verdict
    assert scaled.p_value == pytest.approx(plain.p_value, rel=1e-6, abs=1e-12)


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy's, on samples without spread
@settings(max_examples=80, deadline=None)
@given(base=st.lists(st.floats(min_value=1, max_value=100), min_size=3, max_size=12),
       new=st.lists(st.floats(min_value=1, max_value=100), min_size=1, max_size=5))
def test_the_p_value_is_students_pooled_t_test(base, new):
    """The gate's own arithmetic (scipy.special's t distribution, to start fast) against scipy.stats."""
    from scipy import stats

    from orchestrator.ci.gate import _p_value
    if np.ptp(base + new) < 1e-6 * max(base + new):
        return  # (next to) no spread: the gate's own rule, tested above
    if len(new) > 1:
        expected = stats.ttest_ind(new, base, equal_var=True).pvalue
    else:  # one more draw from the baseline: t = (x - mean) / (s sqrt(1 + 1/n)) on n - 1 degrees of freedom
        t = (new[0] - np.mean(base)) / (np.std(base, ddof=1) * np.sqrt(1 + 1 / len(base)))
        expected = 2 * stats.t.sf(abs(t), len(base) - 1)
    assert _p_value(tuple(new), tuple(base)) == pytest.approx(expected, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("text, rule", [
    ("steady_mean_ms:5%", GateRule("steady_mean_ms", 0.05)), ("steady_p90_ms:0.1", GateRule("steady_p90_ms", 0.1)),
    ("app.inference_mean_ms", GateRule("app.inference_mean_ms", 0.05)), ("first_frame_ms:12.5%",
                                                                          GateRule("first_frame_ms", 0.125)),
])
def test_gate_rules(text, rule):
    assert parse_rule(text) == rule


@pytest.mark.parametrize("text", ["", "steady_mean_ms:", "steady_mean_ms:five", "x:2000%", "a b:5%"])
def test_bad_gate_rules_are_one_line(text):
    with pytest.raises(UsageError) as caught:
        parse_rule(text)
    assert "--gate" in caught.value.one_line() and "\n" not in caught.value.one_line()


def _outcome(checks: list[Check], error: OrchestratorError | None = None) -> CiOutcome:
    return CiOutcome(7, job_outcome(checks, error), checks, [], None, Provenance("f" * 40, "speedup"), "main", error)


def _check(metric: str, values: list[float], base: list[float], better: str = "lower", cell: str = "",
           unit: str = "ms") -> Check:
    return Check("nano-01", "NVIDIA Jetson Nano Developer Kit", "posebench", cell, metric, "decided",
                 decide(metric, values, base, better, unit))


def test_junit_has_a_case_per_board_app_and_metric_and_the_failure_names_the_figures():
    checks = [_check("steady_mean_ms", [11.0, 11.1, 10.9], STEADY, cell="threads=2"),
              _check("steady_p90_ms", [12.0, 12.1], [12.0, 12.05, 11.95, 12.02]),
              _check("first_frame_ms", [300.0], [100.0]),
              Check("nano-01", "NVIDIA Jetson Nano Developer Kit", "posebench", "", "energy_per_frame_mj", "missing",
                    reason="the runs have no figure named energy_per_frame_mj: not judged"),
              Check("orin-01", "NVIDIA Jetson AGX Orin", "posebench", "", "steady_mean_ms", "invalid",
                    reason="every run was flagged (the CPU clock dropped): not judged, and not a baseline")]
    outcome = _outcome(checks)
    assert outcome.outcome == REGRESSION
    suite = ET.fromstring(junit_xml(outcome))
    counts = (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped"))
    assert counts == ("5", "1", "0", "3")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"posebench[threads=2] steady_mean_ms", "posebench steady_p90_ms", "posebench first_frame_ms",
                          "posebench energy_per_frame_mj", "posebench steady_mean_ms"}
    failure = cases["posebench[threads=2] steady_mean_ms"].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert failure.get("message").startswith("steady_mean_ms regressed: 11 against 10 ms (+10.0%)")
    assert "this job (3 runs): 11, 11.1, 10.9" in failure.text and "baseline (8 runs): 10, 10.1, 9.9" in failure.text
    assert cases["posebench steady_mean_ms"].get("classname") == "NVIDIA Jetson AGX Orin.orin-01"
    assert "flagged" in cases["posebench steady_mean_ms"].find("skipped").get("message")


def test_the_benchmark_file_is_github_action_benchmarks_smaller_is_better_format():
    checks = [_check("steady_mean_ms", [11.0, 11.2], STEADY), _check("frames_per_s", [90.0, 91.0], [100.0, 100.5, 99.5],
                                                                     better="higher", unit="frames/s")]
    entries = json.loads(benchmark_json(_outcome(checks)))
    assert entries == [{"name": "posebench steady_mean_ms (NVIDIA Jetson Nano Developer Kit)", "unit": "ms",
                        "value": 11.1, "range": "± 0.1", "extra": entries[0]["extra"]}]
    assert entries[0]["extra"].startswith("regression; 11.1 against 10 ms")


def test_the_summary_says_the_outcome_and_every_figure():
    text = markdown_summary(_outcome([_check("steady_mean_ms", [11.0, 11.1, 10.9], STEADY)]))
    assert text.startswith("### orchestrate ci failed: a metric regressed\n")
    assert "Commit `ffffffffffff` on `speedup`, compared with `main`." in text
    assert "| nano-01 (NVIDIA Jetson Nano Developer Kit) | posebench | steady_mean_ms | 10 (n=8) | 11 ms (n=3) | " \
           "+10.0% |" in text and "| **regression** |" in text
    passing = markdown_summary(_outcome([_check("steady_mean_ms", [10.0], [10.0])]))
    assert passing.startswith("### orchestrate ci passed: no baseline yet for this board kind")


def test_the_job_outcome_puts_a_failed_run_before_a_regression_before_no_baseline():
    regression = _check("steady_mean_ms", [11.0, 11.1, 10.9], STEADY)
    no_base = _check("steady_p90_ms", [10.0], [])
    same = _check("steady_p90_ms", [10.0, 10.01], STEADY)
    failed = Check("nano-01", "k", "posebench", "", "run", "failed", reason="the app exited with 1")
    assert job_outcome([regression, failed], None) == "failed"
    assert job_outcome([regression, no_base], None) == "regression"
    assert job_outcome([no_base], None) == "no-baseline"
    assert job_outcome([same, no_base], None) == "pass"
    assert job_outcome([same], OrchestratorError("interrupted")) == "failed"


def _points(values: list[float], flagged: tuple[int, ...] = ()) -> list[Point]:
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    return [Point(f"run-{i}", start + timedelta(hours=i), v, i not in flagged, "ok", "nano-01", "Nano", "",
                  f"{i:040x}", "main", None) for i, v in enumerate(values)]


def test_the_trend_replays_the_gate_and_marks_the_step_as_a_change_point():
    values = STEADY + [12.0] + [12.0, 12.1, 11.9, 12.05, 11.95, 12.0, 12.02, 11.98, 12.01, 11.99, 12.0]
    judged = replay(_points(values, flagged=(4,)))
    assert [t.verdict for t in judged[:3]] == [NO_BASELINE] * 3 and judged[4].verdict == "flagged"
    assert judged[8].verdict == REGRESSION and judged[8].change_point
    assert sum(t.change_point for t in judged) == 1  # once the new level fills the baseline, it is the baseline
    assert judged[-1].verdict == NO_CHANGE and judged[-1].band[0] > 11
    page = trend_page(judged, "posebench", "steady_mean_ms", "ms", None, 0.05)
    assert page.change_points == 1 and len(page.rows) == len(values)
    assert page.chart is not None and page.chart.marks == len(values) - 1  # the flagged run is not on the line
    assert sum(1 for r in page.chart.rects if r.cls.startswith("change-point")) == 1


def test_a_trend_on_a_base_branch_judges_other_branches_without_letting_them_move_the_baseline():
    steady = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0]
    points = _points(steady + [12.0, 12.1, 11.9, 10.02])
    points[6:9] = [replace(p, branch="slow-feature") for p in points[6:9]]
    judged = replay(points, base_branch="main")
    assert [t.verdict for t in judged[6:9]] == [REGRESSION] * 3  # each judged against main's runs alone
    assert judged[9].verdict == NO_CHANGE and judged[9].band == judged[6].band  # main's band did not move
    mixed = replay(points)  # without a base, the feature's runs join the baseline and widen it
    assert mixed[9].band != judged[9].band and mixed[8].verdict != REGRESSION
