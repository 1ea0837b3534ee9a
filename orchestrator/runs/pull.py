"""Bring files from the target so that nothing is lost, in one pass: the board hashes each file while
it sends it (agent ``send``, every file of a pull in one call), this machine hashes the partial file while
it grows, and only when both sha256 agree does the partial file take its final name. A broken transfer
leaves the partial files where they are: the next pull asks the board for the bytes after them, and still
compares whole-file hashes. The board's copy is removed by the caller, only after all that."""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from remote_agent.commands import SEND
from remote_agent.messages import FileRange, SendRequest, SentFile

from ..errors import DiskFullError, TransferError
from ..targets.agent import RemoteAgent, raise_if_untrusted
from ..targets.agent_session import message_line
from ..targets.shell import ShellCommand
from ..targets.streams import CommandResult

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
    """sha256 of a file that is being written, read up to its current end (or limit) at each call."""

    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.path = path
        self.limit = limit
        self.digest = hashlib.sha256()
        self.offset = 0

    def catch_up(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                while self.limit is None or self.offset < self.limit:
                    block = handle.read(CHUNK if self.limit is None else min(CHUNK, self.limit - self.offset))
                    if not block:
                        break
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


def _send_answers(stderr: str) -> tuple[dict[str, SentFile], str | None]:
    """The board's answer per file (its JSON lines on stderr), by remote path; and why it stopped sending,
    if it did: a file it could not send (the files after it are not sent) or a request it could not read (a
    failure without a path)."""
    answers: dict[str, SentFile] = {}
    stopped = None
    for line in stderr.strip().splitlines():
        if line.startswith("{"):
            try:
                answer = SEND.answer.from_wire(json.loads(line))
            except ValueError:
                continue
            if answer.path:
                answers[answer.path] = answer
            if answer.failed:
                stopped = f"{answer.path}: {answer.msg}" if answer.path else str(answer.msg)
    return answers, stopped


@dataclass(frozen=True)
class _Wanted:
    remote: str
    local: Path
    size: int     # on the board, as the pull began
    offset: int   # bytes kept here from an earlier try

    @property
    def partial(self) -> Path:
        return partial_path(self.local)


def pull_verified(agent: RemoteAgent, wanted: dict[str, Path],
                  on_progress: Callable[[int, int], None] | None = None,
                  known: dict[str, int] | None = None) -> list[PulledFile]:
    """wanted: remote path -> local path. Files absent on the target are skipped; returns what arrived,
    verified and under its final name. One agent call sends them all, one after the other. known: the board's
    files' sizes as it said them when they stopped changing (its capture's result), else they are asked for."""
    if known is None:
        known = {remote: size for remote, size in board_sizes(agent, list(wanted)).items() if size is not None}
    sizes = {remote: known[remote] for remote in wanted if remote in known}
    # the largest first: the transport writes the first file's bytes at the rate of scp (see download)
    files = sorted((_Wanted(remote, wanted[remote], size, _resume_offset(partial_path(wanted[remote]), size))
                    for remote, size in sizes.items()), key=lambda f: -f.size)
    total = sum(f.size for f in files)
    needed = total - sum(f.offset for f in files)
    if wanted:
        folder = next(iter(wanted.values())).parent
        free = shutil.disk_usage(folder).free
        # the first file holds the later files' bytes too until they are copied out of it: those twice
        peak = needed + sum(f.size - f.offset for f in files[1:])
        if free < peak + 64 * 2**20:
            raise DiskFullError(f"only {free // 2**20} MB free in {folder}, the run needs {peak // 2**20} MB",
                                "free space there or choose another --out")
    if not files:
        return []
    # each partial file hashed from byte 0 while it grows (the bytes kept from an earlier try included), to
    # its size: the first file's holds the stream's later files too until the transport moves them out
    followers = [GrowingFileHash(f.partial, f.size) for f in files]
    kept = sum(f.offset for f in files)

    def forward(done: int, _total: int) -> None:
        for follower in followers:
            follower.catch_up()
        if on_progress:
            on_progress(kept + done, total)

    for f in files:
        f.partial.touch(mode=0o600)
    request = SendRequest(files=[FileRange(path=f.remote, offset=f.offset, size=f.size) for f in files])
    answer = agent.transport.download(agent.command(SEND.name), [(f.partial, f.size - f.offset) for f in files],
                                      message_line(request), forward)
    raise_if_untrusted(answer, agent.transport)
    answers, stopped = _send_answers(answer.stderr)
    return [_verify(f, follower, answers.get(f.remote), answer, stopped) for f, follower in zip(files, followers)]


def _verify(f: _Wanted, follower: GrowingFileHash, board: SentFile | None, answer: CommandResult,
            stopped: str | None) -> PulledFile:
    """The file under its final name once both sides' sha256 agree; else an error that says what is kept."""
    have = f.partial.stat().st_size
    # OpenSSH's master connection can report the board's exit status and answer and then die (a link cut)
    # before it has written all of the bytes it received here: a prefix, kept for the resume like any other
    short = board is not None and not board.failed and board.size is not None and have < board.size
    if board is None or board.failed or short:
        why = "the connection ended before every byte was written here" if short else (board and board.msg) or \
            (f"not sent: {stopped}" if stopped else None) or \
            (answer.stderr.strip().splitlines() or [f"exit {answer.exit_status}"])[-1]
        raise TransferError(f"the transfer of {f.remote} broke after {have} of {f.size} bytes ({why})",
                            "the board keeps its copy and the bytes so far are kept here: "
                            "'orchestrate fetch RUN_DIR' resumes it")
    digest = follower.final()
    if digest != board.sha256 or have != board.size:
        f.partial.unlink(missing_ok=True)
        raise TransferError(f"{f.remote} arrived damaged ({have} of {board.size} bytes, sha256 mismatch)",
                            "the board still has it; 'orchestrate fetch RUN_DIR' pulls it again")
    f.partial.replace(f.local)
    return PulledFile(f.remote, f.local, digest, have, f.offset)


def _resume_offset(partial: Path, size: int) -> int:
    """Bytes of an earlier try to keep; a partial file longer than the board's file is not ours."""
    if not partial.is_file():
        return 0
    have = partial.stat().st_size
    if have > size:
        partial.unlink()
        return 0
    return have
