"""The one read loop (targets/streams.py) as both transports use it: lines as they come, stderr kept, a
deadline, both outputs to their ends; through a scripted process, the local transport and a real sshd."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from sshd_server import make_sshd

from orchestrator.errors import RemoteCommandError
from orchestrator.inventory.hosts import Host
from orchestrator.targets import openssh, streams
from orchestrator.targets.local import LocalTransport
from orchestrator.targets.settings import ConnectOptions
from orchestrator.targets.shell import ShellCommand
from orchestrator.targets.ssh import SSHTransport


class Scripted:
    """A process whose outputs come in the chunks given; an exit status that is there from the start."""

    def __init__(self, stdout: list[bytes], stderr: list[bytes], status: int = 0) -> None:
        self.stdout, self.stderr, self.status = list(stdout), list(stderr), status
        self.started = False

    def start(self) -> None:
        self.started = True

    def wait(self, timeout: float) -> None:
        pass

    @staticmethod
    def _next(chunks: list[bytes]) -> bytes | None:
        return chunks.pop(0) if chunks else None

    def read_stdout(self) -> bytes | None:
        return self._next(self.stdout)

    def read_stderr(self) -> bytes | None:
        return self._next(self.stderr)

    def exit_status(self) -> int:
        return self.status


def test_lines_cross_chunks_and_the_last_one_needs_no_newline():
    seen: list[str] = []
    process = Scripted([b"one\ntw", b"", b"o\n", b"thr\xffee"], [b"warn", b"ing\n"], status=3)
    done = streams.run(process, seen.append, timeout=None)
    assert process.started
    assert seen == ["one", "two", "thr\ufffdee"]
    assert done == streams.CommandResult(3, "one\ntwo\nthr\ufffdee", "warning\n")


def test_a_stream_hands_out_whole_lines_and_keeps_stderr():
    stream = streams.LineStream(Scripted([b"a\nb", b"", b"\nc"], [b"", b"oops"]))
    assert stream.read_lines(0) == ["a"]
    assert not stream.finished
    assert stream.read_lines(0) == ["b"]
    assert stream.finished and stream.error_output() == "oops"  # "c" never ended: no line


def test_local_run_reads_both_outputs_at_once_and_gives_the_exit_status():
    seen: list[str] = []
    # more stderr than a pipe holds, while stdout still has to come: a reader of one output only would hang
    line = "head -c 300000 /dev/zero | tr '\\0' e >&2; printf 'x\\ny'; exit 4"
    done = LocalTransport().run(line, on_stdout_line=seen.append, timeout=30)
    assert (done.exit_status, done.stdout, len(done.stderr)) == (4, "x\ny", 300000)
    assert seen == ["x", "y"]


def test_local_run_reads_its_input():
    done = LocalTransport().run("tr a-z A-Z", stdin=b"quiet\n")
    assert (done.exit_status, done.stdout, done.stderr) == (0, "QUIET\n", "")


def test_a_silent_local_command_past_its_timeout_is_stopped():
    began = time.monotonic()
    with pytest.raises(RemoteCommandError, match="did not finish within 0.5 s"):
        LocalTransport().run("sleep 30", timeout=0.5)
    assert time.monotonic() - began < 5


def test_a_local_stream_talks_and_then_says_why_it_ended():
    stream = LocalTransport().open_stream(ShellCommand(("sh", "-c", "read x; echo got $x; echo gone >&2")))
    try:
        stream.send(b"hello\n")
        lines: list[str] = []
        deadline = time.monotonic() + 10
        while not stream.finished and time.monotonic() < deadline:
            lines += stream.read_lines(0.25)
        assert lines == ["got hello"]
        assert stream.finished and stream.error_output() == "gone\n"
    finally:
        stream.close()


@pytest.fixture(scope="module")
def ssh(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs it)")
    server = make_sshd(tmp_path_factory.mktemp("streams-sshd"))
    server.start()
    host = Host(name="loop", address=server.address, port=server.port, user="root", key_file=str(server.client_key))
    transport = SSHTransport(host, ConnectOptions(server.ssh_config, server.known_hosts))
    yield transport
    transport.close()
    server.stop()


@pytest.mark.integration
def test_ssh_run_stream_and_channel_download_go_through_the_same_loop(ssh, tmp_path, monkeypatch):
    seen: list[str] = []
    done = ssh.run("head -c 300000 /dev/zero | tr '\\0' e >&2; printf 'x\\ny'; exit 4", on_stdout_line=seen.append,
                   timeout=30)
    assert (done.exit_status, done.stdout, len(done.stderr), seen) == (4, "x\ny", 300000, ["x", "y"])
    assert ssh.run("tr a-z A-Z", stdin=b"quiet\n").stdout == "QUIET\n"
    with pytest.raises(RemoteCommandError, match="did not finish within 0.5 s"):
        ssh.run("sleep 5", timeout=0.5)  # the board's sleep ends on its own soon after

    stream = ssh.open_stream(ShellCommand(("sh", "-c", "read x; echo got $x; echo gone >&2")))
    try:
        stream.send(b"hello\n")
        lines: list[str] = []
        deadline = time.monotonic() + 10
        while not stream.finished and time.monotonic() < deadline:
            lines += stream.read_lines(0.25)
        assert lines == ["got hello"] and stream.error_output() == "gone\n"
    finally:
        stream.close()

    monkeypatch.setattr(openssh, "usable", lambda: False)  # paramiko's channel instead of OpenSSH's client
    source = tmp_path / "source"
    source.write_bytes(os.urandom(3 * streams.CHUNK + 5))
    parts = [(tmp_path / "first", streams.CHUNK + 1), (tmp_path / "rest", None)]
    progress: list[int] = []
    done = ssh.download(ShellCommand(("sh", "-c", f"cat {source}; echo said >&2")), parts, b"",
                        lambda received, _: progress.append(received))
    assert (done.exit_status, done.stderr) == (0, "said\n")
    assert (tmp_path / "first").read_bytes() + (tmp_path / "rest").read_bytes() == source.read_bytes()
    assert progress[-1] == source.stat().st_size
