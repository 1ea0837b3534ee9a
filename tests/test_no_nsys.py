"""--no-nsys: the app runs as a benchmark, without nsys. Unit tests of its pieces (the spec, the command, the
preflight, what the app's exit means, the page), then real runs: a study over SSH of the shipped posebench
whose every nsys is a tripwire, and one-off profiles on the local target whose app fails or outlives its run."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from board_state import assert_board_clean
from browser import assert_clean, open_page
from conftest import REPO, run_cli, write_inventory
from scenarios import board, ssh_args

from orchestrator.documents.run import RunDocument
from orchestrator.documents.summary import Summary
from orchestrator.errors import AppFailedError, AppNotFoundError, UsageError, WatchdogError
from orchestrator.inventory.catalog import AppSpec, parse_app_spec, with_overrides
from orchestrator.nsys.commands import LAUNCH_WRAPPER, RemoteRunPaths, launch_argv
from orchestrator.report.page import NO_NSYS_REASON, report_page
from orchestrator.report.run_data import RunData, WithoutNsys
from orchestrator.runs.outcome import capture_summary, classify_capture
from orchestrator.study.spec import cell_app, cells, load_study, without_nsys
from remote_agent import facts as agent_facts
from remote_agent import preflight
from remote_agent.messages import CaptureResult, PreflightRequest

APP = AppSpec(name="bench", command=("./bench", "--frames", "40"), duration_s=30)


def test_an_app_spec_and_the_command_line_say_whether_nsys_runs():
    assert parse_app_spec({"name": "a", "command": "a"}, "a.yaml").nsys is True
    assert parse_app_spec({"name": "a", "command": "a", "nsys": False}, "a.yaml").nsys is False
    with pytest.raises(Exception) as bad:
        parse_app_spec({"name": "a", "command": "a", "nsys": "no"}, "a.yaml")
    assert bad.value.message == "a.yaml: 'nsys' must be true or false, not 'no'"
    assert with_overrides(APP, nsys=False).nsys is False and with_overrides(APP).nsys is True
    with pytest.raises(UsageError):
        with_overrides(APP, nsys="off")  # type: ignore[arg-type]


def test_a_study_without_nsys_runs_every_cell_without_it():
    study = load_study(REPO / "studies" / "posebench-delegate.yaml")
    catalog = {"posebench": AppSpec(name="posebench", command=("python3", "posebench.py"))}
    assert all(cell_app(study, cell, catalog).nsys for cell in cells(study))
    bare = without_nsys(study)
    assert [cell_app(bare, cell, catalog).nsys for cell in cells(bare)] == [False] * len(cells(study))
    assert bare.overrides["duration_s"] == study.overrides["duration_s"] == 180


def test_a_study_reuses_runs_made_as_before_and_never_mixes_runs_with_and_without_nsys():
    from dataclasses import asdict

    from orchestrator.study.runner import _digest, app_key
    before = asdict(APP)  # the key of the same app when specs had no 'nsys' field
    del before["source"], before["nsys"]
    assert app_key(APP) == _digest(before)
    assert app_key(with_overrides(APP, nsys=False)) != app_key(APP)


def test_without_nsys_the_wrapper_starts_the_app_itself():
    paths = RemoteRunPaths("/w/runs/r1")
    assert launch_argv(APP, paths) == ["/bin/sh", "-c", LAUNCH_WRAPPER, "orchestrate-launch", "/w/runs/r1/app.pid",
                                       "/w/runs/r1/app.stdout.log", "/w/runs/r1/app.stderr.log", "./bench",
                                       "--frames", "40"]


def test_preflight_without_nsys_asks_for_neither_nsys_nor_root():
    system = {"uid": 1000, "user": "ubuntu", "perf_event_paranoid": 4}
    no_nsys = dict(agent_facts.NO_NSYS)
    found = preflight.evaluate(PreflightRequest(sample="cpu", nsys="/opt/nsys"), {"system": system, "nsys": no_nsys},
                               {})
    assert [f["code"] for f in found] == ["not_root", "perf_event_paranoid", "nsys_missing"]
    assert preflight.evaluate(PreflightRequest(sample="cpu", with_nsys=False, gpu_metrics="ga10b"),
                              {"system": system, "nsys": no_nsys}, {}) == []
    app_missing = {"app": {"argv0": "./bench", "cwd": "/w", "found": False}}
    found = preflight.evaluate(PreflightRequest(with_nsys=False), {"system": system, "nsys": no_nsys}, app_missing)
    assert [f["code"] for f in found] == ["app_not_found"]


def run_result(**changes):
    base = {"with_nsys": False, "program_not_found": False, "watchdog": [], "reports": {}, "nsys_exit": None,
            "app_exit": 0, "app_elapsed_s": 12.25, "app_pid": 42, "app_stopped_after_s": None,
            "app_gone_after_s": 12.2}
    base.update(changes)
    return CaptureResult.from_wire(base, strict=True)


def test_without_nsys_the_apps_own_exit_says_how_the_run_went():
    assert classify_capture(run_result(), APP) == ("ok", None)
    assert capture_summary(run_result(), "ok") == "12.2 s without nsys, ok"
    stopped = run_result(app_exit=-15, app_stopped_after_s=30.0, app_gone_after_s=30.01, app_elapsed_s=30.05)
    assert classify_capture(stopped, APP) == ("ok", None)
    status, error = classify_capture(run_result(app_exit=3, app_gone_after_s=0.4), APP)
    assert status == "app_failed" and isinstance(error, AppFailedError)
    assert error.message == "the app exited with status 3 after 0.4 s"
    assert capture_summary(run_result(app_exit=3), "app_failed") == "12.2 s without nsys, app exit 3, app_failed"
    status, error = classify_capture(run_result(app_exit=127, program_not_found=True), APP)
    assert status == "app_not_found" and isinstance(error, AppNotFoundError)
    assert error.message == "the board's shell could not start './bench'"
    killed = run_result(app_exit=-9, app_stopped_after_s=30.0, watchdog=[
        {"kind": "outlived", "target": "app", "signal": "SIGTERM", "reason": "app outlived the capture"},
        {"kind": "outlived", "target": "app", "signal": "SIGKILL", "reason": "app outlived the capture"}])
    status, error = classify_capture(killed, APP)
    assert status == "watchdog" and isinstance(error, WatchdogError)
    assert error.message == "watchdog: the app outlived its run (SIGTERM to app, SIGKILL to app)"


def test_the_page_of_a_run_without_nsys_shows_the_apps_figures_and_the_board():
    document = RunDocument.from_json({"run_id": "r", "status": "ok", "app": {"name": "posebench"},
                                      "request": {"with_nsys": False}, "target": {"name": "board"}})
    series = {"cpu_load_pct": [[0, 10.0], [500_000_000, 80.0], [1_000_000_000, 75.0]]}
    seen = WithoutNsys(Summary.from_json({"board": {"source": "/proc", "samples": 3, "series_ns": series},
                                          "capture": {"start_ns": 0, "end_ns": 1_000_000_000}}),
                       [("app.inference_mean_ms", 21.456, "ms"), ("app.first_inference_ms", 180.0, "ms")], [])
    page = report_page(RunData(Path("runs/r"), None, document, None, None, None, None, None, seen))
    assert [(f.label, f.value) for f in page.app_figures or []] == [("app.inference_mean_ms", "21.46 ms"),
                                                                   ("app.first_inference_ms", "180 ms")]
    assert page.missing["verdict"] == page.missing["frames"] == NO_NSYS_REASON
    assert page.board is not None and [title for title, _ in page.board.charts] == [
        "CPU load (mean of the online cores) (%)"]


TRIPWIRE = """#!/bin/sh
echo "$0 $*" >> {record}
exit 1
"""


def tripwire(folder: Path) -> tuple[Path, Path]:
    """An nsys that records every call: a run without nsys must never start it."""
    record = folder / "nsys-calls"
    script = folder / "nsys"
    script.write_text(TRIPWIRE.format(record=record))
    script.chmod(0o755)
    return script, record


@pytest.mark.integration
def test_a_study_without_nsys_gives_the_apps_figures_and_the_boards_samples(sshd, browser, tmp_path):
    """The shipped posebench-delegate study, smaller, with --no-nsys over SSH: the board's nsys is a tripwire
    that no call may reach; every cell's figures are the app's own lines, with the board's samples beside them."""
    nsys, calls = tripwire(tmp_path)
    inv = write_inventory(tmp_path / "inventory.yaml", {"board": board(
        sshd, tmp_path / "work", orchestrate_python=sys.executable, orchestrate_nsys=str(nsys))})
    done = run_cli("study", str(REPO / "studies" / "posebench-delegate.yaml"), "--no-nsys", "--target", "board",
                   "--inventory", str(inv), "--out", str(tmp_path / "runs"), "--repeat", "2", "--set", "frames=40",
                   "--set", "threads=2", *ssh_args(sshd), timeout=600)
    assert done.returncode == 0, done.stderr
    assert not calls.exists(), calls.read_text()
    folder = Path(done.stdout.strip().splitlines()[-1])
    document = json.loads((folder / "study.json").read_text())
    for cell in document["cells"]:
        metrics = cell["metrics"]
        assert cell["status"] == "ok" and len(metrics["app.first_inference_ms"]["values"]) == 2, cell.get("notes")
        assert metrics["app.inference_mean_ms"]["median"] > 0
        assert "steady_mean_ms" not in metrics and cell["verdict"] is None  # no trace, no frames of nsys's
    xnnpack, none = (document["cells"][i]["metrics"]["app.inference_mean_ms"]["median"] for i in (0, 1))
    assert none > 1.5 * xnnpack  # the delegate's effect, as measured with nsys (~5x here)
    run_dir = folder / document["cells"][0]["runs"][0]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["stage"] == "pulled"
    assert record["facts"]["nsys"] == agent_facts.NO_NSYS and record["request"]["with_nsys"] is False
    assert record["capture"]["with_nsys"] is False and record["app_exit"] == {"status": 0, "ended": "exited by itself"}
    assert "/bin/sh -c" in record["remote_command"] and "nsys" not in record["remote_command"].split()[0]
    assert set(record["files"]) == {"app.stdout.log", "app.stderr.log", "launch.log", "board.jsonl"}
    assert [p.name for p in run_dir.glob("report.*")] == ["report.html"] and not (run_dir / "summary.json").exists()
    assert record["validity"]["samples"] >= 2 and record["analysis"]["without_nsys"] is True
    page = run_dir / "report.html"
    opened = open_page(browser, page)
    assert_clean(opened, page)
    verdict = opened.page.locator("[data-section=verdict]").inner_text()
    assert NO_NSYS_REASON in verdict and "app.inference_mean_ms" in verdict
    assert opened.page.locator("[data-board-samples]").count() == 1
    assert opened.charts()["board-cpu_load_pct"]["drawn"] > 0
    opened = open_page(browser, folder / "study.html")
    assert_clean(opened, folder / "study.html")
    assert opened.charts()["study-app.inference_mean_ms"]["drawn"] == 2
    assert_board_clean(tmp_path / "work")


def local_inventory(tmp_path: Path) -> Path:
    nsys, _ = tripwire(tmp_path)
    return write_inventory(tmp_path / "inventory.yaml", {"here": {
        "ansible_connection": "local", "orchestrate_work_dir": str(tmp_path / "work"), "orchestrate_nsys": str(nsys)}})


@pytest.mark.integration
@pytest.mark.machine  # its runs take this machine's own run lock, as every run on the local target does
def test_without_nsys_an_app_that_fails_or_outlives_its_run_is_said(tmp_path):
    inventory = local_inventory(tmp_path)
    common = ("--target", "here", "--inventory", str(inventory), "--out", str(tmp_path / "runs"), "--no-nsys")
    failed = run_cli("profile", "--app-cmd", "sh -c 'echo half-done; exit 3'", *common)
    assert failed.returncode == 10 and failed.stderr.count("error:") == 1, failed.stderr
    assert "error: the app exited with status 3 after" in failed.stderr
    stopped = run_cli("profile", "--app-cmd", "sleep 60", "--duration", "1", *common)
    assert stopped.returncode == 0, stopped.stderr
    record = json.loads((Path(stopped.stdout.strip().splitlines()[-1]) / "run.json").read_text())
    assert record["app_exit"]["ended"].startswith("stopped by the agent after 1.")
    assert record["capture"]["app_exit"] == -15 and record["capture"]["watchdog"] == []
    assert not (tmp_path / "nsys-calls").exists()
    assert_board_clean(tmp_path / "work")
    assert os.path.isdir(tmp_path / "runs")
