"""The trend page of a metric's history: the values over the runs, each run's baseline band shaded, flagged
runs hollow and change points filled; below, the runs newest first. Pure: judged points in, the page's typed
context out."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..report.charts import WIDTH, Chart, Line, Rect, Text, value_axis
from ..report.render import Fact, render, write_page
from ..stats.gate import BASELINE_JOBS, MIN_JOBS
from .trend import TrendPoint


@dataclass(frozen=True)
class TrendRow:
    when: str
    commit: str
    branch: str
    target: str
    value: str
    band: str
    verdict: str


@dataclass(frozen=True)
class TrendPage:
    title: str
    facts: list[Fact]
    chart: Chart | None
    rows: list[TrendRow]
    change_points: int
    note: str


def trend_chart(judged: list[TrendPoint], unit: str) -> Chart:
    """Values over the runs in order: the band of each run's baseline as a shaded bar, the valid values as
    a line, flagged runs as hollow squares, change points as filled ones."""
    height, left, right, top, bottom = 300.0, 64.0, 16.0, 12.0, 30.0
    chart = Chart("trend", WIDTH, height)
    if not judged:
        return chart
    values = [t.point.value for t in judged] + [v for t in judged if t.band for v in t.band]
    low, high, ticks = value_axis(values)
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    step = plot_w / max(len(judged), 1)

    def x_of(index: int) -> float:
        return left + step * (index + 0.5)

    def y_of(value: float) -> float:
        return top + plot_h * (1 - (value - low) / (high - low))
    for tick in ticks:
        chart.lines.append(Line(left, y_of(tick), WIDTH - right, y_of(tick), "grid"))
        chart.texts.append(Text(left - 6, y_of(tick) + 4, f"{tick:g}", "axis", "end"))
    chart.texts.append(Text(left - 6, height - 8, unit, "axis", "end"))
    chart.texts.append(Text(WIDTH - right, height - 8, f"{len(judged)} runs, oldest first", "axis", "end"))
    series = []
    for index, item in enumerate(judged):
        point = item.point
        tip = f"{point.started_at:%Y-%m-%d %H:%M} {(point.commit or '')[:9]} {point.branch or ''}: {point.value:.4g} " \
              f"{unit} ({item.verdict})"
        if item.band:
            chart.rects.append(Rect(x_of(index) - step / 2, y_of(item.band[1]), step,
                                    max(y_of(item.band[0]) - y_of(item.band[1]), 0.5), "band",
                                    f"baseline band {item.band[0]:.4g}-{item.band[1]:.4g} {unit}"))
        if not point.valid:
            chart.rects.append(Rect(x_of(index) - 4, y_of(point.value) - 4, 8, 8, "flagged-run", tip))
            continue
        series.append(f"{x_of(index):.1f},{y_of(point.value):.1f}")
        if item.change_point:
            chart.rects.append(Rect(x_of(index) - 5, y_of(point.value) - 5, 10, 10, f"change-point {item.verdict}",
                                    tip))
    return Chart(chart.name, chart.width, chart.height, chart.rects, chart.lines, chart.texts, " ".join(series),
                 f"{len(series)} valid runs")


def trend_page(judged: list[TrendPoint], app: str, metric: str, unit: str, board_kind: str | None,
               threshold: float, base_branch: str | None = None) -> TrendPage:
    rows = [TrendRow(f"{t.point.started_at:%Y-%m-%d %H:%M}", (t.point.commit or "")[:12], t.point.branch or "",
                     t.point.target, f"{t.point.value:.4g}",
                     f"{t.band[0]:.4g}–{t.band[1]:.4g}" if t.band else "", t.verdict) for t in reversed(judged)]
    facts = [Fact("app", app), Fact("metric", f"{metric} ({unit})" if unit else metric),
             Fact("board kind", board_kind or "every kind"), Fact("runs", str(len(judged))),
             Fact("threshold", f"{threshold:.0%}"),
             Fact("baseline", f"branch {base_branch}" if base_branch else "every branch")]
    before = f"valid jobs of {base_branch} before it" if base_branch else "valid jobs before it"
    note = (f"Each job (a CI job's runs; a study folder's; else a run alone) is judged as the CI gate would judge "
            f"it: its median against the {BASELINE_JOBS} {before} (at least {MIN_JOBS}); the shaded band is where "
            "its median could fall without a clear change, and a filled square marks a change point (beyond the "
            "band and the threshold). Flagged runs (throttled, clocks dropped) are hollow and never part of a "
            "baseline.")
    return TrendPage(f"{app}: {metric}", facts, trend_chart(judged, unit) if judged else None, rows,
                     sum(1 for t in judged if t.change_point), note)


def write_trend_page(page: TrendPage, path: Path) -> Path:
    return write_page(render("trend.html", page.title, page=page), path)
