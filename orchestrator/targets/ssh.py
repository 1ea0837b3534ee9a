"""The SSH transport: commands and uploads through Fabric's Connection (paramiko underneath), with host keys
checked against known_hosts and keys or the agent only (``settings``); the bytes of a download through
OpenSSH's client over a master connection (``openssh``). A command's channel feeds the one read loop
(``streams``).
"""
from __future__ import annotations

import logging
import select
import socket
from collections.abc import Sequence
from pathlib import Path

import paramiko
from fabric import Connection

from ..errors import AuthError, ConnectError, HostKeyError, RemoteCommandError, TransferError
from ..inventory.hosts import Host
from . import download, openssh, streams
from .download import Part, ProgressHandler
from .settings import (
    ConnectOptions,
    check_host_keys,
    fabric_connection,
    fingerprint,
    hops,
    known_hosts_name,
    known_hosts_path,
    ssh_params,
)
from .shell import ShellCommand
from .streams import CHUNK, CommandResult, LineHandler, LineStream

# paramiko logs channel failures itself; they reach the user as one error line instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def _open(connection: Connection, options: ConnectOptions, host: Host) -> None:
    """Open the connection (its gateways first) with known host keys only, or record a new one when asked;
    every failure as one error that says what to do."""
    check_host_keys(connection, options, host)
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
        known = known_hosts_path(connection, options, host)
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
    for hop in hops(connection):  # Fabric closes a connection, not the gateways it opened for it
        hop.close()


SMALL_PULL_BYTES = 4 * 2**20


class SSHTransport:
    """SSH through Fabric's Connection (paramiko underneath) for commands and uploads; downloads through
    OpenSSH's client over a master connection of its own, as fast as scp (see ``download``). The verbs of
    transport.Transport: run, open_stream, put, download, close."""

    def __init__(self, host: Host, options: ConnectOptions) -> None:
        self.options = options
        self._connection = fabric_connection(host, options)
        self.params = ssh_params(host, self._connection, options)
        self.description = self.params.display
        _open(self._connection, options, host)
        self._jumps = hops(self._connection)[1:]
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
            return streams.run(ChannelProcess(channel, line, stdin or b""), on_stdout_line, timeout)
        except streams.DeadlinePassed:
            raise RemoteCommandError(f"remote command did not finish within {timeout:g} s: {line[:120]}",
                                     "the target may be overloaded; rerun with a longer --grace") from None
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

    def open_stream(self, command: ShellCommand) -> ChannelStream:
        return ChannelStream(ChannelProcess(self._transport().open_session(), command.render(), None))

    def prepare_download(self) -> None:
        """Begin the master connection that downloads go through, without waiting for it."""
        if openssh.usable() and not self._jumps and self._master is None:
            self._master = openssh.MasterConnection(self.params, self.options)
            self._master.begin()

    def download(self, command: ShellCommand, parts: Sequence[Part], stdin: bytes,
                 on_progress: ProgressHandler | None = None) -> CommandResult:
        """The command's stdout into the parts: through OpenSSH's client over the run's master connection
        where it can (as fast as scp), else through paramiko; a few MB with no master connection begun (a run
        without nsys pulls its logs) through paramiko too, on the connection that is there: a new connection's
        handshake would cost the host and the board more than the rate saves."""
        sizes = [count for _, count in parts]
        small = None not in sizes and sum(count or 0 for count in sizes) < SMALL_PULL_BYTES
        if openssh.usable() and not self._jumps and not (small and self._master is None):
            if self._master is not None and not (self._master.alive() or self._master.connecting()):
                self._master.stop()  # it died (a link cut): a new one
                self._master = None
            if self._master is None:
                self._master = openssh.MasterConnection(self.params, self.options)
            self._master.start()  # waits for one that prepare_download began
            argv = openssh.client_argv(self.params, self.options, self._master.path) + [
                self.params.hostname, command.render()]
            return download.from_process(argv, parts, stdin, on_progress)
        channel = self._transport().open_session()
        try:
            return download.from_stdout(ChannelProcess(channel, command.render(), stdin), parts, on_progress,
                                        failures=(OSError, paramiko.SSHException))
        finally:
            channel.close()

    def close(self) -> None:
        if self._master is not None:
            self._master.stop()
            self._master = None
        if self._sftp is not None:
            self._sftp.close()
        _close(self._connection)


class ChannelProcess:
    """A command on a paramiko channel: the read loop's hooks (streams.Process)."""

    def __init__(self, channel: paramiko.Channel, line: str, stdin: bytes | None) -> None:
        self.channel = channel
        self.line = line
        self.stdin = stdin  # all of it, then the input's end; None: the input stays open (a stream)

    def start(self) -> None:
        self.channel.exec_command(self.line)
        if self.stdin is None:
            return
        for start in range(0, len(self.stdin), CHUNK):  # paramiko's sendall copies what is left after each send
            self.channel.sendall(self.stdin[start:start + CHUNK])
        self.channel.shutdown_write()

    def wait(self, timeout: float) -> None:
        select.select([self.channel], [], [], timeout)  # the channel is ready when either output has bytes

    def read_stdout(self) -> bytes | None:
        # after the channel's EOF, recv hands out what is left, then b"" (the output's end); a channel closed
        # without one (the connection dropped) ends its outputs the same way, instead of select waking the loop
        # at once, again and again, until the deadline
        if not (self.channel.recv_ready() or self.channel.eof_received or self.channel.closed):
            return b""
        return self.channel.recv(CHUNK) or None

    def read_stderr(self) -> bytes | None:
        if not (self.channel.recv_stderr_ready() or self.channel.eof_received or self.channel.closed):
            return b""
        return self.channel.recv_stderr(CHUNK) or None

    def exit_status(self) -> int:
        return self.channel.recv_exit_status()


class ChannelStream(LineStream):
    """A stream on a channel (transport.Stream): finished too when the channel closes under it."""

    def __init__(self, process: ChannelProcess) -> None:
        super().__init__(process)
        self.channel = process.channel

    def send(self, data: bytes) -> None:
        try:
            self.channel.sendall(data)
        except (OSError, paramiko.SSHException):
            self.input_closed = True

    @property
    def finished(self) -> bool:
        return super().finished or self.channel.closed

    def close(self) -> None:
        self.channel.close()
