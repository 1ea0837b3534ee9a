"""A run's agent calls in one agent process on one channel (the agent's ``session``), with the real agent on this
machine: every command a run makes answered in turn by one process, a capture launched and followed to its end
inside it, a broken session giving way to calls of their own, and the agent reading a session's lines as
strictly as a call's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.errors import AgentError
from orchestrator.inventory.hosts import Host
from orchestrator.runs import remote_capture
from orchestrator.targets.agent import build_agent_archive, deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from remote_agent.commands import ATTACH, REMOVE, STATUS, VERSION
from remote_agent.messages import CaptureSettings, LaunchRequest, RemoveRequest, StatusRequest


@pytest.fixture
def agent(tmp_path):
    host = Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions())
    yield deploy_agent(transport, host)
    transport.close()


def pid_of(agent) -> int:
    pid = agent.call(VERSION).pid
    assert isinstance(pid, int)
    return pid


@pytest.mark.machine  # it takes this machine's capture lock
def test_a_captures_calls_are_answered_by_one_process(agent):
    alone = {pid_of(agent), pid_of(agent)}
    assert len(alone) == 2  # a call of its own: a process each
    run_dir = f"{agent.work_dir}/runs/one"
    os.makedirs(run_dir)
    with agent.session():
        first = pid_of(agent)
        launched = remote_capture.launch(agent, LaunchRequest(
            argv=["sh", "-c", "echo frame 1; sleep 0.5; echo frame 2"], with_nsys=False, run_dir=run_dir,
            work_dir=agent.work_dir, pid_file=f"{run_dir}/app.pid", report_base=f"{run_dir}/report",
            settings=CaptureSettings(duration_s=5, grace_s=10, wait_lock_s=60)))
        progress = []
        state = remote_capture.follow(agent, run_dir, 30, progress.append, lambda: None)
        status = agent.call(STATUS, StatusRequest(run_dir=run_dir))
        output = Path(run_dir, "launch.log").read_text()
        removed = agent.call(REMOVE, RemoveRequest(paths=[run_dir], root=agent.work_dir))
        last = pid_of(agent)
    assert first == last and first not in alone
    assert launched.pid != first  # the capture's supervisor is a process of its own, as it must outlive the host
    assert state.result is not None and state.result.app_exit == 0 and not state.result.with_nsys
    assert status.present and not status.supervisor_alive
    assert removed.removed == [run_dir] and not os.path.exists(run_dir)
    assert output.splitlines() == ["frame 1", "frame 2"]
    with pytest.raises(ProcessLookupError):  # the session ended with its block
        os.kill(first, 0)


def test_a_broken_session_gives_way_to_calls_of_their_own(agent):
    with agent.session():
        first = pid_of(agent)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(AgentError, match="agent 'version' gave no answer on this machine"):
            agent.call(VERSION)
        after = {pid_of(agent), pid_of(agent)}
    assert first not in after and len(after) == 2


@pytest.mark.machine
def test_an_attach_given_up_before_its_end_closes_the_session(agent):
    run_dir = f"{agent.work_dir}/runs/left"
    os.makedirs(run_dir)
    with agent.session():
        first = pid_of(agent)
        remote_capture.launch(agent, LaunchRequest(
            # the app writes its pid file as the launch wrapper does, so that the capture sees it and stops it
            argv=["sh", "-c", f"echo $$ > {run_dir}/app.pid; exec sleep 30"], with_nsys=False, run_dir=run_dir,
            work_dir=agent.work_dir, pid_file=f"{run_dir}/app.pid", report_base=f"{run_dir}/report",
            settings=CaptureSettings(duration_s=1, grace_s=5, wait_lock_s=60)))
        stream = agent.open(ATTACH, remote_capture.AttachRequest(run_dir=run_dir, heartbeat_timeout_s=30))
        stream.read_lines(0.5)
        stream.close()  # as the host does when it stops following (a second Ctrl-C, a lost link)
        assert pid_of(agent) != first
        state = remote_capture.follow(agent, run_dir, 30, lambda e: None, lambda: None)  # it ends on its own
    assert state.result is not None and state.result.app_stopped_after_s is not None  # stopped at its planned end
    assert state.result.app_stopped_after_s < 5 and not state.result.watchdog


def test_the_agent_reads_a_sessions_lines_strictly_and_passes_over_what_is_no_call(tmp_path):
    archive = tmp_path / "agent.pyz"
    archive.write_bytes(build_agent_archive())
    lines = [{"beat": True},  # a heartbeat sent as an attach ended
             {"command": "send", "request": {}},  # send's bytes need a channel of their own
             {"command": "status", "request": {"run_dir": 7}},  # a field of the wrong kind
             {"command": "version", "request": {}},
             {"command": "end"},
             {"command": "version", "request": {}}]  # after the end: never read
    done = subprocess.run([sys.executable, str(archive), "session"], input="\n".join(map(json.dumps, lines)) + "\n",
                          capture_output=True, text=True, timeout=30)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and done.stderr == ""
    assert [(a.get("command"), a.get("kind"), a.get("event")) for a in answers] == [
        ("send", "bad_request", "error"), ("status", "bad_request", "error"), ("version", None, "result")]
    assert "'send' is not a command of a session" in answers[0]["msg"]
    assert "run_dir" in answers[1]["msg"]
