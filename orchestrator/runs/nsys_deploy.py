"""``orchestrate nsys deploy``: put a host Nsight Systems install's target folder on a board that has no nsys,
where the host's GUI puts it on first connect (``/opt/nvidia/nsight_systems/``, flat), so that the agent's
preflight finds it there.

Every file is compared by sha256 with what the board already holds; only those that differ are sent, in one
tar stream unpacked beside the folder and renamed into it file by file (so no file there is ever half
written), then every file is hashed on the board again. A deploy cut short sends only the rest
the next time; one that finds every file in place sends nothing. Files of an older deploy that the new
folder lacks are removed. Writing under /opt needs root: log in as root, or set ansible_become.
"""
from __future__ import annotations

import hashlib
import io
import shlex
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import TransferError, UsageError
from ..inventory.hosts import Host
from ..targets.connect import open_transport
from ..targets.settings import ConnectOptions
from ..targets.transport import Transport

DEPLOY_FOLDER = "/opt/nvidia/nsight_systems"   # the host GUI's (the agent searches it: nsys_locate.GUI_FOLDER)
TARGET_FOLDERS = ("target-linux-tegra-armv8", "target-linux-armv8")


@dataclass(frozen=True)
class Deployed:
    folder: str
    files: int
    sent: int
    sent_bytes: int
    removed: int


def target_folder(source: Path) -> Path:
    """The folder holding nsys in a host install: the one given, or its target-linux-* folder (Jetson's first)."""
    if (source / "nsys").is_file():
        return source
    for name in TARGET_FOLDERS:
        if (source / name / "nsys").is_file():
            return source / name
    found = sorted(p.parent for p in source.glob("target-linux-*/nsys") if p.is_file())
    if len(found) == 1:
        return found[0]
    raise UsageError(f"{source} holds no Nsight Systems target folder (no nsys in it or in a target-linux-* folder)",
                     "give --from the host's Nsight Systems folder, e.g. /opt/nvidia/nsight-systems/2024.5.4")


def manifest(folder: Path) -> dict[str, str]:
    """Every file under folder (symlinks followed, as the board gets copies) -> its sha256."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            found[path.relative_to(folder).as_posix()] = digest.hexdigest()
    return found


def board_hashes(transport: Transport, folder: str) -> dict[str, str]:
    """What the board holds under folder: relative path -> sha256 (nothing when the folder is not there)."""
    quoted = shlex.quote(folder)
    done = transport.run(f"[ -d {quoted} ] || exit 0; cd {quoted} && find . -type f -print0 | "
                         "xargs -0 -r sha256sum --")
    if done.exit_status != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit status {done.exit_status}"])[-1]
        raise TransferError(f"cannot read {folder} on {transport.description}: {detail}",
                            "check that the login (or become) user may read it")
    found = {}
    for line in done.stdout.splitlines():
        digest, _, name = line.partition("  ")
        if name.startswith("./"):
            found[name[2:]] = digest.lstrip("\\")
    return found


def tar_of(folder: Path, names: list[str]) -> bytes:
    """The named files of folder as one tar (links followed, modes kept)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", dereference=True) as archive:
        for name in names:
            archive.add(folder / name, arcname=name, recursive=False)
    return buffer.getvalue()


def unpack_line(folder: str) -> str:
    """The board's side: the tar on stdin into a folder beside ``folder``, each file then renamed into place."""
    dest, incoming = shlex.quote(folder), shlex.quote(folder + ".incoming")
    return (f"rm -rf {incoming} && mkdir -p {dest} {incoming} && tar -x -f - -C {incoming} --no-same-owner && "
            f"cd {incoming} && find . -type f -exec sh -c 'for f; do mkdir -p \"$0/${{f%/*}}\" && "
            f"mv -f \"$f\" \"$0/$f\" || exit 1; done' {dest} {{}} + && cd / && rm -rf {incoming}")


def deploy_nsys(host: Host, connect: ConnectOptions, source: Path, folder: str = DEPLOY_FOLDER) -> Deployed:
    local = target_folder(source)
    wanted = manifest(local)
    transport = open_transport(host, connect)
    try:
        have = board_hashes(transport, folder)
        stale = sorted(set(have) - set(wanted))
        send = [name for name, digest in wanted.items() if have.get(name) != digest]
        remove = " && rm -f -- " + " ".join(shlex.quote(f"{folder}/{n}") for n in stale) if stale else ""
        made = transport.run(unpack_line(folder) + remove, stdin=tar_of(local, send))
        if made.exit_status != 0:
            detail = (made.stderr.strip().splitlines() or [f"exit status {made.exit_status}"])[-1]
            raise TransferError(f"cannot write {folder} on {transport.description}: {detail}",
                                "log in as root, or set ansible_become: true for this board")
        now = board_hashes(transport, folder)
        wrong = sorted(name for name, digest in wanted.items() if now.get(name) != digest)
        if wrong:
            raise TransferError(f"{len(wrong)} files differ on {transport.description} after the deploy, "
                                f"e.g. {folder}/{wrong[0]}", "run the deploy again (what is in place is kept)")
    finally:
        transport.close()
    return Deployed(folder, len(wanted), len(send), sum((local / n).stat().st_size for n in send), len(stale))
