"""OpenSSH's own client for the bulk bytes: one master connection per run, reused by every download.

paramiko carries the commands; the data of a pull goes through ``ssh`` over a ControlMaster socket, so
that it pays neither a key exchange per file nor paramiko's pure-Python channel (a fraction of OpenSSH's
throughput). AES-GCM is put first in the cipher list: boards and hosts alike encrypt it in hardware
(ARMv8 and x86 crypto extensions), where chacha20-poly1305, OpenSSH's default, runs in software.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .settings import ConnectOptions, SSHParams

PREFERRED_CIPHERS = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
# a cut link ends a transfer after about this many seconds of silence (interval x count)
SERVER_ALIVE_INTERVAL_S = 2
SERVER_ALIVE_COUNT = 3


@functools.lru_cache(maxsize=1)
def openssh_version() -> tuple[int, int] | None:
    if not shutil.which("ssh"):
        return None
    text = subprocess.run(["ssh", "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    match = re.search(r"OpenSSH_(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def usable() -> bool:
    """'^' in a cipher list (put these first) needs OpenSSH 8.2; older clients get paramiko's path."""
    version = openssh_version()
    return version is not None and version >= (8, 2)


def client_argv(params: SSHParams, options: ConnectOptions, control_path: str | None) -> list[str]:
    """ssh's options for this target, checked as strictly as paramiko checks them: known host keys only,
    keys only, no prompt."""
    argv = ["ssh", "-p", str(params.port), "-l", params.user,
            "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", "UserKnownHostsFile=" + " ".join(str(f) for f in params.known_hosts_files or [params.known_hosts]),
            "-o", f"ConnectTimeout={max(1, int(params.connect_timeout))}",
            "-o", f"ServerAliveInterval={SERVER_ALIVE_INTERVAL_S}",
            "-o", f"ServerAliveCountMax={SERVER_ALIVE_COUNT}",
            "-o", f"Ciphers={PREFERRED_CIPHERS}", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
            "-o", "LogLevel=ERROR"]
    argv += ["-F", str(params.ssh_config)] if params.ssh_config else []
    if params.proxy_command:  # ssh expands its tokens and runs it through the shell itself
        argv += ["-o", f"ProxyCommand={params.proxy_command}"]
    elif params.proxy_jump:
        argv += ["-o", f"ProxyJump={params.proxy_jump}"]
    for key in params.key_files:
        argv += ["-i", key, "-o", "IdentitiesOnly=yes"]
    if control_path:
        argv += ["-o", f"ControlPath={control_path}"]
    return argv


@functools.lru_cache(maxsize=1)
def _setpriv() -> str | None:
    """util-linux's setpriv when it sets the parent-death signal (2.33 and later), else None."""
    path = shutil.which("setpriv")
    if path is None:
        return None
    said = subprocess.run([path, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    return path if "--pdeathsig" in said else None


def _die_with_parent() -> None:
    """In the child, before exec: receive SIGTERM when orchestrate ends, however it ends."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def child(argv: list[str], **popen: object) -> subprocess.Popen:
    """An ssh process that never outlives orchestrate and never gets the terminal's Ctrl-C (orchestrate
    decides what an interrupt stops). The parent-death signal is set by setpriv where it can: Python code
    between fork and exec (preexec_fn) is not safe while another thread imports or holds a lock (a capture
    begins the pull's connection while the analysis modules load)."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    setpriv = _setpriv()
    if setpriv is not None:
        return subprocess.Popen([setpriv, "--pdeathsig", "TERM", "--", *argv], start_new_session=True,
                                **popen)  # type: ignore[call-overload]
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=_die_with_parent,
                            **popen)  # type: ignore[call-overload]


class MasterConnection:
    """``ssh -M -N`` on a private socket; downloads multiplex over it. Stopped with the transport."""

    def __init__(self, params: SSHParams, options: ConnectOptions) -> None:
        self.folder = tempfile.mkdtemp(prefix="orchestrate-ssh-")
        self.path = os.path.join(self.folder, "control")
        self.params, self.options = params, options
        self.process: subprocess.Popen | None = None
        self.deadline = 0.0

    def begin(self) -> None:
        """Start connecting without waiting for it (during a capture, so that the pull finds it up)."""
        argv = client_argv(self.params, self.options, self.path) + [
            "-M", "-N", "-o", "ControlPersist=no", self.params.hostname]
        self.process = child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.deadline = time.monotonic() + self.params.connect_timeout + 5

    def start(self) -> bool:
        """The master up (begun here unless ``begin`` did): True once its socket is there, else stopped."""
        if self.alive():  # up already (the deadline is only for connecting)
            return True
        if self.process is None:
            self.begin()
        assert self.process is not None
        while time.monotonic() < self.deadline and self.process.poll() is None:
            if Path(self.path).exists():
                return True
            time.sleep(0.02)
        self.stop()
        return False

    def connecting(self) -> bool:
        """Begun, still running, its socket not there yet."""
        return self.process is not None and self.process.poll() is None and not Path(self.path).exists()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and Path(self.path).exists()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        shutil.rmtree(self.folder, ignore_errors=True)
