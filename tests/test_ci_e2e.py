"""`orchestrate ci` end to end, as the shipped CI examples run it: the commands in examples/ci/*.yml run
verbatim (bash, in a checkout holding the study they name) against the test sshd board with real nsys and a
SQLite results database. Nine commits: five unchanged ones on main have no baseline yet and pass; three
unchanged ones on branches are judged against main's five jobs and pass with no metric called either way;
one whose study adds work to every frame fails with exit 22, and the JUnit failure, the benchmark JSON and
the summary carry the figures. Then the trend page, in Chromium."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from board_state import assert_board_clean
from browser import assert_clean, open_page
from conftest import REPO, run_cli, write_inventory
from scenarios import board

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")]

APPS = Path(__file__).parent / "apps"
EXAMPLES = REPO / "examples" / "ci"


def checkout(tmp_path: Path, sshd, work: int, repeat: int) -> Path:
    """A repository as the examples expect it: ci/perf-study.yaml, ci/apps/ (the app and its spec),
    ci/inventory.yaml naming the board nano-01. ``work`` is what a commit changes: square roots per frame."""
    repo = tmp_path / "repo"
    apps = repo / "ci" / "apps"
    apps.mkdir(parents=True, exist_ok=True)
    shutil.copy(APPS / "nvtx_frames.py", apps / "frames.py")
    (apps / "frames.yaml").write_text(yaml.safe_dump({
        "name": "frames", "command": ["{python}", "frames.py"], "files": ["frames.py"], "trace": ["osrt", "nvtx"],
        "sample": "none", "cpuctxsw": "none", "duration_s": 30}))
    (repo / "ci" / "perf-study.yaml").write_text(yaml.safe_dump({
        "study": "perf", "app": "frames", "repeat": repeat,
        "args": ["--frames", "150", "--work", str(work), "--sleep-ms", "8"]}))
    write_inventory(repo / "ci" / "inventory.yaml", {"nano-01": board(sshd, tmp_path / "work",
                                                                      orchestrate_python=sys.executable)})
    return repo


def shell_env(tmp_path: Path, sshd, job_env: dict, ci_env: dict) -> dict[str, str]:
    """The runner's environment: orchestrate on PATH, the board's host key known, the job's variables."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir(exist_ok=True)
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    shutil.copy(sshd.known_hosts, home / ".ssh" / "known_hosts")
    shim = bin_dir / "orchestrate"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m orchestrator \"$@\"\n")
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "ORCHESTRATE_"))}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", HOME=str(home), PYTHONPATH=str(REPO), COLUMNS="120",
               ORCHESTRATE_DB=str(tmp_path / "results.db"))
    env.update({k: str(v) for k, v in job_env.items() if "${{" not in str(v)})  # secrets are the test's own
    env.update(ci_env)
    return env


def run_step(script: str, repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=900)


def github_job() -> tuple[dict, str]:
    """The host job's variables, for the matrix's first board (as GitHub sets them), and its script."""
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    job = workflow["jobs"]["host"]
    [script] = [step["run"] for step in job["steps"] if "orchestrate ci" in step.get("run", "")]
    assert job["env"]["BOARD"] == "${{ matrix.board }}"
    return {**job["env"], "BOARD": job["strategy"]["matrix"]["board"][0]}, script


def gitlab_job() -> tuple[dict, str]:
    """The job's variables, with the first board of its parallel matrix, and its script."""
    pipeline = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    job = pipeline["jetson-performance"]
    [boards] = job["parallel"]["matrix"]
    return {**job["variables"], "BOARD": boards["BOARD"][0]}, "\n".join(job["script"])


def run_figures(repo: Path, key: str = "mean_ns") -> list[float]:
    """Each run's steady mean (or p90: ``key``) in ms of the newest job's folder, from its summary.json, in the
    order they ran."""
    job = max((repo / "runs").glob("ci-*"), key=lambda p: p.stat().st_mtime)
    summaries = sorted(job.glob("*/*/summary.json"), key=lambda p: json.loads(
        (p.parent / "run.json").read_text())["started_at"])
    return [json.loads(summary.read_text())["frames"]["steady"][key] / 1e6 for summary in summaries]


def steady_means(repo: Path) -> list[float]:
    return run_figures(repo)


CALLED = ("regression", "improvement")


@pytest.mark.alone  # the gate's verdicts on frame times
def test_the_ci_examples_pass_unchanged_commits_and_fail_a_slower_one(sshd, browser, tmp_path):
    github, github_script = github_job()
    gitlab, gitlab_script = gitlab_job()
    assert "--target local" in yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())["jobs"]["on-board"][
        "steps"][1]["run"]
    summary_file = tmp_path / "step-summary.md"
    database = tmp_path / "results.db"

    # 1-5: unchanged commits on main: no baseline until five jobs tell the noise between jobs; each passes
    main_medians: list[float] = []
    main_p90s: list[float] = []
    for number in range(1, 6):
        repo = checkout(tmp_path, sshd, work=2000, repeat=2)
        summary_file.write_text("")
        done = run_step(github_script, repo, shell_env(tmp_path, sshd, github, {
            "GITHUB_SHA": str(number) * 40, "GITHUB_REF_NAME": "main", "GITHUB_STEP_SUMMARY": str(summary_file)}))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "passed: no baseline yet for this board kind" in summary_file.read_text()
        suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
        assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "2")
        skipped = suite.find("testcase/skipped")
        assert skipped is not None and skipped.get("message").startswith(f"{number - 1} baseline job")
        means = steady_means(repo)
        assert len(means) == 2
        main_medians.append(statistics.median(means))
        main_p90s.append(statistics.median(run_figures(repo, "p90_ns")))

    # 6-8: the same code on branches, through both examples: judged against main's five jobs, none called
    for script, job_env, ci_env in (
            (gitlab_script, gitlab, {"CI_COMMIT_SHA": "6" * 40, "CI_COMMIT_REF_NAME": "same-speed",
                                     "CI_DEFAULT_BRANCH": "main"}),
            (gitlab_script, gitlab, {"CI_COMMIT_SHA": "7" * 40, "CI_COMMIT_REF_NAME": "same-speed-2",
                                     "CI_DEFAULT_BRANCH": "main"}),
            (github_script, github, {"GITHUB_SHA": "8" * 40, "GITHUB_REF_NAME": "same-speed-3",
                                     "GITHUB_BASE_REF": "main", "GITHUB_STEP_SUMMARY": str(summary_file)})):
        repo = checkout(tmp_path, sshd, work=2000, repeat=2)
        summary_file.write_text("")
        (repo / "orchestrate-summary.md").unlink(missing_ok=True)
        done = run_step(script, repo, shell_env(tmp_path, sshd, job_env, ci_env))
        assert done.returncode == 0, done.stdout + done.stderr
        suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
        assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")
        text = summary_file.read_text() if script is github_script else (repo / "orchestrate-summary.md").read_text()
        assert text.startswith("### orchestrate ci passed"), text
        assert "compared with `main`" in text and not any(f"| {word} |" in text or f"**{word}**" in text
                                                          for word in CALLED)
        assert "(n=5) |" in text  # main's five jobs, each by its median
        # a job runs more only while the gate is not sure, at most twice the repeat; the runs it stored say how many
        runs = len(steady_means(repo))
        unsure = [case for case in suite.iter("testcase") if case.find("skipped") is not None]
        assert 2 <= runs <= 4 and all(f"not sure after {runs} runs" in case.find("skipped").get("message")
                                      for case in unsure)
        if unsure:
            assert runs == 4 and "not sure yet after the most runs" in done.stderr

    # 9: a commit whose frames do more work (about twice main's frame time): a regression, exit 22, with the figures
    # everywhere. Three runs, up to six while not sure: a job on a busy machine whose runs scatter wider than main's
    # is judged on its own scatter, and four runs on three degrees of freedom once left a +38 % change not sure
    repo = checkout(tmp_path, sshd, work=150000, repeat=3)
    summary_file.write_text("")
    third = run_step(github_script, repo, shell_env(tmp_path, sshd, github, {
        "GITHUB_SHA": "9" * 40, "GITHUB_REF_NAME": "slower", "GITHUB_BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(summary_file)}))
    assert third.returncode == 22, third.stdout + third.stderr
    assert "error: " in third.stderr and "regressed; the first, perf steady_" in third.stderr
    slower = steady_means(repo)
    # three runs, unless both gated metrics' runs scattered wider than main's (then not sure: a run more, at most
    # twice the repeat); a job that already fails runs no more
    n = len(slower)
    assert 3 <= n <= 6
    base_figure, new_figure = statistics.mean(main_medians), statistics.median(slower)
    assert new_figure > 1.2 * base_figure
    suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
    failures = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    assert {name for name, failure in failures.items() if failure is not None} <= {"perf steady_mean_ms",
                                                                                   "perf steady_p90_ms"}
    # each metric the JUnit file fails carries its baseline (each main job's median) and the job's runs; a
    # metric not failed is at worst not sure (its runs scatter wider than main's: they ran twice as slow)
    for metric, key, medians in (("steady_mean_ms", "mean_ns", main_medians), ("steady_p90_ms", "p90_ns", main_p90s)):
        failure = failures[f"perf {metric}"]
        runs = run_figures(repo, key)
        if failure is None:
            assert f"not sure after {n} runs" in third.stdout.split(f"| {metric} |")[1].splitlines()[0]
            continue
        assert failure.get("message").startswith(f"{metric} regressed: {statistics.median(runs):.4g} against "
                                                  f"{statistics.mean(medians):.4g} ms")
        assert f"baseline (5 jobs, 10 runs), each job's median: {', '.join(f'{v:.4g}' for v in medians)}" \
            in failure.text
        assert f"this job ({n} runs, median {statistics.median(runs):.4g}): {', '.join(f'{v:.4g}' for v in runs)}" \
            in failure.text
    listed = json.loads(run_cli("results", "list", "--app", "frames", "--json", "--limit", "100", "--db",
                                str(database)).stdout)
    kind = listed[0]["board_kind"]
    entries = {e["name"]: e for e in json.loads((repo / "orchestrate-benchmark.json").read_text())}
    assert set(entries) == {f"perf steady_mean_ms ({kind})", f"perf steady_p90_ms ({kind})"}
    mean_entry = entries[f"perf steady_mean_ms ({kind})"]
    assert mean_entry["unit"] == "ms" and mean_entry["value"] == pytest.approx(new_figure, rel=1e-6)
    assert mean_entry["extra"].startswith(("regression;", "not sure yet;"))
    summary = summary_file.read_text()
    assert summary.startswith("### orchestrate ci failed: a metric regressed")
    assert f"| steady_mean_ms | {base_figure:.4g} (n=5) | {new_figure:.4g} ms (n={n}) |" in summary
    assert "**regression**" in summary

    # every run is in the database with its commit and branch; the board is left clean
    branches = [r["git_branch"] for r in reversed(listed)]
    assert branches[:10] == ["main"] * 10 and branches[-n:] == ["slower"] * n and all(r["valid"] for r in listed)
    assert_board_clean(tmp_path / "work")

    # the trend on main's baseline, job by job, of a metric the job failed on: main's first five make it, the
    # unchanged branches' jobs are not called, every run of the slower commit are change points
    metric = "steady_mean_ms" if failures["perf steady_mean_ms"] is not None else "steady_p90_ms"
    page = tmp_path / "trend.html"
    history = run_cli("results", "history", "--app", "perf", "--metric", metric, "--json", "--html",
                      str(page), "--base", "main", "--db", str(database))
    assert history.returncode == 0, history.stderr
    judged = json.loads(history.stdout)
    assert [p["value"] for p in judged] == [r["metrics"][metric] for r in reversed(listed)]
    assert [p["verdict"] for p in judged[:10]] == ["no baseline"] * 10
    assert all(p["verdict"] not in CALLED for p in judged[10:-n])
    assert [(p["verdict"], p["branch"]) for p in judged[-n:]] == [("regression", "slower")] * n
    # the branches never moved main's baseline: every band is centred on main's five jobs
    assert len({round(sum(p["band"]), 9) for p in judged[10:]}) == 1
    opened = open_page(browser, page)
    assert_clean(opened, page)
    drawn = opened.charts()["trend"]
    assert drawn["drawn"] == len(judged)  # one point per run on the line
    marked = opened.page.locator("svg[data-chart=trend] rect.change-point").count()
    assert marked == sum(p["verdict"] in CALLED for p in judged) == n
    assert "branch main" in opened.page.locator("[data-section=header] dl.facts").inner_text()
    assert opened.page.locator("table[data-table=trend] tr[data-verdict=regression]").count() == marked
    opened.screenshot("trend")

    # the example's jobs kept the dashboard up to date (--site): the study's history, the last job ringed as the
    # regression it was, every run a dot that reaches its report; and every run's rows are in the warehouse
    index = repo / "dashboard" / "index.html"
    front = open_page(browser, index)
    assert_clean(front, index)
    [history_page] = [p for p in (repo / "dashboard").glob("perf-*.html")]
    drawn_page = open_page(browser, history_page)
    assert_clean(drawn_page, history_page)
    chart = drawn_page.page.locator(f"svg.history[data-metric='{metric}']")
    verdicts = chart.locator("circle.job").evaluate_all("cs => cs.map(c => c.dataset.verdict)")
    assert len(verdicts) == 9 and verdicts[-1] == "regression" and "regression" not in verdicts[:-1]
    assert chart.locator("circle.run").count() == len(listed)
    first = chart.locator("a:has(circle.run)").first
    with drawn_page.page.expect_navigation():
        first.locator("circle").click()
    assert drawn_page.page.url.endswith("/report.html") and drawn_page.page.url.startswith("file://")
    rows = run_cli("results", "query", "SELECT count(*) FROM runs WHERE app = 'frames'", "--json",
                   "--warehouse", str(tmp_path / "user-data" / "orchestrate" / "warehouse"))
    assert rows.returncode == 0, rows.stderr
    assert json.loads(rows.stdout) == [{"count_star()": len(listed)}]


def test_a_killed_job_keeps_the_runs_it_measured(sshd, tmp_path):
    """Each run is stored the moment it ends: SIGKILL the job after its first run and that run is in the
    database with its job; the board ends the orphaned capture on its own (its heartbeat stops)."""
    import signal
    import sqlite3
    import time

    from board_state import bytes_left, wait_for_no_run_processes
    repo = checkout(tmp_path, sshd, work=2000, repeat=3)
    env = shell_env(tmp_path, sshd, {"ORCHESTRATE_INVENTORY": "ci/inventory.yaml"},
                    {"GITHUB_SHA": "4" * 40, "GITHUB_REF_NAME": "main"})
    job = subprocess.Popen(["orchestrate", "ci", "--study", "ci/perf-study.yaml", "--apps-dir", "ci/apps", "--target",
                            "nano-01"], cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    database = tmp_path / "results.db"
    stored = 0
    try:
        deadline = time.monotonic() + 300
        while stored == 0 and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            if database.exists():
                with sqlite3.connect(database, timeout=30) as db:
                    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                    stored = db.execute("SELECT count(*) FROM runs").fetchone()[0] if "runs" in tables else 0
    finally:
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        job.wait(timeout=30)
    assert stored == 1, "the job ended before its first run was stored"
    listed = json.loads(run_cli("results", "list", "--json", "--db", str(database)).stdout)
    assert [(r["git_branch"], r["status"], r["job_id"]) for r in listed] == [("main", "ok", 1)]
    assert listed[0]["metrics"]["steady_mean_ms"] > 0
    jobs = sqlite3.connect(database).execute("SELECT outcome, finished_at FROM jobs").fetchall()
    assert jobs == [(None, None)]  # killed: it never said how it ended
    # nothing the job started outlives it; a capture it was in (none when the kill fell between two runs)
    # keeps its files on the board for `orchestrate fetch`, and nothing else is left
    assert wait_for_no_run_processes(tmp_path / "work", timeout_s=90) == []
    left = {Path(name).parts[:2] for name in bytes_left(tmp_path / "work")}
    assert len(left) <= 1 and all(parts[0] == "runs" for parts in left), left
