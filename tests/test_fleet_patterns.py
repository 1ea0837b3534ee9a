"""--limit: Ansible's host patterns over the inventory's groups (children included), pure."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.errors import UsageError
from orchestrator.fleet.patterns import select_hosts, split_pattern
from orchestrator.inventory.hosts import parse_inventory

INVENTORY = parse_inventory("""
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
""", "fleet.yaml")


@pytest.mark.parametrize("pattern, expected", [
    (None, ["local", "nano01", "nano02", "orin01", "orin02", "xavier01"]),
    ("all", ["local", "nano01", "nano02", "orin01", "orin02", "xavier01"]),
    ("*", ["local", "nano01", "nano02", "orin01", "orin02", "xavier01"]),
    ("jetson", ["nano01", "nano02", "orin01", "orin02"]),           # a group takes its children's hosts
    ("nano", ["nano01", "nano02"]),
    ("nano01:orin02", ["nano01", "orin02"]),
    ("orin02,nano01", ["nano01", "orin02"]),                         # inventory order, whatever the pattern's
    ("jetson:!orin01", ["nano01", "nano02", "orin02"]),
    ("jetson:&lab_a", ["nano01", "orin01"]),
    ("jetson:!lab_a", ["nano02", "orin02"]),
    ("!lab_a", ["local", "nano02", "orin02", "xavier01"]),           # only exclusions start from all
    ("&lab_a:nano", ["nano01"]),                                     # & and ! apply after the plain terms
    ("orin*", ["orin01", "orin02"]),
    ("*01", ["nano01", "orin01", "xavier01"]),
    ("~(nano|orin)0[2]", ["nano02", "orin02"]),
    ("~^lab", ["nano01", "orin01"]),                                 # a regex matches group names too
    ("nano[0]", ["nano01"]),
    ("nano[-1]", ["nano02"]),
    ("jetson[1:2]", ["nano02", "orin01"]),                           # both ends included, as in Ansible
    ("jetson[2:]:local", ["local", "orin01", "orin02"]),
    ("broken", ["xavier01"]),                                        # a broken host is still selected: it fails
])
def test_patterns_select_as_ansible_does(pattern, expected):
    assert select_hosts(INVENTORY, pattern) == expected


def test_split_keeps_subscripts_whole():
    assert split_pattern("jetson[0:2]:!orin01") == ["jetson[0:2]", "!orin01"]
    assert split_pattern("a, b ,c") == ["a", "b", "c"]


@pytest.mark.parametrize("pattern, message", [
    ("nanoo1", "'nanoo1' is no host or group of fleet.yaml"),
    ("jetson:!jetson", "leaves no target"),
    ("zz*", "leaves no target"),
    ("~(", "is not a regular expression"),
    ("jetson:!", "empty '!' or '&' term"),
    (":", "holds no pattern"),
])
def test_bad_patterns_are_one_line_errors(pattern, message):
    with pytest.raises(UsageError) as raised:
        select_hosts(INVENTORY, pattern)
    assert message in raised.value.one_line() and "\n" not in raised.value.one_line()


NAMES = ["all", "jetson", "nano", "orin", "lab_a", "local", "nano01", "orin02", "xavier01", "*0?", "~2$"]


def _or_empty(pattern: str) -> set[str]:
    try:
        return set(select_hosts(INVENTORY, pattern))
    except UsageError as exc:
        assert "leaves no target" in exc.message
        return set()


@given(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_union_intersection_and_exclusion_are_set_algebra(a, b, c):
    sa, sb, sc = _or_empty(a), _or_empty(b), _or_empty(c)
    assert _or_empty(f"{a}:{b}") == sa | sb
    assert _or_empty(f"{a}:&{b}") == sa & sb
    assert _or_empty(f"{a}:!{b}") == sa - sb
    assert _or_empty(f"{a}:{b}:&{c}") == (sa | sb) & sc
    assert _or_empty(f"{a}:!{c}:{b}") == (sa | sb) - sc


def test_inventory_knows_each_groups_children():
    assert INVENTORY.children["jetson"] == ("nano", "orin")
    assert INVENTORY.group_hosts("all") == ["local", "nano01", "nano02", "orin01", "orin02", "xavier01"]
    assert "xavier01" in INVENTORY.broken
