"""--lock-clocks for real, on the test sshd, against a Jetson Nano laid out from real files with stand-ins for
jetson_clocks and nvpmodel (tests/fake_board.py): the clocks are held during the capture and the board's own
come back after a run that worked, after a failing app, after Ctrl-C on the host, after the host is gone, and
after a supervisor that died with them locked."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from board_state import assert_board_clean
from conftest import REPO, profiled_run, run_cli, write_inventory
from fake_board import lay_out
from test_faults import as_from_a_terminal, error_lines, wait_for_stage
from test_profile_e2e import ssh_args

from remote_agent import clocks

pytestmark = pytest.mark.integration

CPU0_MIN = "sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq"
GPU_MIN = "sys/class/devfreq/57000000.gpu/min_freq"
QUIET = ("--trace", "osrt", "--sample", "none", "--cpuctxsw", "none")


def app(root: Path, then: str) -> str:
    """Prints what the app sees of the board's clocks and power mode as it starts, then `then`."""
    return (f"sh -c 'cat {root}/{CPU0_MIN} {root}/{GPU_MIN}; cat {root}/var/lib/nvpmodel/status 2>/dev/null "
            f"|| echo default; {then}'")


@pytest.fixture
def nano(sshd, tmp_path):
    root = lay_out(tmp_path / "nano-files", "nano")
    work = tmp_path / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"nano": {
        **sshd.inventory_host(), "orchestrate_work_dir": str(work), "orchestrate_board_root": str(root)}})
    return {"root": root, "work": work, "args": ["--target", "nano", "--inventory", str(inventory), "--out",
                                                 str(tmp_path / "runs"), *ssh_args(sshd)]}


def assert_restored(nano: dict, timeout_s: float = 0) -> None:
    """The Nano's own clocks and power mode (102 MHz cores, 76.8 MHz GPU minimum, mode 0) and no pending lock."""
    root, deadline = nano["root"], time.monotonic() + timeout_s
    while (root / CPU0_MIN).read_text() != "102000\n" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (root / CPU0_MIN).read_text() == "102000\n"
    assert (root / GPU_MIN).read_text() == "76800000\n"
    assert (root / "var/lib/nvpmodel/status").read_text() == "0\n"  # set back to MAXN by 'nvpmodel -m 0'
    assert not (nano["work"] / clocks.PENDING).exists() and not (nano["work"] / clocks.STORED).exists()


def test_clocks_are_held_during_the_capture_and_restored_after_it(nano, tmp_path):
    done = run_cli("profile", "--app-cmd", app(nano["root"], "exec sleep 30"), *QUIET, "--duration", "2",
                   "--lock-clocks", "--nvpmodel", "1", *nano["args"])
    run_dir = profiled_run(done, tmp_path / "runs")
    seen = (run_dir / "app.stdout.log").read_text().split()
    assert seen == ["1428000", "921600000", "1"]  # every core and the GPU at their highest clock, in mode 1 (5W)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["request"]["lock_clocks"] is True and record["request"]["nvpmodel"] == 1
    locked = record["clocks"]["locked"]
    assert locked["mode_before"] == {"name": "MAXN", "id": 0} and locked["mode_locked"] == {"name": "5W", "id": 1}
    assert record["clocks"]["restore"]["restored"] is True
    assert record["clocks"]["restore"]["mode_now"] == {"name": "MAXN", "id": 0}
    assert record["board_state"]["after"]["power_mode"] == {"name": "MAXN", "id": 0}
    assert "locked for the capture and are restored" in done.stderr
    assert_restored(nano)
    assert_board_clean(nano["work"])


def test_a_failing_app_still_gets_the_board_its_clocks_back(nano, tmp_path):
    done = run_cli("profile", "--app-cmd", app(nano["root"], "exit 3"), *QUIET, "--duration", "2", "--lock-clocks",
                   *nano["args"])
    assert done.returncode == 10, done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    assert (run_dir / "app.stdout.log").read_text().split()[:2] == ["1428000", "921600000"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True and record["clocks"]["locked"]["nvpmodel_mode"] is None
    assert (nano["root"] / CPU0_MIN).read_text() == "102000\n"
    assert not (nano["work"] / clocks.PENDING).exists()
    assert_board_clean(nano["work"])


def _start(nano: dict, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120")
    return subprocess.Popen([sys.executable, "-m", "orchestrator", "profile", "--app-cmd",
                             app(nano["root"], "exec sleep 60"), *QUIET, "--duration", "30", "--lock-clocks",
                             "--nvpmodel", "1", *nano["args"], *extra], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)


def test_ctrl_c_on_the_host_ends_the_capture_and_restores_the_clocks(nano, tmp_path):
    proc = _start(nano)
    run_dir = wait_for_stage(tmp_path, "capturing")
    time.sleep(2)
    assert (nano["root"] / CPU0_MIN).read_text() == "1428000\n"  # held while the capture runs
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode in (16, 11), err
    error_lines(err)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True
    assert_restored(nano)
    assert_board_clean(nano["work"])


def test_the_board_restores_its_clocks_itself_when_the_host_is_gone(nano, tmp_path):
    proc = _start(nano, "--heartbeat-timeout", "3")
    run_dir = wait_for_stage(tmp_path, "capturing")
    time.sleep(1)
    assert (nano["root"] / CPU0_MIN).read_text() == "1428000\n"
    proc.kill()  # the host vanishes: no clean-up of any kind on this side
    proc.communicate(timeout=30)
    assert_restored(nano, timeout_s=60)
    # the board kept the report; fetch brings it back with what the board did about its clocks
    fetched = run_cli("fetch", str(run_dir), *nano["args"][2:4], *nano["args"][6:])
    assert fetched.returncode in (0, 11), fetched.stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True
    assert record["capture"]["ended_early"]["reason"].startswith("no heartbeat from the host")
    assert_board_clean(nano["work"])


def test_a_lock_left_by_a_dead_supervisor_is_restored_before_the_next_capture(nano, tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRATE_BOARD_ROOT", str(nano["root"]))
    nano["work"].mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    clocks.lock(str(nano["work"]), 1, owner_pid=gone.pid)  # as a supervisor killed mid-capture leaves it
    assert (nano["root"] / CPU0_MIN).read_text() == "1428000\n"
    done = run_cli("profile", "--app-cmd", app(nano["root"], "exec sleep 30"), *QUIET, "--duration", "2",
                   *nano["args"])
    run_dir = profiled_run(done, tmp_path / "runs")
    assert (run_dir / "app.stdout.log").read_text().split() == ["102000", "76800000", "0"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["recovered_clocks"]["restored"] is True and "clocks" not in record
    assert "were restored before this one" in done.stderr
    assert_restored(nano)
    assert_board_clean(nano["work"])


def test_lock_clocks_on_a_board_without_jetson_clocks_is_a_preflight_error(sshd, tmp_path):
    inventory = write_inventory(tmp_path / "inventory.yaml", {"pc": {
        **sshd.inventory_host(), "orchestrate_work_dir": str(tmp_path / "work")}})
    done = run_cli("profile", "--target", "pc", "--app-cmd", "sleep 5", *QUIET, "--lock-clocks", "--inventory",
                   str(inventory), "--out", str(tmp_path / "runs"), *ssh_args(sshd))
    assert done.returncode == 7, done.stderr
    [line] = error_lines(done.stderr)
    assert "--lock-clocks asked, but jetson_clocks is not on the target" in done.stderr and line.startswith("error:")
    usage = run_cli("profile", "--target", "pc", "--app-cmd", "sleep 5", "--nvpmodel", "1")
    assert usage.returncode == 2 and "--nvpmodel goes with --lock-clocks" in usage.stderr
