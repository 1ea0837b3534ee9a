"""How the long-running phases tell the outside world where they are; rendering lives in the CLI."""
from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, phase: str, total: float | None = None, unit: str = "") -> None: ...

    def update(self, phase: str, done: float, total: float | None = None) -> None: ...

    def finish(self, phase: str, summary: str = "") -> None: ...

    def note(self, level: str, text: str) -> None: ...

