"""A real OpenSSH server on loopback for tests and benchmarks: generated host and client keys, root
login by key only. Several instances (one per port) make a fleet.

With ``own_machine`` the server is a board of its own: it runs in namespaces with a /run, /tmp and /dev/shm
of their own and a hostname of its own, so that its capture lock (/run/orchestrate-capture.lock) and nsys's
files in /tmp are its own, as on a real board. The tests' temporary tree under /tmp stays visible in it at the
same path, so that a test reads the board's work dir as the board writes it; so do this checkout and its
Python when they lie under /tmp (a fresh clone there), which tests run on the board."""
from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
CHECKOUT = Path(__file__).resolve().parent.parent
MACHINES: list[Sshd] = []  # the boards of their own this process started, whose /tmp the tests check


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def keygen(path: Path) -> str:
    """A fresh ed25519 key pair at path (replacing any old one); returns the public line."""
    for old in (path, Path(str(path) + ".pub")):
        old.unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "orchestrate-test", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    return Path(str(path) + ".pub").read_text().strip()


@dataclass
class Sshd:
    root: Path
    port: int
    client_key: Path
    known_hosts: Path
    ssh_config: Path
    host_public_key: str
    address: str = "127.0.0.1"
    netns: str | None = None  # run inside this network namespace (a board behind a link of its own)
    own_machine: bool = False  # a /run, /tmp, /dev/shm and hostname of its own (see the module's docstring)
    setup: tuple[str, ...] = ()  # more shell steps that make the machine of its own (mounts of its own)
    process: subprocess.Popen | None = None
    left_in_tmp: set[str] = field(default_factory=set)

    def start(self) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        log = open(self.root / "sshd.log", "ab")
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        if self.own_machine:
            prefix += ["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c",
                       machine_setup(f"board-{self.port}", kept_under_tmp(self.root, CHECKOUT, Path(sys.prefix)),
                                     self.setup), "sh"]
        self.process = subprocess.Popen([*prefix, SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                        stdout=log, stderr=log)
        if self.own_machine and self not in MACHINES:
            MACHINES.append(self)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.netns and self.address.startswith("127."):  # the namespace's own loopback: its log says
                said = (self.root / "sshd.log").read_text(errors="replace")
                if f"Server listening on {self.address} port {self.port}" in said:
                    return
            else:
                with socket.socket() as probe:
                    probe.settimeout(1)
                    if probe.connect_ex((self.address, self.port)) == 0:
                        return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not start: {(self.root / 'sshd.log').read_text()}")

    @property
    def tmp(self) -> Path:
        """The board's /tmp, seen from here: through /proc when it is a machine of its own (and runs)."""
        if self.own_machine and self.process is not None:
            return Path(f"/proc/{self.process.pid}/root/tmp")
        return Path("/tmp")

    def nsys_files(self, pattern: str) -> set[str]:
        """Files matching pattern in the board's /tmp, named as this machine sees them; once the board has
        stopped (its /tmp gone with it), those it held when it stopped."""
        if self.own_machine and self.process is not None and self.process.poll() is None:
            self.left_in_tmp = {str(path) for path in self.tmp.glob(pattern)}
        return self.left_in_tmp

    def stop(self) -> None:
        self.nsys_files("injection_config_*")
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def kill_all(self) -> None:
        """SIGKILL the listener and every session it forked, as a board losing power would."""
        if self.process is None:
            return
        self.nsys_files("injection_config_*")
        for pid in [*descendants(self.process.pid), self.process.pid]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)
        self.process = None

    def inventory_host(self) -> dict:
        return {
            "ansible_host": self.address,
            "ansible_port": self.port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.client_key),
        }


@dataclass(frozen=True)
class LoginUser:
    """A real account of this machine that logs in to the test sshd with its client key, as a board's desktop
    user does: with passwordless sudo, sudo that asks for its password, or no sudo at all."""

    name: str
    password: str
    home: Path
    sudo: str | None

    def inventory_host(self, server: Sshd, **extra: object) -> dict:
        return {**server.inventory_host(), "ansible_user": self.name, **extra}


def add_login_user(server: Sshd, role: str, sudo: str | None) -> LoginUser:
    """useradd, a random password (chpasswd, on stdin), the client key in ~/.ssh and, with sudo 'nopasswd' or
    'password', a line in /etc/sudoers.d. Named per xdist worker; remove_login_user undoes it."""
    import pwd
    import secrets
    name = f"orch-{role}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    remove_login_user(name)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
    password = secrets.token_urlsafe(18)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
    home = Path(pwd.getpwnam(name).pw_dir)
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    (ssh / "authorized_keys").write_text(Path(str(server.client_key) + ".pub").read_text())
    subprocess.run(["chown", "-R", f"{name}:", str(ssh)], check=True)
    if sudo is not None:
        rule = Path("/etc/sudoers.d") / name
        rule.write_text(f"{name} ALL=(ALL) {'NOPASSWD: ' if sudo == 'nopasswd' else ''}ALL\n")
        rule.chmod(0o440)
    return LoginUser(name, password, home, sudo)


def remove_login_user(name: str) -> None:
    (Path("/etc/sudoers.d") / name).unlink(missing_ok=True)
    subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)


def kept_under_tmp(*paths: Path) -> list[Path]:
    """The folders of /tmp that hold paths (the tests' temporary tree, this checkout and its Python when they
    lie under /tmp), which a board of its own keeps seeing."""
    kept: list[Path] = []
    for path in paths:
        parts = path.resolve().parts
        folder = Path(*parts[:3])
        if len(parts) > 3 and parts[1] == "tmp" and folder not in kept:
            kept.append(folder)
    return kept


def machine_setup(hostname: str, kept: list[Path], more: tuple[str, ...] = ()) -> str:
    """The shell steps, in fresh mount and UTS namespaces, that make a machine of its own before sshd starts:
    tmpfs on /run, /dev/shm and /tmp, the kept folders bound back at their paths in the new /tmp."""
    steps = ["mount -t tmpfs -o mode=755 tmpfs /run", "mkdir -m 755 /run/sshd",
             "mount -t tmpfs -o mode=1777 tmpfs /dev/shm"]
    for n, folder in enumerate(kept):  # held under the new /run while /tmp is replaced
        steps += [f"mkdir -p /run/kept/{n}", f"mount --bind {shlex.quote(str(folder))} /run/kept/{n}"]
    steps.append("mount -t tmpfs -o mode=1777 tmpfs /tmp")
    for n, folder in enumerate(kept):
        steps += [f"mkdir -p {shlex.quote(str(folder))}", f"mount --bind /run/kept/{n} {shlex.quote(str(folder))}",
                  f"umount /run/kept/{n}"]
    return " && ".join([*steps, *more, f"hostname {shlex.quote(hostname)}", 'exec "$@"'])


def descendants(root: int) -> list[int]:
    """PIDs below root in the process tree, deepest last."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                ppid = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[-1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def make_sshd(root: Path, port: int | None = None, client_key: Path | None = None, address: str = "127.0.0.1",
              netns: str | None = None, own_machine: bool = False, setup: tuple[str, ...] = (),
              log_level: str = "ERROR") -> Sshd:
    """Write keys and config under root; the caller starts and stops it. log_level VERBOSE logs each login (user,
    key, the port it came to) in sshd.log."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    port = port or free_port()
    host_key = root / "ssh_host_ed25519_key"
    host_public = keygen(host_key)
    if client_key is None:
        client_key = root / "client_key"
        keygen(client_key)
    authorized = root / "authorized_keys"
    authorized.write_text(Path(str(client_key) + ".pub").read_text())
    authorized.chmod(0o600)
    sftp_server = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server")
                        if os.path.exists(p)), "internal-sftp")
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress {address}\nHostKey {host_key}\nPidFile {root}/sshd.pid\n"
        f"AuthorizedKeysFile {authorized} .ssh/authorized_keys\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel {log_level}\n"
        f"Subsystem sftp {sftp_server}\n")
    known_hosts = root / "known_hosts"
    known_hosts.write_text(f"[{address}]:{port} {' '.join(host_public.split()[:2])}\n")
    ssh_config = root / "ssh_config"
    ssh_config.write_text("# empty on purpose: keeps the developer's own ~/.ssh/config out of the tests\n")
    return Sshd(root=root, port=port, client_key=client_key, known_hosts=known_hosts, ssh_config=ssh_config,
                host_public_key=host_public, address=address, netns=netns, own_machine=own_machine, setup=setup)
