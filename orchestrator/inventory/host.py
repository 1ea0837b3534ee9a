"""A target as orchestrate connects to it: the values a play would use (read by Ansible, see ``play_values``) and
orchestrate's own ``orchestrate_*`` settings, validated, immutable."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_WORK_DIR = "~/.cache/orchestrate"
# where neither the inventory nor the ssh config names them, orchestrate connects as root to port 22
DEFAULT_USER = "root"
DEFAULT_PORT = 22


def _str(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise TypeError("a string")


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TypeError("a positive number of seconds")
    return float(value)


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


# orchestrate's own inventory variables: name -> (Host field, converter); Ansible's own are read by Ansible
HOST_SETTINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
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
    key_file: str | None = None     # the key ssh tries first
    other_key_files: tuple[str, ...] = ()
    connection: str = "ssh"
    python: str = "python3"
    become: bool = False            # log in as user, work as become_user through sudo (Ansible's become)
    become_method: str = "sudo"
    become_user: str = "root"
    become_password: str | None = field(default=None, repr=False)  # a vaulted ansible_become_password, opened
    proxy_jump: str | None = None      # ssh's ProxyJump, from the play's ssh arguments
    proxy_command: str | None = None   # ssh's ProxyCommand, likewise
    known_hosts: str | None = None     # ssh's UserKnownHostsFile, likewise
    ssh_config: str | None = None      # ssh's -F, likewise
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
