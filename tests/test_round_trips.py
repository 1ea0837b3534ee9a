"""What one run asks of the board, counted: the agent's deploy check and preflight in one command, a pull that
takes its sizes from the capture's result, and what is made ready while the board captures."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import run_cli, write_inventory
from scenarios import board, ssh_args

from orchestrator.inventory.hosts import Host
from orchestrator.nsys.commands import RemoteRunPaths
from orchestrator.runs.collect import board_files
from orchestrator.runs.preload import APP_RUNNING_S, Preparation
from orchestrator.runs.pull import pull_verified
from orchestrator.targets.agent import deploy_agent, deploy_and_call
from orchestrator.targets.local import LocalTransport
from remote_agent import files
from remote_agent.commands import PREFLIGHT, VERSION
from remote_agent.messages import CaptureProgress, CaptureResult, PreflightRequest


class Counted(LocalTransport):
    """This machine's transport, its commands and downloads written down as they go out."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def run(self, command, **kwargs):  # noqa: ANN001, ANN201 (the transport's own signature)
        self.sent.append(command if isinstance(command, str) else command.render())
        return super().run(command, **kwargs)

    def download(self, command, parts, stdin, on_progress=None):  # noqa: ANN001, ANN201
        self.sent.append("download " + command.argv[-1])
        return super().download(command, parts, stdin, on_progress)

    def prepare_download(self) -> None:
        self.sent.append("prepare_download")


def preflight_request(work_dir: str | None) -> PreflightRequest:
    return PreflightRequest(with_nsys=False, argv0="sh", xvfb="never", sample="none", capture_s=1, work_dir=work_dir)


def test_a_deployed_agent_answers_its_first_call_in_the_command_that_finds_it(tmp_path):
    host = Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    first = Counted()
    agent, answer = deploy_and_call(first, host, PREFLIGHT, preflight_request(None))
    assert not agent.reused and len(first.sent) == 3  # the probe (no archive yet), the tidy of old ones, preflight
    assert answer.findings == [] and answer.facts.nsys.path is None
    free = answer.facts.system.work_dir_free_mb
    assert free is not None and free > 0  # its work dir named, not its home's disk
    again = Counted()
    agent, answer = deploy_and_call(again, host, PREFLIGHT, preflight_request(None))
    assert agent.reused and len(again.sent) == 1 and agent.work_dir == str(tmp_path / "work")
    # no work dir in the request: the agent's own folder, where the probe started it, whose free space it measured
    free = answer.facts.system.work_dir_free_mb
    assert free is not None and free > 0
    assert deploy_agent(Counted(), host).version == agent.version


def test_a_tampered_archive_is_uploaded_again_before_the_first_call_answers(tmp_path):
    host = Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    agent, _ = deploy_and_call(LocalTransport(), host, VERSION)
    with open(agent.archive, "ab") as archive:
        archive.write(b"tampered")
    counted = Counted()
    again, answer = deploy_and_call(counted, host, VERSION)
    assert not again.reused and answer.sha256 == again.sha256 and len(counted.sent) == 3


def test_the_capture_results_sizes_spare_the_pull_its_look_at_the_board(tmp_path):
    transport = Counted()
    agent = deploy_agent(transport, Host(name="local", connection="local", work_dir=str(tmp_path / "work")))
    run_dir = Path(agent.work_dir) / "runs" / "r1"
    run_dir.mkdir(parents=True)
    contents = {"report.nsys-rep": os.urandom(300_001), "app.stdout.log": b"fps 60\n", "nsys.log": b""}
    for name, data in contents.items():
        (run_dir / name).write_bytes(data)
    (run_dir / "scratch").mkdir()  # a folder is not one of the run's files
    sizes = files.sizes(str(run_dir))
    assert sizes == {name: len(data) for name, data in contents.items()}
    known = board_files(CaptureResult(sizes=sizes), RemoteRunPaths(str(run_dir)))
    assert board_files(CaptureResult(), RemoteRunPaths(str(run_dir))) is None  # without them: looked up
    out = tmp_path / "run"
    out.mkdir()
    transport.sent.clear()
    wanted = {str(run_dir / name): out / name for name in [*contents, "app.stderr.log"]}
    pulled = pull_verified(agent, wanted, known=known)
    assert transport.sent == ["download send"]  # one call, no look at the sizes first
    assert sorted(p.local.name for p in pulled) == sorted(contents)  # the file the board has not: skipped
    assert all((out / name).read_bytes() == data for name, data in contents.items())


def test_what_comes_after_the_capture_is_made_ready_once_the_app_runs_and_never_during_a_local_capture():
    remote, local = Counted(), Counted()
    on_board, here = Preparation(remote, during_capture=True), Preparation(local, during_capture=False)
    for seconds in (None, 0.0, APP_RUNNING_S / 2):  # nsys starting, the app just started
        on_board.on_progress(CaptureProgress(elapsed_s=1.0, app_s=seconds))
    assert on_board.thread is None and remote.sent == []
    on_board.on_progress(CaptureProgress(elapsed_s=2.0, app_s=APP_RUNNING_S))
    assert on_board.thread is not None and remote.sent == ["prepare_download"]
    on_board.on_progress(CaptureProgress(elapsed_s=3.0, app_s=APP_RUNNING_S + 1))
    assert remote.sent == ["prepare_download"]  # once
    here.on_progress(CaptureProgress(elapsed_s=2.0, app_s=5.0))
    assert here.thread is None and local.sent == []  # the local target: nothing while the app is measured
    here.finish()
    on_board.finish()
    assert local.sent == ["prepare_download"] and not here.thread.is_alive()
    assert "orchestrator.report" in sys.modules and "orchestrator.runs.collect" in sys.modules


@pytest.mark.integration
def test_a_run_on_a_board_starts_python_there_three_times(sshd, tmp_path):
    """A board's Python starts for the preflight (in the command that finds the agent), for the session that takes
    the run's other calls (launch, attach, remove) and for the pull's send: three, where each call was once a
    Python of its own (five: preflight, launch, attach, send, remove). The board's python is a wrapper that
    writes down the agent command it was started for."""
    started = tmp_path / "python-starts"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nfor last; do :; done\necho "$last" >> {started}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(
        sshd, tmp_path / "work", orchestrate_python=str(python))})
    for run in ("first", "second"):
        done = run_cli("profile", "--target", "board", "--app-cmd", "sh -c 'echo frame 1; sleep 0.5'", "--no-nsys",
                       "--duration", "2", "--inventory", str(inventory), "--out", str(tmp_path / run), *ssh_args(sshd))
        assert done.returncode == 0, done.stderr
        calls, _ = started.read_text().split(), started.unlink()
        # the first run found no agent: its probe's Python refused the missing archive, then preflight ran again
        assert calls == (["preflight"] if run == "first" else []) + ["preflight", "session", "send"]
