"""Timing of a run's phases, and the run record's stage, written to run.json at every change."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .folder import write_run_json
from .progress import Progress

# Where a run stands, as run.json says at every moment:
STAGES = {
    "preparing": "connecting, deploying the agent, preflight",
    "capturing": "the board is capturing (the host follows it, or lost it: see 'lost_contact')",
    "on_board": "the capture ended; the report waits on the board for the pull ('orchestrate fetch')",
    "pulled": "the report is here, verified (the board's copy removed unless --keep-remote)",
    "failed": "the run ended without a report: see 'error'",
}


class RunLog:
    """The run's record and its phases; ``stage()`` saves run.json so a crash never hides where it was."""

    def __init__(self, run_dir: Path, record: dict[str, Any], progress: Progress) -> None:
        self.run_dir = run_dir
        self.record = record
        self.progress = progress
        self.seconds: dict[str, float] = record.setdefault("phases", {})

    def stage(self, name: str, **fields: Any) -> None:
        assert name in STAGES, name
        self.record["stage"] = name
        self.record.update(fields)
        self.save()

    def save(self) -> None:
        write_run_json(self.run_dir, self.record)

    @contextmanager
    def phase(self, name: str, total: float | None = None, unit: str = "") -> Iterator[None]:
        self.progress.start(name, total, unit)
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0) + time.monotonic() - started, 3)
