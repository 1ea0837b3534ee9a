"""Timing of a run's phases, and its run.json, saved at every change of stage."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..documents.run import STAGES, RunDocument, write_run
from .progress import Progress


class RunLog:
    """The run's document and its phases; ``stage()`` saves run.json so a crash never hides where it was."""

    def __init__(self, run_dir: Path, run: RunDocument, progress: Progress) -> None:
        self.run_dir = run_dir
        self.run = run
        self.progress = progress
        self.seconds: dict[str, float] = run.phases

    def stage(self, name: str) -> None:
        assert name in STAGES, name
        self.run.stage = name
        self.save()

    def save(self) -> None:
        write_run(self.run_dir, self.run)

    @contextmanager
    def phase(self, name: str, total: float | None = None, unit: str = "") -> Iterator[None]:
        self.progress.start(name, total, unit)
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0) + time.monotonic() - started, 3)
