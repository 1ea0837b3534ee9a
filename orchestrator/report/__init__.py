"""HTML pages people open first: one run's report and the comparison of several runs.

``write_report(path)`` turns a run folder or a report file into report.html; ``compare_runs(paths)`` puts
runs side by side and ``write_comparison(document, path)`` draws that. Geometry (charts), tables and page
contexts are pure; templates/ draws them.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from .compare import comparison, comparison_page
from .page import report_page
from .render import render, write_page
from .run_data import RunData, load_run
from .run_timeline import ONE_PAGE_BYTES

__all__ = ["RunData", "compare_runs", "default_report_path", "load_run", "write_comparison", "write_report",
           "write_run_report"]


def default_report_path(source: Path) -> Path:
    """report.html inside a run folder; NAME.html beside a report file."""
    return source / "report.html" if source.is_dir() else source.with_suffix(".html")


def write_report(source: Path, output: Path | None = None, nsys_hint: str | None = None,
                 symbols: tuple[Path, ...] = ()) -> Path:
    output = output or default_report_path(source)
    return write_run_report(load_run(source, output.parent, nsys_hint, symbols), output)


def write_run_report(run: RunData, output: Path) -> Path:
    """report.html; a run whose timeline makes it too large (ONE_PAGE_BYTES) gets it on a page of its own
    beside it, NAME.timeline.html, linked from the report."""
    page = report_page(run)
    whole = page.run_timeline
    if whole is not None and whole.size > ONE_PAGE_BYTES:
        aside = output.with_name(f"{output.stem}.timeline.html")
        write_page(render("timeline.html", f"{page.title}: the whole run", page=page, report_href=output.name), aside)
        page = replace(page, run_timeline=None, run_timeline_href=aside.name, run_timeline_events=whole.events)
    return write_page(render("report.html", page.title, page=page), output)


def compare_runs(sources: list[Path], labels: list[str] | None = None, nsys_hint: str | None = None,
                 page_dir: Path | None = None) -> dict:
    """The comparison document of several runs (run folders or report files), the first as the baseline."""
    return comparison([load_run(source, page_dir or Path.cwd(), nsys_hint) for source in sources], labels)


def write_comparison(document: dict, output: Path) -> tuple[Path, Path]:
    """The comparison page, and its figures as JSON beside it (same name, .json)."""
    page = comparison_page(document)
    html = write_page(render("compare.html", page.title, page=page, same_within=document["same_within_pct"]), output)
    return html, write_page(json.dumps(document, indent=1) + "\n", output.with_suffix(".json"))
