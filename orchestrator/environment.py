"""What orchestrate reads from its own environment that must not stay there: sudo's password for boards with
ansible_become. Light on purpose: main() takes it before any command loads (or starts) anything."""
from __future__ import annotations

import os

BECOME_PASSWORD_VARIABLE = "ORCHESTRATE_BECOME_PASSWORD"


def take_become_password() -> str | None:
    """ORCHESTRATE_BECOME_PASSWORD's value, taken out of this process's environment before anything starts:
    out of os.environ, so that no child inherits it (git, ssh, a local agent, nsys, the app), and out of the
    block the kernel shows as /proc/<pid>/environ (overwritten in place), where a profiler running beside a
    local run would read it and keep it in its report."""
    value = os.environ.pop(BECOME_PASSWORD_VARIABLE, None)
    if value:
        _blank_initial_variable(BECOME_PASSWORD_VARIABLE)
    return value or None


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
