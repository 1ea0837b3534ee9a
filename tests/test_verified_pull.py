"""The verified pull, with the real agent over the local transport and over the real sshd."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from orchestrator.errors import TransferError
from orchestrator.inventory.hosts import Host
from orchestrator.runs.pull import GrowingFileHash, partial_path, pull_verified
from orchestrator.targets.agent import deploy_agent
from orchestrator.targets.transport import ConnectOptions, LocalTransport, open_transport


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


@pytest.mark.integration
def test_pull_over_ssh_uses_sftp_and_verifies(sshd, tmp_path):
    host = Host(name="board", address="127.0.0.1", port=sshd.port, user="root", key_file=str(sshd.client_key),
                work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions(sshd.ssh_config, sshd.known_hosts))
    try:
        agent = _agent(tmp_path, transport, host)
        source = Path(agent.work_dir) / "report with space.nsys-rep"
        source.write_bytes(os.urandom(2**20 + 3))
        out = tmp_path / "run"
        out.mkdir()
        pulled = pull_verified(agent, {str(source): out / "report.nsys-rep"})
        assert pulled[0].size == 2**20 + 3
        assert (out / "report.nsys-rep").read_bytes() == source.read_bytes()
    finally:
        transport.close()
