"""The regression gate: is a CI job's figure of a metric clearly worse than the jobs before it? Pure
functions on numbers.

Jobs are the unit of noise. The runs of one job share the machine's state of the moment (caches, clocks,
other load) and differ far less than jobs do, so a job is summarised by the median of its runs, and the
baseline is the last jobs' medians. Their spread says how far an unchanged job's median falls from the
others': the between-job part (the weather of the day, which no repeat inside one job removes) plus the
within-job part (the runs' own scatter, pooled over the jobs, which more repeats shrink):

    var(this job's median) = between + c(n) within / n,   between = max(0, var(job medians) - mean c(n_j) within / n_j)

(c(n) = 1 for the mean of one or two runs, pi/2 for a median of more: its variance against a mean's under
normal noise, taken at its largest). A job whose own runs scatter wider than the baseline jobs' did,
relative to their level (its runs met other weather: a busy neighbour, a slow minute), takes its own scatter
instead, on its own n - 1 degrees of freedom (Welch-Satterthwaite), so one
disturbed job is not called on the strength of a calm baseline. The job's median is
judged by where the next unchanged job's would fall: the t prediction interval on k - 1 degrees of freedom
(fewer, as Welch-Satterthwaite says, when the job's own scatter weighs) around the baseline jobs' mean, its
variance that of the job's median plus the baseline mean's own (var(job medians) / k).

Three verdicts (and the direction of a clear one):
- a regression (or an improvement): beyond the noise (p < 0.01, two-sided) and larger than the metric's
  practical threshold (a first frame is far noisier than a steady mean: per-metric defaults below);
- no clear change: well within the noise (p >= 0.2), or under the threshold even at the far end of the
  job's own 95 % interval;
- not sure yet: anything between; the job runs more repeats (each narrows its own interval) and decides again.
(``verdicts.classify``: the same three verdicts studies and `compare` give.)
Fewer than ``MIN_JOBS`` baseline jobs cannot tell the noise between jobs: the metric passes, and says so.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, median, stdev, variance

from ..errors import UsageError
from .verdicts import ALPHA, CLEAR, SAME, SAME_P, classify

MIN_JOBS = 5              # baseline jobs before the noise between jobs is known
BASELINE_JOBS = 10        # the newest valid jobs a baseline holds
DEFAULT_THRESHOLD = 0.05  # a metric without a default of its own
# per metric: what this machine's unchanged jobs spread (bench/gate_false_alarms.py), with room
# a metric `orchestrate ci` gates only when a --gate names it: the GPU's time per frame, whose noise between jobs is
# not measured yet (every other metric with a better direction is gated by default)
NOT_GATED_BY_DEFAULT = frozenset({"gpu_ms_per_frame"})


def gated_by_default(metric: str, better: str | None) -> bool:
    return better in ("lower", "higher") and metric not in NOT_GATED_BY_DEFAULT


DEFAULT_THRESHOLDS = {"first_frame_ms": 0.25, "steady_mean_ms": 0.05, "steady_p50_ms": 0.05, "steady_p90_ms": 0.10,
                      "frames_per_s": 0.05, "energy_per_frame_mj": 0.10}
APP_FIRST_THRESHOLD = 0.25  # an app parser's first_* figures (first inference: model loading included)
MEDIAN_FACTOR = math.pi / 2

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no clear change"
NOT_SURE = "not sure yet"
NO_BASELINE = "no baseline"

_METRIC = re.compile(r"^[A-Za-z0-9_.-]+$")
_THRESHOLD = re.compile(r"^(?P<number>[0-9]*\.?[0-9]+)(?P<pct>%?)$")


def default_threshold(metric: str) -> float:
    if metric in DEFAULT_THRESHOLDS:
        return DEFAULT_THRESHOLDS[metric]
    return APP_FIRST_THRESHOLD if metric.startswith("app.first") else DEFAULT_THRESHOLD


@dataclass(frozen=True)
class GateRule:
    metric: str
    threshold: float | None = None    # None: the metric's default

    @property
    def limit(self) -> float:
        return default_threshold(self.metric) if self.threshold is None else self.threshold


def parse_rule(text: str) -> GateRule:
    """'steady_mean_ms:5%', 'steady_mean_ms:0.05' or 'steady_mean_ms' (the metric's default threshold)."""
    metric, given, threshold = text.strip().partition(":")
    if not _METRIC.match(metric):
        raise UsageError(f"--gate {text!r} is not METRIC[:THRESHOLD]", "e.g. --gate steady_mean_ms:5%")
    return GateRule(metric, parse_threshold(threshold, f"--gate {metric}:") if given else None)


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
class Noise:
    """What the baseline jobs say about the noise, as standard deviations in the metric's unit."""

    between: float       # job to job, beyond what the runs' own scatter explains
    within: float        # run to run inside a job (pooled)
    within_freedom: int  # the within estimate's degrees of freedom


@dataclass(frozen=True)
class Decision:
    metric: str
    unit: str
    better: str                       # "lower" or "higher"
    verdict: str                      # REGRESSION, IMPROVEMENT, NO_CHANGE, NOT_SURE or NO_BASELINE
    values: tuple[float, ...]         # this job's runs
    baseline: tuple[float, ...]       # the baseline jobs' medians, oldest first
    baseline_runs: int                # the runs those jobs hold
    threshold: float
    figure: float                     # this job's median
    baseline_figure: float | None     # the mean of the baseline jobs' medians
    change: float | None              # relative change
    p_value: float | None
    band: tuple[float, float] | None  # where this job's median falls without a clear change (p >= ALPHA)
    noise: Noise | None
    note: str

    @property
    def failed(self) -> bool:
        return self.verdict == REGRESSION

    @property
    def unsure(self) -> bool:
        return self.verdict == NOT_SURE


def median_factor(runs: int) -> float:
    return 1.0 if runs <= 2 else MEDIAN_FACTOR


def noise_of(jobs: Sequence[Sequence[float]]) -> Noise:
    """Between- and within-job noise of the baseline jobs."""
    medians = [median(job) for job in jobs]
    squares, freedom = 0.0, 0
    for runs in jobs:
        if len(runs) > 1:
            middle = fmean(runs)
            squares += sum((v - middle) ** 2 for v in runs)
            freedom += len(runs) - 1
    within = math.sqrt(squares / freedom) if freedom else 0.0
    spread = variance(medians) if len(medians) > 1 else 0.0
    explained = fmean(median_factor(len(job)) * within ** 2 / len(job) for job in jobs) if jobs else 0.0
    return Noise(math.sqrt(max(0.0, spread - explained)), within, freedom)


def decide(metric: str, values: Sequence[float], baseline_jobs: Sequence[Sequence[float]], better: str = "lower",
           unit: str = "", threshold: float | None = None, min_jobs: int = MIN_JOBS) -> Decision:
    """This job's runs of the metric against the baseline jobs' runs (each job's valid runs, oldest job first)."""
    limit = default_threshold(metric) if threshold is None else threshold
    new = tuple(float(v) for v in values if math.isfinite(v))
    jobs = [tuple(float(v) for v in job if math.isfinite(v)) for job in baseline_jobs]
    jobs = [job for job in jobs if job]
    if not new:
        raise ValueError(f"no value of {metric} to decide on")
    figure = float(median(new))
    medians = tuple(float(median(job)) for job in jobs)
    runs = sum(len(job) for job in jobs)
    min_jobs = max(min_jobs, 2)  # one job says nothing of the noise between jobs
    if len(jobs) < min_jobs:
        return Decision(metric, unit, better, NO_BASELINE, new, medians, runs, limit, figure, None, None, None, None,
                        None, f"{len(jobs)} baseline job{'s' if len(jobs) != 1 else ''}, {min_jobs} needed to know the "
                        "noise between jobs: passes, and this job starts the baseline")
    from scipy import special  # the t distribution without scipy.stats; loaded only to decide: commands start fast
    center = fmean(medians)
    noise = noise_of(jobs)
    # this job's own scatter, when clearly wider than the baseline jobs' (its runs met other weather), is its own
    spread = stdev(new) if len(new) > 1 else 0.0
    disturbed = _wider(spread / abs(figure) if figure else 0.0, len(new) - 1,
                       noise.within / abs(center) if center else 0.0)
    within, within_freedom = (spread, len(new) - 1) if disturbed else (noise.within, noise.within_freedom)
    shared = noise.between ** 2 + variance(medians) / len(jobs)  # known from the k baseline jobs
    own = median_factor(len(new)) * within ** 2 / len(new)
    error = math.sqrt(shared + own)
    freedom = _freedom(shared, len(jobs) - 1, own, within_freedom)
    difference = figure - center
    if error == 0:  # no noise at all: any difference is clear
        p_value = 0.0 if difference != 0 else 1.0
    else:
        p_value = float(2 * special.stdtr(freedom, -abs(difference) / error))
    half = float(special.stdtrit(freedom, 1 - ALPHA / 2)) * error
    band = (center - half, center + half)
    change = difference / abs(center) if center else (math.copysign(math.inf, difference) if difference else 0.0)
    # the top of this job's own 95 % interval: how far its median could still move with more runs
    margin = float(special.stdtrit(within_freedom, 0.975)) * math.sqrt(own) if within_freedom else 0.0
    reach = (abs(difference) + margin) / abs(center) if center else math.inf
    worse = difference > 0 if better == "lower" else difference < 0
    figures = f"{_fmt(figure)} against {_fmt(center)} {unit}".rstrip() + f" ({change:+.1%})"
    kind = classify(p_value, change, reach, limit)
    if kind == CLEAR:
        verdict = REGRESSION if worse else IMPROVEMENT
        note = f"{figures}: beyond the noise between jobs (p = {p_value:.2g}) and the {limit:.0%} threshold"
    elif kind == SAME and p_value >= SAME_P:
        verdict, note = NO_CHANGE, f"{figures}: within the noise between jobs (p = {p_value:.2g})"
    elif kind == SAME:
        verdict, note = NO_CHANGE, f"{figures}: under the {limit:.0%} threshold"
    else:
        verdict = NOT_SURE
        why = f"p = {p_value:.2g}" + ("" if abs(change) > limit else f", and {reach:.1%} within reach of the "
                                     f"{limit:.0%} threshold")
        note = f"{figures}: between the noise and a clear change ({why})"
    return Decision(metric, unit, better, verdict, new, medians, runs, limit, figure, center, change, p_value, band,
                    noise, note)


def _wider(own: float, own_freedom: int, pooled: float) -> bool:
    """Do the job's runs scatter wider than the baseline jobs' runs, relative to their level (timings scale
    with it)? Then its own scatter, on its own few degrees of freedom, says how sure its median is: a job that
    met other weather is not called on the strength of a calm baseline."""
    return own_freedom >= 1 and own > pooled


def _freedom(shared: float, shared_freedom: int, own: float, own_freedom: int) -> float:
    """Welch-Satterthwaite's degrees of freedom of the two variances' sum, at most the baseline jobs' k - 1."""
    if not own_freedom or own == 0 or shared + own == 0:
        return float(shared_freedom)
    welch = (shared + own) ** 2 / (shared ** 2 / shared_freedom + own ** 2 / own_freedom)
    return min(float(shared_freedom), welch)


def _fmt(value: float) -> str:
    return f"{value:.4g}"
