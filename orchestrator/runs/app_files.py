"""The files an app spec names (a script, its models), put beside the app on the board.

Each file is kept once per content in the work dir's ``files/`` folder (``<sha256 prefix>-<name>``), so the
runs of a study upload a model once, and linked into the run's folder on the board under its own name;
the app runs from there unless its spec names a workdir. A file executable here is executable there (an app
may ship its own program: ``command: [./app]``, ``files: [app]``).
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..documents.run_sections import StagedFile
from ..errors import AppSpecError, RemoteCommandError
from ..targets.agent import RemoteAgent
from .folder import safe_name_part
from .pull import sha256_file


@dataclass(frozen=True)
class AppFile:
    local: Path
    sha256: str
    remote: str


def _executable(path: Path) -> bool:
    return os.access(path, os.X_OK)


def program_to_find(argv0: str, files: tuple[str, ...], workdir: str | None = None) -> str | None:
    """The program the preflight looks for on the board: none when the app ships it among its files and runs it
    from the run's folder (``./app``, no workdir of its own), which the run fills only after the preflight."""
    shipped = (workdir is None and argv0.startswith("./") and "/" not in argv0[2:]
               and argv0[2:] in {Path(f).name for f in files})
    return None if shipped else argv0


def stage_app_files(agent: RemoteAgent, files: tuple[str, ...], run_dir: str) -> list[StagedFile]:
    """Upload what the board lacks, link every file into run_dir; what was done, for run.json."""
    staged = []
    for name in files:
        local = Path(name)
        if not local.is_file():
            raise AppSpecError(f"the app needs {local}, which is not on this machine",
                               "put it there (for posebench's models: scripts/fetch_pose_models.py) or fix 'files'")
        digest = sha256_file(local)
        staged.append(AppFile(local, digest, f"{agent.work_dir}/files/{digest[:16]}-{safe_name_part(local.name)}"))
    cache = shlex.quote(f"{agent.work_dir}/files")
    listing = " ".join(shlex.quote(f.remote) for f in staged)
    present = agent.transport.run(f"umask 077 && mkdir -p {cache} && for f in {listing}; do "
                                  "[ -f \"$f\" ] && printf '%s\\0' \"$f\"; done; true")
    have = set(present.stdout.split("\0"))
    for item in staged:
        if item.remote not in have:
            agent.transport.put(item.local, item.remote, mode=0o700 if _executable(item.local) else 0o600)
    links = " && ".join([f"ln -sfn {shlex.quote(f.remote)} {shlex.quote(run_dir + '/' + f.local.name)}" for f in staged]
                        + [f"chmod 700 {shlex.quote(f.remote)}" for f in staged if _executable(f.local)])
    done = agent.transport.run(f"umask 077 && mkdir -p {shlex.quote(run_dir)} && {links}")
    if done.exit_status != 0:
        raise RemoteCommandError(f"cannot link the app's files into {run_dir}: {done.stderr.strip()[-200:]}",
                                 "check the work dir's free space and permissions")
    return [StagedFile(name=f.local.name, sha256=f.sha256, size=f.local.stat().st_size, remote=f.remote,
                       uploaded=f.remote not in have) for f in staged]
