"""The only module that talks to a target: run a command, put a file, get a file, close.

``SSHTransport`` speaks SSH through paramiko, checks host keys against known_hosts, authenticates by
key or agent only, honours ``~/.ssh/config`` (HostName, Port, User, IdentityFile, ProxyJump,
UserKnownHostsFile); the bytes of a download go through OpenSSH's client over a master connection
(``openssh``). ``LocalTransport`` does the same things on this machine. The verbs: run a command, open a
stream to a running command, put a file, download a command's output into files (``download``), close.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import paramiko
from fabric import Config as FabricConfig
from fabric import Connection

from ..errors import AuthError, ConnectError, HostKeyError, RemoteCommandError, TransferError, UsageError
from ..inventory.hosts import Host
from . import download, openssh
from .download import CommandResult, Part, ProgressHandler
from .shell import ShellCommand

# paramiko logs channel failures itself; they reach the user as one error line instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

LineHandler = Callable[[str], None]
CHUNK = 1024 * 1024


class Stream(Protocol):
    """A command that runs while we talk to it: lines in, lines out."""

    def send(self, data: bytes) -> None: ...

    def read_lines(self, timeout: float) -> list[str]: ...

    @property
    def finished(self) -> bool: ...

    def error_output(self) -> str: ...

    def close(self) -> None: ...


class Transport(Protocol):
    description: str

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult: ...

    def open_stream(self, command: ShellCommand) -> Stream: ...

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None: ...

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        """The command's stdout appended to the parts' files in turn, each its count of bytes."""

    def close(self) -> None: ...


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
    known_hosts: Path = Path("~/.ssh/known_hosts")
    proxy_jump: str | None = None
    connect_timeout: float = 10.0

    @property
    def display(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


def fabric_connection(host: Host, options: ConnectOptions) -> Connection:
    """The target as Fabric resolves it from ~/.ssh/config (HostName, Port, User, IdentityFile, ProxyJump and
    ProxyCommand as gateways), with the inventory's values winning and root as the default user. Not opened."""
    ssh_config = None  # Fabric's default: /etc/ssh/ssh_config and ~/.ssh/config
    if options.ssh_config is not None:
        path = options.ssh_config.expanduser()
        try:
            ssh_config = paramiko.SSHConfig.from_path(str(path))
        except (OSError, UnicodeDecodeError, paramiko.ssh_exception.ConfigParseError) as exc:
            raise UsageError(f"cannot read the ssh config {path}: {getattr(exc, 'strerror', None) or exc}",
                             "give --ssh-config an ssh_config file") from None
    config = FabricConfig(ssh_config=ssh_config, overrides={"user": "root", "port": 22})
    wait = max(1, math.ceil(host.connect_timeout))
    connection = Connection(host.address or host.name, user=host.user, port=host.port, config=config,
                            connect_timeout=wait,
                            connect_kwargs={"key_filename": [host.key_file] if host.key_file else [],
                                            "allow_agent": True, "banner_timeout": wait, "auth_timeout": wait})
    if host.address:  # the inventory's address wins over a HostName in ssh_config
        connection.host = host.address
    keys = connection.connect_kwargs.get("key_filename") or []
    connection.connect_kwargs["key_filename"] = [str(Path(k).expanduser()) for k in keys]
    connection.connect_kwargs["look_for_keys"] = not keys
    return connection


def _known_hosts(connection: Connection, options: ConnectOptions) -> Path:
    if options.known_hosts is not None:
        return options.known_hosts.expanduser()
    configured = connection.ssh_config.get("userknownhostsfile")
    return Path(configured.split()[0] if configured else "~/.ssh/known_hosts").expanduser()


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


def ssh_params(host: Host, connection: Connection, options: ConnectOptions) -> SSHParams:
    """What OpenSSH's client needs to reach the same target (the downloads go through it)."""
    return SSHParams(alias=host.name, hostname=connection.host, port=int(connection.port), user=connection.user,
                     key_files=tuple(connection.connect_kwargs.get("key_filename") or ()),
                     known_hosts=_known_hosts(connection, options),
                     proxy_jump=connection.ssh_config.get("proxyjump"), connect_timeout=host.connect_timeout)


def resolve_ssh_params(host: Host, options: ConnectOptions) -> SSHParams:
    """Inventory values win over ~/.ssh/config, which wins over defaults (user root, port 22)."""
    return ssh_params(host, fabric_connection(host, options), options)


def fingerprint(key: paramiko.PKey) -> str:
    import base64
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(hostname: str, port: int) -> str:
    return hostname if port == 22 else f"[{hostname}]:{port}"


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


def _hops(connection: Connection) -> list[Connection]:
    """The connection and each gateway it goes through (ProxyJump), nearest the target first."""
    chain = [connection]
    while isinstance(chain[-1].gateway, Connection):
        chain.append(chain[-1].gateway)
    return chain


def _open(connection: Connection, options: ConnectOptions) -> None:
    """Open the connection (its gateways first) with known host keys only, or record a new one when asked;
    every failure as one error that says what to do."""
    for hop in _hops(connection):  # Fabric would add unknown keys silently: each hop checks them as ssh does
        known = _known_hosts(hop, options)
        if known.is_file():
            _load_known_hosts(hop, known)
        policy_type = _RecordNewHostKey if options.accept_new_host_key else _RefuseUnknownHostKey
        hop.client.set_missing_host_key_policy(policy_type(known))
    target = f"{connection.user}@{connection.host}:{connection.port}"
    wait = connection.connect_timeout
    for key in connection.connect_kwargs.get("key_filename") or []:
        if not Path(key).is_file():
            raise AuthError(f"the SSH key {key} for {target} does not exist",
                            "fix ansible_ssh_private_key_file (or IdentityFile in the ssh config)")
    try:
        connection.open()
    except HostKeyError:
        _close(connection)
        raise
    except paramiko.BadHostKeyException as exc:
        _close(connection)
        known = _known_hosts(connection, options)
        name = known_hosts_name(connection.host, int(connection.port))
        raise HostKeyError(
            f"host key of {target} CHANGED: got {fingerprint(exc.key)}, {known} has {fingerprint(exc.expected_key)}",
            f"if the board was re-flashed, remove the old key: ssh-keygen -R '{name}' -f {known}",
        ) from None
    except paramiko.AuthenticationException:
        _close(connection)
        root = " (a stock board lets no one log in as root: set ansible_user to the board's user, ssh-copy-id "\
            "to it, and ansible_become: true)" if connection.user == "root" else ""
        raise AuthError(f"{target} refused our SSH keys",
                        "add your public key to the target's ~/.ssh/authorized_keys (ssh-copy-id) "
                        f"or set ansible_ssh_private_key_file{root}") from None
    except socket.gaierror:
        _close(connection)
        raise ConnectError(f"cannot resolve host name '{connection.host}'",
                           "check ansible_host in the inventory or HostName in ~/.ssh/config") from None
    except TimeoutError:
        _close(connection)
        raise ConnectError(f"connecting to {target} timed out after {wait:g} s",
                           "is the board on and reachable? check the address and port") from None
    except paramiko.ssh_exception.NoValidConnectionsError:
        _close(connection)
        raise ConnectError(f"cannot connect to {target}: connection refused",
                           "is sshd running on the target, and is the port right?") from None
    except paramiko.SSHException as exc:
        _close(connection)
        if "banner" in str(exc) or str(exc) == "No existing session":  # paramiko's words for a silent peer
            raise ConnectError(f"{target} accepted the connection but sent no SSH greeting within {wait:g} s",
                               "is it an SSH server, and is the board responsive? check the port") from None
        raise ConnectError(f"SSH connection to {target} failed: {exc}",
                           "check that the target runs an SSH server on that port (and that the jump host, if "
                           "any, reaches it)") from None
    except OSError as exc:
        _close(connection)
        raise ConnectError(f"SSH connection to {target} failed: {exc}",
                           "check that the target runs an SSH server on that port") from None
    connection.transport.set_keepalive(options.keepalive_s)


def _close(connection: Connection) -> None:
    for hop in _hops(connection):  # Fabric closes a connection, not the gateways it opened for it
        hop.close()


class SSHTransport:
    """SSH through Fabric's Connection (paramiko underneath) for commands and uploads; downloads through
    OpenSSH's client over a master connection of its own, as fast as scp (see ``download``)."""

    def __init__(self, host: Host, options: ConnectOptions) -> None:
        self.options = options
        self._connection = fabric_connection(host, options)
        self.params = ssh_params(host, self._connection, options)
        self.description = self.params.display
        _open(self._connection, options)
        self._jumps = _hops(self._connection)[1:]
        self._sftp: paramiko.SFTPClient | None = None
        self._master: openssh.MasterConnection | None = None

    def _transport(self) -> paramiko.Transport:
        transport = self._connection.client.get_transport()
        if transport is None or not transport.is_active():
            raise ConnectError(f"the SSH connection to {self.description} dropped", "check the network and retry")
        return transport

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult:
        line = command.render() if isinstance(command, ShellCommand) else command
        channel = self._transport().open_session()
        try:
            channel.exec_command(line)
            data = stdin or b""
            for start in range(0, len(data), CHUNK):  # paramiko's sendall copies what is left after each send
                channel.sendall(data[start:start + CHUNK])
            channel.shutdown_write()
            return _drain(channel, on_stdout_line, timeout, line)
        finally:
            channel.close()

    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self._connection.client.open_sftp()
        return self._sftp

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None:
        partial = remote + ".part"
        try:
            sftp = self.sftp()
            sftp.put(str(local), partial)
            sftp.chmod(partial, mode)
            sftp.posix_rename(partial, remote)
        except (OSError, paramiko.SSHException) as exc:
            try:  # nothing half-sent stays on the board
                self.sftp().remove(partial)
            except (OSError, paramiko.SSHException):
                pass
            raise TransferError(f"uploading {local.name} to {self.description}:{remote} failed: {exc}",
                                "check free space and permissions on the target") from None

    def open_stream(self, command: ShellCommand) -> Stream:
        channel = self._transport().open_session()
        channel.exec_command(command.render())
        return _ChannelStream(channel)

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        """The command's stdout into the parts: through OpenSSH's client over the run's master connection
        where it can (as fast as scp), else through paramiko."""
        if openssh.usable() and not self._jumps:
            if self._master is None or not self._master.alive():
                if self._master is not None:
                    self._master.stop()
                self._master = openssh.MasterConnection(self.params, self.options)
                self._master.start()
            argv = openssh.client_argv(self.params, self.options, self._master.path) + [
                self.params.hostname, command.render()]
            return download.from_process(argv, parts, stdin, on_progress)
        return download.from_channel(self._transport().open_session(), command.render(), parts, stdin, on_progress)

    def close(self) -> None:
        if self._master is not None:
            self._master.stop()
            self._master = None
        if self._sftp is not None:
            self._sftp.close()
        _close(self._connection)


def _take(recv: Callable[[int], bytes], ready: Callable[[], bool], eof: bool | int) -> tuple[bytes, bool]:
    """Whatever one stream of a channel holds now, and whether the stream is still open."""
    taken = bytearray()
    while ready() or eof:
        data = recv(CHUNK)
        if not data:
            return bytes(taken), False
        taken += data
    return bytes(taken), True


def _drain(channel: paramiko.Channel, on_line: LineHandler | None, timeout: float | None,
           line: str) -> CommandResult:
    """Read stdout and stderr to their ends, handing stdout lines out as they arrive. The exit status
    can arrive before the last output, so the loop waits for end-of-file on both streams."""
    out, err = bytearray(), bytearray()
    pending = b""
    out_open = err_open = True
    deadline = time.monotonic() + timeout if timeout else None
    while out_open or err_open:
        select.select([channel], [], [], 0.2)
        if out_open:
            data, out_open = _take(channel.recv, channel.recv_ready, channel.eof_received)
            out += data
            if on_line and data:
                pending += data
                *lines, pending = pending.split(b"\n")
                for one in lines:
                    on_line(one.decode("utf-8", "replace"))
        if err_open:
            data, err_open = _take(channel.recv_stderr, channel.recv_stderr_ready, channel.eof_received)
            err += data
        if deadline and time.monotonic() > deadline:
            raise RemoteCommandError(f"remote command did not finish within {timeout:g} s: {line[:120]}",
                                     "the target may be overloaded; rerun with a longer --grace")
    if on_line and pending:
        on_line(pending.decode("utf-8", "replace"))
    return CommandResult(channel.recv_exit_status(), out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


class _ChannelStream:
    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self.pending = b""
        self.errors = bytearray()
        self._eof = False

    def send(self, data: bytes) -> None:
        try:
            self.channel.sendall(data)
        except (OSError, paramiko.SSHException):
            self._eof = True

    def read_lines(self, timeout: float) -> list[str]:
        select.select([self.channel], [], [], timeout)
        while self.channel.recv_stderr_ready():
            self.errors += self.channel.recv_stderr(CHUNK)
        data = b""
        while self.channel.recv_ready():
            data += self.channel.recv(CHUNK)
        if not data and self.channel.eof_received and not self.channel.recv_ready():
            self._eof = True
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines]

    @property
    def finished(self) -> bool:
        return self._eof or self.channel.closed

    def error_output(self) -> str:
        return self.errors.decode("utf-8", "replace")

    def close(self) -> None:
        self.channel.close()


class _ProcessStream:
    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.proc = proc
        self.pending = b""
        self._eof = False
        os.set_blocking(proc.stdout.fileno(), False)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self._eof = True

    def read_lines(self, timeout: float) -> list[str]:
        assert self.proc.stdout
        select.select([self.proc.stdout], [], [], timeout)
        data = b""
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                self._eof = True
                break
            data += chunk
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines]

    @property
    def finished(self) -> bool:
        return self._eof

    def error_output(self) -> str:
        assert self.proc.stderr
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


class LocalTransport:
    """The same four verbs on this machine: the embedded default target needs no board."""

    description = "this machine"

    def run(self, command: ShellCommand | str, *, stdin: bytes | None = None,
            on_stdout_line: LineHandler | None = None, timeout: float | None = None) -> CommandResult:
        line = command.render() if isinstance(command, ShellCommand) else command
        proc = subprocess.Popen(["/bin/sh", "-c", line], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdin and proc.stdout and proc.stderr
        proc.stdin.write(stdin or b"")
        proc.stdin.close()
        err_chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        out = bytearray()
        deadline = time.monotonic() + timeout if timeout else None
        for raw in iter(proc.stdout.readline, b""):
            out += raw
            if on_stdout_line:
                on_stdout_line(raw.decode("utf-8", "replace").rstrip("\n"))
            if deadline and time.monotonic() > deadline:
                proc.kill()
                raise RemoteCommandError(f"command did not finish within {timeout:g} s: {line[:120]}",
                                         "rerun with a longer --grace")
        proc.wait()
        reader.join()
        errors = b"".join(err_chunks).decode("utf-8", "replace")
        return CommandResult(proc.returncode, out.decode("utf-8", "replace"), errors)

    def put(self, local: Path, remote: str, mode: int = 0o600) -> None:
        target = Path(remote)
        partial = target.with_name(target.name + ".part")
        try:
            shutil.copyfile(local, partial)
            os.chmod(partial, mode)
            os.replace(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise TransferError(f"copying {local.name} to {remote} failed: {exc.strerror or exc}",
                                "check free space and permissions there") from None

    def open_stream(self, command: ShellCommand) -> Stream:
        proc = subprocess.Popen(["/bin/sh", "-c", command.render()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        return _ProcessStream(proc)

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        return download.from_process(["/bin/sh", "-c", command.render()], parts, stdin, on_progress)

    def close(self) -> None:
        pass


def open_transport(host: Host, options: ConnectOptions) -> Transport:
    """The target as its inventory entry says: this machine or SSH, and through sudo with ansible_become."""
    from .become import BecomeTransport  # it wraps the transports of this module
    inner: Transport = LocalTransport() if host.is_local else SSHTransport(host, options)
    if not host.become:
        return inner
    try:
        return BecomeTransport(inner, host.become_user, options.become_password)
    except BaseException:
        inner.close()
        raise
