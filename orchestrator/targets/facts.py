"""The host's reading of the agent's facts (``remote_agent.facts.collect``): what kind of board a target
is, and a fingerprint of that kind and its software that stays the same from run to run. Pure."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from remote_agent.messages import BoardFacts, Facts, SystemFacts

from ..documents.fleet import BoardSummary

# what stays the same on one board from run to run (not clocks, temperatures or the host name)
KIND_FACTS = {"board": ("model", "chip")}
SOFTWARE_FACTS = {"board": ("l4t", "jetpack"), "system": ("os", "kernel", "arch"), "nsys": ("version",)}


def board_kind(facts: Facts | None) -> str:
    """'NVIDIA Jetson Nano Developer Kit', else the chip ('tegra234'), else what the machine is
    ('not a Jetson: x86_64, Debian GNU/Linux 12 (bookworm)'), else 'unknown'."""
    board, system = (facts.board, facts.system) if facts else (BoardFacts(), SystemFacts())
    if board.model and board.is_jetson is not False:
        return board.model
    if board.chip:
        return board.chip
    described = ", ".join(str(v) for v in (system.arch, system.os) if v)
    return f"not a Jetson: {described}" if described else "unknown"


def picked(facts: Facts | None, wanted: Mapping[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    """{part: {fact: value}} of the facts named (None for what they lack)."""
    found = facts or Facts()
    return {part: {key: getattr(getattr(found, part), key, None) for key in keys} for part, keys in wanted.items()}


def board_fingerprint(facts: Facts | None) -> dict[str, str]:
    """{'kind': digest of the board kind, 'software': digest of kind + L4T/JetPack, OS, kernel, nsys}: runs
    with the same 'software' fingerprint ran on the same kind of board with the same software."""
    kind = picked(facts, KIND_FACTS)
    software = {**kind, **picked(facts, SOFTWARE_FACTS)}
    return {"kind": _digest(kind), "software": _digest(software)}


def board_summary(facts: Facts | None) -> BoardSummary:
    """The few facts a fleet's recap and page show per board."""
    found = facts or Facts()
    board, system, nsys = found.board, found.system, found.nsys
    return BoardSummary(
        kind=board_kind(facts), model=board.model, chip=board.chip, l4t=board.l4t, jetpack=board.jetpack,
        power_mode=board.power_mode.name if board.power_mode else None, os=system.os, arch=system.arch,
        python=system.python, nsys=nsys.version, nsys_path=nsys.path,
        fingerprint=board_fingerprint(facts) if facts else None)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
