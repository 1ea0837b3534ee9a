"""What Jetson boards print about themselves, for ``orchestrate parse``: tegrastats logs, ``nvpmodel -q``,
``jetson_clocks --show`` and ``/etc/nv_tegra_release``. Each parser is pure; the board-side ones are the
agent's own (the agent reads the same text on the board), so both sides read it one way."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from remote_agent import board_text

from ..errors import ParseError
from .tegrastats import parse_tegrastats

_RELEASE_FIELDS = re.compile(r"(BOARD|EABI|DATE|GCID):\s*([^,]+?)\s*(?:,|$)")


def parse_nv_tegra_release(text: str) -> dict[str, Any] | None:
    l4t = board_text.parse_nv_tegra_release(text)
    if l4t is None:
        return None
    first = text.strip().splitlines()[0]
    fields = {key.lower(): " ".join(value.split()) for key, value in _RELEASE_FIELDS.findall(first)}
    return {"l4t": l4t, "jetpack": board_text.jetpack_for_l4t(l4t), "board": fields.get("board"),
            "gcid": fields.get("gcid"), "date": fields.get("date")}


def _tegrastats(text: str) -> list[dict[str, Any]] | None:
    return parse_tegrastats(text) or None


BOARD_PARSERS: dict[str, Callable[[str], Any]] = {
    "tegrastats": _tegrastats,
    "nvpmodel": board_text.parse_nvpmodel_query,
    "jetson-clocks": board_text.parse_jetson_clocks_show,
    "nv-tegra-release": parse_nv_tegra_release,
}
WHAT = {"tegrastats": "tegrastats output", "nvpmodel": "'nvpmodel -q' output",
        "jetson-clocks": "'jetson_clocks --show' output", "nv-tegra-release": "an /etc/nv_tegra_release line"}


def parse_board_text(name: str, text: str, source: str) -> Any:
    found = BOARD_PARSERS[name](text)
    if not found:
        raise ParseError(f"{source} holds no {WHAT[name]}", f"give the saved output of that tool to 'parse {name}'")
    return found
