"""`orchestrate ci` end to end, as the shipped CI examples run it: the commands in examples/ci/*.yml run
verbatim (bash, in a checkout holding the study they name) against the test sshd board with real nsys and a
SQLite results database. Three commits: the first on main has no baseline and passes; an unchanged one on
a branch passes; one whose study adds work to every frame fails with exit 22, and the JUnit failure, the
benchmark JSON and the summary carry the figures. Then the trend page, in Chromium."""
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


def steady_means(repo: Path) -> list[float]:
    """Each run's steady mean (ms) of the newest job's folder, from its summary.json."""
    job = max((repo / "runs").glob("ci-*"), key=lambda p: p.stat().st_mtime)
    return [json.loads(summary.read_text())["frames"]["steady"]["mean_ns"] / 1e6
            for summary in sorted(job.glob("*/*/summary.json"))]


@pytest.mark.alone  # the gate's verdicts on frame times
def test_the_ci_examples_pass_an_unchanged_commit_and_fail_a_slower_one(sshd, browser, tmp_path):
    github, github_script = github_job()
    gitlab, gitlab_script = gitlab_job()
    assert "--target local" in yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())["jobs"]["on-board"][
        "steps"][1]["run"]
    summary_file = tmp_path / "step-summary.md"

    # 1: the first commit on main: no baseline yet, the job passes and says so
    repo = checkout(tmp_path, sshd, work=2000, repeat=3)
    first = run_step(github_script, repo, shell_env(tmp_path, sshd, github, {
        "GITHUB_SHA": "1" * 40, "GITHUB_REF_NAME": "main", "GITHUB_STEP_SUMMARY": str(summary_file)}))
    assert first.returncode == 0, first.stderr
    assert "passed: no baseline yet for this board kind" in summary_file.read_text()
    suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "2")
    baseline = steady_means(repo)
    assert len(baseline) == 3

    # 2: the same code on a branch, through GitLab's job: no clear change against main's three runs
    repo = checkout(tmp_path, sshd, work=2000, repeat=2)
    second = run_step(gitlab_script, repo, shell_env(tmp_path, sshd, gitlab, {
        "CI_COMMIT_SHA": "2" * 40, "CI_COMMIT_REF_NAME": "same-speed", "CI_DEFAULT_BRANCH": "main"}))
    assert second.returncode == 0, second.stdout + second.stderr
    text = (repo / "orchestrate-summary.md").read_text()
    assert text.startswith("### orchestrate ci passed: no metric is clearly worse than its baseline")
    assert "compared with `main`" in text and "`same-speed`" in text
    suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")

    # 3: a commit whose frames do more work: a regression, exit 22, with the figures everywhere
    repo = checkout(tmp_path, sshd, work=60000, repeat=2)
    summary_file.write_text("")
    third = run_step(github_script, repo, shell_env(tmp_path, sshd, github, {
        "GITHUB_SHA": "3" * 40, "GITHUB_REF_NAME": "slower", "GITHUB_BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(summary_file)}))
    assert third.returncode == 22, third.stdout + third.stderr
    assert "error: " in third.stderr and "regressed; the first, perf steady_mean_ms" in third.stderr
    slower = steady_means(repo)
    base_mean, new_mean = statistics.mean(baseline), statistics.mean(slower)
    assert new_mean > 1.2 * base_mean
    suite = ET.parse(repo / "orchestrate-junit.xml").getroot()
    failures = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    failure = failures["perf steady_mean_ms"]
    assert failure is not None
    assert failure.get("message").startswith(f"steady_mean_ms regressed: {new_mean:.4g} against {base_mean:.4g} ms")
    assert f"baseline (3 runs): {', '.join(f'{v:.4g}' for v in baseline)}" in failure.text
    listed = json.loads(run_cli("results", "list", "--app", "frames", "--json", "--db",
                                str(tmp_path / "results.db")).stdout)
    kind = listed[0]["board_kind"]
    entries = {e["name"]: e for e in json.loads((repo / "orchestrate-benchmark.json").read_text())}
    assert set(entries) == {f"perf steady_mean_ms ({kind})", f"perf steady_p90_ms ({kind})"}
    mean_entry = entries[f"perf steady_mean_ms ({kind})"]
    assert mean_entry["unit"] == "ms" and mean_entry["value"] == pytest.approx(new_mean, rel=1e-6)
    assert mean_entry["extra"].startswith("regression;")
    summary = summary_file.read_text()
    assert summary.startswith("### orchestrate ci failed: a metric regressed")
    assert f"| {base_mean:.4g} (n=3) | {new_mean:.4g} ms (n=2) |" in summary and "**regression**" in summary

    # every run is in the database with its commit and branch; the board is left clean
    assert [(r["git_branch"], r["valid"]) for r in reversed(listed)] == \
        [("main", True)] * 3 + [("same-speed", True)] * 2 + [("slower", True)] * 2
    assert_board_clean(tmp_path / "work")

    # the trend on main's baseline: main's runs make it, the unchanged branch's stay in its band, both runs of
    # the slower commit are change points
    page = tmp_path / "trend.html"
    history = run_cli("results", "history", "--app", "perf", "--metric", "steady_mean_ms", "--json", "--html",
                      str(page), "--base", "main", "--db", str(tmp_path / "results.db"))
    plain = json.loads(run_cli("results", "history", "--app", "perf", "--metric", "steady_mean_ms", "--json",
                               "--db", str(tmp_path / "results.db")).stdout)
    stored = [r["metrics"]["steady_mean_ms"] for r in reversed(listed)]
    assert [p["value"] for p in plain] == stored
    assert stored[:3] == pytest.approx(baseline) and stored[5:] == pytest.approx(slower)
    assert "verdict" not in plain[0]
    assert history.returncode == 0, history.stderr
    judged = json.loads(history.stdout)
    assert [p["verdict"] for p in judged[:5]] == ["no baseline"] * 3 + ["no clear change"] * 2
    assert [(p["verdict"], p["branch"]) for p in judged[5:]] == [("regression", "slower")] * 2
    assert judged[6]["band"] == judged[3]["band"]  # the branches' runs never moved main's baseline
    opened = open_page(browser, page)
    assert_clean(opened, page)
    drawn = opened.charts()["trend"]
    assert drawn["drawn"] == 7  # one point per run on the line
    marked = opened.page.locator("svg[data-chart=trend] rect.change-point").count()
    assert marked == sum(p["verdict"] in ("regression", "improvement") for p in judged) == 2
    assert "branch main" in opened.page.locator("[data-section=header] dl.facts").inner_text()
    assert opened.page.locator("table[data-table=trend] tr[data-verdict=regression]").count() == marked
    opened.screenshot("trend")



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
