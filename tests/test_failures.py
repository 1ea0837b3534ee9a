"""Every failure a user meets, against the real sshd and nsys: one line, its own exit code."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from board_state import assert_board_clean, record, run_processes
from browser import assert_clean, open_page
from conftest import run_cli, write_inventory
from scenarios import board, ssh_args
from sshd_server import free_port, keygen, make_sshd

from orchestrator.inventory.catalog import adhoc_app, with_overrides
from orchestrator.inventory.hosts import Host
from orchestrator.nsys.commands import RemoteRunPaths, profile_argv
from orchestrator.runs import remote_capture
from orchestrator.targets.agent import deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from remote_agent.messages import CaptureSettings, LaunchRequest

pytestmark = pytest.mark.integration


def profile(sshd, tmp_path, *extra: str, host_vars: dict | None = None, ssh: list[str] | None = None):
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": {**board(sshd, tmp_path / "work"),
                                                                         **(host_vars or {})}})
    return run_cli("profile", "--target", "board", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                   *(ssh if ssh is not None else ssh_args(sshd)), *extra)


def error_line(done: subprocess.CompletedProcess) -> str:
    record("cli_output", traceback="Traceback" in done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def last_record(tmp_path: Path) -> dict:
    return json.loads(sorted((tmp_path / "runs").glob("*/run.json"))[-1].read_text())


def test_changed_host_key_is_refused(sshd, tmp_path):
    other = keygen(tmp_path / "impostor")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(other.split()[:2])}\n")
    done = profile(sshd, tmp_path, "--app", "es2gears", "--accept-new-host-key",
                   ssh=["--ssh-config", str(sshd.ssh_config), "--known-hosts", str(known)])
    assert done.returncode == 6
    line = error_line(done)
    assert f"host key of root@127.0.0.1:{sshd.port} CHANGED" in line
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" in line


def test_unknown_host_key_is_refused_then_accepted_on_request(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    ssh = ["--ssh-config", str(sshd.ssh_config), "--known-hosts", str(known)]
    done = profile(sshd, tmp_path, "--app-cmd", "no_such_app_xyz", ssh=ssh)
    assert done.returncode == 6
    assert f"host key of [127.0.0.1]:{sshd.port} is not in {known} (ssh-ed25519 SHA256:" in error_line(done)
    assert not known.exists()
    done = profile(sshd, tmp_path, "--app-cmd", "no_such_app_xyz", "--accept-new-host-key", ssh=ssh)
    assert done.returncode == 9  # got past the host key, stopped at the missing app
    assert sshd.host_public_key.split()[1] in known.read_text()


def test_refused_key_is_an_auth_error(sshd, tmp_path):
    stranger = tmp_path / "stranger"
    keygen(stranger)
    done = profile(sshd, tmp_path, "--app", "es2gears", host_vars={"ansible_ssh_private_key_file": str(stranger)})
    assert done.returncode == 5
    assert f"root@127.0.0.1:{sshd.port} refused our SSH keys" in error_line(done)


def test_stopped_sshd_is_unreachable(tmp_path):
    server = make_sshd(tmp_path / "stopped", port=free_port())
    server.start()
    server.stop()
    done = profile(server, tmp_path, "--app", "es2gears")
    assert done.returncode == 4
    assert f"cannot connect to root@127.0.0.1:{server.port}: connection refused" in error_line(done)


def test_unresolvable_name_is_unreachable(sshd, tmp_path):
    done = profile(sshd, tmp_path, "--app", "es2gears", host_vars={"ansible_host": "no-such-board.invalid"})
    assert done.returncode == 4
    assert "cannot resolve host name 'no-such-board.invalid'" in error_line(done)


def test_app_not_found_stops_in_preflight(sshd, tmp_path):
    done = profile(sshd, tmp_path, "--app-cmd", "no_such_app_xyz --flag")
    assert done.returncode == 9
    assert "preflight: the app 'no_such_app_xyz' was not found on the target" in error_line(done)
    assert last_record(tmp_path)["error"]["exit_code"] == 9


def test_nsys_missing_is_its_own_error(sshd, tmp_path):
    done = profile(sshd, tmp_path, "--app-cmd", "true", host_vars={"orchestrate_nsys": "/opt/none/nsys"})
    assert done.returncode == 8
    line = error_line(done)
    assert "preflight: no runnable nsys at /opt/none/nsys (orchestrate_nsys)" in line
    assert "fix orchestrate_nsys in the inventory (nsys found at /usr/bin/nsys" in line


def test_app_exiting_non_zero_keeps_its_report_and_output(scenario, browser):
    """An app that says 'boom' and exits with status 3 after 2 s (a Nano's, with its clocks locked:
    test_lock_clocks reads the same run)."""
    run = scenario("failing_app_nano")
    done = subprocess.CompletedProcess([], run["returncode"], run["stdout"], run["stderr"])
    assert done.returncode == 10
    # nsys may hang after the app's exit (then the watchdog stops it): the message says so, the rest holds; the
    # app runs its 2 s, more on a busy machine
    assert re.search(r"error: the app exited with status 3 after [2-9]\.\d s( \(|; nsys then hung and was stopped by "
                     r"the watchdog \()", error_line(done))
    run_dir = Path(sorted(Path(run["runs"]).glob("*"))[-1])
    assert (run_dir / "app.stderr.log").read_text() == "boom\n"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "app_failed"
    if not (run_dir / "report.nsys-rep").is_file():
        # nsys hung after the app's exit on every attempt (the retry's too) and wrote nothing: the run says so and
        # its logs came back (seen twice in about sixty runs here)
        assert record["capture"]["stalled"] and all(not a["reports"] for a in record["capture_attempts"])
        assert "nsys then hung" in error_line(done) and (run_dir / "nsys.log").is_file()
        return
    assert (run_dir / "report.sqlite").is_file()
    # its page says what happened and what the capture lacks, and still shows what it has
    opened = open_page(browser, run_dir / "report.html")
    assert_clean(opened, run_dir / "report.html")
    assert re.match(r"the app exited with status 3 after 2\.\d s", opened.page.locator(".problem").first.inner_text())
    assert "--sample cpu" in opened.page.locator("[data-section=hotspots] [data-missing]").inner_text()
    assert opened.page.locator("table[data-table='osrt'] tbody tr").count() > 0
    opened.screenshot("failed-app-exit-3")


def _alive(marker: str, work: Path) -> bool:
    """A process of the runs under work (marked in its environment) whose command line holds marker: another
    test's captures run beside this one's, with their own nsys launchers and daemons."""
    return any(marker in command for _, command in run_processes(work))


def test_app_ignoring_sigterm_is_killed_by_the_watchdog(sshd, tmp_path):
    marker = "sleep 6173"
    started = time.monotonic()
    done = profile(sshd, tmp_path, "--app-cmd", f"sh -c 'trap \"\" TERM INT; {marker}; true'", "--trace", "osrt",
                   "--sample", "none", "--cpuctxsw", "none", "--duration", "2", "--grace", "3")
    assert done.returncode == 11
    # nsys either returns at --duration leaving the app behind, or waits for it and is interrupted
    # at the deadline; either way the app ignores SIGTERM and only SIGKILL ends it
    line = error_line(done)
    assert line.startswith("error: watchdog: ") and "SIGTERM to app, SIGKILL to app" in line
    assert not _alive(marker, tmp_path / "work")
    assert_board_clean(tmp_path / "work")
    record = last_record(tmp_path)
    # each capture is bounded by the watchdog; a capture whose nsys stalled without a report is made again
    assert time.monotonic() - started < 60 * (1 + len(record["capture_attempts"]))
    assert record["status"] == "watchdog"
    app_signals = [a["signal"] for a in record["capture"]["watchdog"] if a["target"] == "app"]
    assert app_signals == ["SIGTERM", "SIGKILL"]
    assert record["files"]["report.nsys-rep"]["size"] > 0  # what nsys wrote still came back


def test_hung_nsys_is_stopped_by_the_watchdog(sshd, tmp_path):
    marker = "sleep 6174"
    # the app freezes nsys itself (SIGSTOP to the launcher's parent): nsys then never ends by itself,
    # and writes nothing more once the app is gone, which is how a stalled nsys looks
    app = f"sh -c 'kill -STOP $(ps -o ppid= -p $PPID); {marker}'"
    # grace 6 s: the app is surely gone (SIGTERM at 2 s) before the deadline, even on a loaded machine
    done = profile(sshd, tmp_path, "--app-cmd", app, "--trace", "osrt", "--sample", "none", "--cpuctxsw", "none",
                   "--duration", "2", "--grace", "6", "--retries", "1")
    assert done.returncode == 11
    # interrupted, terminated, killed (and its orphaned daemon after it)
    line = error_line(done)
    assert line.startswith("error: watchdog: nsys stalled while generating the report "
                           "(SIGINT to nsys, SIGTERM to nsys, SIGKILL to nsys")
    record = last_record(tmp_path)
    assert record["capture"]["stalled"] is True
    first = (record["capture_attempts"] or [record["capture"]])[0]
    if first["reports"]:  # the frozen nsys had its raw capture on disk: it came back, no second capture
        assert record["capture_attempts"] == []
        assert record["files"]["report.nsys-rep"]["size"] > 0
    else:  # it had written nothing yet (it varies with when the freeze lands): captured once more, as asked
        assert len(record["capture_attempts"]) == 1 and record["capture_attempts"][0]["stalled"] is True
        # with no report to finish, what the stopped nsys left running got 2 s, not 20, before its SIGTERM
        nsys_ended = first["started_at"] + first["nsys_elapsed_s"]
        terms = [a["at"] - nsys_ended for a in first["watchdog"]
                 if a["target"] in ("nsys daemon", "nsys helpers") and a["signal"] == "SIGTERM"]
        assert all(1.5 < after < 10 for after in terms), terms
    assert not _alive(marker, tmp_path / "work")
    assert not _alive("nsys-launcher", tmp_path / "work")
    assert not _alive("--start-agent", tmp_path / "work")  # nsys's profiling daemon, orphaned when nsys is killed
    assert_board_clean(tmp_path / "work")


def test_a_daemon_left_after_the_app_and_nsys_ended_gets_a_short_grace_not_the_planned_end(sshd, tmp_path):
    """A stalled nsys's daemon lingers (spinning a core) after nsys is gone. Here, once the app has said which
    nsys runs it, a process named as that nsys's daemon starts beside it; the app ends after 3 s of a capture
    planned for 300 s. The daemon gets its grace after nsys, in case it is still writing, then is stopped:
    nothing waits for the planned end, and the run, whose nsys ended well, succeeds."""
    pid_file, daemon = tmp_path / "nsys.pid", "sleep 6175; true"
    app = f"sh -c 'ps -o ppid= -p $PPID > {pid_file}; sleep 3'"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(profile, sshd, tmp_path, "--app-cmd", app, "--trace", "osrt", "--sample", "none",
                              "--cpuctxsw", "none", "--duration", "300", "--retries", "0")
        deadline = time.monotonic() + 120
        while not (pid_file.is_file() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        nsys_pid = int(pid_file.read_text())
        lingering = subprocess.Popen(["sh", "-c", daemon, "--start-agent", f"--session-name=profile-sh-{nsys_pid}"],
                                     start_new_session=True)
        try:
            done = running.result(timeout=600)
        finally:
            if lingering.poll() is None:
                os.killpg(lingering.pid, signal.SIGKILL)
            lingering.wait()
    # nsys itself ended well and its report came back: a success, with a warning naming what was stopped
    assert done.returncode == 0, done.stderr
    assert "nsys ended well and wrote its report, but what it left running (nsys daemon) did not end within its " \
           "grace and was stopped" in " ".join(done.stderr.split())
    record = last_record(tmp_path)
    assert record["status"] == "ok"
    capture = record["capture"]
    assert capture["app_stopped_after_s"] is None and capture["app_gone_after_s"] < 10  # it ended by itself
    [(reason, signal_name, at)] = [(a["reason"], a["signal"], a["at"]) for a in capture["watchdog"]]
    assert (reason, signal_name) == ("nsys daemon outlived the capture", "SIGTERM")
    assert lingering.returncode == -signal.SIGTERM  # the agent's signal ended it
    nsys_ended = capture["started_at"] + capture["nsys_elapsed_s"]
    assert at - nsys_ended >= 20  # the grace after nsys
    assert at < capture["started_at"] + 300 and capture["elapsed_s"] < 300  # not the planned end
    assert record["files"]["report.nsys-rep"]["size"] > 0  # nsys itself ended well: its report came back
    assert_board_clean(tmp_path / "work")


@pytest.mark.machine  # the small disk is a mount of this machine's
def test_small_disk_is_refused_before_capturing(sshd_here, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        done = profile(sshd_here, tmp_path, "--app", "es2gears",
                       host_vars={"orchestrate_work_dir": str(small / "work")})
        assert done.returncode == 12
        assert f"preflight: only 63 MB free in {small}/work (report and nsys scratch)" in error_line(done) or \
            f"preflight: only 64 MB free in {small}/work (report and nsys scratch)" in error_line(done)
    finally:
        subprocess.run(["umount", str(small)])


def test_a_silent_port_times_out_with_the_inventory_timeout(tmp_path):
    """Something accepts the TCP connection but never speaks SSH (a hung board, a wrong service)."""
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    held = []
    threading.Thread(target=lambda: held.append(listener.accept()), daemon=True).start()
    port = listener.getsockname()[1]
    inventory = write_inventory(tmp_path / "inventory.yaml", {"hung": {
        "ansible_host": "127.0.0.1", "ansible_port": port, "orchestrate_connect_timeout": 1}})
    (tmp_path / "empty_ssh_config").write_text("")  # not the user's: only the inventory's values count
    started = time.monotonic()
    done = run_cli("profile", "--target", "hung", "--app", "es2gears", "--inventory", str(inventory),
                   "--known-hosts", str(tmp_path / "known_hosts"), "--ssh-config", str(tmp_path / "empty_ssh_config"))
    listener.close()
    assert done.returncode == 4
    assert f"root@127.0.0.1:{port} accepted the connection but sent no SSH greeting within 1 s" in error_line(done)
    assert time.monotonic() - started < 20


@pytest.mark.machine
def test_a_retried_capture_ignores_the_last_tries_pid_file(tmp_path):
    """A retry after a stall runs in the same run folder: the app to stop is the new one, not the pid the
    first try left behind (which once made a retry wait for a long-gone app until the watchdog)."""
    host = Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions())
    agent = deploy_agent(transport, host)
    paths = RemoteRunPaths(str(tmp_path / "run"))
    Path(paths.run_dir).mkdir()
    Path(paths.pid_file).write_text("4194000\n")  # no such process
    spec = with_overrides(adhoc_app("sh -c 'while true; do sleep 0.2; done'", False), 2, trace="osrt", sample="none",
                          cpuctxsw="none")
    request = LaunchRequest(argv=profile_argv("/usr/bin/nsys", spec, paths), run_dir=paths.run_dir,
                            work_dir=agent.work_dir, pid_file=paths.pid_file, report_base=paths.report_base,
                            settings=CaptureSettings(duration_s=2, grace_s=30))
    remote_capture.launch(agent, request)
    capture = remote_capture.follow(agent, paths.run_dir, 30, lambda e: None, lambda: None).result
    transport.close()
    assert capture is not None and capture.app_pid != 4194000
    assert capture.app_stopped_after_s == pytest.approx(2, abs=1.5)
    assert capture.app_gone_after_s is not None and capture.app_gone_after_s < 10
    # the planned SIGTERM ended the app: the watchdog never had to (nsys itself may still stall now and then)
    assert all(action.target != "app" for action in capture.watchdog)
