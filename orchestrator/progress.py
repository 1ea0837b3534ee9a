"""How the long-running phases tell the outside world where they are; rendering lives in the CLI."""
from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, phase: str, total: float | None = None, unit: str = "") -> None: ...

    def update(self, phase: str, done: float, total: float | None = None) -> None: ...

    def finish(self, phase: str, summary: str = "") -> None: ...

    def note(self, level: str, text: str) -> None: ...


class SilentProgress:
    """For library use and tests: remembers what it was told, prints nothing."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def start(self, phase: str, total: float | None = None, unit: str = "") -> None:
        self.events.append(("start", phase, ""))

    def update(self, phase: str, done: float, total: float | None = None) -> None:
        pass

    def finish(self, phase: str, summary: str = "") -> None:
        self.events.append(("finish", phase, summary))

    def note(self, level: str, text: str) -> None:
        self.events.append(("note", level, text))
