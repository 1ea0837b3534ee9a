"""Ansible-style YAML inventory -> validated, immutable hosts.

Format: ``all: {hosts: {...}, vars: {...}, children: {group: {hosts, vars, children}}}``. Variables
flow from ``all`` down through groups to the host (the closer one wins). Ansible's connection keys
are accepted, plus orchestrate's own ``orchestrate_*`` keys. An unknown key or a wrong type is an
error naming the file, the host (or group) and the key.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InventoryError

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
    "orchestrate_python": ("python", _str),
    "orchestrate_nsys": ("nsys", _str),
    "orchestrate_display": ("display", _str),
    "orchestrate_work_dir": ("work_dir", _str),
    "orchestrate_xvfb": ("xvfb", _choice("auto", "always", "never")),
    "orchestrate_connect_timeout": ("connect_timeout", _seconds),
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
    nsys: str | None = None
    display: str | None = None
    work_dir: str = DEFAULT_WORK_DIR
    xvfb: str = "auto"
    connect_timeout: float = 10.0
    groups: tuple[str, ...] = field(default=())

    @property
    def is_local(self) -> bool:
        return self.connection == "local"


@dataclass(frozen=True)
class Inventory:
    source: str
    hosts: Mapping[str, Host]
    groups: Mapping[str, tuple[str, ...]]

    def host(self, name: str) -> Host:
        if name in self.hosts:
            return self.hosts[name]
        if name == LOCAL_TARGET:
            return Host(name=LOCAL_TARGET, connection="local")
        known = ", ".join(sorted(self.hosts)) or "none"
        raise InventoryError(f"no target '{name}' in {self.source} (known: {known})",
                             "add it under all.hosts or pick one of those")


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
        if key not in HOST_KEYS:
            raise InventoryError(f"{source}: {owner}: unknown key '{key}'",
                                 "known keys: " + ", ".join(sorted(HOST_KEYS)))
        field_name, convert = HOST_KEYS[key]
        try:
            checked[field_name] = convert(value)
        except TypeError as exc:
            raise InventoryError(f"{source}: {owner}: '{key}' must be {exc}, not {value!r}",
                                 f"fix '{key}' for {owner}") from None
    return checked


def _walk_group(name: str, body: Any, inherited: dict[str, Any], source: str,
                host_vars: dict[str, dict[str, Any]], host_groups: dict[str, list[str]],
                groups: dict[str, list[str]], chain: tuple[str, ...]) -> None:
    if name in chain:
        raise InventoryError(f"{source}: group '{name}' contains itself", "remove the loop in 'children'")
    body = _mapping(body, f"group '{name}'", source)
    unknown = set(body) - {"hosts", "vars", "children"}
    if unknown:
        raise InventoryError(f"{source}: group '{name}': unknown key '{sorted(unknown)[0]}'",
                             "a group holds only hosts, vars and children")
    merged = {**inherited, **_check_vars(_mapping(body.get("vars"), f"group '{name}' vars", source),
                                         f"group '{name}'", source)}
    members = groups.setdefault(name, [])
    for host, values in _mapping(body.get("hosts"), f"group '{name}' hosts", source).items():
        host = str(host)
        own = _check_vars(_mapping(values, f"host '{host}'", source), f"host '{host}'", source)
        previous = host_vars.get(host, {})
        # A host listed in several groups: the deeper group's vars win, host vars win over all.
        host_vars[host] = {**previous, **merged, **own}
        if name != "all":
            host_groups.setdefault(host, []).append(name)
        else:
            host_groups.setdefault(host, [])
        if host not in members:
            members.append(host)
    for child, child_body in _mapping(body.get("children"), f"group '{name}' children", source).items():
        _walk_group(str(child), child_body, merged, source, host_vars, host_groups, groups, chain + (name,))


def parse_inventory(text: str, source: str) -> Inventory:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise InventoryError(f"{source}:{where} is not valid YAML", "fix the syntax there") from None
    data = _mapping(data, "the top level", source)
    host_vars: dict[str, dict[str, Any]] = {}
    host_groups: dict[str, list[str]] = {}
    groups: dict[str, list[str]] = {}
    top_groups = data if "all" not in data else {"all": data["all"], **{k: v for k, v in data.items() if k != "all"}}
    for name, body in top_groups.items():
        _walk_group(str(name), body, {}, source, host_vars, host_groups, groups, ())
    hosts = {name: Host(name=name, groups=tuple(host_groups.get(name, ())), **values)
             for name, values in host_vars.items()}
    return Inventory(source=source, hosts=hosts, groups={k: tuple(v) for k, v in groups.items()})


def load_inventory(path: str | None) -> Inventory:
    """Load the given file, else $ORCHESTRATE_INVENTORY, else ./inventory.yaml, else the embedded default."""
    candidate = path or os.environ.get("ORCHESTRATE_INVENTORY")
    if candidate is None and Path("inventory.yaml").is_file():
        candidate = "inventory.yaml"
    if candidate is None:
        return parse_inventory(EMBEDDED_INVENTORY, "<embedded default inventory>")
    try:
        text = Path(candidate).read_text()
    except OSError as exc:
        raise InventoryError(f"cannot read inventory {candidate}: {exc.strerror}",
                             "pass an existing file with --inventory") from None
    return parse_inventory(text, candidate)
