from pathlib import Path

import pytest
import yaml
from board_state import record
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.errors import InventoryError, UsageError
from orchestrator.inventory.hosts import DEFAULT_WORK_DIR, load_inventory, parse_inventory
from orchestrator.targets.settings import ConnectOptions, resolve_ssh_params

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


def test_unknown_key_names_file_host_and_key_and_breaks_only_that_host():
    inv = parse_inventory("all:\n  hosts:\n    nano01:\n      ansible_hots: 1.2.3.4\n    nano02:\n", "inv.yaml")
    with pytest.raises(InventoryError) as err:
        inv.host("nano01")
    assert err.value.message == "inv.yaml: host 'nano01': unknown key 'ansible_hots'"
    assert "ansible_host" in err.value.hint
    assert inv.host("nano02").name == "nano02"  # the rule: a broken entry costs only its own host


def test_wrong_type_names_file_host_key_and_value():
    inv = parse_inventory("all:\n  hosts:\n    nano01:\n      ansible_port: twenty-two\n", "inv.yaml")
    with pytest.raises(InventoryError) as err:
        inv.host("nano01")
    assert err.value.message == "inv.yaml: host 'nano01': 'ansible_port' must be a port number, not 'twenty-two'"


def test_a_broken_group_var_breaks_the_hosts_below_it_only():
    inv = parse_inventory("all:\n  hosts: {solo: }\n  children:\n    boards:\n      vars: {colour: red}\n"
                          "      hosts: {b1: }\n      children:\n        deeper:\n          hosts: {b2: }\n",
                          "inv.yaml")
    for name in ("b1", "b2"):
        with pytest.raises(InventoryError, match="inv.yaml: group 'boards': unknown key 'colour'"):
            inv.host(name)
    assert inv.host("solo").name == "solo"


def test_a_password_is_refused_without_echoing_it():
    inv = parse_inventory("all:\n  hosts:\n    nano01: {ansible_password: hunter2}\n", "inv.yaml")
    with pytest.raises(InventoryError) as err:
        inv.host("nano01")
    assert "hunter2" not in err.value.one_line()
    assert "'ansible_password' is not supported: orchestrate logs in by key only" in err.value.message


def test_become_as_ansible_writes_it():
    inv = parse_inventory("all:\n  vars: {ansible_become: 'yes'}\n  hosts:\n    nano01: {ansible_user: nvidia}\n"
                          "    orin: {ansible_become: true, ansible_become_user: gdm, ansible_become_method: sudo}\n"
                          "    xavier: {ansible_become: no}\n    agx: {ansible_become_method: su}\n"
                          "    here: {ansible_connection: local, ansible_become: true, ansible_become_user: ci}\n",
                          "inv.yaml")
    assert [(inv.host(n).become, inv.host(n).become_user, inv.host(n).user) for n in ("nano01", "orin", "xavier")] \
        == [(True, "root", "nvidia"), (True, "gdm", None), (False, "root", None)]
    with pytest.raises(InventoryError) as err:
        inv.host("agx")
    assert err.value.message == "inv.yaml: host 'agx': 'ansible_become_method' must be one of sudo, not 'su'"
    assert inv.host("here").python == "python3"  # a user other than root may not read this Python


@pytest.mark.parametrize("key", ["ansible_become_password", "ansible_become_pass", "ansible_sudo_pass"])
def test_a_become_password_in_a_file_is_refused_with_the_way_to_give_it(key):
    inv = parse_inventory(f"all:\n  vars: {{{key}: hunter2}}\n  hosts: {{nano01: }}\n", "inv.yaml")
    with pytest.raises(InventoryError) as err:
        inv.host("nano01")
    assert "hunter2" not in err.value.one_line()
    assert err.value.message == f"inv.yaml: group 'all': '{key}' is refused: a password is never kept in a file"
    assert err.value.hint == f"remove '{key}'; give it with --ask-become-pass or ORCHESTRATE_BECOME_PASSWORD"


def test_an_alias_bomb_is_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    inventory = parse_inventory(bomb + "all:\n  children: *i\n", "bomb.yaml")  # 9^9 leaves, never expanded
    with pytest.raises(InventoryError, match="group 'all' could not be read: bomb.yaml: group 'all' children must be"):
        inventory.host("nano01")
    def level(i: int) -> str:
        below = "g" if i == 0 else f"l{i - 1}"
        return f"l{i}: &l{i} {{children: {{{', '.join(f'c{i}_{j}: *{below}' for j in range(9))}}}}}\n"
    groups = "base: &g {hosts: {h: }}\n" + "".join(level(i) for i in range(8))
    with pytest.raises(InventoryError, match="more than 20000 group entries"):
        parse_inventory(groups + "all:\n  children: {top: *l7}\n", "groups.yaml")


def test_files_that_are_not_inventories_are_one_line_errors(tmp_path):
    cases = {"binary.yaml": b"\xff\xfe\x00garbage", "list.yaml": b"- a\n- b\n", "deep.yaml": b"[" * 5000,
             "scalar.yaml": b"just words"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InventoryError) as err:
            load_inventory(str(tmp_path / name))
        assert str(tmp_path / name) in err.value.message and "\n" not in err.value.one_line()


def test_bad_yaml_says_where():
    with pytest.raises(InventoryError, match=r"inv.yaml: not valid YAML at line 2"):
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
    (tmp_path / "empty").write_text("")
    params = resolve_ssh_params(inv.host("nano01"), ConnectOptions(ssh_config=tmp_path / "empty"))
    assert (params.hostname, params.port, params.user) == ("10.0.0.9", 22, "root")
    with pytest.raises(UsageError, match="cannot read the ssh config .*absent: No such file or directory"):
        resolve_ssh_params(inv.host("nano01"), ConnectOptions(ssh_config=tmp_path / "absent"))


yaml_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                        max_size=4), max_leaves=25)
inventory_keys = st.sampled_from(["ansible_host", "ansible_port", "ansible_user", "ansible_connection", "hosts",
                                  "vars", "children", "orchestrate_work_dir", "orchestrate_xvfb", "all", "nano01"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(inventory_keys | st.text(max_size=8), yaml_values | st.dictionaries(
    inventory_keys, yaml_values | st.dictionaries(inventory_keys, yaml_values, max_size=4), max_size=4), max_size=4))
def test_any_yaml_document_loads_or_is_one_clear_line(document):
    text = yaml.safe_dump(document)
    record("hostile_input", injected=False)
    try:
        inventory = parse_inventory(text, "fuzz.yaml")
    except InventoryError as exc:
        assert exc.message.startswith("fuzz.yaml") and "\n" not in exc.one_line()
        return
    for name in [*inventory.hosts, *inventory.broken]:
        try:
            inventory.host(name)
        except InventoryError as exc:
            assert exc.message.startswith("fuzz.yaml") and "\n" not in exc.one_line()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_load_or_are_one_clear_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("inv") / "inv.yaml"
    path.write_bytes(data)
    record("hostile_input", injected=False)
    try:
        load_inventory(str(path))
    except InventoryError as exc:
        assert str(path) in exc.message and "\n" not in exc.one_line()
