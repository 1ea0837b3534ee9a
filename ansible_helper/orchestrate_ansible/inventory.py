# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public
# License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later
# version. It is distributed WITHOUT ANY WARRANTY; see the GNU General Public License (COPYING beside this package).
"""An inventory as a play would use it, read by Ansible's own code, printed as one JSON document.

For every host: its groups, its variables (as ``ansible-inventory --list`` gives them) and the connection values
the task executor would hand its connection and become plugins before it connects: the variables each plugin reads
rendered as Ansible renders them, then the plugin's options resolved by Ansible's configuration manager (variables,
then ``ANSIBLE_*`` settings, then ``ansible.cfg``, then the plugin's defaults). orchestrate runs this as a program
of its own and reads its output; it never imports Ansible.

    python -m orchestrate_ansible.inventory -i SOURCE [-i SOURCE...] [--vault-password-file F...]
                                            [--vault-password-fd N]

A vault password comes from a file Ansible reads, or from an inherited descriptor: never from the command line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

# a source Ansible cannot parse is an error here, not a warning and no hosts
os.environ["ANSIBLE_INVENTORY_UNPARSED_FAILED"] = "True"
os.environ["ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED"] = "True"
os.environ.setdefault("ANSIBLE_DEPRECATION_WARNINGS", "False")

from ansible import constants as C  # noqa: E402
from ansible.errors import AnsibleError  # noqa: E402
from ansible.module_utils.common.text.converters import to_text  # noqa: E402
from ansible.module_utils.parsing.convert_bool import boolean  # noqa: E402
from ansible.release import __version__ as ANSIBLE_VERSION  # noqa: E402
from ansible.utils.display import Display  # noqa: E402

from .record import (  # noqa: E402
    CONNECTION_OPTIONS,
    PASSWORD_VARIABLES,
    VAULTED,
    connection_name,
    is_vaulted,
    plain,
    secrets_of,
    vaulted_file,
)

WARNINGS: list[str] = []


def _keep_warning(self: Any, msg: str, formatted: bool = False, **_: Any) -> None:
    WARNINGS.append(" ".join(str(msg).split()))


def _keep_error_as_warning(self: Any, msg: str | None, exception: BaseException, **_: Any) -> None:
    WARNINGS.append(" ".join(f"{msg or ''} {exception}".split()))


# kept for the error line, never printed (ansible-core 2.19 reports a plugin's parse failure as an error turned
# warning, older ones as a warning)
Display.warning = _keep_warning
Display.error_as_warning = _keep_error_as_warning

from ansible.cli import CLI  # noqa: E402
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.parsing.vault import VaultSecret  # noqa: E402
from ansible.plugins.loader import become_loader, connection_loader, init_plugin_loader  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402

try:  # the variables ansible-inventory leaves out of a host's
    HIDDEN = set(C.INTERNAL_STATIC_VARS)
except AttributeError:
    HIDDEN = set(C.INTERNAL_VARS)
HIDDEN |= {"hostvars", "vars", "environment", "ansible_play_hosts", "ansible_play_batch", "play_hosts",
           "ansible_play_hosts_all", "ansible_play_name", "role_names", "ansible_role_names",
           "ansible_dependent_role_names", "ansible_play_role_names", "ansible_check_mode", "ansible_collection_name",
           "ansible_search_path"}

def _vault_secrets(loader: DataLoader, files: list[str], fd: int | None) -> None:
    secrets: list[Any] = []
    if fd is not None:
        with os.fdopen(fd, "rb") as stream:
            password = stream.read().rstrip(b"\r\n")
        secrets.append((C.DEFAULT_VAULT_IDENTITY, VaultSecret(password)))
    if files or C.DEFAULT_VAULT_PASSWORD_FILE or not secrets:
        secrets += CLI.setup_vault_secrets(loader, vault_ids=list(C.DEFAULT_VAULT_IDENTITY_LIST),
                                           vault_password_files=list(files), ask_vault_pass=False, auto_prompt=False)
    loader.set_vault_secrets(secrets)
    try:  # ansible-core 2.19 opens vaulted values through its context
        from ansible.parsing.vault import VaultSecretsContext
        if VaultSecretsContext.current(optional=True) is None:
            VaultSecretsContext.initialize(VaultSecretsContext(secrets))
    except ImportError:
        pass


def _render(templar: Templar, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)) or (
            isinstance(value, str) and not is_vaulted(value) and not any(m in value for m in ("{{", "{%", "{#"))):
        return value  # nothing to render: Ansible's templating gives it back as it is
    try:
        return templar.template(value)
    except Exception as exc:  # omitted or undefined: as the task executor, the option stays unset
        if type(exc).__name__ == "AnsibleValueOmittedError":
            return None
        raise


def _options(plugin_type: str, name: str, wanted: tuple[str, ...], hostvars: dict, templar: Templar,
             origins: dict[str, str]) -> dict:
    """The plugin's options as its set_options would resolve them from the rendered variables it reads, and where
    each came from (``var: NAME``, ``env: NAME``, an ansible.cfg path or ``default``)."""
    variables = {}
    for var in PLUGIN_VARS[(plugin_type, name)]:
        if var in hostvars:
            try:
                rendered = _render(templar, hostvars[var])
            except Exception as exc:
                if not is_vaulted(hostvars[var]) and "vault" not in str(exc).lower():
                    raise
                # a vaulted value (or a template of one) no vault password opens: the option is left unset, and
                # the host's origins say which variable
                origins[f"unopened: {var}"] = var
                continue
            if rendered is not None:
                variables[var] = rendered
    found = {}
    load_name = LOAD_NAMES[(plugin_type, name)]
    for key in wanted:
        if (plugin_type, name, key) not in OPTION_VARS:  # an option this ansible-core's plugin does not have
            continue
        if OPTION_VARS[(plugin_type, name, key)] & set(variables):
            value, origin = C.config.get_config_value_and_origin(key, plugin_type=plugin_type, plugin_name=load_name,
                                                                 variables=variables)
        else:  # no variable of the host's sets it: the same for every host, resolved once
            value, origin = _without_variables(plugin_type, name, key)
        found[key] = value
        origins[key] = str(origin)
    return found


PLUGIN_VARS: dict[tuple[str, str], list[str]] = {}
OPTION_VARS: dict[tuple[str, str, str], set[str]] = {}
_RESOLVED: dict[tuple[str, str, str], tuple[Any, str]] = {}


LOAD_NAMES: dict[tuple[str, str], str] = {}


def _learn(plugin_type: str, name: str, plugin: Any) -> None:
    """Which variables each option of a plugin reads (its documented 'vars'), under the name Ansible's configuration
    keeps its options (its load name: paramiko's is paramiko_ssh)."""
    load_name = getattr(plugin, "_load_name", None) or name
    LOAD_NAMES[(plugin_type, name)] = load_name
    PLUGIN_VARS[(plugin_type, name)] = C.config.get_plugin_vars(plugin_type, load_name)
    for option, definition in C.config.get_configuration_definitions(plugin_type=plugin_type, name=load_name).items():
        OPTION_VARS[(plugin_type, name, option)] = {entry["name"] for entry in definition.get("vars") or []}


def _without_variables(plugin_type: str, name: str, key: str) -> tuple[Any, str]:
    if (plugin_type, name, key) not in _RESOLVED:
        _RESOLVED[(plugin_type, name, key)] = C.config.get_config_value_and_origin(
            key, plugin_type=plugin_type, plugin_name=LOAD_NAMES[(plugin_type, name)], variables={})
    return _RESOLVED[(plugin_type, name, key)]


class Files:
    """Which file a host's variable comes from: its host_vars files, its inventory entry, then its groups'
    group_vars files and entries, most specific first (a best reading of Ansible's precedence for error lines)."""

    def __init__(self, inventory: InventoryManager, loader: DataLoader) -> None:
        self.inventory, self.loader = inventory, loader
        self.folders = list(dict.fromkeys(s if os.path.isdir(s) else os.path.dirname(s) for s in inventory._sources))
        self.cache: dict[tuple[str, str], list[tuple[str, set, bool]]] = {}

    def _vars_files(self, folder: str, name: str) -> list[tuple[str, set, bool]]:
        """(path, its variables, whether the file is vaulted whole) of an entity's host_vars or group_vars files."""
        if (folder, name) not in self.cache:
            found = []
            for base in self.folders:
                for path in self.loader.find_vars_files(os.path.join(base, folder), name) or []:
                    try:
                        data = self.loader.load_from_file(to_text(path), unsafe=True)
                    except AnsibleError:
                        continue
                    if isinstance(data, dict):
                        found.append((to_text(path), set(data), vaulted_file(path)))
            self.cache[(folder, name)] = found
        return self.cache[(folder, name)]

    def of(self, host: Any, keys: list[str]) -> tuple[dict[str, str], set[str]]:
        """The file each of keys comes from, in Ansible's precedence: host_vars files, the host's inventory entry,
        group_vars files (the deepest group's first), the groups' inventory entries (likewise); and which of the
        host's variables a vaulted file sets."""
        groups = sorted(host.get_groups(), key=lambda g: (g.depth, g.name), reverse=True)
        own = _source_of(host, self.inventory)
        layers: list[list[tuple[str, set, bool]]] = [self._vars_files("host_vars", host.name),
                                                     [(own, set(host.vars), False)]]
        layers += [self._vars_files("group_vars", g.name) for g in groups]
        layers += [[(own, set(g.vars), False)] for g in groups]  # a group's own variables: the host's file, likely
        where: dict[str, str] = {}
        sealed: set[str] = set()
        for layer in layers:
            for path, names, vaulted in layer:
                for key in keys:
                    if key in names:
                        where.setdefault(key, path)
                if vaulted:
                    sealed |= names
        return {key: where.get(key, own) for key in keys}, sealed


def _source_of(host: Any, inventory: InventoryManager) -> str:
    file = host.vars.get("inventory_file")
    if file:
        return str(file)
    sources = list(inventory._sources)
    return sources[0] if len(sources) == 1 else ", ".join(sources)


def _group_names(host: Any) -> list[str]:
    """The host's groups as a play's group_names gives them: sorted, 'all' left out."""
    return sorted(g.name for g in host.get_groups() if g.name != "all")


def _templar(loader: DataLoader) -> Templar:
    """One Templar for every host (its variables set per host, as the task executor sets them per task). A template
    written once for a group is compiled once: compiling is pure, the same text in the same environment, and it cost
    1 ms a host a value in ansible-core 2.19, which compiles anew at each call."""
    templar = Templar(loader=loader)
    engine: Any = getattr(templar, "_engine", None)
    compile_template = getattr(engine, "_compile_template", None)
    if compile_template is not None:
        compiled: dict[Any, Any] = {}

        def cached(template: str, options: Any) -> Any:
            try:
                key = (template, options)
                if key not in compiled:
                    compiled[key] = compile_template(template, options)
                return compiled[key]
            except TypeError:  # options that cannot be a key: compiled as Ansible does
                return compile_template(template, options)
        engine._compile_template = cached
    return templar


def _host(host: Any, manager: VariableManager, templar: Templar, files_of: Files) -> dict:
    hostvars = manager.get_vars(host=host, include_hostvars=True, stage="all")
    templar.available_variables = hostvars
    origins: dict[str, str] = {}
    if "ansible_connection" in hostvars:
        connection, origins["connection"] = _render(templar, hostvars["ansible_connection"]), "var: ansible_connection"
    else:
        connection, origin = C.config.get_config_value_and_origin("DEFAULT_TRANSPORT")
        origins["connection"] = str(origin)
    connection = connection_name(str(connection))
    if connection in CONNECTION_OPTIONS and ("connection", connection) not in PLUGIN_VARS:
        # paramiko's loads its library: only when a host asks for it
        _learn("connection", connection, connection_loader.get(connection, class_only=True))
    options = _options("connection", connection, CONNECTION_OPTIONS[connection], hostvars, templar, origins) \
        if connection in CONNECTION_OPTIONS else {}
    if hostvars.get("ansible_become") is not None:
        # as the task executor reads it: a value that is no boolean fails the host
        become, origins["become"] = boolean(_render(templar, hostvars["ansible_become"])), "var: ansible_become"
    else:
        become, origin = C.config.get_config_value_and_origin("DEFAULT_BECOME")
        origins["become"] = str(origin)
    if hostvars.get("ansible_become_method"):
        method, origins["become_method"] = _render(templar, hostvars["ansible_become_method"]), \
            "var: ansible_become_method"
    else:
        method, origin = C.config.get_config_value_and_origin("DEFAULT_BECOME_METHOD")
        origins["become_method"] = str(origin)
    become_options: dict[str, Any] = {}
    if str(method).rsplit(".", 1)[-1] == "sudo":
        become_options = _options("become", "sudo", ("become_user", "become_pass", "become_exe", "become_flags"),
                                  hostvars, templar, origins)
    interpreter = {k: _render(templar, hostvars[k]) for k in ("ansible_python_interpreter",) if k in hostvars}
    python, origins["python"] = C.config.get_config_value_and_origin("INTERPRETER_PYTHON", variables=interpreter)
    shown = {k: v for k, v in hostvars.items() if k not in HIDDEN}
    files, sealed = files_of.of(host, [key for key in shown if key.startswith(("ansible_", "orchestrate_"))
                                       or key in PASSWORD_VARIABLES])
    return {
        "groups": _group_names(host),
        "source": to_text(hostvars.get("inventory_file") or ""),
        "vars": {k: VAULTED if k in sealed else plain(v) for k, v in shown.items()},
        "resolved": plain({"connection": connection, "become": become, "become_method": method, "python": python,
                            **options, **become_options}),
        "settings": plain({k: _render(templar, v) for k, v in hostvars.items() if k.startswith("orchestrate_")}),
        "origins": {key: str(origin) for key, origin in origins.items()},
        "files": files,
        # how each password variable is kept: vaulted, a template (of another variable), in a vaulted file, or plain
        "secrets": secrets_of(hostvars, sealed),
    }


def read(sources: list[str], vault_files: list[str], vault_fd: int | None) -> dict:
    init_plugin_loader([])
    loader = DataLoader()
    _vault_secrets(loader, vault_files, vault_fd)
    inventory = InventoryManager(loader=loader, sources=sources)
    manager = VariableManager(loader=loader, inventory=inventory)
    for plugin in ("ssh", "local"):
        _learn("connection", plugin, connection_loader.get(plugin, class_only=True))
    _learn("become", "sudo", become_loader.get("sudo", class_only=True))
    hosts: dict[str, Any] = {}
    files = Files(inventory, loader)
    templar = _templar(loader)
    for host in inventory.get_hosts("all"):
        try:
            hosts[host.name] = _host(host, manager, templar, files)
        except Exception as exc:  # a template or a value Ansible cannot take: this host only, as a play would
            hosts[host.name] = {"groups": _group_names(host), "source": to_text(host.vars.get("inventory_file") or ""),
                                "error": " ".join(to_text(getattr(exc, "message", None) or exc).split())}
    # each group's hosts in the order Ansible's patterns take them (its own, then its descendants')
    groups = {name: {"hosts": [h.name for h in group.hosts], "children": [c.name for c in group.child_groups],
                     "members": [h.name for h in group.get_hosts()]}
              for name, group in inventory.groups.items()}
    return {"ansible": ANSIBLE_VERSION, "sources": list(inventory._sources), "hosts": hosts, "groups": groups,
            "host_order": list(inventory.hosts), "warnings": WARNINGS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orchestrate_ansible.inventory", description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", action="append", required=True)
    parser.add_argument("--vault-password-file", action="append", default=[])
    parser.add_argument("--vault-password-fd", type=int)
    args = parser.parse_args(argv)
    try:
        document = read(args.inventory, args.vault_password_file, args.vault_password_fd)
    except AnsibleError as exc:
        message = " ".join(to_text(getattr(exc, "message", None) or exc).split())
        sys.stdout.write(json.dumps({"error": message, "warnings": WARNINGS}))
        return 1
    sys.stdout.write(json.dumps(document))  # one write: Ansible wraps stdout, and json.dump writes piece by piece
    return 0


if __name__ == "__main__":
    sys.exit(main())
