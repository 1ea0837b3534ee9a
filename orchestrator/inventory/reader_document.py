"""The document the inventory reader prints (ansible_source runs it: Ansible's own reading, as a program of its own):
each host's values as a play would resolve them before it connects, the groups, the hosts' order, Ansible's
warnings. Read as every document is (documents/record.py): a value of the wrong kind reads as missing, a key it does
not know is kept."""
from __future__ import annotations

from typing import Any

from ..documents.record import Record


class HostValues(Record):
    """One host: its groups, its variables as Ansible gives them, the connection plugins' options resolved, where
    each came from, its orchestrate_* settings rendered, how its secrets are kept, or what Ansible could not
    render for it."""
    groups: list[str] = []
    vars: dict[str, Any] = {}           # the host's own values, as given: outside input
    resolved: dict[str, Any] = {}       # each plugin option's value, of whatever kind Ansible gives it
    origins: dict[str, str] = {}        # option -> 'var: NAME', 'env: NAME', a file, or 'default'
    files: dict[str, str] = {}          # variable -> the file it comes from
    settings: dict[str, Any] = {}       # its orchestrate_* variables, rendered (their own kinds)
    secrets: dict[str, str] = {}        # password variable -> how it is kept
    source: str | None = None           # the inventory source that lists it (None: the inventory's)
    error: str | None = None


class GroupMembers(Record):
    hosts: list[str] = []               # the group's own hosts
    children: list[str] = []            # its child groups
    members: list[str] | None = None    # every host in it and its children, as Ansible lists them


class ReaderDocument(Record):
    hosts: dict[str, HostValues] = {}
    groups: dict[str, GroupMembers] = {}
    host_order: list[str] = []          # the hosts in the order Ansible lists them (empty: the hosts' own order)
    warnings: list[str] = []
