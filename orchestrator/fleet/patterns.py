"""Ansible's host patterns, for ``--limit``: which inventory hosts a fleet command reaches, in Ansible's order.

``group``, ``host``, ``a:b`` (or ``a,b``) for the union, ``a:!b`` to leave out, ``a:&b`` for the
intersection, globs (``nano*``), ``~regex`` (matched from the start of host and group names), ``group[0]`` and
``group[0:2]`` (inclusive, as Ansible's). As in Ansible (its InventoryManager), the plain terms are taken first,
in their order, then the ``&`` ones, then the ``!`` ones; a pattern of only ``&``/``!`` terms starts from ``all``;
a group gives its hosts in Ansible's order (its own, then its descendants'), and host names are matched only when
no group matched or the term is a glob or a regex. Pure: an inventory and a string in, host names out; the tests
hold it to ``ansible PATTERN --list-hosts``.
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from functools import partial

from ..errors import UsageError
from ..inventory.hosts import Inventory

# Ansible's PATTERN_WITH_SUBSCRIPT: 'name[N]' (N may be negative), 'name[A:B]' or 'name[A-B]' (B may be left out)
_SUBSCRIPT = re.compile(r"^(?P<name>.+)\[(?:(?P<one>-?[0-9]+)|(?P<start>[0-9]+)[:-](?P<end>[0-9]*))\]$")
_GLOB_CHARS = set("*?[")


def split_pattern(pattern: str) -> list[str]:
    """Commas split terms when there are any, else colons outside brackets ('g[0:2]:h' is two terms)."""
    if "," in pattern:
        parts = pattern.split(",")
    else:
        parts, depth, current = [], 0, ""
        for char in pattern:
            depth += {"[": 1, "]": -1}.get(char, 0)
            if char == ":" and depth <= 0:
                parts.append(current)
                current = ""
            else:
                current += char
        parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def select_hosts(inventory: Inventory, pattern: str | None, option: str = "--limit") -> list[str]:
    """The hosts a pattern names, in inventory order; a term that names nothing is an error (a typo
    would otherwise leave boards out silently). ``option``: the one the pattern came with, as errors name it."""
    try:
        return _select(inventory, pattern)
    except UsageError as exc:
        if option == "--limit":
            raise
        raise UsageError(exc.message.replace("--limit", option), exc.hint.replace("--limit", option)) from None


def _select(inventory: Inventory, pattern: str | None) -> list[str]:
    terms = split_pattern(pattern or "all")
    if not terms:
        raise UsageError(f"--limit '{pattern}' holds no pattern", "e.g. --limit jetson_nano or --limit 'all:!orin01'")
    plain = [t for t in terms if t[0] not in "!&"]
    narrowing = [t for t in terms if t[0] == "&"]
    excluded = [t for t in terms if t[0] == "!"]
    chosen: dict[str, None] = {}
    for term in plain or ["all"]:
        chosen.update(dict.fromkeys(_match(inventory, term)))  # a host already taken keeps its place
    for term in narrowing:
        keep = set(_match(inventory, term[1:], plain=False))
        chosen = {name: None for name in chosen if name in keep}
    for term in excluded:
        drop = set(_match(inventory, term[1:], plain=False))
        chosen = {name: None for name in chosen if name not in drop}
    hosts = list(chosen)
    if not hosts:
        raise UsageError(f"--limit '{pattern}' leaves no target in {inventory.source}",
                         "see 'orchestrate targets' for the groups and hosts")
    return hosts


def _match(inventory: Inventory, term: str, plain: bool = True) -> list[str]:
    if not term:
        raise UsageError("--limit has an empty '!' or '&' term", "write it as 'group:!host' or 'group1:&group2'")
    if plain and (term in inventory.order or term in inventory.hosts):  # a host's own name, before any group's
        return [term]
    subscript = _SUBSCRIPT.match(term)
    if subscript and not term.startswith("~"):
        return _subscripted(inventory, subscript)
    found = _names(inventory, term)
    if not found and not _is_wildcard(term):
        known = ", ".join(sorted(inventory.groups)) or "none"
        raise UsageError(f"--limit: '{term}' is no host or group of {inventory.source} (groups: {known})",
                         "see 'orchestrate targets' for the names")
    return found


def _is_wildcard(term: str) -> bool:
    return term.startswith("~") or bool(_GLOB_CHARS & set(term))


def _names(inventory: Inventory, term: str) -> list[str]:
    groups = list(inventory.groups) + [g for g in inventory.children if g not in inventory.groups]
    if term in ("all", "*"):
        return inventory.names
    if term.startswith("~"):
        try:
            regex = re.compile(term[1:])
        except re.error as exc:
            raise UsageError(f"--limit: '{term}' is not a regular expression ({exc})",
                             "e.g. --limit '~nano0[1-3]'") from None
        matches_name: Callable[[str], object] = regex.match  # anchored at the start, as Ansible matches
    elif _GLOB_CHARS & set(term):
        matches_name = partial(_glob_matches, pattern=term)
    else:
        matches_name = term.__eq__
    found: dict[str, None] = {}
    matched_group = False
    for group in groups:
        if matches_name(group):
            matched_group = True
            found.update(dict.fromkeys(inventory.group_hosts(group)))
    if not matched_group or term.startswith("~") or set(".?*[") & set(term):
        hosts = list(dict.fromkeys([*inventory.order, *inventory.names]))
        found.update(dict.fromkeys(name for name in hosts if matches_name(name)))
    return list(found)


def _glob_matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)


def _subscripted(inventory: Inventory, match: re.Match[str]) -> list[str]:
    """'group[1]', 'group[-1]', 'group[0:2]' or 'group[0-2]' (both ends included), 'group[2:]', as Ansible's
    _apply_subscript takes them (an end of 0 takes the start alone; an index past the hosts is an error)."""
    members = _match(inventory, match["name"], plain=False)
    if not members:
        return members
    start = int(match["one"] if match["one"] is not None else match["start"])
    end = None if match["one"] is not None else int(match["end"]) if match["end"] else -1
    if end:
        return members[start:(len(members) - 1 if end == -1 else end) + 1]
    if not -len(members) <= start < len(members):
        raise UsageError(f"--limit: '{match.string}' has no host at {start} ({match['name']} has {len(members)})",
                         f"index from 0 to {len(members) - 1}, or from -1 back")
    return [members[start]]
