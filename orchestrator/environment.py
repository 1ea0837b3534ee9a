"""What orchestrate reads from its own environment that must not stay there: sudo's password for boards with
ansible_become. Light on purpose: main() takes it before any command loads (or starts) anything."""
from __future__ import annotations

import os

BECOME_PASSWORD_VARIABLE = "ORCHESTRATE_BECOME_PASSWORD"
# Ansible's names for sudo's password in the environment, which its become plugin reads too: taken the same way
ANSIBLE_BECOME_PASSWORD_VARIABLES = ("ANSIBLE_BECOME_PASS", "ANSIBLE_SUDO_PASS")


def take_become_password() -> str | None:
    """ORCHESTRATE_BECOME_PASSWORD's value (else ANSIBLE_BECOME_PASS's, else ANSIBLE_SUDO_PASS's), each taken out of
    this process's environment before anything starts: out of os.environ, so that no child inherits it (git, ssh,
    Ansible's reader, a local agent, nsys, the app), and out of the block the kernel shows as /proc/<pid>/environ
    (overwritten in place), where a profiler running beside a local run would read it and keep it in its report."""
    found = None
    for name in (BECOME_PASSWORD_VARIABLE, *ANSIBLE_BECOME_PASSWORD_VARIABLES):
        value = os.environ.pop(name, None)
        if value:
            _blank_initial_variable(name)
            found = found or value
    return found


def take_secret(name: str) -> str | None:
    """A secret's variable taken out of this process's environment as take_become_password takes its own."""
    value = os.environ.pop(name, None)
    if value:
        _blank_initial_variable(name)
    return value


def _blank_initial_variable(name: str) -> None:
    key = name.encode() + b"="
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        env_start = int(fields[47])  # field 50 of proc(5); the list starts at field 3
        with open("/proc/self/environ", "rb") as environ:
            block = environ.read()
        offset = 0
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            for entry in block.split(b"\0"):
                if entry.startswith(key):
                    memory.seek(env_start + offset + len(key))
                    memory.write(b"*" * (len(entry) - len(key)))
                offset += len(entry) + 1
    except (OSError, ValueError, IndexError):
        pass  # not Linux, or a kernel without these files: os.environ no longer has it either way
