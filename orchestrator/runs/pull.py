"""Bring files from the target so that nothing is lost, in one pass: the board hashes each file while
it sends it (agent ``send``), this machine hashes the partial file while it grows, and only when both
sha256 agree does the partial file take its final name. A broken transfer leaves the partial file
where it is: the next pull asks the board for the bytes after it, and still compares whole-file
hashes. The board's copy is removed by the caller, only after all that."""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DiskFullError, TransferError
from ..targets.agent import RemoteAgent, raise_if_untrusted
from ..targets.shell import ShellCommand

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class PulledFile:
    remote: str
    local: Path
    sha256: str
    size: int
    resumed_from: int = 0


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


def partial_path(local: Path) -> Path:
    return local.with_name(f".{local.name}.part")


def board_sizes(agent: RemoteAgent, paths: list[str]) -> dict[str, int | None]:
    """remote path -> size on the target (None for a file it does not have); nothing is hashed. One shell
    command (a tenth of an agent call's cost): a line per path, '-' for a missing one."""
    if not paths:
        return {}
    quoted = ShellCommand(tuple(paths)).render()
    done = agent.transport.run(f'for f in {quoted}; do [ -f "$f" ] && stat -c %s -- "$f" || echo -; done')
    lines = done.stdout.split()
    if done.exit_status != 0 or len(lines) != len(paths):
        raise TransferError(f"cannot read the sizes of the files to pull on {agent.transport.description}",
                            (done.stderr.strip().splitlines() or ["no output"])[-1])
    return {path: int(line) if line.isdigit() else None for path, line in zip(paths, lines)}


def _send_answer(stderr: str) -> dict[str, Any] | None:
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith("{"):
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if isinstance(answer, dict):
                return answer
    return None


def pull_verified(agent: RemoteAgent, wanted: dict[str, Path],
                  on_progress: Callable[[int, int], None] | None = None) -> list[PulledFile]:
    """wanted: remote path -> local path. Files absent on the target are skipped; returns what arrived,
    verified and under its final name."""
    sizes = {remote: size for remote, size in board_sizes(agent, list(wanted)).items() if size is not None}
    resumable = {remote: _resume_offset(partial_path(wanted[remote]), size) for remote, size in sizes.items()}
    total = sum(sizes.values())
    needed = total - sum(resumable.values())
    if wanted:
        folder = next(iter(wanted.values())).parent
        free = shutil.disk_usage(folder).free
        if free < needed + 64 * 2**20:
            raise DiskFullError(f"only {free // 2**20} MB free in {folder}, the run needs {needed // 2**20} MB",
                                "free space there or choose another --out")
    pulled: list[PulledFile] = []
    done_before = 0
    for remote, size in sizes.items():
        pulled.append(_pull_one(agent, remote, wanted[remote], size, resumable[remote], done_before, total,
                                on_progress))
        done_before += size
    return pulled


def _resume_offset(partial: Path, size: int) -> int:
    """Bytes of an earlier try to keep; a partial file longer than the board's file is not ours."""
    if not partial.is_file():
        return 0
    have = partial.stat().st_size
    if have > size:
        partial.unlink()
        return 0
    return have


def _pull_one(agent: RemoteAgent, remote: str, local: Path, size: int, offset: int, done_before: int, total: int,
              on_progress: Callable[[int, int], None] | None) -> PulledFile:
    partial = partial_path(local)
    follower = GrowingFileHash(partial)  # from byte 0: the bytes kept from an earlier try are hashed here too

    def forward(done: int, _total: int) -> None:
        follower.catch_up()
        if on_progress:
            on_progress(done_before + done, total)

    partial.touch(mode=0o600)
    answer = agent.transport.download(agent.command("send"), partial,
                                      json.dumps({"path": remote, "offset": offset}).encode() + b"\n", forward)
    raise_if_untrusted(answer, agent.transport)
    board = _send_answer(answer.stderr)
    have = partial.stat().st_size
    # OpenSSH's master connection can report the board's exit status and answer and then die (a link cut)
    # before it has written all of the bytes it received here: a prefix, kept for the resume like any other
    short = board is not None and not board.get("failed") and isinstance(board.get("size"), int) and \
        have < board["size"]
    if answer.exit_status != 0 or board is None or board.get("failed") or short:
        why = "the connection ended before every byte was written here" if short else (board or {}).get("msg") or \
            (answer.stderr.strip().splitlines() or [f"exit {answer.exit_status}"])[-1]
        raise TransferError(f"the transfer of {remote} broke after {have} of {size} bytes ({why})",
                            "the board keeps its copy and the bytes so far are kept here: "
                            "'orchestrate fetch RUN_DIR' resumes it")
    digest = follower.final()
    if digest != board["sha256"] or have != board["size"]:
        partial.unlink(missing_ok=True)
        raise TransferError(f"{remote} arrived damaged ({have} of {board['size']} bytes, sha256 mismatch)",
                            "the board still has it; 'orchestrate fetch RUN_DIR' pulls it again")
    partial.replace(local)
    return PulledFile(remote, local, digest, have, offset)
