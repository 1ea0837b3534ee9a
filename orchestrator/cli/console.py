"""Terminal rendering for the CLI: phase progress with rich, on stderr (stdout carries results)."""
from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class RichProgress:
    """Implements orchestrator.progress.Progress: one line per phase, a bar where there is a total;
    the capture shows elapsed against planned seconds, the pull bytes and rate."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.view = Progress(
            TextColumn("[bold]{task.fields[phase]}", table_column=Column(width=9, no_wrap=True)),
            BarColumn(bar_width=20), TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}", table_column=Column(ratio=1, overflow="fold")),
            console=console, transient=False, expand=True)
        self.tasks: dict[str, TaskID] = {}
        self.started: dict[str, float] = {}

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        if not self.view.live.is_started:
            self.view.start()
        self.started[phase] = time.monotonic()
        self.tasks[phase] = self.view.add_task(phase, total=total, phase=phase, detail="")

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        task = self.tasks[phase]
        if phase == "pull" and total:
            seconds = max(time.monotonic() - self.started[phase], 1e-6)
            detail = f"{done / 2**20:.1f}/{total / 2**20:.1f} MB, {done / 2**20 / seconds:.1f} MB/s"
        elif phase == "capture":
            planned = self.view.tasks[task].total or 0
            detail = f"{done:.0f} s of {planned:.0f} s" + (" (waiting for nsys to finish)" if done > planned else "")
        else:
            detail = ""
        self.view.update(task, completed=done, total=total or self.view.tasks[task].total, detail=detail)

    def finish(self, phase: str, summary: str = "") -> None:
        task = self.tasks.get(phase)
        if task is not None:
            total = self.view.tasks[task].total or 1
            self.view.update(task, completed=total, total=total, detail=summary)
            self.view.stop_task(task)

    def note(self, level: str, text: str) -> None:
        self.console.print(f"[{LEVEL_STYLE.get(level, '')}]\\[{level}][/] {text}", highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.view.live.is_started:
            self.view.stop()
