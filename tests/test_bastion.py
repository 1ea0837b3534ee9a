"""Ansible and orchestrate on the same inventory reach the same boards the same way: as the same user, at the same
port, with the same key, through the same hop, as the boards' own sshd logs say.

The lab: a network namespace joined to this machine by a link, holding a bastion (its sshd on the link's address)
and a board of its own whose sshd listens on the lab's loopback only, so that nothing reaches it but through the
bastion. A second board, a machine of its own too, is reached directly. The hop is written in the two ways teams write
it: ``-o ProxyCommand=...`` and ``-J`` with ``-F`` (the jump host's key and known_hosts in that ssh config).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from sshd_server import Sshd, make_sshd

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
ACCEPTED = re.compile(r"Accepted publickey for (\S+) from (\S+) port \d+ ssh2: \S+ (SHA256:\S+)")
CONNECTED = re.compile(r"Connection from \S+ port \d+ on \S+ port (\d+)")


@dataclass
class Lab:
    bastion: Sshd
    behind: Sshd
    direct: Sshd
    folder: Path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    from netns import make_board_link
    folder = tmp_path_factory.mktemp("lab")
    link = make_board_link(rate="1gbit", kind="lab")
    bastion = make_sshd(folder / "bastion", address=link.board_address, netns=link.name, log_level="VERBOSE")
    behind = make_sshd(folder / "behind", address="127.0.0.1", netns=link.name, own_machine=True,
                       log_level="VERBOSE")
    direct = make_sshd(folder / "direct", own_machine=True, log_level="VERBOSE")
    try:
        for server in (bastion, behind, direct):
            server.start()
        yield Lab(bastion, behind, direct, folder)
    finally:
        for server in (direct, behind, bastion):
            server.stop()
        link.remove()


def fingerprint(key: Path) -> str:
    said = subprocess.run(["ssh-keygen", "-l", "-f", str(key)], capture_output=True, text=True, check=True).stdout
    return said.split()[1]


def logins(server: Sshd, start: int) -> list[tuple[str, str, str, int]]:
    """(user, from, key fingerprint, the port it came to) of each login in sshd's log after byte start."""
    text = (server.root / "sshd.log").read_bytes()[start:].decode(errors="replace")
    found, port = [], None
    for line in text.splitlines():
        if (connected := CONNECTED.search(line)):
            port = int(connected.group(1))
        elif (accepted := ACCEPTED.search(line)):
            found.append((accepted.group(1), accepted.group(2), accepted.group(3), port))
    return found


def log_size(server: Sshd) -> int:
    return (server.root / "sshd.log").stat().st_size


def inventory(lab: Lab, hop: str, tmp_path: Path) -> Path:
    """The same boards, the hop written as a ProxyCommand or as -J with the jump host in an ssh config (-F)."""
    bastion, direct = lab.bastion, lab.direct
    config = tmp_path / "ssh_config"
    config.write_text(f"Host jumpbox\n  HostName {bastion.address}\n  Port {bastion.port}\n  User root\n"
                      f"  IdentityFile {bastion.client_key}\n  UserKnownHostsFile {bastion.known_hosts}\n"
                      "  StrictHostKeyChecking yes\n  BatchMode yes\n")
    if hop == "proxycommand":
        through = (f'-F /dev/null -o ProxyCommand="ssh -F /dev/null -i {bastion.client_key} -o BatchMode=yes '
                   f'-o UserKnownHostsFile={bastion.known_hosts} -o StrictHostKeyChecking=yes -p {bastion.port} '
                   f'-W %h:%p root@{bastion.address}"')
    else:
        through = f"-F {config} -J jumpbox"
    hosts = {
        "behind": {"ansible_host": "127.0.0.1", "ansible_port": lab.behind.port, "ansible_user": "root",
                   "ansible_ssh_private_key_file": str(lab.behind.client_key),
                   "ansible_ssh_common_args": f"{through} -o UserKnownHostsFile={lab.behind.known_hosts}",
                   "orchestrate_work_dir": str(tmp_path / "work-behind")},
        "direct": {"ansible_host": "127.0.0.1", "ansible_port": direct.port, "ansible_user": "root",
                   "ansible_ssh_private_key_file": str(direct.client_key),
                   "ansible_ssh_common_args": f"-F /dev/null -o UserKnownHostsFile={direct.known_hosts}",
                   "orchestrate_work_dir": str(tmp_path / "work-direct")},
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"lab": {"hosts": hosts}}}}))
    return path


@pytest.mark.parametrize("hop", ["proxycommand", "jump"])
def test_ansible_and_orchestrate_reach_each_board_as_the_same_user_port_and_key_through_the_same_hop(
        lab, tmp_path, hop):
    path = inventory(lab, hop, tmp_path)
    servers = {"bastion": lab.bastion, "behind": lab.behind, "direct": lab.direct}
    env = dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), PYTHONWARNINGS="ignore",
               ANSIBLE_SSH_ARGS="-o ControlMaster=no")  # a fresh login each time, as the logs count them

    start = {name: log_size(server) for name, server in servers.items()}
    played = subprocess.run([str(BIN / "ansible"), "all", "-i", str(path), "-m", "raw", "-a", "true"],
                            capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert played.returncode == 0, played.stdout + played.stderr
    ansible = {name: set(logins(server, start[name])) for name, server in servers.items()}

    start = {name: log_size(server) for name, server in servers.items()}
    done = run_cli("doctor", "--inventory", str(path), "--json", timeout=180)
    checks = {c["target"]: c for c in map(json.loads, filter(None, done.stdout.splitlines()))}
    assert set(checks) == {"behind", "direct"}, done.stderr
    assert all(c["error"] is None and c["board"]["nsys"] for c in checks.values()), done.stdout + done.stderr
    ours = {name: set(logins(server, start[name])) for name, server in servers.items()}

    behind_key, direct_key = fingerprint(lab.behind.client_key), fingerprint(lab.direct.client_key)
    # the board behind the bastion: reached from the lab's own loopback, so through the bastion, by both
    assert ansible["behind"] == ours["behind"] == {("root", "127.0.0.1", behind_key, lab.behind.port)}
    # the bastion: the same login (user, key, port) for both, from this machine's side of the link
    bastion_login = ("root", lab.bastion.address.rsplit(".", 1)[0] + ".1", fingerprint(lab.bastion.client_key),
                     lab.bastion.port)
    assert ansible["bastion"] == ours["bastion"] == {bastion_login}
    assert ansible["direct"] == ours["direct"] == {("root", "127.0.0.1", direct_key, lab.direct.port)}


def test_a_run_through_the_bastion_brings_its_files_back(lab, tmp_path):
    """A whole run (agent, capture without nsys, verified pull) on the board only the bastion reaches."""
    path = inventory(lab, "jump", tmp_path)
    done = run_cli("profile", "--target", "behind", "--inventory", str(path), "--app-cmd", "sh -c 'sleep 1'",
                   "--no-nsys", "--duration", "1", "--out", str(tmp_path / "runs"), timeout=240)
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stage"] == "pulled" and record["target"]["address"] == f"root@127.0.0.1:{lab.behind.port}"
