"""CPU sampling: self (bottom-up) and inclusive (top-down) hotspots and the top-down call tree.

A sample is a COMPOSITE_EVENTS row; its stack is the SAMPLING_CALLCHAINS rows with the same id, stackDepth 0
being the leaf. Self counts the leaf frame; inclusive counts every distinct frame of a stack once per sample.
Frames are named once, when the samples load (frame_names.py): unresolved addresses are resolved from the
symbol folders or grouped per module, and the arrays hold codes into that one list of names.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .durations import argsort_pairs
from .frame_names import frame_key, module_label, name_frames, split_frame_key
from .names import ID_MASK, PID_SHIFT
from .trace import Trace

if TYPE_CHECKING:  # pyelftools loads only when --symbols is given
    from ...symbols import Resolver

TREE_MIN_SHARE = 0.01  # tree nodes under 1 % of the window's samples are pruned
TREE_MAX_DEPTH = 64
TOP_N = 50


@dataclass(frozen=True)
class Samples:
    ids: np.ndarray          # COMPOSITE_EVENTS.id
    starts: np.ndarray
    tids: np.ndarray         # globalTid
    cpus: np.ndarray
    chain_ids: np.ndarray    # SAMPLING_CALLCHAINS rows of these samples, leaf first within a sample
    symbols: np.ndarray      # codes into names
    modules: np.ndarray      # codes into names
    depths: np.ndarray
    names: list[str]
    grouped_addresses: int = 0


def pseudo_frame_ids(conn: sqlite3.Connection) -> np.ndarray:
    """StringIds of nsys's bracketed pseudo-frames ([Broken backtraces], [Max depth], ...)."""
    rows = conn.execute("SELECT id FROM StringIds WHERE value LIKE '[%]'")
    return np.array([row[0] for row in rows], dtype=np.int64)


def load_samples(trace: Trace, window: tuple[int, int], pids: list[int] | None,
                 skip_tids: list[int] | None = None, resolver: Resolver | None = None) -> Samples | None:
    """Samples of the window (and processes), their stacks leaf first, their frames named.

    Pseudo-frames above the leaf are dropped, and so are repeats of a module's grouped frame right above
    itself: a stack of five unresolved swrast_dri.so frames is one '[swrast_dri.so]' frame.
    """
    rows, chains = trace.events("COMPOSITE_EVENTS"), trace.events("SAMPLING_CALLCHAINS")
    if rows is None or chains is None:
        return None
    mine = (rows["start"] >= window[0]) & (rows["start"] <= window[1])
    if pids:
        mine &= np.isin((rows["tid"] >> PID_SHIFT) & ID_MASK, np.asarray(pids, dtype=np.int64))
    if skip_tids:
        mine &= ~np.isin(rows["tid"], np.asarray(skip_tids, dtype=np.int64))
    if not mine.any():
        return None
    rows = {name: values[mine] for name, values in rows.items()}
    keep = np.isin(chains["id"], rows["id"])
    keep &= ~((chains["depth"] > 0) & np.isin(chains["symbol"], pseudo_frame_ids(trace.conn)))
    ids, depths = chains["id"][keep], chains["depth"][keep]
    order = argsort_pairs(ids, depths)
    ids, depths = ids[order], depths[order]
    named = name_frames(trace.conn, chains["symbol"][keep][order], chains["module"][keep][order], resolver,
                        trace.has("SAMPLING_CALLCHAINS", "originalIP"))
    symbols, modules = named.symbols, named.modules
    bracketed = np.array([n.startswith("[") and n.endswith("]") for n in named.names] + [False], dtype=bool)
    stay = np.ones(len(ids), dtype=bool)
    stay[1:] = ~((ids[1:] == ids[:-1]) & (symbols[1:] == symbols[:-1]) & (modules[1:] == modules[:-1])
                 & bracketed[symbols[1:]])
    return Samples(rows["id"], rows["start"], rows["tid"], rows["cpu"], ids[stay], symbols[stay], modules[stay],
                   depths[stay], named.names, named.grouped_addresses)


def of_thread(samples: Samples, global_tid: int) -> Samples | None:
    """The samples of one thread, with their stacks."""
    mine = samples.tids == global_tid
    if not mine.any():
        return None
    keep = np.isin(samples.chain_ids, samples.ids[mine])
    return Samples(samples.ids[mine], samples.starts[mine], samples.tids[mine], samples.cpus[mine],
                   samples.chain_ids[keep], samples.symbols[keep], samples.modules[keep], samples.depths[keep],
                   samples.names, samples.grouped_addresses)


def _frame_codes(samples: Samples) -> tuple[np.ndarray, np.ndarray]:
    """A dense code per distinct (symbol, module) of the chain rows, and each code's (symbol, module) key."""
    codes, uniques = pd.factorize(frame_key(samples.symbols, samples.modules))
    return codes.astype(np.int64), np.asarray(uniques, dtype=np.int64)


def _frame_table(samples: Samples, symbols: np.ndarray, modules: np.ndarray, counts: np.ndarray) -> pd.DataFrame:
    names = samples.names
    table = pd.DataFrame({"symbol": [names[int(s)] for s in symbols], "module": [names[int(m)] for m in modules],
                          "samples": counts.astype(int)})
    table["pct"] = table["samples"] * 100.0 / len(samples.ids)
    return table.sort_values(["samples", "symbol"], ascending=[False, True], kind="stable").reset_index(drop=True)


def module_hotspots(samples: Samples, top: int = TOP_N) -> pd.DataFrame:
    """Self samples by module, like `perf report --sort dso`: which library the time is spent in."""
    leaf = samples.depths == 0
    codes, modules = np.unique(samples.modules[leaf], return_inverse=True)  # each module labelled once
    found = np.array([samples.names[int(m)] for m in codes] or [""], dtype=object)
    named = np.array([module_label(path) for path in found], dtype=object)
    labels, paths = pd.Series(named[modules], dtype=object), pd.Series(found[modules], dtype=object)
    table = pd.DataFrame({"module": labels, "path": paths}).groupby("module", sort=False).agg(
        samples=("path", "size"), path=("path", "first")).reset_index()
    table["pct"] = table["samples"] * 100.0 / len(samples.ids)
    table = table.sort_values(["samples", "module"], ascending=[False, True], kind="stable").head(top)
    return table[["module", "path", "samples", "pct"]].reset_index(drop=True)


def self_hotspots(samples: Samples, top: int = TOP_N) -> pd.DataFrame:
    leaf = samples.depths == 0
    keys, counts = np.unique(frame_key(samples.symbols[leaf], samples.modules[leaf]), return_counts=True)
    best = np.argsort(-counts, kind="stable")[:top]
    symbols, modules = split_frame_key(keys[best])
    return _frame_table(samples, symbols, modules, counts[best])


def inclusive_hotspots(samples: Samples, top: int = TOP_N) -> pd.DataFrame:
    codes, keys = _frame_codes(samples)
    sample_index = np.cumsum(np.r_[True, samples.chain_ids[1:] != samples.chain_ids[:-1]]) - 1
    distinct = np.unique((sample_index << 32) | codes)  # each frame once per sample
    counts = np.bincount(distinct & 0xFFFFFFFF, minlength=len(keys))
    best = np.argsort(-counts, kind="stable")[:top]
    best = best[counts[best] > 0]
    symbols, modules = split_frame_key(keys[best])
    return _frame_table(samples, symbols, modules, counts[best])


def top_down_tree(samples: Samples, min_share: float = TREE_MIN_SHARE) -> dict:
    """The root-to-leaf call tree with sample counts, nodes under ``min_share`` of the samples pruned."""
    total = len(samples.ids)
    floor = max(1, int(np.ceil(total * min_share)))
    # level from the root: the deepest frame of a sample is level 0
    starts = np.flatnonzero(np.r_[True, samples.chain_ids[1:] != samples.chain_ids[:-1]])
    sizes = np.diff(np.r_[starts, len(samples.chain_ids)])
    position = np.arange(len(samples.chain_ids)) - np.repeat(starts, sizes)
    level = np.repeat(sizes, sizes) - 1 - position
    sample_of = np.repeat(np.arange(len(starts)), sizes)
    parent = np.full(len(starts), -1, dtype=np.int64)  # node id of each sample's frame at the previous level
    nodes: dict[int, dict] = {}
    children: dict[int, list[int]] = {-1: []}
    next_id = 0
    codes, frame_keys = _frame_codes(samples)
    for depth in range(min(int(level.max()) + 1 if len(level) else 0, TREE_MAX_DEPTH)):
        at = level == depth
        key = ((parent[sample_of[at]] + 1) << 32) | codes[at]
        uniques, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        ids = np.arange(next_id, next_id + len(uniques))
        next_id += len(uniques)
        for node_id, packed, count in zip(ids[counts >= floor], uniques[counts >= floor], counts[counts >= floor]):
            parent_id = int(packed >> 32) - 1
            if parent_id != -1 and parent_id not in nodes:
                continue
            symbol, module = split_frame_key(frame_keys[packed & 0xFFFFFFFF])
            nodes[int(node_id)] = {"symbol": int(symbol), "module": int(module), "samples": int(count)}
            children.setdefault(parent_id, []).append(int(node_id))
        parent[sample_of[at]] = ids[inverse.ravel()]
    names = samples.names

    def build(node_id: int) -> dict:
        node = nodes[node_id]
        kids = sorted(children.get(node_id, []), key=lambda k: -nodes[k]["samples"])
        return {"symbol": names[node["symbol"]], "module": names[node["module"]],
                "samples": node["samples"], "pct": node["samples"] * 100.0 / total,
                "children": [build(k) for k in kids]}

    roots = sorted(children[-1], key=lambda k: -nodes[k]["samples"])
    return {"symbol": "[all samples]", "module": "", "samples": total, "pct": 100.0,
            "children": [build(k) for k in roots]}


def stack_tree(samples: Samples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sample's stack stored once, as a tree grown from the outermost frames: (the node of each sample, -1
    without a stack; each node's parent, -1 for an outermost frame; each node's symbol, a code into names). A
    stack is its node, then the node's parent and so on, leaf first; samples with the same stack share a node."""
    chain = samples.chain_ids
    if not len(chain):
        return np.full(len(samples.ids), -1, dtype=np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    firsts = np.flatnonzero(np.r_[True, chain[1:] != chain[:-1]])
    sizes = np.diff(np.r_[firsts, len(chain)])
    level = np.repeat(sizes, sizes) - 1 - (np.arange(len(chain)) - np.repeat(firsts, sizes))  # 0: outermost
    stack_of = np.repeat(np.arange(len(firsts)), sizes)
    node = np.full(len(firsts), -1, dtype=np.int64)  # each stack's node so far, from its outermost frame down
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(int(level.max()) + 2))
    parents, symbols = [], []
    made = 0
    for depth in range(len(bounds) - 1):
        rows = order[bounds[depth]:bounds[depth + 1]]
        mine = stack_of[rows]
        keys, inverse = np.unique(((node[mine] + 1) << 32) | samples.symbols[rows], return_inverse=True)
        parents.append((keys >> 32) - 1)
        symbols.append(keys & 0xFFFFFFFF)
        node[mine] = made + inverse.ravel()
        made += len(keys)
    ids = chain[firsts]  # ascending: the chain rows are in order of id
    at = np.clip(np.searchsorted(ids, samples.ids), 0, len(ids) - 1)
    of_sample = np.where(ids[at] == samples.ids, node[at], -1)
    return of_sample, np.concatenate(parents), np.concatenate(symbols)
