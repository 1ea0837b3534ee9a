"""The regression gate's decisions on fixed histories, what CI systems read of them, and the trend replay."""
from __future__ import annotations

import json
import math
import statistics
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from orchestrator.ci.job import Check, CiOutcome, job_outcome
from orchestrator.ci.outputs import benchmark_json, junit_xml, markdown_summary
from orchestrator.errors import OrchestratorError, UsageError
from orchestrator.results.records import Provenance
from orchestrator.results.store import Point
from orchestrator.results.trend import replay
from orchestrator.results.trend_page import trend_page
from orchestrator.stats.gate import (
    IMPROVEMENT,
    NO_BASELINE,
    NO_CHANGE,
    NOT_SURE,
    REGRESSION,
    GateRule,
    decide,
    default_threshold,
    noise_of,
    parse_rule,
)

# fixed histories: eight jobs of three runs each
STEADY = [[10.0, 10.02, 9.98], [10.03, 10.01, 10.05], [9.97, 9.99, 9.96], [10.01, 10.0, 10.03],
          [9.99, 10.02, 10.0], [10.02, 10.04, 10.01], [9.98, 9.97, 10.0], [10.0, 10.01, 9.99]]
# the weather of the day: each job's runs agree closely, the jobs do not (9.6 to 10.45)
WEATHER = [[9.70, 9.72, 9.69], [10.30, 10.28, 10.31], [9.90, 9.91, 9.88], [10.45, 10.43, 10.46],
           [9.60, 9.62, 9.61], [10.10, 10.12, 10.09], [9.85, 9.83, 9.86], [10.20, 10.22, 10.19]]
# runs that scatter inside every job (9.5 to 10.5), jobs whose medians agree
SCATTER = [[9.5, 10.0, 10.5], [10.4, 9.6, 10.02], [9.98, 10.45, 9.55], [10.5, 9.52, 9.97], [9.6, 10.03, 10.4],
           [10.01, 9.45, 10.55], [9.58, 10.42, 9.99], [10.47, 10.0, 9.53]]


def test_a_steady_history_and_an_unchanged_job_pass():
    decision = decide("steady_mean_ms", [10.01, 9.99, 10.02], STEADY, unit="ms")
    assert decision.verdict == NO_CHANGE and not decision.failed and not decision.unsure
    assert decision.baseline == tuple(statistics.median(job) for job in STEADY) and decision.baseline_runs == 24
    assert decision.baseline_figure == pytest.approx(10.00125) and decision.figure == 10.01
    assert decision.p_value > 0.2 and "within the noise between jobs" in decision.note


def test_a_job_inside_a_wide_spread_of_jobs_is_not_called_though_its_runs_agree():
    """The 763 s false alarm's kind: a job 4 % off sits inside what unchanged jobs do; counting every run as
    independent (Student's t on runs) would have called it at p = 0.03."""
    new = [10.40, 10.41, 10.39]
    decision = decide("steady_mean_ms", new, WEATHER, threshold=0.02)
    assert decision.verdict == NO_CHANGE and decision.p_value == pytest.approx(0.259, abs=0.001)
    assert stats.ttest_ind(new, [v for job in WEATHER for v in job]).pvalue < 0.05  # runs as the unit: "clear"
    assert decision.noise.between == pytest.approx(0.296, abs=0.001) and decision.noise.within < 0.02
    assert decision.band[0] < 10.4 < decision.band[1]


def test_a_change_beyond_the_noise_and_the_threshold_fails_with_its_figures():
    decision = decide("steady_mean_ms", [11.0, 11.02, 10.98], STEADY, unit="ms")
    assert decision.verdict == REGRESSION and decision.failed
    assert decision.change == pytest.approx(0.0995, abs=0.001) and 0 < decision.p_value < 1e-6
    assert decision.note == f"11 against 10 ms (+10.0%): beyond the noise between jobs (p = {decision.p_value:.2g}) " \
                            "and the 5% threshold"
    faster = decide("steady_mean_ms", [9.0, 9.1, 8.9], STEADY)
    assert faster.verdict == IMPROVEMENT and not faster.failed
    weather = decide("steady_mean_ms", [11.5, 11.52, 11.49], WEATHER, threshold=0.02)  # +15 %: beyond even that
    assert weather.verdict == REGRESSION and weather.p_value < 0.01


def test_the_grey_zone_asks_for_more_runs_and_more_runs_decide():
    three = decide("steady_mean_ms", [10.5, 11.0, 11.5], SCATTER)
    assert three.verdict == NOT_SURE and three.unsure and not three.failed
    assert 0.01 < three.p_value < 0.2 and "between the noise and a clear change" in three.note
    six = decide("steady_mean_ms", [10.5, 11.0, 11.5, 10.55, 11.05, 11.45], SCATTER)
    assert six.verdict == REGRESSION and six.p_value < 0.01  # the job's own scatter shrinks with its runs
    # where the jobs differ, more runs of one job cannot help: still not sure, never a regression
    weather = decide("steady_mean_ms", [10.6, 10.61, 10.59], WEATHER)
    assert weather.verdict == NOT_SURE and 0.05 < weather.p_value < 0.2


def test_a_job_whose_own_runs_scatter_wide_is_not_sure_where_a_steady_one_is_clear():
    """es2gears' job 28 here: one run of five took 3.15 ms where the others took 0.9-1.9 (a busy neighbour on
    the host): its own scatter, not the calm baseline's, says how sure its median can be."""
    disturbed = decide("steady_mean_ms", [11.0, 11.5, 12.5], STEADY)
    steady = decide("steady_mean_ms", [11.45, 11.5, 11.55], STEADY)
    assert disturbed.figure == steady.figure == 11.5
    assert disturbed.verdict == NOT_SURE and 0.01 < disturbed.p_value < 0.2
    assert steady.verdict == REGRESSION and steady.p_value < 1e-4
    more = decide("steady_mean_ms", [11.0, 11.5, 12.5, 11.4, 11.6, 11.5], STEADY)  # its later runs steadier
    assert more.verdict == REGRESSION


def test_a_clear_change_under_the_threshold_passes_and_near_it_is_not_sure():
    small = decide("steady_mean_ms", [10.2, 10.21, 10.19], STEADY)  # +2 %: clear, but small
    assert small.verdict == NO_CHANGE and small.p_value < 1e-4 and "under the 5% threshold" in small.note
    assert decide("steady_mean_ms", [10.2, 10.21, 10.19], STEADY, threshold=0.01).verdict == REGRESSION
    near = decide("steady_mean_ms", [10.48, 10.53, 10.43], SCATTER)  # 4.8 %: its own interval reaches past 5 %
    assert near.verdict == NOT_SURE and "within reach of the 5% threshold" in near.note


def test_the_default_threshold_is_the_metrics_own():
    assert decide("first_frame_ms", [12.0, 12.1, 11.9], STEADY).threshold == 0.25
    assert decide("first_frame_ms", [12.0, 12.1, 11.9], STEADY).verdict == NO_CHANGE  # +20 %: a first frame's noise
    assert decide("steady_mean_ms", [12.0, 12.1, 11.9], STEADY).verdict == REGRESSION
    assert [default_threshold(m) for m in ("steady_p90_ms", "app.first_inference_ms", "app.inference_mean_ms")] == \
        [0.10, 0.25, 0.05]


def test_too_few_baseline_jobs_pass_with_a_note():
    decision = decide("steady_mean_ms", [50.0], STEADY[:4])
    assert decision.verdict == NO_BASELINE and not decision.failed and decision.band is None
    assert decision.note == "4 baseline jobs, 5 needed to know the noise between jobs: passes, and this job starts " \
                            "the baseline"
    assert decide("steady_mean_ms", [50.0], []).note.startswith("0 baseline jobs")
    assert decide("steady_mean_ms", [50.0], STEADY[:3], min_jobs=3).verdict == REGRESSION


def test_jobs_of_one_run_each_are_the_t_prediction_test():
    """No job says anything about its runs' scatter: the noise is all between jobs, and the job's value is
    judged by where one more draw of the baseline would fall (s sqrt(1 + 1/k), k - 1 degrees of freedom)."""
    base = [10.0, 10.4, 9.7, 10.2, 9.9, 10.1]
    decision = decide("m", [10.9], [[v] for v in base])
    t = (10.9 - np.mean(base)) / (np.std(base, ddof=1) * np.sqrt(1 + 1 / len(base)))
    assert decision.p_value == pytest.approx(2 * stats.t.sf(abs(t), len(base) - 1), rel=1e-9)
    assert decision.noise.within == 0 and decision.noise.between == pytest.approx(np.std(base, ddof=1))


def test_the_noise_splits_into_between_and_within_jobs():
    noise = noise_of(WEATHER)
    within = np.sqrt(np.mean([np.var(job, ddof=1) for job in WEATHER]))  # equal sizes: the pooled variance
    medians = [statistics.median(job) for job in WEATHER]
    assert noise.within == pytest.approx(within) and noise.within_freedom == 16
    assert noise.between ** 2 == pytest.approx(np.var(medians, ddof=1) - np.pi / 2 * within ** 2 / 3)
    assert noise_of(SCATTER).between == 0  # the medians agree better than the runs' scatter predicts


def test_the_direction_comes_from_the_difference_whatever_the_sign_of_the_baseline():
    negative = [[-v for v in job] for job in STEADY]
    better = decide("m", [-12.0, -12.1, -11.9], negative)  # lower is better: -12 beats -10
    assert better.verdict == IMPROVEMENT and better.change == pytest.approx(-0.2, abs=0.001)
    worse = decide("m", [1.0, 1.1, 0.9], [[0.0, 0.01, -0.01]] * 5)  # around 0: an infinite change, and worse
    assert worse.verdict == REGRESSION and worse.change == math.inf
    assert decide("m", [50.0], STEADY[:1], min_jobs=1).verdict == NO_BASELINE  # one job tells no noise


def test_higher_is_better_metrics_regress_when_they_drop():
    rates = [[1000 / v for v in job] for job in STEADY]
    assert decide("frames_per_s", [90.0, 90.5], rates, better="higher").verdict == REGRESSION
    assert decide("frames_per_s", [110.0, 110.5], rates, better="higher").verdict == IMPROVEMENT


def test_a_baseline_without_any_spread_calls_any_large_difference_clear():
    assert decide("m", [12.0, 12.0], [[10.0, 10.0]] * 5).verdict == REGRESSION
    assert decide("m", [10.0, 10.0], [[10.0, 10.0]] * 5).verdict == NO_CHANGE


@settings(max_examples=60, deadline=None)
@given(scale=st.floats(min_value=1e-3, max_value=1e3), shift=st.floats(min_value=-0.5, max_value=0.5))
def test_the_decision_does_not_depend_on_the_unit(scale, shift):
    """ms or s, a Nano or an Orin: scaling every value by the same factor changes no verdict or p-value."""
    values = [v * (1 + shift) for v in (10.0, 10.2, 9.9)]
    history = WEATHER[:4] + SCATTER[:4]
    plain = decide("m", values, history)
    scaled = decide("m", [v * scale for v in values], [[v * scale for v in job] for job in history])
    assert scaled.verdict == plain.verdict
    assert scaled.p_value == pytest.approx(plain.p_value, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("text, rule", [
    ("steady_mean_ms:5%", GateRule("steady_mean_ms", 0.05)), ("steady_p90_ms:0.1", GateRule("steady_p90_ms", 0.1)),
    ("app.inference_mean_ms", GateRule("app.inference_mean_ms", None)), ("first_frame_ms:12.5%",
                                                                           GateRule("first_frame_ms", 0.125)),
])
def test_gate_rules(text, rule):
    assert parse_rule(text) == rule
    assert parse_rule("first_frame_ms").limit == 0.25 and parse_rule("first_frame_ms:3%").limit == 0.03


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
              _check("steady_p90_ms", [12.0, 12.1], [[v + 2 for v in job] for job in STEADY]),
              _check("first_frame_ms", [300.0], [[100.0]]),
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
    assert "this job (3 runs, median 11): 11, 11.1, 10.9" in failure.text
    assert "baseline (8 jobs, 24 runs), each job's median: 10, 10.03, 9.97, 10.01, 10, 10.02, 9.98, 10" in failure.text
    assert "noise (standard deviations): between jobs 0" in failure.text and "within a job 0.0" in failure.text
    assert cases["posebench steady_mean_ms"].get("classname") == "NVIDIA Jetson AGX Orin.orin-01"
    assert "flagged" in cases["posebench steady_mean_ms"].find("skipped").get("message")


def test_the_benchmark_file_is_github_action_benchmarks_smaller_is_better_format():
    checks = [_check("steady_mean_ms", [11.0, 11.02], STEADY),
              _check("frames_per_s", [90.0, 91.0], [[100.0, 100.5, 99.5]] * 5, better="higher", unit="frames/s")]
    entries = json.loads(benchmark_json(_outcome(checks)))
    assert entries == [{"name": "posebench steady_mean_ms (NVIDIA Jetson Nano Developer Kit)", "unit": "ms",
                        "value": 11.01, "range": "± 0.01", "extra": entries[0]["extra"]}]
    assert entries[0]["extra"].startswith("regression; 11.01 against 10 ms")


def test_the_summary_says_the_outcome_and_every_figure():
    text = markdown_summary(_outcome([_check("steady_mean_ms", [11.0, 11.1, 10.9], STEADY)]))
    assert text.startswith("### orchestrate ci failed: a metric regressed\n")
    assert "Commit `ffffffffffff` on `speedup`, compared with `main`." in text
    assert "| nano-01 (NVIDIA Jetson Nano Developer Kit) | posebench | steady_mean_ms | 10 (n=8) | 11 ms (n=3) | " \
           "+10.0% |" in text and "| **regression** |" in text
    passing = markdown_summary(_outcome([_check("steady_mean_ms", [10.0], [[10.0]])]))
    assert passing.startswith("### orchestrate ci passed: no baseline yet for this board kind")
    unsure = markdown_summary(_outcome([_check("steady_mean_ms", [10.5, 11.0, 11.5], SCATTER)]))
    assert unsure.startswith("### orchestrate ci passed: no metric is clearly worse, but the gate is not sure about")
    assert "| not sure after 3 runs |" in unsure


def test_the_job_outcome_puts_a_failed_run_before_a_regression_before_unsure_before_no_baseline():
    regression = _check("steady_mean_ms", [11.0, 11.1, 10.9], STEADY)
    no_base = _check("steady_p90_ms", [10.0], [])
    same = _check("steady_p90_ms", [10.0, 10.01], STEADY)
    unsure = _check("steady_mean_ms", [10.5, 11.0, 11.5], SCATTER)
    assert job_outcome([unsure, regression], None) == "regression"
    assert job_outcome([same, unsure, no_base], None) == "unsure"
    suite = ET.fromstring(junit_xml(_outcome([same, unsure])))
    assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")
    [skipped] = [case.find("skipped") for case in suite.iter("testcase") if case.find("skipped") is not None]
    assert skipped.get("message").startswith("steady_mean_ms not sure after 3 runs: 11 against 10")
    failed = Check("nano-01", "k", "posebench", "", "run", "failed", reason="the app exited with 1")
    assert job_outcome([regression, failed], None) == "failed"
    assert job_outcome([regression, no_base], None) == "regression"
    assert job_outcome([no_base], None) == "no-baseline"
    assert job_outcome([same, no_base], None) == "pass"
    assert job_outcome([same], OrchestratorError("interrupted")) == "failed"


def _points(jobs: list[list[float]], flagged: tuple[int, ...] = ()) -> list[Point]:
    """Runs of CI jobs, oldest first; ``flagged``: the indices of invalid runs."""
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    runs = [(j, v) for j, job in enumerate(jobs) for v in job]
    return [Point(f"run-{i}", start + timedelta(hours=i), v, i not in flagged, "ok", "nano-01", "Nano", "",
                  f"{j:040x}", "main", j + 1, f"job {j + 1}") for i, (j, v) in enumerate(runs)]


def test_the_trend_replays_the_gate_job_by_job_and_marks_the_step_as_a_change_point():
    level = [[12.0, 12.02, 11.98], [12.03, 12.01, 12.05], [11.97, 11.99, 11.96], [12.01, 12.0, 12.03],
             [11.99, 12.02, 12.0], [12.02, 12.04, 12.01]]
    points = _points(STEADY + level, flagged=(4,))
    judged = replay(points, metric="steady_mean_ms")
    verdicts = [judged[3 * j].verdict for j in range(len(STEADY + level))]
    assert verdicts[:5] == [NO_BASELINE] * 5 and judged[4].verdict == "flagged"
    assert all(t.verdict == judged[3 * j].verdict for j in range(14) for t in judged[3 * j: 3 * j + 3]
               if t.point.valid)  # a job's runs carry its verdict
    assert verdicts[5:8] == [NO_CHANGE] * 3 and verdicts[8] == REGRESSION and judged[24].change_point
    # the new level joins the baseline and widens it: the next jobs are not sure, then it is the baseline
    assert REGRESSION not in verdicts[9:] and verdicts[-1] == NO_CHANGE
    assert sum(t.change_point for t in judged) == 3  # the first job at the new level, its three runs
    page = trend_page(judged, "posebench", "steady_mean_ms", "ms", None, 0.05)
    assert page.change_points == 3 and len(page.rows) == len(points)
    assert page.chart is not None and page.chart.marks == len(points) - 1  # the flagged run is not on the line
    assert sum(1 for r in page.chart.rects if r.cls.startswith("change-point")) == 3


def test_a_trend_on_a_base_branch_judges_other_branches_without_letting_them_move_the_baseline():
    points = _points(STEADY[:6] + [[12.0, 12.1, 11.9], [12.1, 12.0, 12.05], [10.02, 10.0, 10.01]])
    points[18:24] = [replace(p, branch="slow-feature") for p in points[18:24]]
    judged = replay(points, base_branch="main")
    assert [t.verdict for t in judged[18:24]] == [REGRESSION] * 6  # each job judged against main's jobs alone
    assert judged[24].verdict == NO_CHANGE
    assert sum(judged[24].band) == pytest.approx(sum(judged[18].band))  # main's baseline did not move
    mixed = replay(points)  # without a base, the feature's jobs join the baseline and widen it
    assert sum(mixed[24].band) > sum(judged[24].band) and mixed[21].verdict != REGRESSION


HISTORIES = Path(__file__).parent / "data" / "gate-history"


def recorded_jobs(name: str = "frames-local.json") -> list[list[dict[str, float]]]:
    """Real jobs of an unchanged app, each job's runs' figures (tests/data/gate-history/)."""
    return [[run["metrics"] for run in job["runs"] if run["valid"]]
            for job in json.loads((HISTORIES / name).read_text())["jobs"]]


def judge_in_turn(jobs: list[list[dict[str, float]]], metric: str, better: str, factor: float = 1.0) -> list[str]:
    """Each job after the tenth, its first three runs (times ``factor``), against the ten jobs before it."""
    verdicts = []
    for index in range(10, len(jobs)):
        history = [[run[metric] for run in job[:3]] for job in jobs[index - 10:index]]
        verdicts.append(decide(metric, [run[metric] * factor for run in jobs[index][:3]], history, better).verdict)
    return verdicts


@pytest.mark.parametrize("metric, better", [("steady_mean_ms", "lower"), ("steady_p90_ms", "lower"),
                                            ("first_frame_ms", "lower"), ("frames_per_s", "higher")])
def test_real_unchanged_jobs_are_never_called_and_ten_percent_slower_ones_are(metric, better):
    """30 real jobs in a row, each against the ten before it, as a CI history would judge them."""
    jobs = recorded_jobs()
    assert len(jobs) == 40 and all(len(job) == 6 for job in jobs)
    same = judge_in_turn(jobs, metric, better)
    assert len(same) == 30 and not {REGRESSION, IMPROVEMENT} & set(same)
    assert same == [NO_CHANGE] * 30
    if metric in ("steady_mean_ms", "frames_per_s"):
        slower = judge_in_turn(jobs, metric, better, 1.1 if better == "lower" else 1 / 1.1)
        assert slower == [REGRESSION] * 30


def test_real_jobs_of_a_noisy_app_are_never_called_in_turn():
    """es2gears here: its job medians spread over 20 % (a CPU-rendered 1 ms frame on a shared 2-core machine);
    the gate is not sure about some jobs and calls none."""
    jobs = recorded_jobs("es2gears-local.json")
    assert len(jobs) == 30 and all(len(job) == 5 for job in jobs)
    for metric, better in (("steady_mean_ms", "lower"), ("first_frame_ms", "lower"), ("frames_per_s", "higher")):
        verdicts = judge_in_turn(jobs, metric, better)
        assert len(verdicts) == 20 and not {REGRESSION, IMPROVEMENT} & set(verdicts), (metric, verdicts)
