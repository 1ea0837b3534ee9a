"""--limit: Ansible's host patterns over the inventory's groups (children included), pure."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.errors import UsageError
from orchestrator.fleet.patterns import select_hosts, split_pattern
from orchestrator.inventory.hosts import Inventory, load_inventory

pytestmark = pytest.mark.integration  # the inventory is read by Ansible's own code, once

FLEET = """
all:
  hosts:
    local: {ansible_connection: local}
  children:
    jetson:
      children:
        nano:
          hosts:
            nano01: {ansible_host: 10.0.0.1}
            nano02: {ansible_host: 10.0.0.2}
        orin:
          vars: {orchestrate_work_dir: /var/lib/orchestrate}
          hosts:
            orin01: {}
            orin02: {}
    lab_a:
      hosts:
        nano01: {}
        orin01: {}
    broken:
      hosts:
        xavier01: {ansible_port: not-a-port}
"""


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("patterns") / "fleet.yaml"
    path.write_text(FLEET)
    return path


@pytest.fixture(scope="module")
def inventory(fleet_file) -> Inventory:
    return load_inventory(str(fleet_file))


@pytest.mark.parametrize("pattern, expected", [
    (None, ["local", "nano01", "orin01", "xavier01", "nano02", "orin02"]),   # Ansible's order for 'all'
    ("all", ["local", "nano01", "orin01", "xavier01", "nano02", "orin02"]),
    ("*", ["local", "nano01", "orin01", "xavier01", "nano02", "orin02"]),
    ("jetson", ["nano01", "nano02", "orin01", "orin02"]),           # a group takes its children's hosts
    ("nano", ["nano01", "nano02"]),
    ("nano01:orin02", ["nano01", "orin02"]),
    ("orin02,nano01", ["orin02", "nano01"]),                         # the pattern's order, as Ansible's
    ("jetson:!orin01", ["nano01", "nano02", "orin02"]),
    ("jetson:&lab_a", ["nano01", "orin01"]),
    ("jetson:!lab_a", ["nano02", "orin02"]),
    ("!lab_a", ["local", "xavier01", "nano02", "orin02"]),           # only exclusions start from all
    ("&lab_a:nano", ["nano01"]),                                     # & and ! apply after the plain terms
    ("orin*", ["orin01", "orin02"]),
    ("*01", ["nano01", "orin01", "xavier01"]),
    ("~(nano|orin)0[2]", ["nano02", "orin02"]),
    ("~^lab", ["nano01", "orin01"]),                                 # a regex matches group names too
    ("~rin", []),                                                    # from the start of a name, as Ansible
    ("nano[0]", ["nano01"]),
    ("nano[-1]", ["nano02"]),
    ("jetson[1:2]", ["nano02", "orin01"]),                           # both ends included, as in Ansible
    ("jetson[2:]:local", ["orin01", "orin02", "local"]),
    ("broken", ["xavier01"]),                                        # a refused host is still selected: it fails
])
def test_patterns_select_as_ansible_does(pattern, expected, inventory, fleet_file):
    if not expected:
        with pytest.raises(UsageError, match="leaves no target"):
            select_hosts(inventory, pattern)
    else:
        assert select_hosts(inventory, pattern) == expected
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible"), pattern or "all", "-i", str(fleet_file),
                             "--list-hosts"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_HOME=str(fleet_file.parent)))
    assert [line.strip() for line in listed.stdout.splitlines()[1:]] == expected  # Ansible's own answer


def test_split_keeps_subscripts_whole():
    assert split_pattern("jetson[0:2]:!orin01") == ["jetson[0:2]", "!orin01"]
    assert split_pattern("a, b ,c") == ["a", "b", "c"]


@pytest.mark.parametrize("pattern, message", [
    ("nanoo1", "'nanoo1' is no host or group of "),
    ("jetson:!jetson", "leaves no target"),
    ("zz*", "leaves no target"),
    ("~(", "is not a regular expression"),
    ("jetson:!", "empty '!' or '&' term"),
    (":", "holds no pattern"),
])
def test_bad_patterns_are_one_line_errors(pattern, message, inventory):
    with pytest.raises(UsageError) as raised:
        select_hosts(inventory, pattern)
    assert message in raised.value.one_line() and "\n" not in raised.value.one_line()


NAMES = ["all", "jetson", "nano", "orin", "lab_a", "local", "nano01", "orin02", "xavier01", "*0?", "~2$"]


def _or_empty(inventory: Inventory, pattern: str) -> set[str]:
    try:
        return set(select_hosts(inventory, pattern))
    except UsageError as exc:
        assert "leaves no target" in exc.message
        return set()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_union_intersection_and_exclusion_are_set_algebra(inventory, a, b, c):
    def chosen(pattern: str) -> set[str]:
        return _or_empty(inventory, pattern)
    sa, sb, sc = chosen(a), chosen(b), chosen(c)
    assert chosen(f"{a}:{b}") == sa | sb
    assert chosen(f"{a}:&{b}") == sa & sb
    assert chosen(f"{a}:!{b}") == sa - sb
    assert chosen(f"{a}:{b}:&{c}") == (sa | sb) & sc
    assert chosen(f"{a}:!{c}:{b}") == (sa | sb) - sc


def test_inventory_knows_each_groups_children(inventory):
    assert inventory.children["jetson"] == ("nano", "orin")
    assert inventory.group_hosts("jetson") == ["nano01", "nano02", "orin01", "orin02"]
    assert "xavier01" in inventory.broken  # its port is no number: Ansible cannot read it


SAME_NAMES = """
all:
  hosts:
    foo: {}
  children:
    g:
      hosts: {a: {}, b: {}, c: {}, d: {}, e: {}}
    foo:
      hosts: {a: {}, b: {}}
"""


@pytest.mark.parametrize("pattern", ["all:!foo", "all:&foo", "foo", "foo:g[0]", "g[2:0]", "g[0-1]", "g[-1]", "g[1:]",
                                     "g[0]:foo[1]", "~[fg]", "*o"])
def test_a_host_and_a_group_of_one_name_and_subscripts_as_ansible_takes_them(tmp_path_factory, pattern):
    path = tmp_path_factory.mktemp("same-names") / "inventory.yml"
    path.write_text(SAME_NAMES)
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible"), pattern, "-i", str(path), "--list-hosts"],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_HOME=str(path.parent)))
    assert listed.returncode == 0, listed.stderr
    assert select_hosts(load_inventory(str(path)), pattern) == \
        [line.strip() for line in listed.stdout.splitlines()[1:]]


def test_an_index_past_a_group_s_hosts_is_an_error_as_in_ansible(inventory):
    with pytest.raises(UsageError, match=r"'nano\[5\]' has no host at 5 \(nano has 2\)"):
        select_hosts(inventory, "nano[5]")
