"""A metric's history as the gate sees it: each job against the baseline made of the valid jobs before it
(its band, and whether the gate would call that job a regression or an improvement: the change points).
Pure: points in, judged points out; every run of a job carries its job's judgement."""
from __future__ import annotations

from dataclasses import dataclass

from ..stats.gate import BASELINE_JOBS, IMPROVEMENT, REGRESSION, decide
from .store import Point, jobs_of


@dataclass(frozen=True)
class TrendPoint:
    point: Point
    band: tuple[float, float] | None    # where its job's median falls without a clear change (None: too few before)
    verdict: str                        # the gate's word on its job; "flagged" for an invalid run

    @property
    def change_point(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)

    def as_json(self) -> dict[str, object]:
        return {**self.point.as_json(), "band": list(self.band) if self.band else None, "verdict": self.verdict}


def replay(points: list[Point], better: str = "lower", threshold: float | None = None,
           baseline_jobs: int = BASELINE_JOBS, base_branch: str | None = None,
           metric: str = "metric") -> list[TrendPoint]:
    """Each job judged as the gate would judge it, against the ``baseline_jobs`` valid jobs before it (the
    metric's default threshold unless given); with ``base_branch``, only that branch's jobs make the baseline
    (as the gate's do): another branch's jobs are judged against it and never move it."""
    judged: dict[str, tuple[tuple[float, float] | None, str]] = {}
    before: list[tuple[float, ...]] = []
    for job in jobs_of(points):
        valid = [p for p in job.points if p.valid]
        if not valid:
            continue
        decision = decide(metric, [p.value for p in valid], before[-baseline_jobs:], better, threshold=threshold)
        judged[job.key] = (decision.band, decision.verdict)
        if base_branch is None or valid[0].branch == base_branch:
            before.append(tuple(p.value for p in valid))
    return [TrendPoint(p, None, "flagged") if not p.valid else TrendPoint(p, *judged[p.job]) for p in points]
