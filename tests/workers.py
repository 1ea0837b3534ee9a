"""What the test workers (pytest-xdist) share: this machine, and the runs captured once per session.

Every test holds a share of the machine while it runs; an ``alone`` test holds all of it, so that nothing
runs beside its frame times, its cores-busy figures or its CI gate. A turnstile keeps the other workers from
starting test after test while an ``alone`` one waits. Without workers (plain ``pytest``) there is nobody
to share with and nothing is locked.
"""
from __future__ import annotations

import fcntl
import json
import os
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's folder that every worker sees: the parent of the workers' own (popen-gwN) folders."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class MachineShare:
    """This worker's hold on the machine: a share for each test, or (alone) all of it, kept from one ``alone``
    test to the next when they follow each other (the other workers then wait once, not before each); and
    (machine) this machine's own capture lock, which the ``machine`` group keeps on one worker anyway: should
    the grouping ever fail (pytest-xdist's loadgroup did, on pytest 9.2), such tests wait for each other
    instead of failing with a busy board."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder  # None without workers: nobody to share with, nothing is locked
        self.held = ExitStack()
        self.alone = False

    def before(self, alone: bool, machine: bool) -> None:
        if self.folder is None or (alone and self.alone):
            return
        if machine:
            self.held.enter_context(_flock(self.folder / "local-capture.lock", fcntl.LOCK_EX))
        with _flock(self.folder / "turnstile.lock", fcntl.LOCK_EX):
            self.held.enter_context(_flock(self.folder / "share.lock", fcntl.LOCK_EX if alone else fcntl.LOCK_SH))
        self.alone = alone

    def after(self, next_alone: bool) -> None:
        if not (self.alone and next_alone):
            self.held.close()
            self.alone = False


def machine_share(config: pytest.Config) -> MachineShare:
    """The worker's MachineShare; the workers' basetemp is <session>/popen-gwN, their shared folder its parent."""
    folder = Path(config.option.basetemp).parent if os.environ.get("PYTEST_XDIST_WORKER") else None
    return MachineShare(folder)


def once(shared: Path, name: str, make: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """make(folder)'s result, made by the first test of any worker that asks and read by every other. A
    failure is kept too: the tests that read it fail with it instead of making it again."""
    folder = shared / f"scenario-{name}"
    with _flock(shared / f"scenario-{name}.lock", fcntl.LOCK_EX):
        done = folder / "scenario.json"
        if not done.is_file():
            folder.mkdir(exist_ok=True)
            try:
                result = {"ok": make(folder)}
            except (Exception, pytest.fail.Exception):  # kept for the readers, then raised (a skip or Ctrl-C is not)
                result = {"failed": traceback.format_exc()}
                done.write_text(json.dumps(result))
                raise
            done.write_text(json.dumps(result))
        result = json.loads(done.read_text())
    if "failed" in result:
        pytest.fail(f"the shared run {name!r} failed when it was made:\n{result['failed']}")
    return result["ok"]
