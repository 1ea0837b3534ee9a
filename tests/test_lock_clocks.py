"""--lock-clocks for real, on the test sshd, against a Jetson Nano laid out from real files with stand-ins for
jetson_clocks and nvpmodel (tests/fake_board.py): the clocks are held during the capture and the board's own
come back after a run that worked, after a failing app, after Ctrl-C on the host, after the host is gone, and
after a supervisor that died with them locked. The failing app, Ctrl-C and the host gone are runs shared with
test_failures and test_faults (tests/scenarios.py)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from board_state import assert_board_clean
from conftest import profiled_run, run_cli, write_inventory
from scenarios import CPU0_MIN, GPU_MIN, QUIET, nano_board, ssh_args
from scenarios import clock_app as app
from test_faults import error_lines

from remote_agent import clocks

pytestmark = pytest.mark.integration


@pytest.fixture
def nano(sshd, tmp_path):
    return nano_board(tmp_path, sshd)


def assert_restored(nano: dict) -> None:
    """The Nano's own clocks and power mode (102 MHz cores, 76.8 MHz GPU minimum, mode 0) and no pending lock."""
    root, work = Path(nano["root"]), Path(nano["work"])
    assert (root / CPU0_MIN).read_text() == "102000\n"
    assert (root / GPU_MIN).read_text() == "76800000\n"
    assert (root / "var/lib/nvpmodel/status").read_text() == "0\n"  # set back to MAXN by 'nvpmodel -m 0'
    assert not (work / clocks.PENDING).exists() and not list(work.glob(clocks.STORED + "*"))


def test_clocks_are_held_during_the_capture_and_restored_after_it(nano, tmp_path):
    done = run_cli("profile", "--app-cmd", app(Path(nano["root"]), "exec sleep 30"), *QUIET, "--duration", "2",
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
    assert_board_clean(Path(nano["work"]))


def test_a_failing_app_still_gets_the_board_its_clocks_back(scenario):
    """An app that exits with status 3 after 2 s (test_failures reads the same run for what the user sees)."""
    run = scenario("failing_app_nano")
    assert run["returncode"] == 10, run["stderr"]
    run_dir = next(Path(run["runs"]).iterdir())
    assert (run_dir / "app.stdout.log").read_text().split()[:2] == ["1428000", "921600000"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True and record["clocks"]["locked"]["nvpmodel_mode"] is None
    assert (Path(run["root"]) / CPU0_MIN).read_text() == "102000\n"
    assert not (Path(run["work"]) / clocks.PENDING).exists()
    assert_board_clean(Path(run["work"]))


def test_ctrl_c_on_the_host_ends_the_capture_and_restores_the_clocks(scenario):
    """Ctrl-C 4 s in (test_faults reads the same run for the early end and the report kept)."""
    run = scenario("interrupted_nano")
    assert run["clock_during"] == "1428000\n"  # held while the capture runs
    assert run["returncode"] == 16, run["stderr"]
    error_lines(run["stderr"])
    record = json.loads((Path(run["run_dir"]) / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True
    assert_restored(run)
    assert_board_clean(Path(run["work"]))


def test_the_board_restores_its_clocks_itself_when_the_host_is_gone(scenario):
    """The host process killed 2 s in, heartbeat timeout 3 s (test_faults reads the same run for the fetch)."""
    run = scenario("abandoned_nano")
    assert run["clock_during"] == "1428000\n"
    assert run["clock_before_fetch"] == "102000\n"  # the board gave its clocks back on its own
    # the board kept the report; fetch brought it back with what the board did about its clocks
    assert run["returncode"] in (0, 11), run["stderr"]
    record = json.loads((Path(run["run_dir"]) / "run.json").read_text())
    assert record["clocks"]["restore"]["restored"] is True
    assert record["capture"]["ended_early"]["reason"].startswith("no heartbeat from the host")
    assert_restored(run)
    assert_board_clean(Path(run["work"]))


def test_a_lock_left_by_a_dead_supervisor_is_restored_before_the_next_capture(nano, tmp_path, monkeypatch):
    root, work = Path(nano["root"]), Path(nano["work"])
    monkeypatch.setenv("ORCHESTRATE_BOARD_ROOT", str(root))
    work.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    clocks.lock(str(work), 1, owner_pid=gone.pid)  # as a supervisor killed mid-capture leaves it
    assert (root / CPU0_MIN).read_text() == "1428000\n"
    done = run_cli("profile", "--app-cmd", app(root, "exec sleep 30"), *QUIET, "--duration", "2",
                   *nano["args"])
    run_dir = profiled_run(done, tmp_path / "runs")
    assert (run_dir / "app.stdout.log").read_text().split() == ["102000", "76800000", "0"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["recovered_clocks"]["restored"] is True and "clocks" not in record
    assert "were restored before this one" in done.stderr
    assert_restored(nano)
    assert_board_clean(work)


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


AGX_CPU0_MIN = "sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq"


def test_a_power_mode_that_needs_a_reboot_is_refused_before_the_run(sshd, tmp_path):
    """An AGX Orin in MODE_30W (its published 'nvpmodel -q') with L4T R35.3.1's own nvpmodel.conf: MAXN gates no
    TPC where MODE_30W gates four, which nvpmodel changes only at boot."""
    agx = nano_board(tmp_path, sshd, "agx_orin")
    root, work = Path(agx["root"]), Path(agx["work"])
    done = run_cli("profile", "--app-cmd", "sleep 30", *QUIET, "--duration", "2", "--lock-clocks", "--nvpmodel", "0",
                   *agx["args"])
    assert done.returncode == 7, done.stderr
    [line] = error_lines(done.stderr)
    assert ("mode 0 (MAXN) sets TPC_POWER_GATING TPC_PG_MASK 0 where the current mode 2 (MODE_30W) has "
            "TPC_POWER_GATING TPC_PG_MASK 240: the GPU's power gating changes only at boot") in line
    assert "sudo nvpmodel -m 0 and reboot" in line and "switches to as it runs: 2" in line
    assert not (root / "var/lib/nvpmodel/status").exists()  # nvpmodel never ran: the board is as it was
    assert not (work / clocks.PENDING).exists() and not list(work.glob(clocks.STORED + "*"))


def test_nvpmodel_asking_to_reboot_fails_the_lock_in_its_own_words_and_the_clocks_come_back(sshd, tmp_path):
    """Without the conf to read beforehand, nvpmodel's prompt (declined: no terminal) is read from its output,
    although it exits 0."""
    agx = nano_board(tmp_path, sshd, "agx_orin")
    root, work = Path(agx["root"]), Path(agx["work"])
    (root / "etc/nvpmodel.conf").unlink()
    before = (root / AGX_CPU0_MIN).read_text()
    done = run_cli("profile", "--app-cmd", "sleep 30", *QUIET, "--duration", "2", "--lock-clocks", "--nvpmodel", "0",
                   *agx["args"])
    assert done.returncode != 0
    [line] = error_lines(done.stderr)
    assert "'nvpmodel -m 0' failed: NVPM WARN: Reboot required for changing to this power mode: 0" in line
    assert (root / AGX_CPU0_MIN).read_text() == before
    assert (root / "var/lib/nvpmodel/status").read_text() == "2\n"  # set back to MODE_30W, where it stayed
    assert not (work / clocks.PENDING).exists() and not list(work.glob(clocks.STORED + "*"))


def test_a_store_file_a_crashed_run_left_does_not_stop_the_next_lock(nano, tmp_path):
    """jetson_clocks --store onto an existing file asks to overwrite it and, with no terminal, exits 1: each
    lock stores to a file of its own, and what a crashed run left is removed first."""
    work = Path(nano["work"])
    work.mkdir(parents=True)
    for name in (clocks.STORED, clocks.STORED + ".4242.1700000000000"):
        (work / name).write_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq:1\n")
    done = run_cli("profile", "--app-cmd", app(Path(nano["root"]), "exec sleep 30"), *QUIET, "--duration", "2",
                   "--lock-clocks", "--nvpmodel", "1", *nano["args"])
    run_dir = profiled_run(done, tmp_path / "runs")
    assert (run_dir / "app.stdout.log").read_text().split() == ["1428000", "921600000", "1"]
    assert_restored(nano)
