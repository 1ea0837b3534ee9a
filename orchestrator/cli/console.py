"""Terminal rendering for the CLI: phase progress with rich, on stderr (stdout carries results)."""
from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


STATUS_STYLES = {"ok": "green", "failed": "red", "unreachable": "red", "skipped": "yellow"}

class RichProgress:
    """Implements orchestrator.progress.Progress: one line per phase, a bar where there is a total;
    the capture shows elapsed against planned seconds, the pull bytes and rate. Piped (not a terminal), one
    plain line per phase as it ends, nothing redrawn."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.redraw = console.is_terminal
        self.view = Progress(
            TextColumn("[bold]{task.fields[phase]}", table_column=Column(width=9, no_wrap=True)),
            BarColumn(bar_width=20), TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}", markup=False, table_column=Column(ratio=1, overflow="fold")),
            console=console, transient=False, expand=True)
        self.tasks: dict[str, TaskID] = {}
        self.totals: dict[str, float | None] = {}
        self.started: dict[str, float] = {}

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        if self.redraw and not self.view.live.is_started:
            self.view.start()
        self.started[phase] = time.monotonic()
        self.totals[phase] = total
        self.tasks[phase] = self.view.add_task(phase, total=total, phase=phase, detail="")

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        task = self.tasks[phase]
        if phase == "pull" and total:
            seconds = max(time.monotonic() - self.started[phase], 1e-6)
            detail = f"{done / 2**20:.1f}/{total / 2**20:.1f} MB, {done / 2**20 / seconds:.1f} MB/s"
        elif phase == "capture":
            planned = self.totals.get(phase) or 0
            detail = f"{done:.0f} s of {planned:.0f} s" + (" (waiting for nsys to finish)" if done > planned else "")
        else:
            detail = ""
        if total:
            self.totals[phase] = total
        self.view.update(task, completed=done, total=self.totals.get(phase), detail=detail)

    def finish(self, phase: str, summary: str = "") -> None:
        task = self.tasks.get(phase)
        if not self.redraw:
            seconds = time.monotonic() - self.started.get(phase, time.monotonic())
            self.console.print(f"{phase}: {summary or 'done'} ({seconds:.1f} s)", markup=False, highlight=False,
                               soft_wrap=True)
        elif task is not None:
            total = self.totals.get(phase) or 1
            self.view.update(task, completed=total, total=total, detail=summary)
            self.view.stop_task(task)

    def note(self, level: str, text: str) -> None:
        self.console.print(f"[{LEVEL_STYLE.get(level, '')}]\\[{level}][/] {escape(text)}", highlight=False,
                           soft_wrap=True)

    def close(self) -> None:
        if self.view.live.is_started:
            self.view.stop()


class StudyView(RichProgress):
    """A study's progress: one line for the study (cell i of n, run j of repeat, ETA from the runs so
    far) above the running run's phases, which go once the run ends."""

    def __init__(self, console: Console, total_runs: int) -> None:
        super().__init__(console)
        self.total_runs = total_runs
        self.ended = 0
        self.study_task: TaskID | None = None
        self.said: set[tuple[str, str]] = set()

    def note(self, level: str, text: str) -> None:
        """Each run's preflight says the same things about the board: once is enough."""
        if (level, text) not in self.said:
            self.said.add((level, text))
            super().note(level, text)

    def begin_run(self, cell: Any, cells: int, run: int, repeat: int, eta_s: float | None) -> None:
        eta = f", about {eta_s / 60:.0f} min left" if eta_s is not None and eta_s >= 90 else (
            f", about {eta_s:.0f} s left" if eta_s is not None else "")
        detail = f"cell {cell.index + 1} of {cells} ({cell.label or 'one cell'}), run {run} of {repeat}{eta}"
        self.total_runs = max(self.total_runs, self.ended + 1)  # a CI job's extra runs, when the gate is unsure
        if not self.redraw:
            self.console.print(f"study: {detail}", markup=False, highlight=False, soft_wrap=True)
            return
        if not self.view.live.is_started:
            self.view.start()
        if self.study_task is None:
            self.study_task = self.view.add_task("study", total=self.total_runs, phase="study", detail="")
        self.view.update(self.study_task, total=self.total_runs, completed=self.ended, detail=detail)

    def end_run(self, outcome: str) -> None:
        self.ended += 1
        for task in self.tasks.values():
            self.view.remove_task(task)
        self.tasks.clear()
        if self.study_task is not None:
            self.view.update(self.study_task, completed=self.ended)

    def close(self) -> None:
        if self.study_task is not None:  # the last frame is true: no time left once the study ended
            self.view.update(self.study_task, detail=f"{self.ended} of {self.total_runs} runs ended")
        super().close()


class FleetTable:
    """A fleet's live view: one line per board (its phase, what the phase is doing, its status), redrawn a
    few times a second; each board's notes print above it once, with the board's name."""

    def __init__(self, console: Console, targets: list[str]) -> None:
        from rich.live import Live
        self.console = console
        self.rows: dict[str, dict[str, str]] = {t: {"phase": "waiting", "detail": "", "status": ""} for t in targets}
        self.lock = threading.Lock()
        self.said: set[tuple[str, str]] = set()
        # piped (not a terminal): no table redrawn, one plain line per board as it ends
        self.live = Live(get_renderable=self._table, console=console, refresh_per_second=4, transient=False) \
            if console.is_terminal else None
        if self.live is not None:
            self.live.start()

    def _table(self) -> Any:
        from rich.table import Table
        table = Table("board", "phase", "detail", "status", expand=True)
        with self.lock:
            for target, row in self.rows.items():
                style = STATUS_STYLES.get(row["status"], "")
                table.add_row(Text(target), Text(row["phase"]), Text(row["detail"]), Text(row["status"], style=style))
        return table

    def board(self, target: str) -> _BoardLine:
        return _BoardLine(self, target)

    def set(self, target: str, **values: str) -> None:
        with self.lock:
            self.rows[target].update(values)

    def say(self, target: str, level: str, text: str) -> None:
        with self.lock:
            if (level, text) in self.said:  # every board's preflight says the same of a shared cause
                return
            self.said.add((level, text))
        self.console.print(f"[{LEVEL_STYLE.get(level, '')}]\\[{level}][/] {escape(target)}: {escape(text)}",
                           highlight=False, soft_wrap=True)

    def ended(self, result: Any) -> None:
        self.set(result.target, phase="done", status=result.status,
                 detail=(result.reason or result.folder or "")[:200])
        if self.live is None:
            self.console.print(f"{result.target}: {result.status}: {result.reason or result.folder or ''}",
                               markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


class _BoardLine:
    """One board's Progress (and a study's begin_run/end_run), drawn as its line of the fleet's table."""

    def __init__(self, view: FleetTable, target: str) -> None:
        self.view, self.target = view, target
        self.totals: dict[str, float | None] = {}

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        self.totals[phase] = total
        self.view.set(self.target, phase=phase, detail="")

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        total = total or self.totals.get(phase)
        if phase == "pull" and total:
            detail = f"{done / 2**20:.1f}/{total / 2**20:.1f} MB"
        elif phase == "capture":
            detail = f"{done:.0f} s of {total or 0:.0f} s"
        else:
            detail = ""
        self.view.set(self.target, phase=phase, detail=detail)

    def finish(self, phase: str, summary: str = "") -> None:
        self.view.set(self.target, detail=summary[:120])

    def note(self, level: str, text: str) -> None:
        self.view.say(self.target, level, text)

    def begin_run(self, cell: Any, cells: int, run: int, repeat: int, eta_s: float | None) -> None:
        self.view.set(self.target, phase=f"cell {cell.index + 1}/{cells}, run {run}/{repeat}", detail="")

    def end_run(self, outcome: str) -> None:
        pass
