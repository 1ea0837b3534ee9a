"""Faults injected for real: Ctrl-C and SIGTERM on the host, the host process killed, sshd killed mid-pull,
two orchestrators on one board, a tampered agent. After each: no report lost, no process of the run
left on the board, nothing left in the board's work dir once the report is safe."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from board_state import assert_board_clean, assert_report_kept, record
from conftest import nsys_stall, profiled_run, run_cli, write_inventory
from scenarios import SECRET, board, ssh_args, start_cli, wait_for_app, wait_for_stage
from sshd_server import make_sshd

from orchestrator.errors import TransferError
from orchestrator.inventory.hosts import Host
from orchestrator.runs.pull import partial_path, pull_verified
from orchestrator.targets.agent import build_agent_archive, deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from remote_agent.commands import VERSION

pytestmark = pytest.mark.integration
# a loop of short sleeps: OS-runtime rows every 0.2 s, no display, ends on SIGTERM
LOOP_APP = "sh -c 'while true; do sleep 0.2; done'"
# OS-runtime trace alone: with context switches traced too, nsys 2022.4 stalled while generating its report in
# 2 of 13 such captures, without them in 0 of 20. These tests are about what happens around nsys, not in it.
QUIET_TRACE = ("--trace", "osrt", "--sample", "none", "--cpuctxsw", "none")


def assert_fetched(done: subprocess.CompletedProcess, run_dir: Path) -> dict:
    """fetch did its job: the capture's report is here and verified (exit 0), or, in nsys's stall branch
    (exit 11, one line naming the watchdog), here if nsys wrote one, the run saying 'failed' if not. An early
    ended capture is never made again, so this branch has no second try."""
    [line] = error_lines(done.stderr) or [""]
    record = json.loads((run_dir / "run.json").read_text())
    if done.returncode == 11:
        assert nsys_stall(record) and line.startswith("error: watchdog: nsys "), done.stderr
    else:
        assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == str(run_dir), done.stderr
    if record["capture"]["reports"]:
        assert record["stage"] == "pulled"
        assert_report_kept(run_dir)
    else:
        assert done.returncode == 11 and record["stage"] == "failed" and (run_dir / "nsys.log").is_file()
    return record


def assert_report_kept_or_capturing(run_dir: Path) -> None:
    """Right after the host gave up: the board is still finishing the capture (its supervisor lives)."""
    record_ = json.loads((run_dir / "run.json").read_text())
    state = json.loads((Path(record_["remote"]["run_dir"]) / "state.json").read_text())
    assert state["stage"] in ("capturing", "importing", "ended")


def start_profile(sshd, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    work = tmp_path / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, work)})
    return start_cli("profile", "--target", "board", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                     *ssh_args(sshd), *extra), work


def start_capturing(sshd, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path, Path]:
    """A sleep loop profiled for 20 s, once its app runs on the board: the process, work dir and run folder."""
    proc, work = start_profile(sshd, tmp_path, "--app-cmd", LOOP_APP, *QUIET_TRACE, "--duration", "20", *extra)
    run_dir = wait_for_stage(tmp_path / "runs", "capturing")
    wait_for_app(run_dir)
    return proc, work, run_dir


def error_lines(stderr: str) -> list[str]:
    record("cli_output", traceback="Traceback" in stderr)
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_ended_early_by_the_user(returncode: int, err: str, run_dir: Path, work: Path) -> None:
    """One interrupt 4 s after the app started: the board ended the capture early, the report came back,
    nothing is left."""
    [line] = error_lines(err)
    record = json.loads((run_dir / "run.json").read_text())
    assert "capture" in record, err  # the host followed the capture to its end
    after = record["capture"]["ended_early"]["after_s"]
    assert 3 < after < 15
    assert record["app_exit"]["ended"].startswith("stopped by the agent after ")
    # interrupted, whatever nsys did after the early end: a stall the watchdog ended is said in the same line
    assert returncode == 16 and record["status"] == "interrupted", err
    kept = f"report kept: {run_dir}" if record["capture"]["reports"] else "nsys wrote no report"
    said = f"error: interrupted after {after:.1f} s; {kept}"
    stopped = [a for a in record["capture"]["watchdog"] if a["target"] != "app"]
    assert line == said or (stopped and line.startswith(f"{said} (watchdog: nsys")), err
    assert "--duration" not in line
    # an interrupted capture is never made again: an earlier attempt may only be one nsys ended by itself without a
    # report (it failed to start the app, now and then)
    assert all(not a["reports"] and not a["ended_early"] for a in record["capture_attempts"]), \
        record["capture_attempts"]
    if record["capture"]["reports"]:  # what nsys wrote came back, verified
        assert record["stage"] == "pulled" and (run_dir / "report.sqlite").is_file()
        assert_report_kept(run_dir)
    else:  # the stalled nsys wrote nothing: the run says so, and its logs came back
        assert record["stage"] == "failed" and (run_dir / "nsys.log").is_file()
    assert_board_clean(work)


def test_ctrl_c_ends_the_capture_early_and_keeps_the_report(scenario):
    """Ctrl-C 4 s into a capture (a Nano's, with its clocks locked: test_lock_clocks reads the same run)."""
    run = scenario("interrupted_nano")
    assert_ended_early_by_the_user(run["returncode"], run["stderr"], Path(run["run_dir"]), Path(run["work"]))


def test_sigterm_ends_the_capture_early_and_keeps_the_report(sshd, tmp_path):
    proc, work, run_dir = start_capturing(sshd, tmp_path)
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=180)
    assert_ended_early_by_the_user(proc.returncode, err, run_dir, work)


def test_a_second_interrupt_leaves_the_report_on_the_board_for_fetch(sshd, tmp_path):
    proc, work, run_dir = start_capturing(sshd, tmp_path)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 16, err
    [line] = error_lines(err)
    assert f"the board ends the capture on its own and keeps the report (get it with 'orchestrate fetch {run_dir}')" \
        in line
    assert json.loads((run_dir / "run.json").read_text())["stage"] == "capturing"
    assert_report_kept_or_capturing(run_dir)
    done = run_cli("fetch", str(run_dir), *ssh_args(sshd))
    record = assert_fetched(done, run_dir)
    assert "error" not in record or nsys_stall(record)
    assert record["capture"]["ended_early"]["reason"] == "the user interrupted orchestrate on the host"
    assert_board_clean(work)
    again = run_cli("fetch", str(run_dir), *ssh_args(sshd))  # running it again is safe
    assert again.returncode == 0 and "already here" in again.stderr


def test_a_killed_host_leaves_the_capture_to_the_board_and_fetch_gets_it(scenario):
    """The host process killed 2 s into a capture (heartbeat timeout 3 s), then fetch once the board has ended
    it (a Nano's, with its clocks locked: test_lock_clocks reads the same run)."""
    run = scenario("abandoned_nano")
    run_dir = Path(run["run_dir"])
    done = subprocess.CompletedProcess([], run["returncode"], run["stdout"], run["stderr"])
    record = assert_fetched(done, run_dir)
    early = record["capture"]["ended_early"]
    assert early["reason"].startswith("no heartbeat from the host for ") and early["after_s"] < 20
    assert "the capture was ended early" in done.stderr
    assert_board_clean(Path(run["work"]))


def test_the_second_orchestrator_waits_for_the_board_or_fails_clearly(sshd, tmp_path):
    first, work = start_profile(sshd, tmp_path, "--app-cmd", LOOP_APP, *QUIET_TRACE,
                                "--duration", "6")
    first_run = wait_for_stage(tmp_path / "runs", "capturing")
    inventory = tmp_path / "inventory.yaml"
    # another work dir on the same machine is the same board: its nsys would be the same nsys. Without leases (a
    # lease would queue it: test_board_leases.py), the board's own capture lock is what refuses it or makes it wait
    twin = write_inventory(tmp_path / "twin.yaml", {"twin": board(sshd, tmp_path / "twin-work")})
    busy = run_cli("profile", "--target", "twin", "--app-cmd", LOOP_APP, *QUIET_TRACE, "--no-leases",
                   "--duration", "2", "--inventory", str(twin), "--out", str(tmp_path / "other"), *ssh_args(sshd))
    assert busy.returncode == 18, busy.stderr
    [line] = error_lines(busy.stderr)
    assert f"is busy with run {first_run.name} (from root@127.0.0.1:{sshd.port}, for " in line
    assert "wait for it with --wait-lock SECONDS" in line
    waited = run_cli("profile", "--target", "board", "--app-cmd", LOOP_APP, *QUIET_TRACE, "--no-leases",
                     "--duration", "2", "--wait-lock", "120", "--inventory", str(inventory),
                     "--out", str(tmp_path / "waited"), *ssh_args(sshd))
    out, err = first.communicate(timeout=120)
    profiled_run(subprocess.CompletedProcess(first.args, first.returncode, out, err), tmp_path / "runs")
    profiled_run(waited, tmp_path / "waited")
    one = json.loads((first_run / "run.json").read_text())
    two = json.loads(next((tmp_path / "waited").glob("*/run.json")).read_text())
    refused = json.loads(next((tmp_path / "other").glob("*/run.json")).read_text())
    assert (refused["stage"], refused["error"]["exit_code"]) == ("failed", 18)
    # the runs never mixed: the second capture started after the first one's had ended
    assert two["capture"]["started_at"] >= one["capture"]["ended_at"]
    assert two["capture"]["app_pid"] != one["capture"]["app_pid"]
    assert_board_clean(work)
    assert_board_clean(tmp_path / "twin-work")


def test_a_tampered_agent_is_uploaded_again_and_never_run(sshd, tmp_path):
    host = Host(name="board", address="127.0.0.1", port=sshd.port, user="root", key_file=str(sshd.client_key),
                work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions(sshd.ssh_config, sshd.known_hosts))
    marker = tmp_path / "the-tampered-agent-ran"
    try:
        agent = deploy_agent(transport, host)
        archive = Path(agent.archive)
        # a valid agent archive that does something else: it must never be run
        import io
        import zipfile
        evil = io.BytesIO()
        with zipfile.ZipFile(evil, "w") as zf:
            zf.writestr("__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
        archive.write_bytes(evil.getvalue())
        again = deploy_agent(transport, host)
        assert again.reused is False and archive.read_bytes() == build_agent_archive()
        assert not marker.exists()
        archive.chmod(0o644)  # readable by others: not trusted either
        third = deploy_agent(transport, host)
        assert third.reused is False and (archive.stat().st_mode & 0o777) == 0o600
        assert third.call(VERSION).sha256 == third.sha256
    finally:
        transport.close()


def test_a_pull_cut_by_killing_sshd_resumes_and_verifies(tmp_path):
    server = make_sshd(tmp_path / "sshd")
    server.start()
    host = Host(name="board", address="127.0.0.1", port=server.port, user="root", key_file=str(server.client_key),
                work_dir=str(tmp_path / "work"))
    options = ConnectOptions(server.ssh_config, server.known_hosts)
    data = os.urandom(2**20) * 400  # 400 MB: long enough to cut in the middle
    try:
        transport = open_transport(host, options)
        agent = deploy_agent(transport, host)
        source = Path(agent.work_dir) / "report.nsys-rep"
        source.write_bytes(data)
        local = tmp_path / "report.nsys-rep"
        failure: list[BaseException] = []

        def pull() -> None:
            try:
                pull_verified(agent, {str(source): local})
            except BaseException as exc:  # noqa: BLE001 (handed to the test thread)
                failure.append(exc)
        puller = threading.Thread(target=pull)
        puller.start()
        while not partial_path(local).exists() or partial_path(local).stat().st_size < 40 * 2**20:
            time.sleep(0.005)
        server.kill_all()  # the listener and every session it forked: the link is gone
        puller.join(timeout=60)
        transport.close()
        assert isinstance(failure[0], TransferError), failure
        assert "broke after" in str(failure[0]) and "'orchestrate fetch RUN_DIR' resumes it" in failure[0].one_line()
        kept = partial_path(local).stat().st_size
        assert 0 < kept < len(data) and not local.exists() and source.stat().st_size == len(data)
        server.start()
        transport = open_transport(host, options)
        agent = deploy_agent(transport, host)
        [pulled] = pull_verified(agent, {str(source): local})
        transport.close()
        assert pulled.resumed_from == kept and pulled.size == len(data)
        assert local.read_bytes() == data and not partial_path(local).exists()
    finally:
        server.stop()


@pytest.fixture
def small_disk(tmp_path):
    """A 200 MB tmpfs: room for the preflight's minimum, not for a whole capture."""
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


@pytest.mark.machine  # the small disk is a mount of this machine's
def test_a_capture_filling_the_disk_is_ended_early_with_its_report_kept(sshd_here, tmp_path, small_disk):
    """es2gears with OpenGL trace writes about 30 MB/s of capture: 200 MB fill up within seconds. (No CPU
    sampling: with it, nsys 2022.4 stalls writing its report whenever another process keeps a core busy.)"""
    work = small_disk / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd_here, work)})
    done = run_cli("profile", "--target", "board", "--app", "es2gears", "--sample", "none", "--cpuctxsw", "none",
                   "--duration", "20", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                   *ssh_args(sshd_here))
    assert done.returncode == 12, done.stderr
    [line] = error_lines(done.stderr)
    # preflight warned first: 200 MB is below its estimate, above its minimum
    assert "; if the disk fills up, the capture is ended early and its report kept" in done.stderr
    run_dir = next((tmp_path / "runs").glob("*"))
    record = json.loads((run_dir / "run.json").read_text())
    after = record["capture"]["ended_early"]["after_s"]
    assert line.startswith(f"error: the capture was ended after {after:.1f} s: the disk is nearly full (")
    assert 1 < after < 15
    # a full disk is not a stall worth a second capture: an earlier attempt may only be one nsys ended by itself
    # without a report (it fails to start the app now and then), never one the full disk ended
    assert all(not a["reports"] and not a["ended_early"] for a in record["capture_attempts"]), \
        record["capture_attempts"]
    if record["capture"]["reports"]:
        assert line.endswith("; its report was kept (free space on the board or set orchestrate_work_dir to a "
                             "larger disk)")
        # nothing corrupted: the report of those seconds is whole, verified, exported and analysed
        assert record["stage"] == "pulled" and record["files"]["report.nsys-rep"]["size"] > 0
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["frames"]["count"] > 100
        assert_report_kept(run_dir)
    else:  # nsys stalled in "Generating" all the same (it does, now and then): said, logs kept
        assert record["capture"]["watchdog"], record["capture"]
        assert line.endswith("; nsys wrote no report; its logs were kept (free space on the board or set "
                             "orchestrate_work_dir to a larger disk)")
        assert record["stage"] == "failed" and (run_dir / "nsys.log").is_file()
    assert_board_clean(work)


@pytest.mark.machine  # the small disk is a mount of this machine's
def test_a_disk_filled_at_once_by_something_else_is_a_clear_error_and_nothing_runs_on(sshd_here, tmp_path,
                                                                                      small_disk):
    work = small_disk / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd_here, work)})
    # the app fills the whole disk two seconds in, faster than anything can react
    app = f"sh -c 'sleep 2; dd if=/dev/zero of={small_disk}/fill bs=1M 2>/dev/null; while true; do sleep 0.2; done'"
    done = run_cli("profile", "--target", "board", "--app-cmd", app, *QUIET_TRACE, "--duration", "20",
                   "--inventory", str(inventory), "--out", str(tmp_path / "runs"), *ssh_args(sshd_here))
    assert done.returncode == 12, done.stderr
    [line] = error_lines(done.stderr)
    run_dir = next((tmp_path / "runs").glob("*"))
    record = json.loads((run_dir / "run.json").read_text())
    assert line.startswith("error: the capture was ended after ")
    # a full disk is not a stall worth a second capture: an earlier attempt may only be one nsys ended by itself
    # without a report (it fails to start the app now and then), never one the full disk ended
    assert all(not a["reports"] and not a["ended_early"] for a in record["capture_attempts"]), \
        record["capture_attempts"]
    if record["capture"]["reports"]:  # nsys found room for its report: it came back whole
        assert record["stage"] == "pulled" and (run_dir / "summary.json").is_file()
        assert_report_kept(run_dir)
        assert line.endswith("; its report was kept (free space on the board or set orchestrate_work_dir to a "
                             "larger disk)")
    else:  # it did not: the logs came back, and the error says why there is no report
        assert record["stage"] == "failed" and (run_dir / "nsys.log").is_file()
        assert "; nsys wrote no report; its logs were kept" in line
    (small_disk / "fill").unlink()
    assert_board_clean(work)


@pytest.fixture
def board_behind_a_link(tmp_path):
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        pytest.skip("needs root and network namespaces (iproute2)")
    from netns import make_board_link
    link = make_board_link(rate="8mbit")
    server = make_sshd(tmp_path / "sshd", address=link.board_address, netns=link.name, own_machine=True)
    try:
        server.start()
        yield link, server
    finally:
        server.kill_all()
        link.remove()


def test_a_link_cut_mid_pull_keeps_the_board_copy_and_fetch_resumes_it(board_behind_a_link, tmp_path):
    link, server = board_behind_a_link
    work = tmp_path / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(server, work)})
    # es2gears with OpenGL trace for 3 s: a report of a few MB, several seconds at 1 MB/s (no CPU sampling nor
    # context switches: with them, nsys 2022.4 stalls writing its report now and then, the more so beside other work)
    proc = start_cli("profile", "--target", "board", "--app", "es2gears", "--sample", "none", "--cpuctxsw", "none",
                     "--duration", "3", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                     *ssh_args(server))
    run_dir = wait_for_stage(tmp_path / "runs", "on_board", timeout_s=120)
    partial = run_dir / ".report.nsys-rep.part"
    deadline = time.monotonic() + 60
    while not (partial.exists() and partial.stat().st_size > 256 * 1024) and time.monotonic() < deadline:
        time.sleep(0.02)
    link.cut()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 13, err
    [line] = error_lines(err)
    assert "the transfer of " in line and "'orchestrate fetch RUN_DIR' resumes it" in line
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stage"] == "on_board"
    kept = partial.stat().st_size
    remote_report = Path(record["remote"]["run_dir"]) / "report.nsys-rep"
    assert 0 < kept < remote_report.stat().st_size  # the board keeps its copy, the bytes so far stay here
    link.restore()
    done = run_cli("fetch", str(run_dir), *ssh_args(server))
    assert profiled_run(done, tmp_path / "runs") == run_dir
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stage"] == "pulled" and record["pull"]["resumed_bytes"] >= kept
    assert record["files"]["report.nsys-rep"]["size"] == (run_dir / "report.nsys-rep").stat().st_size
    assert not partial.exists() and (run_dir / "summary.json").is_file()
    assert_report_kept(run_dir)
    assert_board_clean(work)


def ordinary_run(scenario) -> tuple[dict, Path]:
    """The shared ordinary run (tests/scenarios.py): what the command said, and its run folder."""
    run = scenario("ordinary")
    done = subprocess.CompletedProcess([], run["returncode"], run["stdout"], run["stderr"])
    return run, profiled_run(done, Path(run["runs"]))


def test_secret_looking_environment_values_reach_the_app_but_no_log_or_report(scenario):
    run, run_dir = ordinary_run(scenario)
    # the app had the real value (it prints its hash, not the value)
    assert (run_dir / "app.stdout.log").read_text() == f"{hashlib.sha256(SECRET.encode()).hexdigest()}  -\n"
    record = (run_dir / "run.json").read_text()
    assert "API_TOKEN=***" in json.loads(record)["remote_command"] and "PLAIN_SETTING=visible-value" in record
    for name in ("run.json", "report.html", "summary.json", "nsys.log"):
        assert SECRET not in (run_dir / name).read_text(errors="replace"), name
    assert SECRET not in run["stderr"] + run["stdout"]


def test_a_link_cut_during_the_capture_is_a_lost_connection_and_the_board_finishes_alone(board_behind_a_link,
                                                                                         tmp_path):
    link, server = board_behind_a_link
    proc, work = start_profile(server, tmp_path, "--app-cmd", LOOP_APP, *QUIET_TRACE,
                               "--duration", "40", "--heartbeat-timeout", "4")
    run_dir = wait_for_stage(tmp_path / "runs", "capturing")
    time.sleep(2)
    link.cut()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 17, err
    [line] = error_lines(err)
    assert line.startswith(f"error: lost contact with root@{link.board_address}:{server.port} during the capture (")
    assert f"the board ends the capture on its own after 4 s without a heartbeat and keeps the report: " \
           f"'orchestrate fetch {run_dir}' gets it" in line
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stage"] == "capturing" and record["lost_contact"]
    link.restore()
    done = run_cli("fetch", str(run_dir), *ssh_args(server))
    record = assert_fetched(done, run_dir)
    early = record["capture"]["ended_early"]
    assert early["reason"].startswith("no heartbeat from the host for ") and early["after_s"] < 30
    assert_board_clean(work)


def test_a_work_dir_with_spaces_and_quotes_works_on_both_sides(scenario):
    run, run_dir = ordinary_run(scenario)
    work = Path(run["work"])
    assert work.name == "orch w's \"dir\""
    record = json.loads((run_dir / "run.json").read_text())
    assert record["agent"]["path"] == f"{work}/agent/orchestrate-agent-{record['agent']['sha256'][:16]}.pyz"
    assert record["remote"]["run_dir"].startswith(f"{work}/runs/")
    assert (work.stat().st_mode & 0o777) == 0o700
    assert_board_clean(work)
