"""Ansible-style YAML inventory -> validated, immutable hosts.

Format: ``all: {hosts: {...}, vars: {...}, children: {group: {hosts, vars, children}}}``. Variables
flow from ``all`` down through groups to the host (the closer one wins). Ansible's connection keys
are accepted, plus orchestrate's own ``orchestrate_*`` keys. An unknown key or a wrong type is an
error naming the file, the host (or group) and the key.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..environment import BECOME_PASSWORD_VARIABLE
from ..errors import InventoryError
from ..yaml_files import parse_yaml

DEFAULT_WORK_DIR = "~/.cache/orchestrate"
LOCAL_TARGET = "local"
EMBEDDED_INVENTORY = f"""\
all:
  hosts:
    {LOCAL_TARGET}:
      ansible_connection: local
"""


def _str(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise TypeError("a string")


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise TypeError("a port number")
    port = int(value)
    if not 0 < port < 65536:
        raise TypeError("a port number between 1 and 65535")
    return port


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TypeError("a positive number of seconds")
    return float(value)


def _bool(value: Any) -> bool:
    """YAML's booleans, and the words Ansible reads as them."""
    if isinstance(value, bool):
        return value
    words = {"yes": True, "true": True, "on": True, "1": True, "no": False, "false": False, "off": False, "0": False}
    if isinstance(value, (str, int)) and str(value).lower() in words:
        return words[str(value).lower()]
    raise TypeError("true or false")


def _folders(value: Any) -> tuple[str, ...]:
    """One folder or a list of them."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
        raise TypeError("a folder or a list of folders")
    return tuple(values)


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise TypeError("one of " + ", ".join(allowed))
        return str(value)
    return check


# key -> (Host field, converter)
HOST_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "ansible_host": ("address", _str),
    "ansible_port": ("port", _port),
    "ansible_user": ("user", _str),
    "ansible_ssh_private_key_file": ("key_file", _str),
    "ansible_connection": ("connection", _choice("ssh", "paramiko", "local")),
    "ansible_python_interpreter": ("python", _str),
    "ansible_become": ("become", _bool),
    "ansible_become_method": ("become_method", _choice("sudo")),
    "ansible_become_user": ("become_user", _str),
    "orchestrate_python": ("python", _str),
    "orchestrate_nsys": ("nsys", _str),
    "orchestrate_display": ("display", _str),
    "orchestrate_work_dir": ("work_dir", _str),
    "orchestrate_xvfb": ("xvfb", _choice("auto", "always", "never")),
    "orchestrate_connect_timeout": ("connect_timeout", _seconds),
    "orchestrate_symbols": ("symbols", _folders),
    "orchestrate_board_root": ("board_root", _str),
}


@dataclass(frozen=True)
class Host:
    name: str
    address: str | None = None
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    connection: str = "ssh"
    python: str = "python3"
    become: bool = False            # log in as user, work as become_user through sudo (Ansible's become)
    become_method: str = "sudo"
    become_user: str = "root"
    nsys: str | None = None
    display: str | None = None
    work_dir: str = DEFAULT_WORK_DIR
    xvfb: str = "auto"
    connect_timeout: float = 10.0
    symbols: tuple[str, ...] = ()   # host folders with unstripped copies of the board's libraries
    board_root: str | None = None   # where the agent reads the board's files and tools (a recorded board's copy)
    groups: tuple[str, ...] = field(default=())

    @property
    def is_local(self) -> bool:
        return self.connection == "local"


def resolved_variables(host: Host) -> dict[str, Any]:
    """The inventory keys as they resolved for this host (group vars, then host vars), defaults left out."""
    defaults = Host(name=host.name, groups=host.groups)
    found: dict[str, Any] = {}
    for key, (name, _) in HOST_KEYS.items():
        value = getattr(host, name)
        if value != getattr(defaults, name) and name not in {HOST_KEYS[k][0] for k in found}:
            found[key] = list(value) if isinstance(value, tuple) else value
    return found


@dataclass(frozen=True)
class Inventory:
    """Hosts that loaded, and the error of each that did not: one broken entry never hides the others."""

    source: str
    hosts: Mapping[str, Host]
    groups: Mapping[str, tuple[str, ...]]   # group -> the hosts listed directly under it
    broken: Mapping[str, InventoryError] = field(default_factory=dict)
    broken_groups: Mapping[str, InventoryError] = field(default_factory=dict)
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # group -> its child groups

    def group_hosts(self, group: str) -> list[str]:
        """Every host of a group, its child groups' included (as Ansible's patterns see a group), in
        inventory order."""
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
        """Every host the file names, usable or not, in inventory order."""
        return list(dict.fromkeys([*self.hosts, *self.broken]))

    def host(self, name: str) -> Host:
        if name in self.broken:
            raise self.broken[name]
        if name in self.hosts:
            return self.hosts[name]
        if name == LOCAL_TARGET:
            return Host(name=LOCAL_TARGET, connection="local", python=sys.executable)
        known = ", ".join(sorted(self.hosts)) or "none"
        unread = "".join(f"; group '{g}' could not be read: {e.message}" for g, e in sorted(self.broken_groups.items()))
        raise InventoryError(f"no target '{name}' in {self.source} (known: {known}{unread})",
                             "add it under all.hosts or pick one of those")


# Bounds for hostile files: YAML aliases can make a small file describe billions of groups.
MAX_INVENTORY_BYTES = 4 * 2**20
MAX_GROUP_VISITS = 20_000
PASSWORD_KEYS = {"ansible_password", "ansible_ssh_pass"}
BECOME_PASSWORD_KEYS = {"ansible_become_pass", "ansible_become_password", "ansible_sudo_pass"}


def _mapping(value: Any, where: str, source: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InventoryError(f"{source}: {where} must be a mapping, not {type(value).__name__}",
                             "see the inventory format in the README")
    return value


def _check_vars(values: dict, owner: str, source: str) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    for key, value in values.items():
        key = str(key)
        if key in PASSWORD_KEYS:  # never echo the value: it is a password
            raise InventoryError(f"{source}: {owner}: '{key}' is not supported: orchestrate logs in by key only "
                                 "and never stores a password", f"remove '{key}' and set up an SSH key (ssh-copy-id)")
        if key in BECOME_PASSWORD_KEYS:
            raise InventoryError(f"{source}: {owner}: '{key}' is refused: a password is never kept in a file",
                                 f"remove '{key}'; give it with --ask-become-pass or {BECOME_PASSWORD_VARIABLE}")
        if key not in HOST_KEYS:
            raise InventoryError(f"{source}: {owner}: unknown key '{_short(key)}'",
                                 "known keys: " + ", ".join(sorted(HOST_KEYS)))
        field_name, convert = HOST_KEYS[key]
        try:
            checked[field_name] = convert(value)
        except TypeError as exc:
            raise InventoryError(f"{source}: {owner}: '{key}' must be {exc}, not {_short(repr(value))}",
                                 f"fix '{key}' for {owner}") from None
    return checked


def _short(text: str, limit: int = 80) -> str:
    """One line, bounded: values from a hostile file go into error messages."""
    flat = text.replace("\n", "\\n").replace("\r", "\\r")
    return flat if len(flat) <= limit else flat[:limit] + "..."


class _Walk:
    """Variables flow down the groups; an error stays with the host or group it belongs to."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.host_vars: dict[str, dict[str, Any]] = {}
        self.host_groups: dict[str, list[str]] = {}
        self.groups: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.broken: dict[str, InventoryError] = {}
        self.broken_groups: dict[str, InventoryError] = {}
        self.visits = 0

    def group(self, name: str, body: Any, inherited: dict[str, Any], inherited_error: InventoryError | None,
              chain: tuple[str, ...]) -> None:
        self.visits += 1
        if self.visits > MAX_GROUP_VISITS:
            raise InventoryError(f"{self.source}: more than {MAX_GROUP_VISITS} group entries (YAML aliases?)",
                                 "list each group once; anchors that repeat groups multiply them")
        if name in chain:
            raise InventoryError(f"{self.source}: group '{_short(name)}' contains itself",
                                 "remove the loop in 'children'")
        try:
            body = _mapping(body, f"group '{_short(name)}'", self.source)
            unknown = set(map(str, body)) - {"hosts", "vars", "children"}
            if unknown:
                raise InventoryError(f"{self.source}: group '{_short(name)}': unknown key "
                                     f"'{_short(sorted(unknown)[0])}'", "a group holds only hosts, vars and children")
            hosts = _mapping(body.get("hosts"), f"group '{_short(name)}' hosts", self.source)
            children = _mapping(body.get("children"), f"group '{_short(name)}' children", self.source)
        except InventoryError as exc:
            self.broken_groups[name] = exc
            return
        error = inherited_error
        merged = dict(inherited)
        try:
            merged.update(_check_vars(_mapping(body.get("vars"), f"group '{_short(name)}' vars", self.source),
                                      f"group '{_short(name)}'", self.source))
        except InventoryError as exc:
            error = error or exc
        members = self.groups.setdefault(name, [])
        for host, values in hosts.items():
            self.host(str(host), values, name, merged, error)
            if str(host) not in members:
                members.append(str(host))
        for child, child_body in children.items():
            below = self.children.setdefault(name, [])
            if str(child) not in below:
                below.append(str(child))
            self.group(str(child), child_body, merged, error, chain + (name,))

    def host(self, host: str, values: Any, group: str, merged: dict[str, Any], error: InventoryError | None) -> None:
        self.host_groups.setdefault(host, [])
        if group != "all":
            self.host_groups[host].append(group)
        try:
            own = _check_vars(_mapping(values, f"host '{_short(host)}'", self.source), f"host '{_short(host)}'",
                              self.source)
        except InventoryError as exc:
            self.broken.setdefault(host, exc)
            return
        if error is not None:
            self.broken.setdefault(host, error)
        # A host listed in several groups: the deeper group's vars win, host vars win over all.
        self.host_vars[host] = {**self.host_vars.get(host, {}), **merged, **own}


def parse_inventory(text: str, source: str) -> Inventory:
    data = _mapping(parse_yaml(text, source, InventoryError), "the top level", source)
    walk = _Walk(source)
    top_groups = data if "all" not in data else {"all": data["all"], **{k: v for k, v in data.items() if k != "all"}}
    try:
        for name, body in top_groups.items():
            walk.group(str(name), body, {}, None, ())
    except RecursionError:
        raise InventoryError(f"{source}: groups are nested too deeply", "an inventory is a few levels of groups") \
            from None
    hosts = {name: Host(name=name, groups=tuple(walk.host_groups.get(name, ())), **_local_python(values))
             for name, values in walk.host_vars.items() if name not in walk.broken}
    return Inventory(source=source, hosts=hosts, groups={k: tuple(v) for k, v in walk.groups.items()},
                     broken=walk.broken, broken_groups=walk.broken_groups,
                     children={k: tuple(v) for k, v in walk.children.items()})


def _local_python(values: dict[str, Any]) -> dict[str, Any]:
    """A local target runs the agent and '{python}' apps with the Python orchestrate runs on (and the
    packages installed with it), unless the inventory names another, or the work runs as a user other than
    root (ansible_become_user), who may not be able to read it: then the system's python3."""
    if values.get("connection") == "local" and "python" not in values:
        other_user = values.get("become") and values.get("become_user", "root") != "root"
        return {**values, "python": "python3" if other_user else sys.executable}
    return values


def load_inventory(path: str | None) -> Inventory:
    """Load the given file, else $ORCHESTRATE_INVENTORY, else ./inventory.yaml, else the embedded default."""
    candidate = path or os.environ.get("ORCHESTRATE_INVENTORY")
    if candidate is None and Path("inventory.yaml").is_file():
        candidate = "inventory.yaml"
    if candidate is None:
        return parse_inventory(EMBEDDED_INVENTORY, "<embedded default inventory>")
    try:
        with open(candidate, "rb") as handle:
            raw = handle.read(MAX_INVENTORY_BYTES + 1)
    except OSError as exc:
        raise InventoryError(f"cannot read inventory {candidate}: {exc.strerror}",
                             "pass an existing file with --inventory") from None
    if len(raw) > MAX_INVENTORY_BYTES:
        raise InventoryError(f"{candidate} is larger than {MAX_INVENTORY_BYTES // 2**20} MB: not an inventory",
                             "pass the inventory file with --inventory")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InventoryError(f"{candidate} is not UTF-8 text (byte {exc.start})",
                             "save the inventory as UTF-8") from None
    return parse_inventory(text, candidate)
