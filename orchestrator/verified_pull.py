"""Bring files from the target so that nothing is lost: checksum on the target, download to a
partial name, checksum here, rename into place; the target's copy goes only after all that."""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .agent_client import RemoteAgent
from .errors import DiskFullError, TransferError

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class PulledFile:
    remote: str
    local: Path
    sha256: str
    size: int


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def pull_verified(agent: RemoteAgent, wanted: dict[str, Path],
                  on_progress: Callable[[int, int], None] | None = None) -> list[PulledFile]:
    """wanted: remote path -> local path. Missing optional files are skipped; returns what arrived."""
    sums = agent.call("checksum", {"paths": list(wanted)})["files"]
    present = {remote: meta for remote, meta in sums.items() if meta}
    total = sum(meta["size"] for meta in present.values())
    if wanted:
        folder = next(iter(wanted.values())).parent
        free = shutil.disk_usage(folder).free
        if free < total + 64 * 2**20:
            raise DiskFullError(f"only {free // 2**20} MB free in {folder}, the run needs {total // 2**20} MB",
                                "free space there or choose another --out")
    pulled: list[PulledFile] = []
    done_before = 0
    for remote, meta in present.items():
        local = wanted[remote]
        partial = local.with_name(f".{local.name}.part")

        def forward(done: int, _total: int, base: int = done_before) -> None:
            if on_progress:
                on_progress(base + done, total)

        agent.transport.get(remote, partial, forward)
        digest = sha256_file(partial)
        size = partial.stat().st_size
        if digest != meta["sha256"] or size != meta["size"]:
            partial.unlink(missing_ok=True)
            raise TransferError(f"{remote} arrived damaged ({size} of {meta['size']} bytes, sha256 mismatch)",
                                "the target still has it; rerun the pull")
        partial.replace(local)
        pulled.append(PulledFile(remote, local, digest, size))
        done_before += size
    return pulled
