# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public
# License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later
# version. It is distributed WITHOUT ANY WARRANTY; see the GNU General Public License (COPYING beside this package).
"""A host's record, as orchestrate reads it: its groups, its variables (vaulted ones marked, never shown), the options
its connection and become plugins resolved (``resolved``) and where each came from (``origins``), its
``orchestrate_*`` settings rendered, and how each password variable is kept (``secrets``).

The inventory reader makes it from an inventory as a play would resolve it; ``play_record`` from the plugins a play
did resolve for a task (the orchestrate.jetson collection's): the same record, read by orchestrate one way.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the connection plugins' options a play hands over before it connects, by plugin (those a plugin of this
# ansible-core does not have are left out: private_key came in 2.19)
CONNECTION_OPTIONS = {
    "ssh": ("host", "port", "remote_user", "private_key_file", "ssh_args", "ssh_common_args", "ssh_extra_args",
            "host_key_checking", "timeout", "password", "ssh_executable", "sftp_extra_args", "scp_extra_args",
            "private_key", "pkcs11_provider"),
    "paramiko": ("remote_addr", "port", "remote_user", "private_key_file", "host_key_checking", "timeout", "password",
                 "proxy_command"),
    "local": (),
}
BECOME_OPTIONS = ("become_user", "become_pass", "become_exe", "become_flags")
# a connection's names -> the plugin orchestrate knows it as (paramiko's registers as paramiko_ssh)
CONNECTION_NAMES = {"ssh": "ssh", "smart": "ssh", "paramiko": "paramiko", "paramiko_ssh": "paramiko", "local": "local"}
PASSWORD_VARIABLES = ("ansible_become_password", "ansible_become_pass", "ansible_sudo_pass", "ansible_password",
                      "ansible_ssh_pass", "ansible_ssh_password")
PASSPHRASE_VARIABLES = ("ansible_private_key_passphrase", "ansible_ssh_private_key_passphrase")

VAULTED = {"__vaulted": True}  # a vaulted value, never shown (nor sent: nothing here needs its text)


def plain(value: Any) -> Any:
    """A value as JSON holds it; a vaulted one is marked, never shown."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if is_vaulted(value):
        return dict(VAULTED)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def is_vaulted(value: Any) -> bool:
    name = type(value).__name__
    return name in ("AnsibleVaultEncryptedUnicode", "EncryptedString") or (
        hasattr(value, "_ciphertext") or hasattr(value, "vault") and hasattr(value, "data"))


def connection_name(name: str) -> str:
    """ansible.builtin.ssh, smart, paramiko_ssh... -> the plugin orchestrate knows (else the name as it is)."""
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        name = name.removeprefix(prefix)
    return CONNECTION_NAMES.get(name, name)


def secrets_of(hostvars: Mapping[str, Any], sealed: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """How each password variable is kept: vaulted, in a vaulted file (``sealed``), a template, or plain text."""
    return {var: "vaulted" if is_vaulted(hostvars[var]) else "vaulted file" if var in sealed
            else "template" if isinstance(hostvars[var], str) and "{{" in hostvars[var] else "plain"
            for var in PASSWORD_VARIABLES if var in hostvars}


def play_record(connection: Any, task_vars: Mapping[str, Any], templar: Any) -> dict[str, Any]:
    """The record of the host a task runs for, from the connection plugin (and its become plugin) as the task
    executor set their options: variables, play and task keywords, the command line's (-u, --private-key, -T,
    --ssh-common-args, -K), ANSIBLE_* settings, ansible.cfg and defaults, in Ansible's precedence."""
    from ansible import constants as C
    name = connection_name(str(getattr(connection, "_load_name", None) or "ssh"))
    origins_of = getattr(connection, "_origins", None) or {}
    resolved: dict[str, Any] = {"connection": name}
    origins: dict[str, str] = {"connection": "play"}
    for option in CONNECTION_OPTIONS.get(name, ()):
        if connection.has_option(option):
            resolved[option] = connection.get_option(option)
            origins[option] = str(origins_of.get(option, "play"))
    become = getattr(connection, "become", None)
    resolved["become"] = become is not None
    origins["become"] = "play"
    if become is not None:
        resolved["become_method"] = str(getattr(become, "_load_name", None) or "sudo")
        origins["become_method"] = "play"
        become_origins = getattr(become, "_origins", None) or {}
        for option in BECOME_OPTIONS:
            if become.has_option(option):
                resolved[option] = become.get_option(option)
                origins[option] = str(become_origins.get(option, "play"))
    interpreter = task_vars.get("ansible_python_interpreter")
    if interpreter is not None:
        resolved["python"], origins["python"] = templar.template(interpreter), "var: ansible_python_interpreter"
    else:
        resolved["python"], origin = C.config.get_config_value_and_origin("INTERPRETER_PYTHON")
        origins["python"] = str(origin)
    kept = [key for key in task_vars if key in PASSWORD_VARIABLES or key in PASSPHRASE_VARIABLES]
    # the host's orchestrate_* settings: not the play's facts (doctor's orchestrate_doctor) nor a task's registered
    # result, which are variables of the same names but no settings of the host's
    facts = task_vars.get("ansible_facts") or {}
    settings = {key: templar.template(value) for key, value in task_vars.items()
                if key.startswith("orchestrate_") and key not in facts and not _task_result(value)}
    return {
        "groups": sorted(task_vars.get("group_names") or ()),
        "source": str(task_vars.get("inventory_file") or ""),
        "vars": {key: plain(task_vars[key]) for key in kept},
        "resolved": plain(resolved),
        "settings": plain(settings),
        "origins": origins,
        "files": {},
        "secrets": secrets_of(task_vars, {key for key in kept if from_vaulted_file(task_vars[key])}),
    }


def _task_result(value: Any) -> bool:
    """A task's registered result: a mapping with what every result has (changed, failed or skipped)."""
    return isinstance(value, Mapping) and any(key in value for key in ("changed", "failed", "skipped"))


def vaulted_file(path: Any) -> bool:
    """A file vaulted whole (ansible-vault encrypt), by Ansible's own test of its first bytes."""
    from ansible.parsing.vault import is_encrypted_file
    try:
        with open(path, "rb") as handle:
            return bool(is_encrypted_file(handle))
    except OSError:
        return False


def from_vaulted_file(value: Any) -> bool:
    """A value read from a file vaulted whole, by the origin Ansible tags it with (ansible-core 2.19 and later;
    older ones do not say, and such a value counts as plain text)."""
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:
        return False
    origin = Origin.get_tag(value)
    return bool(origin and origin.path and vaulted_file(origin.path))
