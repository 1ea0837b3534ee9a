"""A metric's history as the gate sees it: each run against the baseline made of the valid runs before it
(its band, and whether the gate would call that run a regression or an improvement: the change points).
Pure: points in, judged points out."""
from __future__ import annotations

from dataclasses import dataclass

from ..ci.gate import DEFAULT_THRESHOLD, IMPROVEMENT, REGRESSION, decide
from .store import Point

BASELINE_RUNS = 10


@dataclass(frozen=True)
class TrendPoint:
    point: Point
    band: tuple[float, float] | None    # where a run's value falls without a clear change (None: too few before)
    verdict: str                        # the gate's word on this run alone; "flagged" for an invalid run

    @property
    def change_point(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)

    def as_json(self) -> dict[str, object]:
        return {**self.point.as_json(), "band": list(self.band) if self.band else None, "verdict": self.verdict}


def replay(points: list[Point], better: str = "lower", threshold: float = DEFAULT_THRESHOLD,
           baseline_runs: int = BASELINE_RUNS, base_branch: str | None = None) -> list[TrendPoint]:
    """Each point judged as the gate would judge it alone, against the ``baseline_runs`` valid points before it;
    with ``base_branch``, only that branch's valid points make the baseline (as the gate's do): another
    branch's runs are judged against it and never move it."""
    judged: list[TrendPoint] = []
    before: list[float] = []
    for point in points:
        if not point.valid:
            judged.append(TrendPoint(point, None, "flagged"))
            continue
        decision = decide("metric", [point.value], before[-baseline_runs:], better, threshold=threshold)
        judged.append(TrendPoint(point, decision.band, decision.verdict))
        if base_branch is None or point.branch == base_branch:
            before.append(point.value)
    return judged
