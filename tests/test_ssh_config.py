"""~/.ssh/config is honoured for real: aliases, ports, keys and a ProxyJump through a second sshd."""
from __future__ import annotations

import pytest
from conftest import run_cli, write_inventory
from sshd_server import make_sshd

from orchestrator.inventory.hosts import Host
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from orchestrator.targets.shell import ShellCommand

pytestmark = pytest.mark.integration


@pytest.fixture
def jump_and_board(sshd, tmp_path):
    """sshd is the jump host; a second sshd, sharing the client key, is the board behind it."""
    board = make_sshd(tmp_path / "board-sshd", client_key=sshd.client_key)
    board.start()
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts.read_text() + board.known_hosts.read_text())
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host gateway\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User root\n  IdentityFile {sshd.client_key}\n"
        f"Host nano-behind-gateway\n  HostName 127.0.0.1\n  Port {board.port}\n  User root\n"
        f"  IdentityFile {sshd.client_key}\n  ProxyJump gateway\n")
    yield board, config, known
    board.stop()


def test_proxy_jump_reaches_the_board_through_the_gateway(jump_and_board, tmp_path):
    board, config, known = jump_and_board
    transport = open_transport(Host(name="nano-behind-gateway"), ConnectOptions(ssh_config=config, known_hosts=known))
    try:
        assert transport.description == f"root@127.0.0.1:{board.port}"
        done = transport.run("cat /proc/self/loginuid; echo $SSH_CONNECTION")
        assert done.exit_status == 0
        # the board sees the connection coming from the gateway's side, not from us directly
        assert done.stdout.split()[-1] == str(board.port)
        (tmp_path / "remote.txt").write_text("through the gateway")
        done = transport.download(ShellCommand(("cat", str(tmp_path / "remote.txt"))), [(tmp_path / "local.txt", None)],
                                  b"")
        assert done.exit_status == 0, done.stderr
        assert (tmp_path / "local.txt").read_text() == "through the gateway"
    finally:
        transport.close()
    board.stop()
    # with the board down, the error names the board, not the gateway
    failing = run_cli("profile", "--target", "nano-behind-gateway", "--app-cmd", "true", "--inventory",
                      str(write_inventory(tmp_path / "inv.yaml", {"nano-behind-gateway": None})),
                      "--ssh-config", str(config), "--known-hosts", str(known), "--out", str(tmp_path / "runs"))
    assert failing.returncode == 4, failing.stderr
    assert f"root@127.0.0.1:{board.port}" in failing.stderr
