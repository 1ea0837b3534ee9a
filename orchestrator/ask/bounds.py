"""Answers an agent can take: at most MAX_CHARS characters of JSON (about 20,000 tokens; agents reject tool replies
past about 25,000). An answer over the bound loses the tail of its heaviest list, again and again, and says at each
list how many items were cut (``<key>_cut``): the items kept are the first, heaviest ones, and a client
pages on with the tool's ``offset`` where it has one.
"""
from __future__ import annotations

import json
from typing import Any

MAX_CHARS = 60_000


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=lambda v: v.item()))


def bounded(answer: dict[str, Any], limit: int = MAX_CHARS) -> dict[str, Any]:
    """The answer, its heaviest lists cut until its JSON fits ``limit`` characters (the answer itself is changed)."""
    while size(answer) > limit:
        found = _heaviest_list(answer)
        if found is None:
            return {"error": "the answer is too large to send", "size": size(answer),
                    "hint": "ask for a shorter window, one thread, or a name"}
        holder, key, items = found
        keep = len(items) // 2
        holder[f"{key}_cut"] = holder.get(f"{key}_cut", 0) + len(items) - keep
        holder[key] = items[:keep]
    return answer


def _heaviest_list(value: Any) -> tuple[dict[str, Any], str, list[Any]] | None:
    """(the dict holding it, its key, the list) of the list with the most characters, anywhere in the answer."""
    best: tuple[int, tuple[dict[str, Any], str, list[Any]]] | None = None
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, list) and item:
                    weight = size(item)
                    if best is None or weight > best[0]:
                        best = (weight, (node, key, item))
                if isinstance(item, (dict, list)):
                    stack.append(item)
        elif isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, (dict, list)))
    return None if best is None else best[1]
