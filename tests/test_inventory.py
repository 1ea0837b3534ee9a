from pathlib import Path

import pytest

from orchestrator.errors import InventoryError
from orchestrator.inventory.hosts import DEFAULT_WORK_DIR, load_inventory, parse_inventory
from orchestrator.targets.transport import ConnectOptions, resolve_ssh_params

REPO = Path(__file__).resolve().parent.parent


def test_repo_inventory_example_loads_with_groups_and_inherited_vars():
    inventory = load_inventory(str(REPO / "inventory.yaml"))
    assert set(inventory.hosts) == {"local", "nano01", "xavier01", "orin01"}
    nano = inventory.hosts["nano01"]
    assert (nano.address, nano.user, nano.display, nano.groups) == ("nano01.local", "root", ":0", ("jetson_nano",))
    assert inventory.hosts["xavier01"].nsys == "/opt/nvidia/nsight-systems/2022.2.3/bin/nsys"
    orin = inventory.hosts["orin01"]
    assert (orin.port, orin.work_dir, orin.key_file) == (22, "/var/lib/orchestrate", "~/.ssh/id_ed25519")
    assert inventory.hosts["local"].is_local
    assert inventory.groups["jetson_orin"] == ("orin01",)


def test_host_vars_win_over_group_vars_which_win_over_all():
    text = """
all:
  vars: {ansible_user: admin, ansible_port: 2200}
  children:
    boards:
      vars: {ansible_port: 2201, orchestrate_display: ':1'}
      hosts:
        b1: {ansible_port: 2202}
        b2:
"""
    inv = parse_inventory(text, "fleet.yaml")
    assert (inv.hosts["b1"].port, inv.hosts["b1"].user, inv.hosts["b1"].display) == (2202, "admin", ":1")
    assert inv.hosts["b2"].port == 2201
    assert inv.hosts["b2"].work_dir == DEFAULT_WORK_DIR


def test_unknown_key_names_file_host_and_key():
    with pytest.raises(InventoryError) as err:
        parse_inventory("all:\n  hosts:\n    nano01:\n      ansible_hots: 1.2.3.4\n", "inv.yaml")
    assert err.value.message == "inv.yaml: host 'nano01': unknown key 'ansible_hots'"
    assert "ansible_host" in err.value.hint


def test_wrong_type_names_file_host_key_and_value():
    with pytest.raises(InventoryError) as err:
        parse_inventory("all:\n  hosts:\n    nano01:\n      ansible_port: twenty-two\n", "inv.yaml")
    assert err.value.message == "inv.yaml: host 'nano01': 'ansible_port' must be a port number, not 'twenty-two'"


def test_unknown_group_var_names_the_group():
    with pytest.raises(InventoryError, match="group 'boards': unknown key 'colour'"):
        parse_inventory("all:\n  children:\n    boards:\n      vars: {colour: red}\n", "inv.yaml")


def test_bad_yaml_says_where():
    with pytest.raises(InventoryError, match=r"inv.yaml: line 2 is not valid YAML"):
        parse_inventory("all:\n\thosts:\n", "inv.yaml")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InventoryError, match="cannot read inventory .*nope.yaml"):
        load_inventory(str(tmp_path / "nope.yaml"))


def test_unknown_target_lists_known_ones_and_local_is_implicit():
    inv = parse_inventory("all:\n  hosts:\n    nano01:\n", "inv.yaml")
    with pytest.raises(InventoryError, match=r"no target 'nano02' in inv.yaml \(known: nano01\)"):
        inv.host("nano02")
    assert inv.host("local").is_local


def test_embedded_default_when_no_inventory_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inv = load_inventory(None)
    assert inv.source == "<embedded default inventory>"
    assert list(inv.hosts) == ["local"]


def test_ssh_config_fills_what_the_inventory_leaves_out(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host nano01\n  HostName 10.0.0.5\n  Port 2222\n  User ubuntu\n  IdentityFile ~/.ssh/nano\n"
                      "  ProxyJump gateway\n  UserKnownHostsFile /etc/fleet_known_hosts\n")
    inv = parse_inventory("all:\n  hosts:\n    nano01:\n", "inv.yaml")
    params = resolve_ssh_params(inv.host("nano01"), ConnectOptions(ssh_config=config))
    assert (params.hostname, params.port, params.user) == ("10.0.0.5", 2222, "ubuntu")
    assert params.key_files == (str(Path("~/.ssh/nano").expanduser()),)
    assert params.proxy_jump == "gateway"
    assert params.known_hosts == Path("/etc/fleet_known_hosts")
    # inventory values win over ssh config, and root is the default user
    inv = parse_inventory("all:\n  hosts:\n    nano01: {ansible_host: 10.0.0.9, ansible_user: root}\n", "inv.yaml")
    params = resolve_ssh_params(inv.host("nano01"), ConnectOptions(ssh_config=tmp_path / "absent"))
    assert (params.hostname, params.port, params.user) == ("10.0.0.9", 22, "root")
