"""``orchestrate targets``: the hosts as a play would use them, their groups, and what is refused, as one
document (pure: an Inventory in, JSON-ready values out). Secrets are masked."""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .host import DEFAULT_PORT, DEFAULT_USER
from .hosts import Inventory

VALUES = ("address", "port", "user", "key_file", "python", "become", "become_user", "become_method", "connection")


def targets_document(inventory: Inventory, chosen: Collection[str] | None = None) -> dict[str, Any]:
    """{"hosts": {NAME: {groups, the connection values, ssh_args, vars}}, "groups": {NAME: [hosts]},
    "refused": {NAME: reason}, "defaulted": {NAME: [values left to ssh's config, else orchestrate's defaults]}}."""
    names = [n for n in inventory.names if chosen is None or n in chosen]
    hosts: dict[str, Any] = {}
    defaulted: dict[str, list[str]] = {}
    for name in names:
        values = inventory.values.get(name)
        if values is None:  # the built-in 'local'
            host = inventory.hosts[name]
            hosts[name] = {"groups": list(host.groups), **{v: getattr(host, v) for v in VALUES}, "ssh_args": [],
                           "vars": {}}
            continue
        host = values.host
        shown = {v: getattr(host, v) for v in VALUES}
        if host.connection != "local":  # what ssh would use where the inventory leaves it to ssh's config
            shown.update(address=host.address or name, port=host.port or DEFAULT_PORT, user=host.user or DEFAULT_USER)
        hosts[name] = {"groups": list(host.groups), **shown, "ssh_args": list(values.ssh_args),
                       "vars": dict(inventory.variables[name])}  # every host the reader listed has its own
        if values.defaulted:
            defaulted[name] = list(values.defaulted)
    groups = {group: [h for h in inventory.group_hosts(group) if h in hosts]
              for group in dict.fromkeys([*inventory.groups, *inventory.children])}
    groups = {group: found for group, found in groups.items() if found}  # as ansible-inventory: no empty group
    refused = {name: error.one_line() for name, error in inventory.broken.items() if name in hosts}
    return {"source": inventory.source, "hosts": hosts, "groups": groups, "refused": refused, "defaulted": defaulted}
