"""Sampled frames get their names once: symbol and module texts, unresolved addresses named or grouped.

nsys writes a frame it could not symbolise as its address ('0x7fabe0ed2c78'); a stripped library then fills
the hotspots and the flame graph with one entry per instruction. Such a frame is named from the symbol
folders when a resolver can (orchestrator.symbols), else it joins its module's one frame, '[swrast_dri.so]'.
"""
from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .names import string_values

if TYPE_CHECKING:  # pyelftools loads only when --symbols is given
    from ...symbols import Resolver

ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
MODULE_LABELS = {"//anon": "[JIT]", "": "[unknown]"}  # //anon: anonymous executable memory, i.e. JIT code


def module_label(path: str) -> str:
    """perf's dso column: the file name, or a bracketed kind for memory without a file."""
    if path in MODULE_LABELS:
        return MODULE_LABELS[path]
    return path if path.startswith("[") else os.path.basename(path.rstrip("/")) or path


def module_frame(path: str) -> str:
    """The one frame standing for a module's unresolved addresses: '[swrast_dri.so]', '[JIT]'."""
    label = module_label(path)
    return label if label.startswith("[") else f"[{label}]"


def frame_key(symbols: np.ndarray, modules: np.ndarray) -> np.ndarray:
    """One integer per (symbol, module) pair (ids or codes, -1 allowed), split again by split_frame_key."""
    return ((symbols + 1) << 32) | (modules + 1)


def split_frame_key(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (keys >> 32) - 1, (keys & 0xFFFFFFFF) - 1


@dataclass(frozen=True)
class NamedFrames:
    symbols: np.ndarray   # per chain row: index into names
    modules: np.ndarray   # per chain row: index into names
    names: list[str]
    grouped_addresses: int  # distinct unresolved addresses folded into their module's frame


def name_frames(conn: sqlite3.Connection, symbol_ids: np.ndarray, module_ids: np.ndarray,
                resolver: Resolver | None = None, with_addresses: bool = False) -> NamedFrames:
    """Names of the chain rows' frames; ``with_addresses``: SAMPLING_CALLCHAINS has originalIP, which the
    resolver needs to place a module."""
    codes, keys = pd.factorize(frame_key(symbol_ids, module_ids))
    symbols, modules = split_frame_key(np.asarray(keys, dtype=np.int64))
    uniques = list(zip(symbols.tolist(), modules.tolist()))
    texts = string_values(conn, [i for pair in uniques for i in pair])
    distinct = [(texts.get(s, "[unknown]"), texts.get(m, "")) for s, m in uniques]
    if resolver is not None:
        _prepare(conn, resolver, distinct, uniques, with_addresses)
    names: list[str] = []
    index: dict[str, int] = {}

    def code(text: str) -> int:
        if text not in index:
            index[text] = len(names)
            names.append(text)
        return index[text]

    symbol_codes, module_codes, grouped = [], [], 0
    for symbol, module in distinct:
        if ADDRESS.match(symbol):
            resolved = resolver.resolve(module, int(symbol, 16)) if resolver is not None else None
            if resolved is None:
                grouped += 1
                symbol = module_frame(module)
            else:
                symbol = resolved
        symbol_codes.append(code(symbol))
        module_codes.append(code(module))
    pick = np.asarray(codes, dtype=np.int64)
    return NamedFrames(np.asarray(symbol_codes, dtype=np.int64)[pick], np.asarray(module_codes, dtype=np.int64)[pick],
                       names, grouped)


def _prepare(conn: sqlite3.Connection, resolver: Resolver, distinct: list[tuple[str, str]],
             uniques: list[tuple[int, int]], with_addresses: bool) -> None:
    """Tell the resolver, for each module with unresolved frames, the frames nsys named in it (name, address)."""
    wanted = {m: module for (symbol, module), (_, m) in zip(distinct, uniques) if ADDRESS.match(symbol)}
    named: dict[int, list[tuple[str, int]]] = {m: [] for m in wanted}
    if wanted and with_addresses:
        marks = ",".join("?" * len(wanted))
        rows = conn.execute(f"SELECT DISTINCT module, symbol, originalIP FROM SAMPLING_CALLCHAINS WHERE module IN "
                            f"({marks}) AND originalIP IS NOT NULL", list(wanted)).fetchall()
        symbols = string_values(conn, [r[1] for r in rows])
        for module_id, symbol_id, address in rows:
            name = symbols.get(symbol_id)
            if name and not ADDRESS.match(name):
                named[module_id].append((name, int(address)))
    for module_id, module in wanted.items():
        resolver.prepare(module, named[module_id])
