"""The inventory: what orchestrate makes of Ansible's reading (pure, from records), its refusals one line each,
ssh's command line read as ssh reads it (held to ``ssh -G``), and sources Ansible cannot read."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from orchestrator.errors import InventoryError, UsageError
from orchestrator.inventory.hosts import LOCAL_TARGET, find_host, inventory_from_document, load_inventory
from orchestrator.inventory.play_values import MASK, AnsibleHost, play_values
from orchestrator.inventory.ssh_args import play_command, read_command, split_args
from orchestrator.targets.settings import ConnectOptions, resolve_ssh_params

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "inventories"


def ansible_host(name: str = "nano01", **resolved: object) -> AnsibleHost:
    """A host as Ansible's reader gives it, with the ssh plugin's defaults."""
    defaults = {"connection": "ssh", "become": False, "become_method": "sudo", "python": "auto", "host": name,
                "port": None, "remote_user": None, "private_key_file": None,
                "ssh_args": "-C -o ControlMaster=auto -o ControlPersist=60s", "ssh_common_args": "",
                "ssh_extra_args": "", "host_key_checking": True, "timeout": 10, "password": None,
                "ssh_executable": "ssh", "become_user": "root", "become_pass": None, "become_exe": "sudo"}
    variables = resolved.pop("vars", {})
    settings = resolved.pop("settings", {})
    origins = {**({"host": "var: ansible_host"} if "host" in resolved else {}), **resolved.pop("origins", {})}
    files = resolved.pop("files", {k: "lab.yml" for k in variables})
    return AnsibleHost(name=name, vars=variables, resolved={**defaults, **resolved}, origins=origins,
                       settings=settings, source="lab.yml", files=files)


def test_a_play_s_values_make_the_host_with_orchestrate_s_defaults_where_ssh_s_own_would_apply():
    values = play_values(ansible_host(host="192.0.2.5"))
    host = values.host
    # the port and the user are left to the ssh config, as a play leaves them to ssh: orchestrate's default after
    assert (host.address, host.port, host.user, host.python, host.become) == ("192.0.2.5", None, None, "python3",
                                                                              False)
    assert values.defaulted == ("port", "user", "python") and values.refused == ()
    assert play_values(ansible_host()).host.address is None  # the host's own name: ssh's config may name it
    assert values.ssh_args == ("-C", "-o", "ControlMaster=auto", "-o", "ControlPersist=60s")
    given = play_values(ansible_host(port=2201, remote_user="nvidia", private_key_file="~/.ssh/k",
                                     python="/usr/bin/python3.6", become=True, become_user="gdm")).host
    assert (given.port, given.user, given.key_file, given.python, given.become, given.become_user) == \
        (2201, "nvidia", "~/.ssh/k", "/usr/bin/python3.6", True, "gdm")


def test_the_hop_and_known_hosts_come_from_the_play_s_ssh_arguments():
    host = play_values(ansible_host(ssh_common_args="-o ProxyJump=ops@bastion:2201 -o UserKnownHostsFile=/k /k2",
                                    ssh_extra_args="-o ConnectTimeout=25")).host
    assert (host.proxy_jump, host.known_hosts, host.connect_timeout) == ("ops@bastion:2201", "/k", 10.0)
    # Ansible passes its own ConnectTimeout (timeout) before the common arguments: ssh keeps the first
    host = play_values(ansible_host(ssh_common_args='-o ProxyCommand="ssh -W %h:%p -q ops@bastion"')).host
    assert (host.proxy_jump, host.proxy_command) == (None, "ssh -W %h:%p -q ops@bastion")


@pytest.mark.parametrize("words, expected", [
    (["-p", "2222", "-o", "Port=22"], {"port": 2222}),                          # the first value wins
    (["-o", "Port=22", "-p2222"], {"port": 22}),
    (["-l", "a", "-o", "User=b"], {"user": "a"}),
    (["-o", 'User="quoted"'], {"user": "quoted"}),
    (["-i", "/k1", "-o", "IdentityFile=/k2", "-i/k3"], {"key_files": ("/k1", "/k2", "/k3")}),  # keys add up
    (["-J", "j1", "-o", "ProxyCommand=nc %h %p"], {"proxy_jump": "j1", "proxy_command": None}),
    (["-o", "ProxyCommand=nc %h %p", "-J", "j1"], {"proxy_jump": None, "proxy_command": "nc %h %p"}),
    (["-o", "ProxyJump none", "-J", "j1"], {"proxy_jump": "none"}),   # no hop, whatever the ssh config says
    (["-oUserKnownHostsFile=/a /b", "-o", "UserKnownHostsFile=/c"], {"known_hosts": "/a /b"}),
    (["-o", "Port = 2222", "-o", "ConnectTimeout=1m"], {"port": 2222, "connect_timeout": 60.0}),
    (["-p", "ssh"], {"port": 22}),
    (["-p", "70000"], {"port": None, "refused": ("Port=70000 (no port ssh can read)",)}),
    (["-p", "\u00b2"], {"port": None, "refused": ("Port=\u00b2 (no port ssh can read)",)}),
    (["-J", "a", "-J", "b"], {"proxy_jump": "a", "refused": ("-J b after another jump host (ssh takes a single -J)",)}),
    (["-o", "ProxyCommand=x", "-J", "y"], {"refused": ("-J y after a ProxyCommand (ssh refuses -J then)",)}),
    (["-J", "y", "-o", "ProxyCommand=x"], {"proxy_jump": "y", "refused": ()}),
    (["-Cqv", "-o", "ControlMaster=auto", "-o", "ServerAliveInterval=30"], {"refused": ()}),
    (["-A", "-L", "80:x:80", "-o", "ForwardAgent=yes", "-o", "StrictHostKeyChecking=no", "-o", "HostName=x"],
     {"refused": ("-A", "-L 80:x:80", "-o ForwardAgent=yes", "-o StrictHostKeyChecking=no", "-o HostName=x")}),
    (["-F", "/cfg", "-F", "/other"], {"config_file": "/cfg"}),
])
def test_ssh_s_command_line_is_read_as_ssh_reads_it(words, expected):
    settings = read_command(words)
    assert {key: getattr(settings, key) for key in expected} == expected


@pytest.mark.integration
@pytest.mark.parametrize("words", [
    ["-p", "2222", "-o", "Port=22", "-l", "a", "-o", "User=b", "-o", "ConnectTimeout=7", "-o", "ConnectTimeout=9"],
    ["-o", "Port=2201", "-p", "2299", "-J", "ops@bastion:2201", "-o", "ProxyCommand=nc %h %p"],
    ["-o", "ProxyCommand=ssh -W %h:%p -q ops@bastion", "-o", "ProxyJump=other", "-o", "User=first", "-l", "second"],
    ["-oUserKnownHostsFile=/a /b", "-o", "UserKnownHostsFile=/c", "-o", "IdentityFile=/k1", "-o", "IdentityFile=/k2"],
    split_args("-C -o ControlMaster=auto -o ControlPersist=60s -o 'User=\"quoted user\"' -p 2022"),
    ["-o", "Port = 2222", "-o", "ConnectTimeout=1m", "-p", "2299", "-o", "ProxyJump=none"],
    ["-J", "j1", "-o", "ProxyCommand=nc %h %p", "-o", "ProxyJump=j2", "-p", "ssh"],
])
def test_the_reading_of_a_command_line_equals_ssh_s_own(words):
    done = subprocess.run(["ssh", "-G", "-F", "/dev/null", *words, "board"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    ssh: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        ssh.setdefault(key, []).append(value)
    ours = read_command(words)
    assert int(ssh["port"][0]) == (ours.port or 22)
    assert ssh["user"][0] == (ours.user or ssh["user"][0])
    assert ssh.get("proxyjump", [None])[0] == (None if ours.proxy_jump == "none" else ours.proxy_jump)
    assert ssh.get("proxycommand", [None])[0] == (None if ours.proxy_command == "none" else ours.proxy_command)
    if ours.known_hosts:
        assert ssh["userknownhostsfile"][0] == ours.known_hosts
    if ours.connect_timeout:
        assert float(ssh["connecttimeout"][0]) == ours.connect_timeout
    if ours.key_files:
        assert ssh["identityfile"][:len(ours.key_files)] == list(ours.key_files)


def test_ansible_s_own_arguments_come_in_its_order():
    words = play_command("-C", "-p 1", None, 2, "/k", "u", 10)
    assert words == ["-C", "-o", "Port=2", "-o", 'IdentityFile="/k"', "-o", 'User="u"', "-o", "ConnectTimeout=10",
                     "-p", "1"]
    assert read_command(words).port == 2  # ansible_port before the common arguments' -p


def test_every_value_refused_is_named_at_once_with_the_host_and_its_file():
    record = ansible_host(vars={"ansible_password": "hunter2", "team_slack": "#perf", "ansible_become_method": "su",
                                "ansible_ssh_common_args": "-o ForwardAgent=yes -A"},
                          files={"ansible_password": "group_vars/lab.yml", "ansible_become_method": "lab.yml",
                                 "ansible_ssh_common_args": "host_vars/nano01.yml"},
                          become=True, become_method="su",
                          origins={"become_method": "var: ansible_become_method",
                                   "ssh_common_args": "var: ansible_ssh_common_args",
                                   "host_key_checking": "env: ANSIBLE_HOST_KEY_CHECKING"},
                          ssh_common_args="-o ForwardAgent=yes -A", host_key_checking=False,
                          settings={"orchestrate_dispaly": ":0"})
    values = play_values(record)
    error = values.error()
    assert error is not None
    line = error.one_line()
    assert line.startswith("lab.yml: host 'nano01': orchestrate cannot honour ")
    for said in ("ansible_password (group_vars/lab.yml): orchestrate logs in by key only",
                 "ansible_become_method=su (ansible_become_method): orchestrate becomes another user through sudo",
                 "ssh option '-o ForwardAgent=yes' (ansible_ssh_common_args in host_vars/nano01.yml)",
                 "ssh option '-A' (ansible_ssh_common_args in host_vars/nano01.yml)",
                 "host_key_checking false (the environment's ANSIBLE_HOST_KEY_CHECKING)",
                 "unknown orchestrate_dispaly (known: orchestrate_board_root"):
        assert said in line
    assert "hunter2" not in line and "\n" not in line
    assert "team_slack" not in line  # a team's own variables are kept, never refused


def test_a_become_password_is_taken_only_vaulted():
    plain = ansible_host(vars={"ansible_become_password": "hunter2"}, become=True, become_pass="hunter2",
                         origins={"become_pass": "var: ansible_become_password"})
    line = play_values(plain).error().one_line()  # type: ignore[union-attr]
    assert "ansible_become_password: a password is never kept in a file as plain text" in line
    assert "hunter2" not in line
    vaulted = ansible_host(vars={"ansible_become_password": {"__vaulted": True, "value": "s3"}}, become=True,
                           become_pass="s3", origins={"become_pass": "var: ansible_become_password"})
    values = play_values(vaulted)
    assert values.refused == () and values.host.become_password == "s3"
    assert "s3" not in repr(values.host)
    unopened = ansible_host(vars={"ansible_become_password": {"__vaulted": True}}, become=True,
                            origins={"unopened: ansible_become_password": "ansible_become_password"})
    assert "is vaulted and no vault password opened it: give --vault-password-file or --ask-vault-pass" in \
        play_values(unopened).error().one_line()  # type: ignore[union-attr]


def test_secrets_are_masked_in_what_targets_shows():
    document = {"hosts": {"b": {"vars": {"registry_token": {"__vaulted": True, "value": "tok"},
                                         "ansible_become_password": {"__vaulted": True, "value": "pw"},
                                         "team": "perf"},
                                "resolved": {"connection": "ssh", "host": "b"}}},
                "groups": {"all": {"hosts": ["b"], "children": [], "members": ["b"]}}}
    inventory = inventory_from_document(document, "lab.yml")
    assert inventory.variables["b"] == {"registry_token": MASK, "ansible_become_password": MASK, "team": "perf"}


def test_local_reads_no_inventory_and_starts_no_ansible(tmp_path):
    host = find_host(str(tmp_path / "absent.yml"), LOCAL_TARGET)  # a source that is not there is never opened
    assert host.is_local and host.name == LOCAL_TARGET


def test_embedded_default_when_no_inventory_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inventory = load_inventory(None)
    assert inventory.source == "<embedded default inventory>"
    assert list(inventory.hosts) == ["local"]


def test_a_missing_inventory_is_a_clear_error(tmp_path):
    with pytest.raises(InventoryError, match="cannot read inventory .*nope.yaml: no such file or folder"):
        load_inventory(str(tmp_path / "nope.yaml"))


@pytest.mark.integration
def test_the_repository_s_example_inventory_loads():
    inventory = load_inventory(str(REPO / "inventory.yaml"))
    assert set(inventory.hosts) == {"local", "nano01", "xavier01", "orin01"}
    nano = inventory.hosts["nano01"]
    assert (nano.address, nano.user, nano.display, nano.groups) == ("nano01.local", "root", ":0", ("jetson_nano",))
    assert inventory.hosts["xavier01"].nsys == "/opt/nvidia/nsight-systems/2022.2.3/bin/nsys"
    orin = inventory.hosts["orin01"]
    assert (orin.port, orin.work_dir, orin.key_file) == (22, "/var/lib/orchestrate", "~/.ssh/id_ed25519")
    assert inventory.hosts["local"].is_local


@pytest.mark.integration
@pytest.mark.parametrize("name, content", [
    ("tabs.yml", b"all:\n\thosts:\n"),
    ("list.yml", b"- a\n- b\n"),
    ("words.ini", b"[group\nhost ansible_port=\n"),
])
def test_a_source_ansible_cannot_parse_is_one_error_line(tmp_path, name, content):
    """Ansible itself warns, exits 0 and gives no hosts; orchestrate stops with one line."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InventoryError) as raised:
        load_inventory(str(path))
    line = raised.value.one_line()
    assert line.startswith(f"{path}: Ansible cannot read it: ") and "\n" not in line


@pytest.mark.integration
@pytest.mark.parametrize("host, said", [
    ("password-login", "ansible_password: orchestrate logs in by key only; ansible_ssh_pass: orchestrate logs in by "
                       "key only"),
    ("su-become", "ansible_become_method=su (ansible_become_method): orchestrate becomes another user through sudo "
                  "only"),
    ("plain-sudo-password", "ansible_become_password: a password is never kept in a file as plain text; vault it "
                            "(ansible-vault encrypt_string) or give --ask-become-pass"),
    ("forwarding", "ssh option '-o ForwardAgent=yes' (ansible_ssh_common_args); ssh option '-L 8080:localhost:80' "
                   "(ansible_ssh_common_args); ssh option '-A' (ansible_ssh_common_args)"),
    ("no-host-keys", "host_key_checking false (ansible_host_key_checking): orchestrate checks host keys"),
    ("in-docker", "ansible_connection=community.docker.docker (ansible_connection): orchestrate connects by ssh or "
                  "runs locally"),
    ("typo", "unknown orchestrate_dispaly (known: orchestrate_board_root, orchestrate_connect_timeout, "
             "orchestrate_display"),
])
def test_each_refusal_is_one_line_naming_the_host_the_file_and_every_value(host, said, refused_listing):
    line = refused_listing["refused"][host]
    assert line.startswith(f"{DATA / 'refused.yml'}: host '{host}': orchestrate cannot honour ")
    assert said in line and "\n" not in line


@pytest.fixture(scope="module")
def refused_listing() -> dict:
    done = run_cli("targets", "--json", "--inventory", str(DATA / "refused.yml"))
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout + done.stderr
    return __import__("json").loads(done.stdout)


@pytest.mark.integration
def test_a_refused_host_is_the_run_s_one_error_line_before_anything_starts(tmp_path):
    source = DATA / "refused.yml"
    done = run_cli("profile", "--target", "forwarding", "--inventory", str(source), "--app", "es2gears", "--no-nsys",
                   "--out", str(tmp_path / "runs"))
    assert done.returncode == 3, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {source}: host 'forwarding': orchestrate cannot honour ssh option "
                           "'-o ForwardAgent=yes' (ansible_ssh_common_args); ssh option '-L 8080:localhost:80'")
    assert not (tmp_path / "runs").exists()


@pytest.mark.integration
def test_every_refused_name_of_a_host_in_one_line(tmp_path):
    source = DATA / "refused.yml"
    inventory = load_inventory(str(source))
    line = inventory.broken["many"].one_line()
    for said in ("ansible_password", "ssh option '-o HostName=elsewhere'", "ansible_become_method=doas",
                 "orchestrate_xvfb must be one of auto, always, never, not 'sometimes'"):
        assert said in line
    assert set(inventory.hosts) == {"fine"}  # a refused host costs only itself
    assert inventory.hosts["fine"].address == "192.0.2.101"


def test_ssh_config_fills_what_the_inventory_leaves_out(tmp_path):
    from orchestrator.inventory.host import Host
    config = tmp_path / "ssh_config"
    config.write_text("Host nano01\n  HostName 10.0.0.5\n  Port 2222\n  User ubuntu\n  IdentityFile ~/.ssh/nano\n"
                      "  ProxyJump gateway\n  UserKnownHostsFile /etc/fleet_known_hosts\n")
    params = resolve_ssh_params(Host(name="nano01"), ConnectOptions(ssh_config=config))
    assert (params.hostname, params.port, params.user) == ("10.0.0.5", 2222, "ubuntu")
    assert params.key_files == (str(Path("~/.ssh/nano").expanduser()),)
    assert params.proxy_jump == "gateway"
    assert params.known_hosts == Path("/etc/fleet_known_hosts")
    # inventory values win over ssh config, and root is the default user
    (tmp_path / "empty").write_text("")
    host = Host(name="nano01", address="10.0.0.9", user="root")
    params = resolve_ssh_params(host, ConnectOptions(ssh_config=tmp_path / "empty"))
    assert (params.hostname, params.port, params.user) == ("10.0.0.9", 22, "root")
    # the inventory's own -F, hop and known_hosts file win over --ssh-config's
    mine = tmp_path / "mine"
    mine.write_text("Host nano01\n  Port 2300\n")
    host = Host(name="nano01", ssh_config=str(mine), proxy_jump="ops@bastion:2201", known_hosts="/k")
    params = resolve_ssh_params(host, ConnectOptions(ssh_config=config))
    assert (params.port, params.proxy_jump, params.known_hosts, params.ssh_config) == (2300, "ops@bastion:2201",
                                                                                      Path("/k"), mine)
    with pytest.raises(UsageError, match="cannot read the ssh config .*absent: No such file or directory"):
        resolve_ssh_params(Host(name="nano01"), ConnectOptions(ssh_config=tmp_path / "absent"))


def test_a_proxy_command_is_expanded_for_the_target_as_ssh_expands_it():
    from orchestrator.inventory.host import Host
    from orchestrator.targets.settings import fabric_connection
    host = Host(name="b", address="10.0.0.7", port=2207, user="nv", proxy_command="ssh -W %h:%p -l %r jump %%x")
    connection = fabric_connection(host, ConnectOptions(ssh_config=Path(os.devnull)))
    assert connection.gateway == "/bin/sh -c 'exec ssh -W 10.0.0.7:2207 -l nv jump %x'"  # run as it is, '%%' is '%'


def test_the_ssh_config_is_read_for_the_inventory_s_address_as_ssh_reads_it_and_none_means_no_hop(tmp_path):
    from orchestrator.inventory.host import Host
    from orchestrator.targets.settings import fabric_connection
    config = tmp_path / "ssh_config"
    config.write_text("Host lab-alias\n  HostName 10.9.9.9\n  Port 2200\n  User ops\n"
                      "Host b*\n  ProxyJump bastion\n")
    params = resolve_ssh_params(Host(name="x", address="lab-alias"), ConnectOptions(ssh_config=config))
    assert (params.hostname, params.port, params.user) == ("10.9.9.9", 2200, "ops")  # as ssh lab-alias goes
    assert fabric_connection(Host(name="board1"), ConnectOptions(ssh_config=config)).gateway is not None
    direct = Host(name="board1", proxy_jump="none")  # -o ProxyJump=none in the play's ssh arguments
    assert fabric_connection(direct, ConnectOptions(ssh_config=config)).gateway is None
    assert resolve_ssh_params(direct, ConnectOptions(ssh_config=config)).proxy_jump == "none"
    jump = fabric_connection(Host(name="t", proxy_jump="hop.lab"), ConnectOptions(ssh_config=config)).gateway
    assert jump.user == __import__("getpass").getuser()  # ssh's jump logs in as this machine's user
    known = Host(name="t", known_hosts="%d/kh1 /etc/kh2")
    params = resolve_ssh_params(known, ConnectOptions(ssh_config=config))
    assert params.known_hosts_files == (Path.home() / "kh1", Path("/etc/kh2"))
    assert params.known_hosts == Path.home() / "kh1"


@pytest.mark.integration
def test_targets_json_gives_each_host_s_values_groups_refusals_and_defaults_with_secrets_masked(tmp_path):
    vault = DATA / "vault"
    done = run_cli("targets", "--json", "--inventory", str(vault / "hosts.yml"), "--inventory",
                   str(DATA / "refused.yml"), "--vault-password-file", str(vault / "vault-password"))
    assert done.returncode == 0, done.stderr
    document = __import__("json").loads(done.stdout)
    keys = {"groups", "address", "port", "user", "key_file", "python", "become", "become_user", "become_method",
            "ssh_args", "connection", "vars"}
    assert all(set(host) == keys for host in document["hosts"].values())
    v1 = document["hosts"]["orin-v1"]
    assert (v1["address"], v1["port"], v1["user"], v1["become"], v1["become_user"], v1["python"]) == \
        ("192.0.2.41", 22, "nvidia", True, "root", "python3")
    assert v1["vars"]["ansible_become_password"] == MASK and v1["vars"]["registry_token"] == MASK
    assert document["defaulted"]["orin-v1"] == ["port", "python"]
    assert document["hosts"]["su-become"]["become_method"] == "su" and "su-become" in document["refused"]
    assert "orin-v1" not in document["refused"] and document["groups"]["boards"] == ["orin-v1", "orin-v2"]
    for secret in ("sudo-pass-7731", "tok-4f1c9a", "hunter2", "correct horse"):
        assert secret not in done.stdout and secret not in done.stderr


@pytest.mark.integration
def test_sudo_s_password_kept_as_ansible_s_guide_keeps_it_is_taken_and_never_shown():
    """A template of a !vault variable, a group_vars file vaulted whole: both are vaulted, both are taken; what a
    vaulted file sets is masked like a !vault value; a paramiko board reads as Ansible's paramiko plugin resolves it."""
    from orchestrator.inventory.ansible_source import VaultOptions
    from orchestrator.inventory.listing import targets_document
    vault = VaultOptions((str(DATA / "vault" / "vault-password"),))
    inventory = load_inventory(str(DATA / "vault-layouts" / "hosts.yml"), vault)
    assert inventory.broken == {}
    assert inventory.hosts["t1"].become_password == "templated-sudo-19"
    assert inventory.hosts["t2"].become_password == "sealed-sudo-23"
    assert (inventory.hosts["p1"].connection, inventory.hosts["p1"].port) == ("paramiko", 2233)
    document = targets_document(inventory)
    assert document["hosts"]["t2"]["vars"]["lab_token"] == MASK
    text = __import__("json").dumps(document) + repr(inventory)
    for secret in ("templated-sudo-19", "sealed-sudo-23", "sealed-token-5"):
        assert secret not in text
    without = load_inventory(str(DATA / "vault-layouts" / "hosts.yml"))  # no vault password: said per host
    assert "is vaulted and no vault password opened it" in without.broken["t1"].one_line()
