"""A real PostgreSQL server for the tests: Debian's binaries, a cluster of its own in a temporary folder,
listening only on a Unix socket there (no TCP port to collide with), trust authentication. As root the
server runs as the 'postgres' user the package created (PostgreSQL refuses to run as root)."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path


def server_binaries() -> Path | None:
    """The newest /usr/lib/postgresql/N/bin with initdb and pg_ctl, else None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


@dataclass
class Postgres:
    folder: Path
    bin_dir: Path
    port: int = 5432  # the socket's name is .s.PGSQL.<port>: no TCP listener is opened
    user: str = "postgres"
    durable: bool = False  # fsync on, as a real server has it (the tests run without)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "socket"

    def _as_owner(self, *argv: str) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", self.user, "--", *argv]
        return list(argv)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam(self.user)
            for path in (self.folder, self.socket_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            self.folder.chmod(0o755)
            # the folder's parents must be passable by the server's user
            for parent in self.folder.parents:
                if str(parent).startswith(("/tmp/", "/var/tmp/")):
                    parent.chmod(parent.stat().st_mode | 0o011)
        else:
            self.user = pwd.getpwuid(os.geteuid()).pw_name
        subprocess.run(self._as_owner(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", self.user,
                                      "--auth=trust", "--encoding=UTF8", "--no-sync"),
                       check=True, capture_output=True, timeout=120)
        options = f"-c listen_addresses='' -k {self.socket_dir} -p {self.port} -c max_connections=60"
        if not self.durable:
            options += " -c fsync=off"
        subprocess.run(self._as_owner(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-o", options,
                                      "-l", str(self.folder / "server.log"), "-w", "-t", "60", "start"),
                       check=True, capture_output=True, timeout=90)

    def stop(self) -> None:
        subprocess.run(self._as_owner(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                                      "stop"), capture_output=True, timeout=60)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def new_database(self) -> str:
        """A fresh, empty database's URL."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        subprocess.run([str(self.bin_dir / "psql"), "-h", str(self.socket_dir), "-p", str(self.port), "-U",
                        self.user, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", f"CREATE DATABASE {name}"],
                       check=True, capture_output=True, timeout=60)
        return self.url(name)


def make_postgres(folder: Path) -> Postgres | None:
    binaries = server_binaries()
    if binaries is None or not shutil.which("runuser"):
        return None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return None
    return Postgres(folder, binaries)
