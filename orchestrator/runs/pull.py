"""Bring files from the target so that nothing is lost: checksum on the target, download to a
partial name, checksum here, rename into place; the target's copy goes only after all that.

The target hashes its files first (``board_checksums``), while the host hashes the partial file as it
grows during the download (a full re-read settles any doubt at the end)."""
from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DiskFullError, TransferError
from ..targets.agent import RemoteAgent

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


class GrowingFileHash:
    """sha256 of a file that is being written, read up to its current end at each call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.digest = hashlib.sha256()
        self.offset = 0

    def catch_up(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                for block in iter(lambda: handle.read(CHUNK), b""):
                    self.digest.update(block)
                    self.offset += len(block)
        except FileNotFoundError:
            pass

    def final(self) -> str:
        self.catch_up()
        return self.digest.hexdigest()


def board_checksums(agent: RemoteAgent, paths: list[str]) -> dict[str, Any]:
    """remote path -> {sha256, size}, computed on the target; None for files it does not have."""
    return agent.call("checksum", {"paths": paths})["files"]


def pull_verified(agent: RemoteAgent, wanted: dict[str, Path], expected: dict[str, Any] | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> list[PulledFile]:
    """wanted: remote path -> local path; expected: board_checksums() of them (computed here when not
    given). Files absent on the target are skipped; returns what arrived, verified."""
    if expected is None:
        expected = board_checksums(agent, list(wanted))
    present = {remote: meta["size"] for remote, meta in expected.items() if meta and remote in wanted}
    total = sum(present.values())
    if wanted:
        folder = next(iter(wanted.values())).parent
        free = shutil.disk_usage(folder).free
        if free < total + 64 * 2**20:
            raise DiskFullError(f"only {free // 2**20} MB free in {folder}, the run needs {total // 2**20} MB",
                                "free space there or choose another --out")
    arrived: list[tuple[str, Path, Path, str]] = []
    done_before = 0
    for remote, size in present.items():
        local = wanted[remote]
        partial = local.with_name(f".{local.name}.part")
        follower = GrowingFileHash(partial)

        def forward(done: int, _total: int, base: int = done_before, follow: GrowingFileHash = follower) -> None:
            follow.catch_up()
            if on_progress:
                on_progress(base + done, total)

        agent.transport.get(remote, partial, forward)
        arrived.append((remote, local, partial, follower.final()))
        done_before += size
    pulled: list[PulledFile] = []
    for remote, _local, partial, digest in arrived:
        meta = expected[remote]
        size = partial.stat().st_size
        if meta and digest != meta["sha256"]:
            digest = sha256_file(partial)  # the download may have written out of order: re-read it whole
        if not meta or digest != meta["sha256"] or size != meta["size"]:
            for _, _, leftover, _ in arrived:
                leftover.unlink(missing_ok=True)
            raise TransferError(f"{remote} arrived damaged ({size} of {meta['size'] if meta else '?'} bytes, "
                                "sha256 mismatch)", "the target still has it; rerun the pull")
    for remote, local, partial, _ in arrived:
        partial.replace(local)
        pulled.append(PulledFile(remote, local, expected[remote]["sha256"], expected[remote]["size"]))
    return pulled
