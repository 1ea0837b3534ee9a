"""The host's reading of the agent's facts (``remote_agent.facts.collect``): what kind of board a target
is, and a fingerprint of that kind and its software that stays the same from run to run. Pure."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# what stays the same on one board from run to run (not clocks, temperatures or the host name)
KIND_FACTS = {"board": ("model", "chip")}
SOFTWARE_FACTS = {"board": ("l4t", "jetpack"), "system": ("os", "kernel", "arch"), "nsys": ("version",)}


def board_kind(facts: dict[str, Any] | None) -> str:
    """'NVIDIA Jetson Nano Developer Kit', else the chip ('tegra234'), else what the machine is
    ('not a Jetson: x86_64, Debian GNU/Linux 12 (bookworm)'), else 'unknown'."""
    board = (facts or {}).get("board") or {}
    system = (facts or {}).get("system") or {}
    if board.get("model") and board.get("is_jetson", True):
        return str(board["model"])
    if board.get("chip"):
        return str(board["chip"])
    described = ", ".join(str(v) for v in (system.get("arch"), system.get("os")) if v)
    return f"not a Jetson: {described}" if described else "unknown"


def _pick(facts: dict[str, Any], wanted: Mapping[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    return {part: {key: ((facts or {}).get(part) or {}).get(key) for key in keys} for part, keys in wanted.items()}


def board_fingerprint(facts: dict[str, Any] | None) -> dict[str, str]:
    """{'kind': digest of the board kind, 'software': digest of kind + L4T/JetPack, OS, kernel, nsys}: runs
    with the same 'software' fingerprint ran on the same kind of board with the same software."""
    kind = _pick(facts or {}, KIND_FACTS)
    software = {**kind, **_pick(facts or {}, SOFTWARE_FACTS)}
    return {"kind": _digest(kind), "software": _digest(software)}


def board_summary(facts: dict[str, Any] | None) -> dict[str, Any]:
    """The few facts a fleet's recap and page show per board."""
    facts = facts or {}
    board, system, nsys = facts.get("board") or {}, facts.get("system") or {}, facts.get("nsys") or {}
    power = board.get("power_mode") or {}
    return {
        "kind": board_kind(facts), "model": board.get("model"), "chip": board.get("chip"), "l4t": board.get("l4t"),
        "jetpack": board.get("jetpack"), "power_mode": power.get("name"), "os": system.get("os"),
        "arch": system.get("arch"), "python": system.get("python"), "nsys": nsys.get("version"),
        "nsys_path": nsys.get("path"), "fingerprint": board_fingerprint(facts) if facts else None,
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
