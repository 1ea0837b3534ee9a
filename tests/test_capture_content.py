"""A capture that holds none of what it was asked for, made for real: nsys exits 0 and writes a report when an
app makes no OpenGL call under --trace opengl, and when the kernel refuses CPU sampling (here a seccomp filter
denies perf_event_open, as a container's profile does). Both are named as the run's validity flags, lead the
verdict with their likely reason, and show on the page."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from browser import assert_clean, open_page
from conftest import profiled_run
from scenarios import board, run_cli, ssh_args, write_inventory

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")]
APPS = Path(__file__).parent / "apps"
BUSY = "import time\nend = time.time() + 3\nwhile time.time() < end: sum(range(1000))"


def test_a_trace_without_calls_and_refused_sampling_are_flagged(sshd, tmp_path, browser):
    bin_dir = tmp_path / "nsys-without-perf-events" / "bin"
    bin_dir.mkdir(parents=True)
    wrapper = bin_dir / "nsys"  # the board's nsys, under a seccomp profile that denies perf events
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {APPS / "no_perf_events.py"} '
                       f'{Path("/usr/bin/nsys").resolve()} "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "busy.py").write_text(BUSY)
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, tmp_path / "work",
                                                                             orchestrate_nsys=str(wrapper))})
    done = run_cli("profile", "--target", "board", "--app-cmd", f"{sys.executable} {tmp_path / 'busy.py'}",
                   "--trace", "opengl,osrt", "--sample", "cpu", "--cpuctxsw", "none", "--duration", "10",
                   "--retries", "3", "--inventory", str(inventory), "--out", str(tmp_path / "runs"), *ssh_args(sshd))
    run_dir = profiled_run(done, tmp_path / "runs")
    record = json.loads((run_dir / "run.json").read_text())
    flags = [flag["what"] for flag in record["validity"]["flags"] if flag["code"] == "empty_trace"]
    assert [flag.split(":")[0] for flag in flags] == ["nsys wrote a report but it holds no OpenGL calls",
                                                      "nsys wrote a report but it holds no CPU samples"]
    assert "doubtful figures: nsys wrote a report but it holds no OpenGL calls" in done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    verdict = summary["verdict"]
    assert verdict["summary"].startswith("nsys wrote a report but it holds no OpenGL calls: the app made no OpenGL "
                                         "call nsys could hook")
    assert "holds no CPU samples: the kernel refused CPU sampling" in verdict["summary"]
    assert verdict["confidence"] == "low" and summary["hotspots"] is None
    assert "a container's seccomp profile denies perf_event_open" in verdict["summary"]
    assert summary["attribution"]["shares"]["cpu"]["pct"] > 50  # the busy loop, seen through its OS calls
    # no step that the refused perf events would refuse again (context switches)
    assert "context_switches" not in [step["rule"] for step in summary["next_steps"]]
    opened = open_page(browser, run_dir / "report.html")
    assert_clean(opened, run_dir / "report.html")
    doubts = opened.page.locator("[data-doubt]").all_text_contents()
    assert any("holds no OpenGL calls" in d for d in doubts) and any("holds no CPU samples" in d for d in doubts)
    opened.screenshot("capture-without-its-traces")
