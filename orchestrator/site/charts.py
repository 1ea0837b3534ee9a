"""A metric's history drawn: per job its valid runs' median (a dot) and interval (a bar), every run a small dot
linking to its report page (flagged runs hollow), the gate's decisions ringed, change points as dashed lines with
the size of the change. Pure: figures in, positions out (templates/_site_chart.html draws them)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..report.charts import Text, value_axis
from ..results.store import Point
from .history import MetricHistory

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 960.0, 230.0, 64.0, 16.0, 18.0, 28.0


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    r: float
    cls: str
    tip: str
    href: str | None
    data: dict[str, str] = field(default_factory=dict)   # data-* attributes the tests and readers use


@dataclass(frozen=True)
class Bar:
    x: float
    y1: float
    y2: float
    cls: str
    tip: str


@dataclass(frozen=True)
class HistoryChart:
    metric: str
    width: float
    height: float
    dots: list[Dot]
    bars: list[Bar]
    labels: list[Text]
    grid: list[float]                       # y of each tick's line
    changes: list[Bar]                      # the change points' dashed lines


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def history_chart(history: MetricHistory, link: Callable[[Point], str | None]) -> HistoryChart:
    jobs, unit = history.jobs, history.unit
    values = [p.value for job in jobs for p in job.runs] + \
             [v for job in jobs for v in (job.low, job.high) if v is not None]
    low, high, ticks = value_axis(values or [0.0, 1.0])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(jobs), 1)

    def x_of(index: int) -> float:
        return LEFT + step * (index + 0.5)

    def y_of(value: float) -> float:
        return TOP + plot_h * (1 - (value - low) / (high - low))
    labels = [Text(LEFT - 6, y_of(t) + 4, f"{t:g}", "axis", "end") for t in ticks]
    labels += [Text(LEFT - 6, HEIGHT - 8, unit, "axis", "end"),
               Text(WIDTH - RIGHT, HEIGHT - 8, f"{len(jobs)} jobs, oldest first", "axis", "end")]
    dots: list[Dot] = []            # the runs' dots, drawn over the jobs' (each a link of its own)
    medians: list[Dot] = []
    bars: list[Bar] = []
    for job in jobs:
        x = x_of(job.index)
        when = f"{job.started_at:%Y-%m-%d %H:%M} {(job.commit or '')[:9]} {job.branch or ''}".strip()
        apart = min(step * 0.8 / len(job.runs), 6.0)  # a job's runs side by side in its slot, in the order they ran
        for place, run in enumerate(job.runs):
            tip = f"{run.run_id} ({run.target}): {_fmt(run.value)} {unit}" + ("" if run.valid else ", flagged")
            dots.append(Dot(x + (place - (len(job.runs) - 1) / 2) * apart, y_of(run.value), 2.2,
                            "run" if run.valid else "run flagged", tip, link(run),
                            {"run": run.uid, "value": repr(run.value), "valid": str(run.valid).lower()}))
        if job.median is None or job.low is None or job.high is None:
            continue
        bars.append(Bar(x, y_of(job.high), y_of(job.low), "interval",
                        f"{when}: interval {_fmt(job.low)}-{_fmt(job.high)} {unit}"))
        middle = min((r for r in job.runs if r.valid), key=lambda r: abs(r.value - job.median))  # type: ignore[operator]
        tip = f"{when}: median {_fmt(job.median)} {unit} of {sum(r.valid for r in job.runs)} runs ({job.verdict})"
        medians.append(Dot(x, y_of(job.median), 4.0, f"job verdict-{job.verdict.replace(' ', '-')}", tip, link(middle),
                        {"job": str(job.index), "median": repr(job.median), "low": repr(job.low),
                         "high": repr(job.high), "verdict": job.verdict, "runs": str(len(job.runs))}))
    found = [(move.job, move.change) for move in history.moves]
    changes = [Bar(x_of(job.index) - step / 2, TOP, HEIGHT - BOTTOM, "change-point",
                   f"from {job.started_at:%Y-%m-%d} ({(job.commit or '')[:9]}): {_fmt(change.before)} -> "
                   f"{_fmt(change.after)} {unit} ({change.relative:+.1%}, p {change.pvalue:.1g})")
               for job, change in found]
    labels += [Text(c.x + 3, TOP - 4, f"{change.relative:+.1%}", "change-label", "start")
               for c, (_, change) in zip(changes, found)]
    return HistoryChart(history.metric, WIDTH, HEIGHT, medians + dots, bars, labels, [y_of(t) for t in ticks],
                        changes)
