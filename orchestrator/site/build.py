"""`orchestrate results site DIR`: the dashboard built from the results database, and kept up to date: a history
whose runs are the ones its page was drawn from (the same count, the same newest row) keeps its page; one that gained
runs is read again whole (its change points are found over all of it) and drawn again; the front page is drawn
from what each page left in DIR/site.json. Every file is written whole or not at all, and two builds of one folder
take turns (DIR/.lock)."""
from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..database.connection import Database
from ..errors import UsageError
from ..files import write_text
from ..results.store import Point, SeriesKey, job_bases, metric_units, series_history, series_keys
from .history import drawn_jobs, drawn_runs, histories
from .pages import (
    IndexPage,
    MoveRow,
    PageRow,
    index_page,
    page_name,
    page_title,
    render_index,
    render_series,
    report_linker,
    series_page,
)

STATE_FILE, INDEX_FILE, LOCK_FILE = "site.json", "index.html", ".lock"
SITE_VERSION = 3   # site.json's shape: a build of another version draws every page again


@dataclass(frozen=True)
class SiteRequest:
    folder: Path
    report_url: str | None = None   # where run reports are (a template), else each run folder's report.html
    days: int = 14                  # the front page's "what moved" looks this far back
    now: datetime | None = None     # the front page's "now" (default: the clock's)


@dataclass(frozen=True)
class Built:
    drawn: int          # history pages drawn (new, or with new runs)
    kept: int           # history pages left as they were
    runs: int           # runs the database holds
    index: Path


def build_site(database: Database, request: SiteRequest) -> Built:
    link = report_linker(request.report_url)
    folder = request.folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"cannot write the site to {folder}: {exc.strerror}", "give a folder you can write") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        state = _state(folder, database.describe(), request.report_url)
        pages: dict[str, Any] = {}
        drawn = 0
        keys = series_keys(database)
        units = metric_units(database) if keys else {}
        bases = job_bases(database) if keys else {}
        for key in keys:
            name = page_name(key)
            before = state.get(name)
            if before and (before["runs"], before["newest"]) == (key.runs, key.newest) and (folder / name).is_file():
                pages[name] = before
                continue
            points = series_history(database, key)
            found = histories(points, units, base_of(points, bases))
            page = series_page(key, found, link, name)
            write_text(folder / name, render_series(page))
            pages[name] = _page_state(key, name, page.moves, found)
            drawn += 1
        now = request.now or datetime.now(timezone.utc)
        index = folder / INDEX_FILE
        write_text(index, render_index(_index(pages, request.days, now, database.describe())))
        write_text(folder / STATE_FILE, json.dumps({"site_version": SITE_VERSION, "database": database.describe(),
                                                    "report_url": request.report_url, "pages": pages}, indent=1))
    finally:
        os.close(handle)
    return Built(drawn, len(keys) - drawn, sum(key.runs for key in keys), index)


def base_of(points: dict[str, list[Point]], bases: dict[int, str]) -> str | None:
    """The branch most of the history's CI jobs compared with (their baseline's), None outside CI jobs or when
    they compared with a run or "last-good": every valid job before then makes the baseline."""
    found = Counter(bases[p.job_id] for found in points.values() for p in found if p.job_id in bases)
    base = found.most_common(1)[0][0] if found else None
    return base if base != "last-good" and not any(p.run_id == base for v in points.values() for p in v) else None


def _state(folder: Path, database: str, report_url: str | None) -> dict[str, Any]:
    """The pages of the last build, when it was of this database with these links (else none: all are drawn)."""
    try:
        found = json.loads((folder / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict) or found.get("site_version") != SITE_VERSION or \
            found.get("database") != database or found.get("report_url") != report_url:
        return {}
    pages = found.get("pages")
    return pages if isinstance(pages, dict) else {}


def _page_state(key: SeriesKey, name: str, moves: list[MoveRow], found: list[Any]) -> dict[str, Any]:
    last = max((p.started_at for m in found for job in m.jobs for p in job.runs), default=None)
    return {"title": page_title(key), "runs": key.runs, "newest": key.newest, "drawn_runs": drawn_runs(found),
            "jobs": drawn_jobs(found), "last_run": last.isoformat() if last else "",
            "regressions": sum(m.regressions for m in found), "moves": [asdict(move) for move in moves]}


def _index(pages: dict[str, Any], days: int, now: datetime, database: str) -> IndexPage:
    since = now - timedelta(days=days)
    rows, recent = [], []
    for name, page in sorted(pages.items(), key=lambda item: item[1]["title"]):
        rows.append(PageRow(name, page["title"], page["drawn_runs"], page["jobs"],
                            page["last_run"][:16].replace("T", " "), len(page["moves"]), page["regressions"]))
        recent += [row for row in (MoveRow(**move) for move in page["moves"])
                   if datetime.fromisoformat(row.started) >= since]
    return index_page(rows, recent, days, database, sum(p["drawn_runs"] for p in pages.values()), now)


