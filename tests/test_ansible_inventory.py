"""Inventories read as Ansible reads them, compared with Ansible itself on the same sources and settings.

For each inventory of tests/data/inventories (written the way teams write them; SOURCES.md there):
- hosts, groups and variables equal ``ansible-inventory --list``'s;
- the connection values equal what a play uses: ``ansible -m ping`` runs with a recording ssh in place of ssh
  (ANSIBLE_SSH_EXECUTABLE), and ``ssh -G`` reads each recorded command line as ssh would (address, port, user,
  key, hop, known_hosts file); the become user and the python are read from the command the play sends.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.inventory.ansible_source import VaultOptions
from orchestrator.inventory.hosts import Inventory, load_inventory
from orchestrator.inventory.listing import targets_document
from orchestrator.inventory.play_values import MASK

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data" / "inventories"
BIN = Path(sys.executable).parent
VAULT_FILE = DATA / "vault" / "vault-password"

# case -> (sources, environment, the hosts the play is run on: a pattern)
CASES: dict[str, tuple[list[str], dict[str, str], str]] = {
    "groups-of-groups": (["groups-of-groups.yml"], {}, "all"),
    "ranges": (["ranges.yml"], {}, "nano_farm[0:1]:nano_farm[-1]:orin_farm[0]:spare[-1]"),
    "folder": (["folder"], {}, "all"),
    "bastion": (["bastion.yml"], {}, "all"),
    "ini": (["lab.ini"], {}, "all"),
    "vault": (["vault/hosts.yml"], {}, "all"),
    # the paramiko boards are left out of the play: its paramiko would connect for real, the recorder stands in for ssh
    "vault-layouts": (["vault-layouts/hosts.yml"], {}, "templated:sealed"),
    "port-in-name": (["port-in-name.yml"], {}, "all"),
    "aliases": (["aliases.yml"], {}, "all"),
    "templates": (["templates.yml"], {}, "all"),
    "constructed": (["constructed"], {}, "all"),
    "script": (["script/inventory.py"], {}, "all"),
    "ansible-cfg": (["ansible-cfg/hosts.yml"], {"ANSIBLE_CONFIG": str(DATA / "ansible-cfg" / "ansible.cfg")}, "all"),
    "ansible-env": (["groups-of-groups.yml"], {"ANSIBLE_REMOTE_USER": "env-user", "ANSIBLE_REMOTE_PORT": "2299",
                                              "ANSIBLE_SSH_COMMON_ARGS": "-o ConnectTimeout=7",
                                              "ANSIBLE_BECOME_USER": "env-operator"}, "all"),
    "two-sources": (["multi/a-boards.yml", "multi/b-lab.ini"], {}, "all"),
    "refused": (["refused.yml"], {}, "all"),
    "orchestrate-vars": (["orchestrate-vars.yml"], {}, "all"),
    "precedence": (["precedence.yml"], {}, "all"),
    "mixed-folder": (["mixed"], {}, "all"),
}


@pytest.fixture
def ansible_env(tmp_path, monkeypatch):
    """Ansible's settings for one case, the same for orchestrate's reading and Ansible's own: its own home (no
    developer's ansible.cfg or control sockets), run from a folder without an ansible.cfg."""
    def apply(extra: dict[str, str]) -> dict[str, str]:
        for name in [n for n in os.environ if n.startswith("ANSIBLE_")]:
            monkeypatch.delenv(name)
        values = {"ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
                  "PYTHONWARNINGS": "ignore", **extra}
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(tmp_path)
        return dict(os.environ)
    return apply


def sources(case: str) -> list[str]:
    return [str(DATA / source) for source in CASES[case][0]]


VAULTED_CASES = {"vault", "vault-layouts"}


def vault_args(case: str) -> list[str]:
    return ["--vault-password-file", str(VAULT_FILE)] if case in VAULTED_CASES else []


def orchestrate_inventory(case: str) -> Inventory:
    vault = VaultOptions((str(VAULT_FILE),)) if case in VAULTED_CASES else None
    return load_inventory(",".join(sources(case)), vault)


def ansible_inventory(case: str, env: dict[str, str]) -> dict:
    command = [str(BIN / "ansible-inventory"), "--list", *vault_args(case)]
    for source in sources(case):
        command += ["-i", source]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def members(listing: dict, group: str) -> set[str]:
    """Every host of a group in ansible-inventory's listing, its child groups' included."""
    found = set(listing.get(group, {}).get("hosts", []))
    for child in listing.get(group, {}).get("children", []):
        found |= members(listing, child)
    return found


def shown(value):
    """A variable as ansible-inventory prints it, masked as orchestrate masks it."""
    if isinstance(value, dict) and "__ansible_vault" in value:
        return MASK
    if isinstance(value, dict) and set(value) == {"__ansible_unsafe"}:  # a value a plugin composed
        return value["__ansible_unsafe"]
    return value


@pytest.mark.parametrize("case", sorted(CASES))
def test_hosts_groups_and_variables_equal_ansible_inventorys(case, ansible_env):
    env = ansible_env(CASES[case][1])
    ours = targets_document(orchestrate_inventory(case))
    theirs = ansible_inventory(case, env)
    hostvars = theirs["_meta"]["hostvars"]
    every = members(theirs, "all")
    assert set(ours["hosts"]) == every and every
    groups = [g for g in theirs if g != "_meta"]
    assert set(ours["groups"]) == set(groups)
    for group in groups:
        assert set(ours["groups"][group]) == members(theirs, group), group
    for name, host in ours["hosts"].items():
        assert host["groups"] == sorted(g for g in groups if g != "all" and name in members(theirs, g)), name
        expected = {key: shown(value) for key, value in hostvars.get(name, {}).items()}
        secret = {key for key, value in host["vars"].items() if value == MASK}
        assert {k: v for k, v in host["vars"].items() if k not in secret} == \
            {k: v for k, v in expected.items() if k not in secret}, name
        assert secret <= set(expected), name


RECORDER = """#!{python}
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
sys.stderr.write("ssh: connect to host: Connection refused\\n")
sys.exit(255)
"""


def played_commands(case: str, env: dict[str, str], folder: Path, module: str) -> dict[str, list[list[str]]]:
    """Every ssh command line a play of one task (``raw: true`` or ``ping``) sends, by host (the recorder stands in
    for ssh and answers as an unreachable board does: nothing is run anywhere)."""
    log = folder / f"ssh-calls-{module}.jsonl"
    recorder = folder / f"ssh-{module}"
    recorder.write_text(RECORDER.format(python=sys.executable, log=str(log)))
    recorder.chmod(0o755)
    task = ["-m", "raw", "-a", "true"] if module == "raw" else ["-m", module]
    command = [str(BIN / "ansible"), CASES[case][2], *task, "--forks", "8", *vault_args(case)]
    for source in sources(case):
        command += ["-i", source]
    run_env = dict(env, ANSIBLE_SSH_EXECUTABLE=str(recorder), ANSIBLE_PIPELINING="True", ANSIBLE_SSH_RETRIES="0",
                   ANSIBLE_HOST_KEY_CHECKING=env.get("ANSIBLE_HOST_KEY_CHECKING", "True"))
    subprocess.run(command, capture_output=True, text=True, env=run_env, timeout=300, stdin=subprocess.DEVNULL)
    calls: dict[str, list[list[str]]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        argv = json.loads(line)
        calls.setdefault(argv[-2], []).append(argv)
    return calls


def ssh_reads(argv: list[str]) -> dict[str, list[str]]:
    """ssh's own reading of a command line (``ssh -G``), without connecting."""
    done = subprocess.run(["ssh", "-G", *argv[:-1]], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    settings: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        settings.setdefault(key, []).append(value)
    return settings


@pytest.mark.parametrize("case", sorted(CASES))
def test_connection_values_equal_what_a_play_uses(case, ansible_env, tmp_path):
    env = ansible_env(CASES[case][1])
    inventory = orchestrate_inventory(case)
    ours = targets_document(inventory)
    calls = played_commands(case, env, tmp_path, "raw")
    # a module's command names the python a play runs it with: played only where a host names one
    named = any("python" not in ours["defaulted"].get(name, []) and host["connection"] != "local"
                for name, host in ours["hosts"].items())
    modules = played_commands(case, env, tmp_path, "ping") if named else {}
    compared = 0
    for name, host in ours["hosts"].items():
        if host["connection"] == "local":
            continue
        address = host["address"]
        played = calls.get(address)
        if played is None:  # not in the play's pattern (a large range), or refused (a password login needs sshpass)
            assert name in ours["refused"] or CASES[case][2] != "all", name
            continue
        argv = played[-1]
        ssh = ssh_reads(argv)
        assert ssh["hostname"] == [address], name
        assert int(ssh["port"][0]) == host["port"], name
        assert ssh["user"] == [host["user"]], name
        if host["key_file"]:
            key = os.path.expanduser(host["key_file"])
            # ssh passes over a -i file that does not exist (orchestrate says it is missing before it connects)
            assert ssh["identityfile"][0] == key or key not in ssh["identityfile"] and not os.path.exists(key), name
        values = inventory.values[name].host
        assert ssh.get("proxyjump", [None])[0] == values.proxy_jump, name
        assert ssh.get("proxycommand", [None])[0] == values.proxy_command, name
        if values.known_hosts:
            assert ssh["userknownhostsfile"][0] == os.path.expanduser(values.known_hosts), name
        assert int(ssh["connecttimeout"][0]) == int(values.connect_timeout) or \
            name in ours["hosts"] and "orchestrate_connect_timeout" in host["vars"], name
        remote = argv[-1]
        if name not in ours["refused"]:
            assert ("sudo " in remote) == host["become"], name
            if host["become"]:
                assert f"-u {host['become_user']} " in remote, name
        pinged = modules.get(address, [])
        if name in ours["refused"] or not modules:
            pass
        elif "python" in ours["defaulted"].get(name, []):
            assert "command -v" in pinged[0][-1], name  # the play discovers it; orchestrate uses python3
        elif "orchestrate_python" not in host["vars"]:
            assert any(host["python"] in call[-1] for call in pinged), name
        compared += 1
    assert compared, f"no host of {case} compared"
