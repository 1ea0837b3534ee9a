"""How this machine reaches a target over SSH: the options the user gives, ~/.ssh/config resolved the way Fabric
resolves it (HostName, Port, User, IdentityFile, ProxyJump, UserKnownHostsFile) and known_hosts as ssh reads
it. Below both SSH clients: paramiko's (``ssh``) and OpenSSH's (``openssh``) take their settings from here.
"""
from __future__ import annotations

import base64
import getpass
import hashlib
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from fabric import Config as FabricConfig
from fabric import Connection

from ..errors import HostKeyError, UsageError
from ..inventory.host import DEFAULT_PORT, DEFAULT_USER
from ..inventory.hosts import Host


@dataclass(frozen=True)
class ConnectOptions:
    """What the user's machine adds to an inventory host: its ssh config and known_hosts."""

    ssh_config: Path | None = None
    known_hosts: Path | None = None
    accept_new_host_key: bool = False
    keepalive_s: int = 15
    become_password: str | None = field(default=None, repr=False)  # sudo's, for hosts with ansible_become


@dataclass(frozen=True)
class SSHParams:
    alias: str
    hostname: str
    port: int
    user: str
    key_files: tuple[str, ...] = field(default=())
    known_hosts: Path = Path("~/.ssh/known_hosts")   # where a new host key is recorded: the first of them
    known_hosts_files: tuple[Path, ...] = ()          # every file ssh reads keys from, when more than the first
    proxy_jump: str | None = None      # 'none': no hop, whatever the ssh config says
    proxy_command: str | None = None   # the inventory's, as written (ssh expands its tokens itself)
    ssh_config: Path | None = None     # -F: the host's own ssh config, else --ssh-config's
    connect_timeout: float = 10.0

    @property
    def display(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


class _CommandLine(str):
    """A ProxyCommand with ssh's tokens already expanded for its target."""


class _Connection(Connection):
    """Fabric's Connection, but a ProxyCommand is run as it is: Fabric would pass it through paramiko's token
    expansion again, which knows %h, %p and %r but not %% (a literal '%' of the command would change)."""

    def open_gateway(self):  # noqa: ANN201 (Fabric's signature)
        if isinstance(self.gateway, _CommandLine):
            return paramiko.ProxyCommand(str(self.gateway))
        return super().open_gateway()


def _ssh_config(host: Host, options: ConnectOptions) -> paramiko.SSHConfig | None:
    """The ssh config for this host: the inventory's -F, else --ssh-config; None: Fabric reads ssh's own files;
    '-F none' reads none."""
    path = host_ssh_config(host, options)
    if path is None:
        return None
    if str(path) == "none":
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except (OSError, UnicodeDecodeError, paramiko.ssh_exception.ConfigParseError) as exc:
        fix = "fix -F in the inventory's ssh arguments" if host.ssh_config else "give --ssh-config an ssh_config file"
        raise UsageError(f"cannot read the ssh config {path}: {getattr(exc, 'strerror', None) or exc}", fix) from None


def fabric_connection(host: Host, options: ConnectOptions) -> Connection:
    """The target as Fabric resolves it from the ssh config (HostName, Port, User, IdentityFile, ProxyJump and
    ProxyCommand as gateways), the inventory's values winning and root the default user; its hops as ssh reaches
    them. Not opened."""
    ssh_config = _ssh_config(host, options)
    config = FabricConfig(ssh_config=ssh_config, overrides={"user": DEFAULT_USER, "port": DEFAULT_PORT})
    wait = max(1, math.ceil(host.connect_timeout))
    keys = [k for k in (host.key_file, *host.other_key_files) if k]
    # the address as ssh takes it: an ssh config's Host block of that name may still give its HostName
    connection = _Connection(host.address or host.name, user=host.user, port=host.port, config=config,
                             connect_timeout=wait, gateway=_jump_hosts(host, ssh_config, wait),
                             connect_kwargs={"key_filename": keys,
                                             "allow_agent": True, "banner_timeout": wait, "auth_timeout": wait})
    if "none" in (host.proxy_jump, host.proxy_command):  # no hop, whatever the ssh config says
        connection.gateway = None
    elif host.proxy_command:  # ssh's tokens, expanded as ssh expands them for this target
        connection.gateway = _proxy_command(host.proxy_command, connection)
    keys = connection.connect_kwargs.get("key_filename") or []
    connection.connect_kwargs["key_filename"] = [str(Path(k).expanduser()) for k in keys]
    connection.connect_kwargs["look_for_keys"] = not keys
    return connection


def host_ssh_config(host: Host, options: ConnectOptions) -> Path | None:
    """The ssh config file for this host: the inventory's -F, else --ssh-config (else ssh's own defaults)."""
    chosen = host.ssh_config or options.ssh_config
    return Path(chosen).expanduser() if chosen is not None else None


def _jump_hosts(host: Host, ssh_config: paramiko.SSHConfig | None, wait: int) -> Connection | None:
    """The inventory's ProxyJump hosts in ssh's order (the first is reached first), each resolved by the ssh config
    with its keys and the agent, and this machine's user where it names none, as ssh's jump does. None: the ssh
    config's own hop, as Fabric reads it."""
    if host.proxy_command or not host.proxy_jump or host.proxy_jump == "none":
        return None
    gateway: Connection | None = None
    for hop in host.proxy_jump.split(","):
        gateway = Connection(hop.strip().removeprefix("ssh://"), config=FabricConfig(ssh_config=ssh_config),
                             gateway=gateway, connect_timeout=wait,
                             connect_kwargs={"allow_agent": True, "banner_timeout": wait, "auth_timeout": wait})
    return gateway


def _proxy_command(command: str, connection: Connection) -> _CommandLine:
    """ssh's ProxyCommand for this target: %h, %p, %r, %n and %% expanded, run by the shell as ssh runs it.
    (Fabric's own expansion would take the port from the ssh config only: 22 for a port the inventory gives.)"""
    tokens = {"h": connection.host, "p": str(connection.port), "r": connection.user, "n": connection.original_host,
              "%": "%"}
    expanded = re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), command)
    return _CommandLine("/bin/sh -c " + shlex.quote("exec " + expanded))


def hops(connection: Connection) -> list[Connection]:
    """The connection and each gateway it goes through (ProxyJump), nearest the target first."""
    chain = [connection]
    while isinstance(chain[-1].gateway, Connection):
        chain.append(chain[-1].gateway)
    return chain


def known_hosts_files(connection: Connection, options: ConnectOptions, host: Host | None = None) -> list[Path]:
    """Where ssh reads host keys, the first also where a new one is recorded: --known-hosts, else the inventory's
    UserKnownHostsFile (for the target, not its hops: ssh passes its -o options to no jump host), else the ssh
    config's, else ~/.ssh/known_hosts; ssh's tokens %d, %u, %h, %p, %r and %% expanded, 'none' read as no file."""
    if options.known_hosts is not None:
        return [options.known_hosts.expanduser()]
    written = host.known_hosts if host is not None and host.known_hosts else \
        connection.ssh_config.get("userknownhostsfile") or "~/.ssh/known_hosts"
    if written.strip().lower() == "none":
        return [Path(os.devnull)]
    tokens = {"d": str(Path.home()), "u": getpass.getuser(), "h": connection.host, "p": str(connection.port),
              "r": str(connection.user), "%": "%"}
    return [Path(re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), file)).expanduser()
            for file in written.split()]


def known_hosts_path(connection: Connection, options: ConnectOptions, host: Host | None = None) -> Path:
    """The file a new host key is recorded in (the first of known_hosts_files)."""
    return known_hosts_files(connection, options, host)[0]


def ssh_params(host: Host, connection: Connection, options: ConnectOptions) -> SSHParams:
    """What OpenSSH's client needs to reach the same target (the downloads go through it)."""
    return SSHParams(alias=host.name, hostname=connection.host, port=int(connection.port), user=connection.user,
                     key_files=tuple(connection.connect_kwargs.get("key_filename") or ()),
                     known_hosts=known_hosts_path(connection, options, host),
                     known_hosts_files=tuple(known_hosts_files(connection, options, host)),
                     proxy_jump=host.proxy_jump or connection.ssh_config.get("proxyjump"),
                     proxy_command=host.proxy_command,
                     ssh_config=host_ssh_config(host, options), connect_timeout=host.connect_timeout)


def resolve_ssh_params(host: Host, options: ConnectOptions) -> SSHParams:
    """Inventory values win over ~/.ssh/config, which wins over defaults (user root, port 22)."""
    return ssh_params(host, fabric_connection(host, options), options)


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(hostname: str, port: int) -> str:
    return hostname if port == 22 else f"[{hostname}]:{port}"


def _load_known_hosts(connection: Connection, known: Path) -> None:
    """known_hosts read as ssh reads it; a line it cannot read is named, with its number, instead of a traceback."""
    try:
        connection.client.load_host_keys(str(known))
    except (OSError, UnicodeDecodeError) as exc:
        raise HostKeyError(f"cannot read {known}: {getattr(exc, 'strerror', None) or exc}",
                           "give --known-hosts a readable known_hosts file") from None
    except paramiko.hostkeys.InvalidHostKey as exc:
        lines = known.read_text(errors="replace").splitlines()
        number = next((i for i, line in enumerate(lines, 1) if line.strip() == exc.line.strip()), None)
        where = f"line {number}" if number else "a line"
        raise HostKeyError(f"{known}: {where} holds no readable host key ({exc.line.strip()[:60]!r})",
                           f"fix or delete {where} of {known}") from None


class _RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001 (paramiko's signature)
        raise HostKeyError(
            f"host key of {hostname} is not in {self.known_hosts} ({key.get_name()} {fingerprint(key)})",
            "check the fingerprint on the board, then rerun with --accept-new-host-key to record it")


class _RecordNewHostKey(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.known_hosts, "a") as handle:
            handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def check_host_keys(connection: Connection, options: ConnectOptions, host: Host | None = None) -> None:
    """Before the connection opens: each hop checks host keys as ssh does, against its known_hosts (Fabric would
    add unknown keys silently), and refuses an unknown one or records it when asked."""
    for hop in hops(connection):
        files = known_hosts_files(hop, options, host if hop is connection else None)
        known = files[0]
        for file in files:
            if file.is_file():
                _load_known_hosts(hop, file)
        policy_type = _RecordNewHostKey if options.accept_new_host_key else _RefuseUnknownHostKey
        hop.client.set_missing_host_key_policy(policy_type(known))
