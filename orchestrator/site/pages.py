"""The dashboard's pages: one per history (an app, or a study cell, on one board kind) with every metric's chart
and its change points, and the front page: what moved in the last days, and every history. Pure: figures in, typed
page contexts out; ``render_*`` turn them into HTML."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from string import Formatter

from ..errors import UsageError
from ..report.render import Fact, render
from ..results.store import Point, SeriesKey
from ..stats.changepoints import P_VALUE
from ..stats.estimates import ORDER_INTERVAL_METHOD
from .charts import HistoryChart, history_chart
from .history import MetricHistory, drawn_jobs, drawn_runs

LINK_FIELDS = ("run_id", "uid", "folder", "folder_name", "commit")


def page_name(key: SeriesKey) -> str:
    """A history's file name: readable, and unique by a digest of its key."""
    words = "-".join(part for part in (key.subject, key.cell, key.board_kind) if part)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", words).strip("-")[:80]
    digest = hashlib.sha256(f"{key.subject}\0{key.cell}\0{key.board_kind}".encode()).hexdigest()[:10]
    return f"{readable}-{digest}.html"


def page_title(key: SeriesKey) -> str:
    return f"{key.subject}{f' [{key.cell}]' if key.cell else ''} on {key.board_kind}"


def report_linker(template: str | None) -> Callable[[Point], str | None]:
    """Where a run's report page is: --report-url's template filled in ({run_id}, {uid}, {folder}, {folder_name},
    {commit}), else the report.html in its run folder on this machine (no link when there is none)."""
    if template is not None:
        names = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
        unknown = sorted(names - set(LINK_FIELDS))
        if unknown or not names:
            raise UsageError(f"--report-url {template!r}: " + (f"no field {{{unknown[0]}}}" if unknown
                                                                 else "names no run"),
                             "use " + ", ".join(f"{{{name}}}" for name in LINK_FIELDS))

        def filled(point: Point) -> str | None:
            folder = point.folder or ""
            return template.format(run_id=point.run_id, uid=point.uid, folder=folder, folder_name=Path(folder).name,
                                   commit=point.commit or "")
        return filled

    def local(point: Point) -> str | None:
        page = Path(point.folder) / "report.html" if point.folder else None
        return page.as_uri() if page is not None and page.is_file() else None
    return local


@dataclass(frozen=True)
class MoveRow:
    page: str               # the history's file
    title: str              # the history's title
    metric: str
    anchor: str             # the metric's section on its page
    when: str
    started: str            # when, as ISO 8601 (the front page's "last N days" reads it)
    commit: str
    before: str
    after: str
    relative: float
    verdict: str            # the gate's word on the job the change starts at
    way: str                # "worse", "better", or "" (a metric where neither is better)


@dataclass(frozen=True)
class SeriesPage:
    title: str
    facts: list[Fact]
    charts: list[tuple[MetricHistory, HistoryChart]]
    moves: list[MoveRow]
    note: str


@dataclass(frozen=True)
class PageRow:
    page: str
    title: str
    runs: int
    jobs: int
    last_run: str
    moves: int
    regressions: int


@dataclass(frozen=True)
class IndexPage:
    title: str
    facts: list[Fact]
    recent: list[MoveRow]
    days: int
    pages: list[PageRow]
    note: str


NOTE = (f"Each dot is a job's median over its valid runs (a CI job's runs; a study folder's; else a run alone), its "
        f"bar the median's 95 % interval ({ORDER_INTERVAL_METHOD}); the small dots are the runs, each a link to its "
        "report page, hollow when flagged (throttled, clocks dropped...: never part of a median). A ring marks a job "
        "the CI gate at its default thresholds would call a regression (red) or an improvement (green) against the "
        "valid jobs before it on the branch the history's CI jobs compared with, as `results history --judge` "
        "replays it (a metric the gate does not gate by default has none). Dashed lines "
        f"are change points found after the fact over the whole history (E-divisive means, a Mann-Whitney test "
        f"between neighbours below p {P_VALUE:g}).")


def way(relative: float, better: str | None) -> str:
    """Whether a change is for the worse or the better, by which way the metric is better."""
    if better not in ("lower", "higher") or relative == 0:
        return ""
    return "worse" if (relative > 0) == (better == "lower") else "better"


def move_rows(page: str, title: str, found: list[MetricHistory]) -> list[MoveRow]:
    return [MoveRow(page, title, m.metric, f"metric-{m.metric}", f"{move.job.started_at:%Y-%m-%d %H:%M}",
                    move.job.started_at.isoformat(), (move.job.commit or "")[:12],
                    f"{move.change.before:.4g} {m.unit}".strip(), f"{move.change.after:.4g} {m.unit}".strip(),
                    move.change.relative, move.job.verdict, way(move.change.relative, m.better))
            for m in found for move in m.moves]


def series_page(key: SeriesKey, found: list[MetricHistory], link: Callable[[Point], str | None],
                page: str) -> SeriesPage:
    newest = max((p.started_at for m in found for job in m.jobs for p in job.runs), default=None)
    facts = [Fact("app" if not key.cell else "study", key.subject), Fact("board kind", key.board_kind),
             Fact("runs", str(drawn_runs(found))), Fact("jobs", str(drawn_jobs(found))),
             Fact("newest run", f"{newest:%Y-%m-%d %H:%M} UTC" if newest else "")]
    if key.cell:
        facts.insert(1, Fact("cell", key.cell))
    title = page_title(key)
    return SeriesPage(title, facts, [(m, history_chart(m, link)) for m in found], move_rows(page, title, found),
                      NOTE)


def index_page(rows: list[PageRow], recent: list[MoveRow], days: int, database: str, runs: int,
               built_at: datetime) -> IndexPage:
    facts = [Fact("results database", database), Fact("runs", str(runs)), Fact("histories", str(len(rows))),
             Fact("built", f"{built_at:%Y-%m-%d %H:%M} UTC")]
    note = (f"Change points whose new level starts within the last {days} days, the largest first; each links to "
            "its history's chart. Every change point is found over the whole history again whenever the history "
            "gains runs: a change found late moves back to where it began.")
    return IndexPage("orchestrate results", facts, sorted(recent, key=lambda r: -abs(r.relative)), days,
                     rows, note)


def render_series(page: SeriesPage) -> str:
    return render("site_series.html", page.title, page=page)


def render_index(page: IndexPage) -> str:
    return render("site_index.html", page.title, page=page)
