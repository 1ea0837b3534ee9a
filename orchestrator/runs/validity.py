"""Whether a run's board was in a fit state to be measured: flags from what run.json recorded of the
board before and after the capture. Pure."""
from __future__ import annotations

from typing import Any


def validity_flags(record: dict[str, Any]) -> list[dict[str, str]]:
    """[{'code', 'what'}] for each thing that makes the run's figures doubtful; [] when nothing does."""
    flags = []
    state = record.get("board_state") or {}
    before, after = state.get("before") or {}, state.get("after") or {}
    mode_before, mode_after = before.get("power_mode"), after.get("power_mode")
    if mode_before and mode_after and mode_before != mode_after:
        flags.append({"code": "power_mode_changed",
                      "what": f"the power mode changed during the run: {_mode(mode_before)} -> {_mode(mode_after)}"})
    return flags


def _mode(mode: dict[str, Any]) -> str:
    return f"{mode.get('name')} ({mode.get('id')})"
