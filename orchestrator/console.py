"""Terminal rendering for the CLI: phase progress with rich, on stderr (stdout carries results)."""
from __future__ import annotations

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn, TransferSpeedColumn)

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class RichProgress:
    """Implements orchestrator.progress.Progress: one line per phase, bars where there is a total."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("[bold]{task.fields[phase]:<9}"), BarColumn(bar_width=30),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), TimeRemainingColumn(),
            console=console, transient=False)
        self.transfer = Progress(
            TextColumn("[bold]{task.fields[phase]:<9}"), BarColumn(bar_width=30), DownloadColumn(),
            TransferSpeedColumn(), TimeRemainingColumn(), console=console, transient=False)
        self.tasks: dict[str, tuple[Progress, TaskID]] = {}

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        view = self.transfer if phase == "pull" else self.bar
        if not view.live.is_started:
            view.start()
        self.tasks[phase] = (view, view.add_task(phase, total=total, phase=phase, detail=""))

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        view, task = self.tasks[phase]
        view.update(task, completed=done, **({"total": total} if total else {}))

    def finish(self, phase: str, summary: str = "") -> None:
        view, task = self.tasks.get(phase, (None, None))
        if view is not None and task is not None:
            total = view.tasks[task].total
            view.update(task, completed=total or 1, total=total or 1, detail=summary)
            view.stop_task(task)
            if view is self.transfer:
                view.stop()

    def note(self, level: str, text: str) -> None:
        self.console.print(f"[{LEVEL_STYLE.get(level, '')}]{level}[/]: {text}", highlight=False, soft_wrap=True)

    def close(self) -> None:
        for view in (self.bar, self.transfer):
            if view.live.is_started:
                view.stop()
