"""The GPU a run folder's app drew or computed on: the renderer its output named, else its board's GPU."""
from __future__ import annotations

from pathlib import Path

from remote_agent.messages import Facts

from ..parsers.renderer import board_gpu, gl_renderer

APP_LOGS = ("app.stdout.log", "app.stderr.log")
READ_AT_MOST = 1 << 16  # apps name their renderer when they start


def run_renderer(run_dir: Path, facts: Facts | None) -> str | None:
    for name in APP_LOGS:
        try:
            with open(run_dir / name, "rb") as log:
                head = log.read(READ_AT_MOST).decode("utf-8", "replace")
        except OSError:
            continue
        said = gl_renderer(head)
        if said:
            return said
    return board_gpu(facts.board.chip if facts else None)
