"""Reading inventory sources with Ansible's own code: ``orchestrate_ansible.inventory`` (a program of its own,
licensed as Ansible is) run with this Python, its JSON document read back. A vault password reaches it through
an inherited pipe, never its command line or a file."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InventoryError, bounded

READER = "orchestrate_ansible.inventory"
# a script inventory may ask a service for its hosts; past this the source is given up
READ_TIMEOUT_S = 300


@dataclass(frozen=True)
class VaultOptions:
    """How Ansible opens vaulted values: files it reads (--vault-password-file), or a password typed here."""

    password_files: tuple[str, ...] = ()
    password: str | None = field(default=None, repr=False)


def read_sources(sources: Sequence[str], vault: VaultOptions | None = None) -> dict[str, Any]:
    """Ansible's reading of the sources: hosts with their groups, variables and resolved connection values."""
    vault = vault or VaultOptions()
    command = [sys.executable, "-m", READER]
    for source in sources:  # a file or folder by its whole path, as Ansible names the files it read
        command += ["-i", os.path.abspath(source) if os.path.exists(source) else source]
    for path in vault.password_files:
        command += ["--vault-password-file", path]
    env = dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    pass_fds: tuple[int, ...] = ()
    reading = None
    if vault.password is not None:
        reading, writing = os.pipe()
        os.write(writing, vault.password.encode())  # a password is far smaller than a pipe's buffer
        os.close(writing)
        pass_fds = (reading,)
        command += ["--vault-password-fd", str(reading)]
    shown = ", ".join(sources)
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, pass_fds=pass_fds,
                              stdin=subprocess.DEVNULL, timeout=READ_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InventoryError(f"{shown}: Ansible read it for more than {READ_TIMEOUT_S} s",
                             "check the inventory script or plugin it runs") from None
    finally:
        if reading is not None:
            os.close(reading)
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        document = None
    if not isinstance(document, dict):
        raise _reader_failed(shown, done.stderr)
    if "error" in document:
        reason = _parse_failure(document.get("warnings", []), sources)
        raise InventoryError(f"{shown}: Ansible cannot read it: {bounded(reason or document['error'], 300)}",
                             "fix it as the message says ('ansible-inventory -i SOURCE --list -vvv' shows every "
                             "plugin's reason)")
    return document


PLUGIN_OF_SUFFIX = {".yml": "yaml", ".yaml": "yaml", ".json": "yaml", ".ini": "ini", ".toml": "toml"}


def _parse_failure(warnings: list[str], sources: Sequence[str]) -> str | None:
    """The reason of the inventory plugin meant for the file (yaml for .yml, ini for .ini or none, script for an
    executable), from the failures Ansible reports for each plugin it tried."""
    failures: dict[str, str] = {}
    for warning in warnings:
        found = re.search(r"Failed to parse (?:.* )?with '?(\w+)'? plugin[.:]? ?(.*)", warning)
        if found:
            failures[found.group(1)] = found.group(2).strip() or warning
    if not failures:
        return None
    path = sources[-1] if sources else ""
    wanted = "script" if os.access(path, os.X_OK) and not os.path.isdir(path) else \
        PLUGIN_OF_SUFFIX.get(os.path.splitext(path)[1].lower(), "ini")
    plugin = wanted if wanted in failures else next(iter(failures))
    return f"the {plugin} plugin says: {failures[plugin]}"


def _reader_failed(shown: str, stderr: str) -> InventoryError:
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    if "No module named" in last:
        return InventoryError(f"cannot read {shown}: Ansible's reader is not installed ({last})",
                              "run ./scripts/setup.sh, or pip install ansible-core ./ansible_helper")
    return InventoryError(f"cannot read {shown}: Ansible's reader failed: {bounded(last, 300)}",
                          "run 'ansible-inventory -i SOURCE --list' to see Ansible's own reading")
