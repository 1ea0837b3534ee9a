"""An Ansible inventory as a play would use it -> validated, immutable hosts.

Ansible's own code reads the sources (``ansible_source``: YAML, INI, folders with group_vars/ and host_vars/,
ranges, inventory plugins and scripts, ansible.cfg and ANSIBLE_* settings, Ansible's precedence and templates);
``play_values`` turns each host's values into a Host, or into the one line naming everything orchestrate cannot
honour for it. The target ``local`` is this machine and reads no inventory (it starts no Ansible).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InventoryError, bounded
from .ansible_source import VaultOptions, read_sources
from .host import DEFAULT_WORK_DIR, Host
from .play_values import AnsibleHost, PlayValues, masked, play_values
from .reader_document import ReaderDocument

__all__ = ["DEFAULT_WORK_DIR", "Host", "Inventory", "LOCAL_TARGET", "VaultOptions", "find_host", "load_inventory",
           "local_host", "play_inventory"]

LOCAL_TARGET = "local"
EMBEDDED_SOURCE = "<embedded default inventory>"


def local_host() -> Host:
    """This machine, with the Python orchestrate runs on (and the packages installed with it)."""
    return Host(name=LOCAL_TARGET, connection="local", python=sys.executable)


@dataclass(frozen=True)
class Inventory:
    """Hosts that can be used, and the error of each that cannot: one refused host never hides the others."""

    source: str
    hosts: Mapping[str, Host]
    groups: Mapping[str, tuple[str, ...]]   # group -> the hosts listed directly under it
    broken: Mapping[str, InventoryError] = field(default_factory=dict)
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # group -> its child groups
    order: tuple[str, ...] = ()                                             # every host, as Ansible read them
    members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # group -> its hosts, children's too
    values: Mapping[str, PlayValues] = field(default_factory=dict)
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # host -> its variables, masked
    warnings: tuple[str, ...] = ()                                           # what Ansible warned of as it read

    def group_hosts(self, group: str) -> list[str]:
        """Every host of a group, its child groups' included, in the order Ansible's patterns take them."""
        if group in self.members:
            return list(self.members[group])
        found: dict[str, None] = {}
        todo, seen = [group], set()
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            found.update(dict.fromkeys(self.groups.get(name, ())))
            todo.extend(self.children.get(name, ()))
        order = {host: i for i, host in enumerate(self.names)}
        return sorted(found, key=lambda host: order.get(host, len(order)))

    @property
    def names(self) -> list[str]:
        """Every host the sources name, usable or not, in the order of Ansible's pattern 'all'."""
        return list(dict.fromkeys([*self.members.get("all", ()), *self.order, *self.hosts, *self.broken]))

    def host(self, name: str) -> Host:
        if name in self.broken:
            raise self.broken[name]
        if name in self.hosts:
            return self.hosts[name]
        if name == LOCAL_TARGET:
            return local_host()
        known = ", ".join(self.names) or "none"
        raise InventoryError(f"no target '{name}' in {self.source} (known: {bounded(known, 300)})",
                             "add it to the inventory or pick one of those")


def inventory_from_document(document: Mapping[str, Any], source: str) -> Inventory:
    """The Ansible reader's document -> an Inventory (pure)."""
    hosts: dict[str, Host] = {}
    broken: dict[str, InventoryError] = {}
    values: dict[str, PlayValues] = {}
    variables: dict[str, Mapping[str, Any]] = {}
    found = ReaderDocument.from_wire(document)
    for name, record in found.hosts.items():
        parsed = AnsibleHost.from_document(name, record, source)
        variables[name] = {key: masked(key, value) for key, value in parsed.vars.items()}
        values[name] = play_values(parsed)
        error = values[name].error()
        if error is not None:
            broken[name] = error
        else:
            hosts[name] = values[name].host
    groups = {name: tuple(g.hosts) for name, g in found.groups.items()}
    children = {name: tuple(g.children) for name, g in found.groups.items() if g.children}
    members = {name: tuple(g.members) for name, g in found.groups.items() if g.members is not None}
    return Inventory(source=source, hosts=hosts, groups=groups, broken=broken, children=children,
                     order=tuple(found.host_order or found.hosts), members=members,
                     values=values, variables=variables, warnings=tuple(found.warnings))


def play_inventory(name: str, record: Mapping[str, Any]) -> Inventory:
    """The one host a play resolved, from the record ``orchestrate_ansible.record`` makes of its values (as the
    reader's document holds each host): read, and refused, as an inventory's host."""
    source = str(record.get("source") or "the play")
    return inventory_from_document({"hosts": {name: record}, "host_order": [name],
                                    "groups": {"all": {"hosts": [name], "children": [], "members": [name]}}}, source)


def inventory_sources(given: str | None) -> list[str]:
    """The given sources, else $ORCHESTRATE_INVENTORY, else ./inventory.yaml; none: the embedded default. Several
    sources are joined by commas (--inventory given more than once) when each is a file or folder; a comma in
    anything else is Ansible's own host list ('nano01,nano02,')."""
    candidate = given or os.environ.get("ORCHESTRATE_INVENTORY")
    if candidate is None and Path("inventory.yaml").is_file():
        candidate = "inventory.yaml"
    if candidate is None:
        return []
    pieces = [piece for piece in candidate.split(",") if piece]
    if len(pieces) > 1 and all(Path(piece).exists() for piece in pieces):
        return pieces
    if "," not in candidate and not Path(candidate).exists():
        raise InventoryError(f"cannot read inventory {candidate}: no such file or folder",
                             "pass an existing file or folder with --inventory")
    return [candidate]


def load_inventory(path: str | None, vault: VaultOptions | None = None) -> Inventory:
    """The inventory as Ansible reads it (see inventory_sources for which); without one, only 'local'."""
    sources = inventory_sources(path)
    if not sources:
        local = local_host()
        return Inventory(source=EMBEDDED_SOURCE, hosts={LOCAL_TARGET: local}, groups={"all": (LOCAL_TARGET,)},
                         order=(LOCAL_TARGET,))
    return inventory_from_document(read_sources(sources, vault), ", ".join(sources))


def find_host(path: str | None, name: str, vault: VaultOptions | None = None) -> Host:
    """One target: 'local' is this machine without reading any inventory; any other host as Ansible reads it."""
    if name == LOCAL_TARGET:
        return local_host()
    return load_inventory(path, vault).host(name)
