"""The results dashboard (`results site`), in Chromium: 30 real es2gears CI jobs (tests/data/gate-history, five runs
each, the first eight slowed by other work on the machine) stored as the gate stores them, with two runs flagged.
The pages make no request; every job's dot is the median and interval of its valid runs as the database holds
them; every run's dot is its stored value and a link that reaches its report page; the gate's decisions are the
ones `results history --judge` gives; the change points are stats.changepoints' over the database's job medians;
a rebuild after one more run draws that history alone."""
from __future__ import annotations

import json
import shutil
import statistics
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from browser import assert_clean, open_page
from conftest import DATA, run_cli
from sqlalchemy import select

from orchestrator.database.connection import open_database
from orchestrator.database.schema import metrics, runs
from orchestrator.documents.run_sections import Flag
from orchestrator.results.records import Metric, Provenance, run_record
from orchestrator.results.store import add_run, start_job
from orchestrator.stats.changepoints import change_points

pytestmark = pytest.mark.integration

RUN = DATA / "written-before-one-record-type" / "20261206T143333Z-local-es2gears"
HISTORY = DATA / "gate-history" / "es2gears-local.json"
FLAGGED = {(3, 2), (20, 0)}  # (job, run): stored as flagged (clocks dropped)
START = datetime(2026, 11, 1, tzinfo=timezone.utc)


def store_history(db: Path, run_dir: Path) -> int:
    """Every recorded job as a CI job on main, its runs with their recorded figures and this run folder."""
    template = run_record(run_dir)
    assert template is not None
    database = open_database(str(db))
    stored = 0
    try:
        for number, job in enumerate(json.loads(HISTORY.read_text())["jobs"]):
            provenance = Provenance(f"{number:040x}", "main")
            job_id = start_job(database, f"job-{number}", provenance, "main", template.target, template.app)
            for index, run in enumerate(job["runs"]):
                flagged = (number, index) in FLAGGED
                figures = {name: Metric(value, *("ms", "lower") if name.endswith("_ms") else
                                        ("frames/s", "higher") if name == "frames_per_s" else ("cores", None))
                           for name, value in run["metrics"].items()}
                add_run(database, replace(template, uid=f"u{number}-{index}", run_id=f"job{number}-run{index}",
                                          started_at=START + timedelta(hours=number, minutes=index),
                                          valid=not flagged, flags=[Flag("clocks_dropped", "a clock dropped")]
                                          if flagged else [], metrics=figures), provenance, job_id)
                stored += 1
    finally:
        database.close()
    return stored


@pytest.fixture
def site(tmp_path):
    run_dir = tmp_path / "runs" / RUN.name
    shutil.copytree(RUN, run_dir)
    page = run_cli("report", str(run_dir))
    assert page.returncode == 0, page.stderr
    db = tmp_path / "results.db"
    assert store_history(db, run_dir) == 150
    done = run_cli("results", "site", str(tmp_path / "site"), "--db", str(db), "--days", "100000")
    assert done.returncode == 0, done.stderr
    assert "1 history drawn, 0 as they were; 150 runs" in done.stderr
    return tmp_path


def stored_jobs(db: Path, metric: str) -> list[tuple[list[float], list[tuple[str, float]]]]:
    """Each job's valid values and every run's (uid, value), oldest job first, read from the database itself."""
    database = open_database(str(db), read_only=True)
    try:
        with database.engine.connect() as connection:
            rows = connection.execute(select(runs.c.job_id, runs.c.uid, runs.c.valid, metrics.c.value)
                                      .join(metrics, metrics.c.run_id == runs.c.id).where(metrics.c.name == metric)
                                      .order_by(runs.c.started_at)).all()
    finally:
        database.close()
    jobs: dict[int, tuple[list[float], list[tuple[str, float]]]] = {}
    for job_id, uid, valid, value in rows:
        found = jobs.setdefault(job_id, ([], []))
        found[1].append((uid, value))
        if valid:
            found[0].append(value)
    return list(jobs.values())


def test_the_pages_figures_are_the_databases_and_a_run_dot_reaches_its_report(site, browser):
    index = site / "site" / "index.html"
    [page_file] = [p for p in (site / "site").glob("*.html") if p.name != "index.html"]
    front = open_page(browser, index)
    assert_clean(front, index)
    opened = open_page(browser, page_file)
    assert_clean(opened, page_file)
    page = opened.page
    jobs = stored_jobs(site / "results.db", "steady_mean_ms")
    assert len(jobs) == 30
    chart = page.locator("svg.history[data-metric='steady_mean_ms']")
    medians = chart.locator("circle.job").evaluate_all(
        "cs => cs.map(c => [+c.dataset.job, +c.dataset.median, +c.dataset.low, +c.dataset.high, c.dataset.verdict])")
    assert [m[0] for m in medians] == list(range(30))
    for (_, median, low, high, _), (valid, _) in zip(medians, jobs):
        assert median == pytest.approx(statistics.median(valid), rel=1e-12)
        assert (low, high) == (pytest.approx(min(valid)), pytest.approx(max(valid)))  # 4-5 runs: the range
    dots = chart.locator("circle.run").evaluate_all(
        "cs => cs.map(c => [c.dataset.run, +c.dataset.value, c.classList.contains('flagged')])")
    assert sorted((uid, value) for uid, value, _ in dots) == sorted(r for _, every in jobs for r in every)
    assert {uid for uid, _, hollow in dots if hollow} == {f"u{j}-{r}" for j, r in FLAGGED}
    changes = change_points([statistics.median(valid) for valid, _ in jobs])
    drawn = chart.locator("line.change-point").count()
    assert changes and drawn == len(changes)
    assert page.locator("[data-metric='steady_mean_ms'] .counts").inner_text().startswith(
        f"30 jobs · {len(changes)} change point")
    judged = run_cli("results", "history", "--app", "es2gears", "--metric", "steady_mean_ms", "--judge", "--json",
                     "--base", "main", "--db", str(site / "results.db"))
    assert judged.returncode == 0, judged.stderr
    by_job: dict[str, str] = {}
    for point in json.loads(judged.stdout):
        if point["valid"]:
            by_job.setdefault(point["job"], point["verdict"])
    assert [m[4] for m in medians] == list(by_job.values())
    ringed = chart.locator("circle.verdict-regression, circle.verdict-improvement").count()
    assert ringed == sum(v in ("regression", "improvement") for v in by_job.values())
    cores = page.locator("svg.history[data-metric='cores_busy'] circle.job").evaluate_all(
        "cs => cs.map(c => c.dataset.verdict)")
    assert cores == ["not gated"] * 30  # ci gates no metric without a better direction
    facts = page.locator("[data-section=header] dl.facts").inner_text()
    assert "150" in facts and "30" in facts
    moved = front.page.locator("table[data-table='moved'] tbody tr")
    ways = moved.evaluate_all("rs => rs.map(r => [r.dataset.metric, +r.dataset.relative, "
                              "r.querySelector('[data-way]').dataset.way])")
    better = {"frames_per_s": "higher", "cores_busy": None}
    for name, relative, way in ways:  # a faster frame rate is better, a longer frame time worse
        direction = better.get(name, "lower")
        assert way == ("" if direction is None else "worse" if (relative > 0) == (direction == "lower") else "better")
    assert {way for *_, way in ways} == {"better"}  # the history's one real change: the machine got quieter
    state = json.loads((site / "site" / "site.json").read_text())
    assert moved.count() == sum(len(p["moves"]) for p in state["pages"].values()) >= len(changes)
    first = chart.locator("a:has(circle.run)").first
    target = first.get_attribute("href")
    assert target == (site / "runs" / RUN.name / "report.html").as_uri()
    with page.expect_navigation():
        first.locator("circle").click()
    assert page.url == target
    assert "es2gears" in page.title()


def test_a_rebuild_draws_only_the_history_that_gained_runs(site):
    before = {p.name: p.stat().st_mtime_ns for p in (site / "site").glob("*.html")}
    again = run_cli("results", "site", str(site / "site"), "--db", str(site / "results.db"))
    assert again.returncode == 0 and "0 histories drawn, 1 as they were" in again.stderr
    record = run_record(site / "runs" / RUN.name)
    assert record is not None
    database = open_database(str(site / "results.db"))
    try:  # another app's run, one of its figures not a number (a tool that printed inf)
        add_run(database, replace(record, uid="other-app", app="es2gears-other", metrics={
            **record.metrics, "first_frame_ms": Metric(float("inf"), "ms", "lower")}), Provenance("f" * 40, "main"))
    finally:
        database.close()
    third = run_cli("results", "site", str(site / "site"), "--db", str(site / "results.db"))
    assert third.returncode == 0 and "1 history drawn, 1 as they were; 151 runs" in third.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (site / "site").glob("*.html")}
    assert len(after) == 3 and all(after[name] == stamp for name, stamp in before.items() if name != "index.html")
    [other] = [p for p in (site / "site").glob("es2gears-other-*.html")]
    text = other.read_text()
    assert 'data-metric="steady_mean_ms"' in text and 'data-metric="first_frame_ms"' not in text


def test_report_links_for_reports_kept_elsewhere_and_a_bad_template(site):
    done = run_cli("results", "site", str(site / "elsewhere"), "--db", str(site / "results.db"),
                   "--report-url", "https://ci.example/runs/{run_id}/report.html")
    assert done.returncode == 0, done.stderr
    [page] = [p for p in (site / "elsewhere").glob("*.html") if p.name != "index.html"]
    assert 'href="https://ci.example/runs/job0-run0/report.html"' in page.read_text()
    bad = run_cli("results", "site", str(site / "bad"), "--db", str(site / "results.db"), "--report-url",
                  "https://ci.example/{run}/report.html")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "{run_id}" in bad.stderr


def test_an_empty_database_is_a_site_that_says_so(tmp_path):
    open_database(str(tmp_path / "empty.db")).close()  # made, and no run stored
    done = run_cli("results", "site", str(tmp_path / "site"), "--db", str(tmp_path / "empty.db"))
    assert done.returncode == 0, done.stderr
    assert "0 histories drawn, 0 as they were; 0 runs" in done.stderr
    assert "the results database holds no run yet" in (tmp_path / "site" / "index.html").read_text()
