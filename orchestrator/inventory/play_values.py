"""One host as Ansible resolved it -> a Host orchestrate connects to, or the one line of what it cannot honour.

The values are those a play would use before it connects (Ansible's own reading, see ``ansible_source``); what
orchestrate adds is its own ``orchestrate_*`` settings, its defaults where Ansible leaves a value to ssh (user
root, port 22, python3), and the refusal of what its transports cannot do as Ansible would (a password login, a
become method other than sudo, an ssh option other than those ``ssh_args`` honours). Pure: a record in, a value out.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InventoryError, bounded
from .host import HOST_SETTINGS, Host
from .reader_document import HostValues
from .ssh_args import play_command, read_command, split_args

DEFAULT_PYTHON = "python3"
DEFAULT_CONNECT_TIMEOUT_S = 10.0
VAULTED = "__vaulted"
MASK = "********"
BECOME_PASSWORD_VARIABLES = ("ansible_become_password", "ansible_become_pass", "ansible_sudo_pass")
LOGIN_PASSWORD_VARIABLES = ("ansible_password", "ansible_ssh_pass", "ansible_ssh_password")
SECRET_VARIABLES = {*BECOME_PASSWORD_VARIABLES, *LOGIN_PASSWORD_VARIABLES, "ansible_private_key",
                    "ansible_ssh_private_key", "ansible_private_key_passphrase", "ansible_ssh_private_key_passphrase"}
# the ssh plugin's options that ask for what orchestrate does not do, however they are set (a variable, ANSIBLE_*,
# ansible.cfg); a password mechanism or prompt alone does nothing without a password, and is let be
REFUSED_OPTIONS = {
    "password": "orchestrate logs in by key only",
    "private_key": "a key is read from its file (ansible_ssh_private_key_file)",
    "pkcs11_provider": "orchestrate logs in by key file or ssh-agent",
}
PASSPHRASE_VARIABLES = ("ansible_private_key_passphrase", "ansible_ssh_private_key_passphrase")
DEFAULT_BECOME_FLAGS = "-H -S -n"   # Ansible's sudo flags; orchestrate runs sudo with its own
CONNECTIONS = ("ssh", "paramiko", "local")
SSH_ARGS = ("ssh_args", "ssh_common_args", "ssh_extra_args")   # in the order Ansible's ssh passes them


@dataclass(frozen=True)
class AnsibleHost:
    """One host of ``orchestrate_ansible.inventory``'s document."""

    name: str
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, repr=False)
    resolved: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the plugins' options, resolved
    origins: Mapping[str, str] = field(default_factory=dict)    # option -> 'var: NAME', 'env: NAME', a file, 'default'
    files: Mapping[str, str] = field(default_factory=dict)      # variable -> the file it comes from
    settings: Mapping[str, Any] = field(default_factory=dict, repr=False)   # its orchestrate_* variables, rendered
    secrets: Mapping[str, str] = field(default_factory=dict)    # password variable -> how it is kept
    source: str = ""                                            # the inventory source that lists the host
    error: str | None = None                                    # what Ansible could not render for it

    @classmethod
    def from_document(cls, name: str, record: HostValues, source: str) -> AnsibleHost:
        return cls(name=name, groups=tuple(record.groups), vars=record.vars, resolved=record.resolved,
                   origins=record.origins, files=record.files, settings=record.settings, secrets=record.secrets,
                   source=record.source or source, error=record.error)

    def at(self, variable: str) -> str:
        """' (FILE)' when a variable comes from a file other than the one that lists the host, else ''."""
        file = self.files.get(variable, self.source)
        return f" ({file})" if file != self.source else ""

    def where(self, option: str) -> str:
        """Where an option's value came from, for an error line: the variable and its file, or the setting."""
        origin = self.origins.get(option, "default")
        if origin.startswith("var: "):
            var = origin[5:]
            return var + (f" in {self.files[var]}" if self.files.get(var, self.source) != self.source else "")
        if origin.startswith("env: "):
            return f"the environment's {origin[5:]}"
        return "Ansible's default" if origin == "default" else origin


@dataclass(frozen=True)
class PlayValues:
    """The values a play would use for one host, with orchestrate's defaults where it uses them."""

    host: Host
    ssh_args: tuple[str, ...]
    defaulted: tuple[str, ...]
    refused: tuple[str, ...] = ()     # each value orchestrate cannot honour, with where it comes from
    source: str = ""

    def error(self) -> InventoryError | None:
        """The one line that names the host, its file and every value refused; None when all is honoured."""
        if not self.refused:
            return None
        return InventoryError(f"{self.source}: host '{self.host.name}': orchestrate cannot honour "
                              + "; ".join(self.refused),
                              "remove these from the host's inventory values (keep them for Ansible in a play), "
                              "or change them as each says")


def is_vaulted(value: Any) -> bool:
    return isinstance(value, dict) and value.get(VAULTED) is True


def masked(name: str, value: Any) -> Any:
    """A variable as shown: a vaulted value or a password never appears."""
    if is_vaulted(value) or (name in SECRET_VARIABLES and value not in (None, "")):
        return MASK
    if isinstance(value, dict):
        return {k: masked(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(name, v) for v in value]
    return value


def play_values(record: AnsibleHost) -> PlayValues:
    """The Host a play's values make, with every value orchestrate cannot honour named (``refused``)."""
    refused: list[str] = []
    if record.error:
        refused.append(f"Ansible cannot render its values: {bounded(record.error, 200)}")
    resolved = record.resolved
    connection = str(resolved.get("connection") or "ssh")
    if connection not in CONNECTIONS:
        refused.append(f"ansible_connection={connection}{_paren(record.where('connection'))}: orchestrate connects by "
                       "ssh or runs locally")
    for origin in record.origins:
        if origin.startswith("unopened: "):
            var = origin.removeprefix("unopened: ")
            refused.append(f"{var}{record.at(var)} is vaulted and no vault password opened it: give "
                           "--vault-password-file or --ask-vault-pass")
    for option, why in REFUSED_OPTIONS.items():
        given = [v for v in LOGIN_PASSWORD_VARIABLES if record.vars.get(v) not in (None, "")] \
            if option == "password" else []
        refused += [f"{name}{record.at(name)}: {why}" for name in given]
        if not given and resolved.get(option) not in (None, ""):
            refused.append(f"{record.where(option)}: {why}")
    for name in PASSPHRASE_VARIABLES:
        if record.vars.get(name) not in (None, ""):
            refused.append(f"{name}{record.at(name)}: orchestrate uses keys without a passphrase or through ssh-agent")
    settings = read_command([])
    # the arguments Ansible's ssh passes from its three options (paramiko's connection takes none)
    ansible_args = {o: split_args(resolved.get(o)) if connection == "ssh" else [] for o in SSH_ARGS}
    if connection in ("ssh", "paramiko"):
        if resolved.get("host_key_checking") is False:
            refused.append(f"host_key_checking false{_paren(record.where('host_key_checking'))}: orchestrate checks "
                           "host keys (--accept-new-host-key records a new one)")
        ssh_args, common, extra = (resolved.get(o) if connection == "ssh" else None for o in SSH_ARGS)
        settings = read_command(play_command(ssh_args, common, extra, resolved.get("port"),
                                             resolved.get("private_key_file"), resolved.get("remote_user"),
                                             resolved.get("timeout")))
        for written in settings.refused:
            origin = next((o for o in SSH_ARGS if written.split(" ", 1)[-1] in " ".join(ansible_args[o])),
                          "ssh_args")
            refused.append(f"ssh option '{written}'{_paren(record.where(origin))}")
        for option in ("scp_extra_args", "sftp_extra_args"):
            if split_args(resolved.get(option)):
                refused.append(f"{option}{_paren(record.where(option))}: orchestrate copies with its own ssh options")
        executable = str(resolved.get("ssh_executable") or "ssh")
        if executable.rsplit("/", 1)[-1] != "ssh":
            refused.append(f"ssh_executable={executable}{_paren(record.where('ssh_executable'))}")
    become = resolved.get("become") is True  # Ansible's reader gives it as Ansible's boolean() reads it
    method = str(resolved.get("become_method") or "sudo").rsplit(".", 1)[-1]
    if method != "sudo" and become:
        refused.append(f"ansible_become_method={method}{_paren(record.where('become_method'))}: orchestrate becomes "
                       "another user through sudo only")
    exe = str(resolved.get("become_exe") or "sudo")
    if become and exe.rsplit("/", 1)[-1] != "sudo":
        refused.append(f"become_exe={exe}{_paren(record.where('become_exe'))}: orchestrate runs sudo")
    flags = " ".join(str(resolved.get("become_flags") or DEFAULT_BECOME_FLAGS).split())
    if become and flags != DEFAULT_BECOME_FLAGS:
        refused.append(f"become_flags='{flags}'{_paren(record.where('become_flags'))}: orchestrate runs sudo with its "
                       "own flags")
    become_password = _become_password(record, refused)
    own, own_refused = _orchestrate_settings(record)
    refused += own_refused
    # what the play leaves to ssh stays None here: the ssh config fills it, else orchestrate's default (root, 22)
    defaulted: list[str] = []
    address_option = "host" if connection == "ssh" else "remote_addr"
    address = resolved.get(address_option)
    if record.origins.get(address_option, "var: inventory_hostname") == "var: inventory_hostname":
        address = None  # the host's own name: ssh looks it up in its config (HostName), as for a play
    port, user = settings.port, settings.user
    if connection != "local":
        defaulted += [name for name, value in (("port", port), ("user", user)) if value is None]
    python = own.pop("python", None) or str(resolved.get("python") or "auto")
    become_user = str(resolved.get("become_user") or "root")
    if python.startswith("auto"):
        python, defaulted = DEFAULT_PYTHON, [*defaulted, "python"]
        if connection == "local" and not (become and become_user != "root"):
            # this machine runs the agent with orchestrate's own Python, unless sudo makes it a user who may not
            # read that one
            python = sys.executable
    keys = settings.key_files
    host = Host(name=record.name, groups=record.groups,
                address=None if connection == "local" or address is None else str(address), port=port, user=user,
                key_file=keys[0] if keys else None, other_key_files=keys[1:], connection=connection, python=python,
                become=become, become_method=method, become_user=become_user,
                become_password=become_password, proxy_jump=settings.proxy_jump,
                proxy_command=settings.proxy_command, known_hosts=settings.known_hosts,
                ssh_config=settings.config_file, connect_timeout=settings.connect_timeout or DEFAULT_CONNECT_TIMEOUT_S)
    if connection == "paramiko" and resolved.get("proxy_command"):  # paramiko's own option for a hop
        host = replace(host, proxy_command=str(resolved["proxy_command"]))
    if own:  # orchestrate's own settings win (orchestrate_connect_timeout over ssh's ConnectTimeout)
        host = replace(host, **own)
    return PlayValues(host=host, ssh_args=tuple(w for o in SSH_ARGS for w in ansible_args[o]),
                      defaulted=tuple(defaulted), refused=tuple(refused),
                      source=record.source)


def _become_password(record: AnsibleHost, refused: list[str]) -> str | None:
    """sudo's password from the inventory when it is kept vaulted: a !vault value, a variable of a file vaulted
    whole, or a template of another variable (as Ansible's guide keeps it: "{{ vault_sudo_pass }}"), or one a play was
    given (ansible-playbook -K, ansible-runner's passwords). One written in a file as plain text, or in ansible.cfg,
    is refused (orchestrate takes ANSIBLE_BECOME_PASS out of its
    environment at its start, as ORCHESTRATE_BECOME_PASSWORD)."""
    password = record.resolved.get("become_pass")
    if password in (None, ""):
        return None
    origin = record.origins.get("become_pass", "")
    var = origin.removeprefix("var: ") if origin.startswith("var: ") else None
    if var is not None and record.secrets.get(var, "vaulted" if is_vaulted(record.vars.get(var)) else "plain") \
            in ("vaulted", "vaulted file", "template"):
        return str(password)
    if origin.startswith(("env: ", "keyword: ", "cli: ")):  # the environment, or a play's own (-K, its prompt)
        return str(password)
    refused.append(f"{var + record.at(var) if var else record.where('become_pass')}: a password is never kept in a "
                   "file as plain text; vault it (ansible-vault encrypt_string) or give --ask-become-pass")
    return None


def _orchestrate_settings(record: AnsibleHost) -> tuple[dict[str, Any], list[str]]:
    """orchestrate's own variables, checked; an unknown orchestrate_* name is a typo, refused with the known ones."""
    found: dict[str, Any] = {}
    refused: list[str] = []
    for name, value in record.settings.items():
        if name not in HOST_SETTINGS:
            refused.append(f"unknown {name}{record.at(name)} (known: {', '.join(sorted(HOST_SETTINGS))})")
            continue
        field_name, convert = HOST_SETTINGS[name]
        try:
            found[field_name] = convert(value)
        except TypeError as exc:
            refused.append(f"{name}{record.at(name)} must be {exc}, not {bounded(repr(value))}")
    return found, refused


def _paren(text: str) -> str:
    return f" ({text})" if text else ""
