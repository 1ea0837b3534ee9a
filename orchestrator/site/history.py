"""One history's figures as the dashboard shows them: per metric, each job's median and interval (of its valid runs),
the gate's word on each job (results.trend.replay: as `orchestrate ci` would have judged it against the jobs
before), and the change points found after the fact over the whole history (stats.changepoints). Pure: the
database's points in, figures out."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..figures.run_metrics import REPORT_METRICS
from ..results.store import Point, jobs_of
from ..results.trend import replay
from ..stats.changepoints import ChangePoint, change_points
from ..stats.estimates import median_interval
from ..stats.gate import default_threshold, gated_by_default

NOT_GATED = "not gated"   # the verdict of a job of a metric ci does not gate by default


@dataclass(frozen=True)
class JobFigure:
    """One job of the history: its valid runs' median and interval, and what the gate said of it."""
    index: int                      # its place among the history's jobs, oldest first
    key: str                        # results.store.job_key's
    started_at: datetime            # its first run's start
    commit: str | None
    branch: str | None
    median: float | None            # of its valid runs (None: every run flagged)
    low: float | None
    high: float | None
    verdict: str                    # the gate's word ("flagged" when every run was)
    runs: tuple[Point, ...]


@dataclass(frozen=True)
class Move:
    """A change point: from this job on, the metric's level changed (its levels: the medians of the job medians
    before it, since the change point before, and from it on, up to the next)."""
    metric: str
    unit: str
    job: JobFigure                  # the first job of the new level
    change: ChangePoint


@dataclass(frozen=True)
class MetricHistory:
    metric: str
    unit: str
    better: str | None
    jobs: list[JobFigure]
    moves: list[Move]
    regressions: int                # jobs the gate would have failed
    improvements: int


def metric_order(names: Sequence[str]) -> list[str]:
    """The report's figures in their order, then the app's own and any other, by name."""
    known = [name for name in REPORT_METRICS if name in names]
    return known + sorted(name for name in names if name not in REPORT_METRICS)


def metric_history(metric: str, points: list[Point], unit: str, better: str | None,
                   base_branch: str | None = None) -> MetricHistory:
    """The metric's jobs, moves and the gate's replay. A value that is not a number (inf, NaN) is left out: it has
    no place on a chart. Only a metric `orchestrate ci` gates by default is judged (against ``base_branch``'s valid
    jobs before each, as its jobs compared): the others' jobs say "not gated"."""
    points = [p for p in points if math.isfinite(p.value)]
    judged: dict[str, str] = {}
    if gated_by_default(metric, better):
        judged = {t.point.job: t.verdict for t in replay(points, better or "lower", default_threshold(metric),
                                                          base_branch=base_branch, metric=metric) if t.point.valid}
    jobs = []
    for index, job in enumerate(jobs_of(points)):
        valid = [p.value for p in job.points if p.valid]
        median, low, high = median_interval(valid) if valid else (None, None, None)
        first = job.points[0]
        verdict = judged.get(job.key, NOT_GATED if valid and not judged else "flagged")
        jobs.append(JobFigure(index, job.key, first.started_at, first.commit, first.branch, median, low, high,
                              verdict, job.points))
    measured = [job for job in jobs if job.median is not None]
    found = change_points([job.median for job in measured if job.median is not None])
    moves = [Move(metric, unit, measured[c.index], c) for c in found]
    verdicts = [job.verdict for job in jobs]
    return MetricHistory(metric, unit, better, jobs, moves, verdicts.count("regression"),
                         verdicts.count("improvement"))


def histories(found: dict[str, list[Point]], units: dict[str, tuple[str, str | None]],
              base_branch: str | None = None) -> list[MetricHistory]:
    """Every metric of one history that has a value, in metric_order."""
    made = [metric_history(name, found[name], *units.get(name, ("", None)), base_branch)
            for name in metric_order(list(found))]
    return [m for m in made if m.jobs]


def drawn_runs(found: list[MetricHistory]) -> int:
    """The runs the history's charts draw (a run with no figure at all draws no dot)."""
    return len({p.uid for m in found for job in m.jobs for p in job.runs})


def drawn_jobs(found: list[MetricHistory]) -> int:
    return len({job.key for m in found for job in m.jobs})
