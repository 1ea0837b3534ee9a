"""The verified pull, with the real agent over the local transport and over the real sshd."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.errors import TransferError
from orchestrator.inventory.hosts import Host
from orchestrator.runs.pull import GrowingFileHash, partial_path, pull_verified
from orchestrator.targets.agent import deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.local import LocalTransport
from orchestrator.targets.settings import ConnectOptions


def test_growing_file_hash_matches_a_whole_read(tmp_path):
    path = tmp_path / "growing"
    follower = GrowingFileHash(path)
    follower.catch_up()  # not there yet
    data = os.urandom(3 * 2**20 + 17)
    with open(path, "wb") as handle:
        for start in range(0, len(data), 700_000):
            handle.write(data[start:start + 700_000])
            handle.flush()
            follower.catch_up()
    assert follower.final() == hashlib.sha256(data).hexdigest()


def _agent(tmp_path: Path, transport=None, host: Host | None = None):
    host = host or Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    return deploy_agent(transport or LocalTransport(), host)


def test_pull_verifies_and_renames_and_skips_absent_files(tmp_path):
    agent = _agent(tmp_path)
    source = Path(agent.work_dir) / "report.nsys-rep"
    source.write_bytes(os.urandom(5 * 2**20))
    out = tmp_path / "run"
    out.mkdir()
    seen = []
    pulled = pull_verified(agent, {str(source): out / "report.nsys-rep", str(source) + ".absent": out / "x"},
                           on_progress=lambda done, total: seen.append((done, total)))
    assert [(p.local.name, p.size) for p in pulled] == [("report.nsys-rep", 5 * 2**20)]
    assert pulled[0].sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert (out / "report.nsys-rep").read_bytes() == source.read_bytes()
    assert seen[-1] == (5 * 2**20, 5 * 2**20)
    assert sorted(p.name for p in out.iterdir()) == ["report.nsys-rep"]


def test_a_damaged_partial_copy_is_refused_and_nothing_is_lost(tmp_path):
    agent = _agent(tmp_path)
    source = Path(agent.work_dir) / "report.nsys-rep"
    source.write_bytes(b"the real report, long enough")
    out = tmp_path / "run"
    out.mkdir()
    partial_path(out / "report.nsys-rep").write_bytes(b"THE WRONG BYTES")  # an earlier try's, gone bad here
    with pytest.raises(TransferError, match=r"report.nsys-rep arrived damaged \(28 of 28 bytes, sha256 mismatch\)"):
        pull_verified(agent, {str(source): out / "report.nsys-rep"})
    assert list(out.iterdir()) == []          # no partial or wrong file left here
    assert source.exists()                    # the target keeps its copy
    pulled = pull_verified(agent, {str(source): out / "report.nsys-rep"})  # and the next pull gets it whole
    assert (pulled[0].resumed_from, (out / "report.nsys-rep").read_bytes()) == (0, source.read_bytes())


def test_every_file_of_a_pull_comes_in_one_call_each_resumed_and_verified(tmp_path):
    """A report resumed from an earlier try, an empty log and two others: one agent call, split here by the
    sizes the board gave, each file checked on its own."""
    agent = _agent(tmp_path)
    board = Path(agent.work_dir)
    contents = {"report.nsys-rep": os.urandom(2 * 2**20 + 3), "app.stdout.log": b"Inference : 5.0 ms\n",
                "app.stderr.log": b"", "nsys.log": b"Generated:\n    report.nsys-rep\n"}
    for name, data in contents.items():
        (board / name).write_bytes(data)
    out = tmp_path / "run"
    out.mkdir()
    partial_path(out / "report.nsys-rep").write_bytes(contents["report.nsys-rep"][:1000])
    calls = []
    agent.transport.download = lambda *args, **kwargs: calls.append(args[0]) or LocalTransport.download(
        agent.transport, *args, **kwargs)
    pulled = pull_verified(agent, {str(board / name): out / name for name in contents})
    assert len(calls) == 1 and calls[0].argv[-1] == "send"
    assert {p.local.name: (p.size, p.resumed_from) for p in pulled} == {
        name: (len(data), 1000 if name == "report.nsys-rep" else 0) for name, data in contents.items()}
    for name, data in contents.items():
        assert (out / name).read_bytes() == data
    assert sorted(p.name for p in out.iterdir()) == sorted(contents)


def test_a_file_that_changed_size_since_the_pull_began_stops_the_stream(tmp_path):
    """The board sends each file up to the size measured before the pull: a file that changed since is
    refused (its bytes could not be told from the next file's), and nothing after it is sent."""
    from remote_agent.messages import FileRange, SendRequest, SentFile
    from remote_agent.send import send_files
    first, changed, last = (tmp_path / name for name in ("first", "changed", "last"))
    first.write_bytes(b"12345")
    changed.write_bytes(b"grown since")
    last.write_bytes(b"never sent")
    read_end, write_end = os.pipe()
    answers = io.StringIO()
    status = send_files(SendRequest(files=[FileRange(path=str(first), offset=2, size=5),
                                           FileRange(path=str(changed), size=4), FileRange(path=str(last), size=10)]),
                        out_fd=write_end, err=answers)
    os.close(write_end)
    assert status == 1 and os.read(read_end, 100) == b"345"
    done, failed = [SentFile.from_wire(json.loads(line), strict=True) for line in answers.getvalue().splitlines()]
    assert done == SentFile(path=str(first), sha256=hashlib.sha256(b"12345").hexdigest(), size=5, sent=3, offset=2)
    assert failed == SentFile(path=str(changed), failed=True,
                              msg=f"ValueError: {changed} is 11 bytes now, 4 when the pull began")


def test_a_file_the_board_could_not_send_is_named_with_why_and_the_files_before_it_arrive(tmp_path):
    agent = _agent(tmp_path)
    board = Path(agent.work_dir)
    report, log = board / "report.nsys-rep", board / "nsys.log"
    report.write_bytes(os.urandom(2**20))
    log.write_bytes(b"Generating\n")
    out = tmp_path / "run"
    out.mkdir()

    def grown_then_sent(*args, **kwargs):  # nsys.log grows between the sizes and the send
        log.write_bytes(b"Generating\nGenerated:\n")
        return LocalTransport.download(agent.transport, *args, **kwargs)
    agent.transport.download = grown_then_sent
    with pytest.raises(TransferError) as failed:
        pull_verified(agent, {str(report): out / "report.nsys-rep", str(log): out / "nsys.log"})
    assert failed.value.one_line().startswith(
        f"the transfer of {log} broke after 0 of 11 bytes (ValueError: {log} is 22 bytes now, 11 when the "
        "pull began)")
    assert (out / "report.nsys-rep").read_bytes() == report.read_bytes()  # the larger one came first, verified
    assert partial_path(out / "nsys.log").read_bytes() == b""
    assert log.exists()


def test_the_stream_is_split_into_its_files_by_their_sizes(tmp_path):
    from orchestrator.targets.download import PartWriter
    parts = [(tmp_path / "a", 3), (tmp_path / "empty", 0), (tmp_path / "b", 4)]
    (tmp_path / "a").write_bytes(b"kept:")  # appended to, as a resumed partial file
    writer = PartWriter(parts)
    for piece in (b"ab", b"cde", b"fgXY"):
        writer.write(piece)
    writer.close()
    assert [(tmp_path / name).read_bytes() for name in ("a", "empty", "b")] == [b"kept:abc", b"", b"defg"]
    assert (writer.written, writer.overflow) == (7, 2) and "2 bytes more than asked" in writer.complaint()


def test_a_partial_copy_is_resumed_from_its_last_byte(tmp_path):
    agent = _agent(tmp_path)
    data = os.urandom(3 * 2**20 + 5)
    source = Path(agent.work_dir) / "report.nsys-rep"
    source.write_bytes(data)
    out = tmp_path / "run"
    out.mkdir()
    partial_path(out / "report.nsys-rep").write_bytes(data[:2**20 + 7])  # a transfer that broke there
    pulled = pull_verified(agent, {str(source): out / "report.nsys-rep"})
    assert (pulled[0].resumed_from, pulled[0].size) == (2**20 + 7, len(data))
    assert pulled[0].sha256 == hashlib.sha256(data).hexdigest()
    assert (out / "report.nsys-rep").read_bytes() == data
    assert not partial_path(out / "report.nsys-rep").exists()


@contextlib.contextmanager
def over_ssh(sshd, tmp_path: Path, name: str, size: int) -> Iterator[tuple]:
    """A board's transport and agent over the real sshd, a random file of size bytes in its work dir, and the
    run folder here: (transport, agent, the file, the run folder)."""
    host = Host(name="board", address="127.0.0.1", port=sshd.port, user="root", key_file=str(sshd.client_key),
                work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions(sshd.ssh_config, sshd.known_hosts))
    try:
        agent = _agent(tmp_path, transport, host)
        source = Path(agent.work_dir) / name
        source.write_bytes(os.urandom(size))
        out = tmp_path / "run"
        out.mkdir()
        yield transport, agent, source, out
    finally:
        transport.close()


@pytest.mark.integration
def test_pull_over_ssh_uses_sftp_and_verifies(sshd, tmp_path):
    with over_ssh(sshd, tmp_path, "report with space.nsys-rep", 2**20 + 3) as (_, agent, source, out):
        pulled = pull_verified(agent, {str(source): out / "report.nsys-rep"})
        assert pulled[0].size == 2**20 + 3
        assert (out / "report.nsys-rep").read_bytes() == source.read_bytes()


@pytest.mark.integration
def test_the_pulls_connection_begun_during_the_capture_is_the_one_it_uses(sshd, tmp_path):
    with over_ssh(sshd, tmp_path, "report.nsys-rep", 2**20) as (transport, agent, source, out):
        transport.prepare_download()  # returns at once: the master connects while the capture runs
        begun = transport._master
        assert begun is not None and begun.process is not None
        pulled = pull_verified(agent, {str(source): out / "report.nsys-rep"})
        assert pulled[0].sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
        assert transport._master is begun and begun.alive()  # waited for, not started again
        transport.prepare_download()
        assert transport._master is begun  # a second call changes nothing
        begun.deadline = 0.0  # long past its connecting time (a long capture, a study's next run)
        pull_verified(agent, {str(source): out / "again.nsys-rep"})
        assert transport._master is begun and begun.alive()  # still the same connection
    assert begun.process is None  # stopped with the transport
