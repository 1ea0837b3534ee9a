"""The answers about where a span's time went on the CPU (its samples' functions, bottom-up and top-down) and on
the GPU (the work the calls queued, through the flow links the page draws), each figure with its SQL.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..analysis.analyzers.flows import API_KINDS, offsets
from ..analysis.analyzers.run_events import GPU_TABLES, NO_STACK_NAME, THREAD_TABLES, RunEvents
from ..analysis.analyzers.span_stats import chosen_rows
from ..analysis.export.names import pid_sql
from ..analysis.intervals.coverage import union_ns
from ..errors import UsageError
from .answers import head, paged, span_of
from .root import OpenRun, Root
from .sql import LEAF_NAME, busy_sql, literal, span_sql

TOP = 25
TREE_DEPTH = 12
TREE_MIN_SHARE = 0.01
# a GPU table by kind, and the column naming the process whose calls queued its work
GPU_OWNERS = {kind: (GPU_TABLES[kind], "globalTid" if kind == "opengl_gpu" else "globalPid")
              for kind in ("cuda_kernel", "memcpy", "opengl_gpu")}
API_TABLES = {kind: THREAD_TABLES[kind] for kind in API_KINDS}


def hotspots_answer(root: Root, run: OpenRun, window: str | None, thread: str | None = None,
                    top: int = TOP) -> dict[str, Any]:
    """The CPU samples of the span on the threads holding ``thread``: functions by their own samples (bottom-up),
    by the samples whose stacks hold them, and the top-down tree."""
    span = span_of(run, window)
    paged(0, top)
    events = run.events
    rows = chosen_rows(events, thread, ("sample",))
    if not rows:
        raise UsageError(f"{run.name} has no CPU samples" + (f" on '{thread}'" if thread else ""),
                         "profile with CPU sampling (the app spec's sample: process-tree)")
    nodes, unstacked, keys = _sampled_nodes(events, rows, span)
    answer = head(root, run)
    answer["window"] = {"start_ns": span[0], "end_ns": span[1]}
    total = len(nodes) + unstacked
    answer["samples"] = total
    answer["samples_evidence"] = {"sql": (
        f"SELECT count(*) FROM COMPOSITE_EVENTS WHERE start >= {span[0]} AND start < {span[1]} AND "
        f"globalTid IN ({', '.join(map(str, keys))})") if keys else None}
    if not total:
        answer.update(bottom_up=[], inclusive=[], top_down=None)
        return answer
    stacks = events.stacks
    names = events.names
    leaf = stacks.frames[nodes]
    found, counts = np.unique(leaf, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:top]
    leaves = [(names[int(found[i])], int(counts[i])) for i in order]
    if unstacked:  # samples nsys kept no call stack for: counted, in no tree
        leaves = sorted([*leaves, (NO_STACK_NAME, unstacked)], key=lambda leaf: -leaf[1])[:top]
    answer["bottom_up"] = [{"function": name, "samples": count, "pct": 100.0 * count / total,
                            "evidence": {"sql": span_sql("sample", name, span, keys, run.schema)}}
                           for name, count in leaves]
    inclusive: dict[int, int] = defaultdict(int)
    for node, count in zip(*np.unique(nodes, return_counts=True)):
        for frame in set(stacks.stack(int(node))):
            inclusive[frame] += int(count)
    heaviest = sorted(inclusive.items(), key=lambda item: (-item[1], names[item[0]]))[:top]
    answer["inclusive"] = [
        {"function": names[frame], "samples": count, "pct": 100.0 * count / total,
         "evidence": {"sql": _inclusive_sql(names[frame], span, keys)}} for frame, count in heaviest]
    answer["top_down"] = _top_down(events, nodes, total) if len(nodes) else None
    return answer


def _sampled_nodes(events: RunEvents, rows: list[int],
                   span: tuple[int, int]) -> tuple[np.ndarray, int, tuple[int, ...]]:
    """The stack nodes of the rows' samples in the span, how many samples of rows without stacks it holds (an export
    with no call chains), and the threads they are of."""
    parts, unstacked, keys = [], 0, []
    for index in rows:
        row = events.rows[index]
        inside = (row.starts >= span[0]) & (row.starts < span[1])
        if not inside.any():
            continue
        keys.append(row.key)
        if len(row.stacks):
            parts.append(row.stacks[inside])
        else:
            unstacked += int(inside.sum())
    return (np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)), unstacked, tuple(sorted(keys))


def _inclusive_sql(name: str, span: tuple[int, int], keys: tuple[int, ...]) -> str:
    return (f"SELECT count(DISTINCT e.id) FROM COMPOSITE_EVENTS AS e JOIN SAMPLING_CALLCHAINS AS c ON c.id = e.id "
            f"WHERE e.start >= {span[0]} AND e.start < {span[1]} AND e.globalTid IN ({', '.join(map(str, keys))}) "
            f"AND {LEAF_NAME} = {literal(name)}")


def _top_down(events: RunEvents, nodes: np.ndarray, total: int) -> dict[str, Any]:
    """The call tree from the outermost frames: each node's samples (its own and below), children heaviest first,
    those under TREE_MIN_SHARE of the samples left out (counted in ``children_under_share``)."""
    stacks = events.stacks
    parents = stacks.parents
    below = np.zeros(len(parents), dtype=np.int64)
    found, counts = np.unique(nodes, return_counts=True)
    for node, count in zip(found.tolist(), counts.tolist()):
        while node >= 0:
            below[node] += count
            node = int(parents[node])
    children: dict[int, list[int]] = defaultdict(list)
    for node in np.flatnonzero(below).tolist():
        children[int(parents[node])].append(node)
    limit = TREE_MIN_SHARE * total

    def grow(node: int, depth: int) -> dict[str, Any]:
        mine = sorted(children.get(node, []), key=lambda n: -below[n])
        kept = [n for n in mine if below[n] >= limit] if depth < TREE_DEPTH else []
        return {"function": events.names[int(stacks.frames[node])], "samples": int(below[node]),
                "pct": 100.0 * below[node] / total, "children": [grow(n, depth + 1) for n in kept],
                "children_under_share": len(mine) - len(kept)}
    roots = sorted(children.get(-1, []), key=lambda n: -below[n])
    kept = [n for n in roots if below[n] >= limit]
    return {"function": "[all]", "samples": total, "pct": 100.0, "children": [grow(n, 1) for n in kept],
            "children_under_share": len(roots) - len(kept)}


def gpu_work_answer(root: Root, run: OpenRun, window: str | None, call: str | None = None, gpu: str | None = None,
                    limit: int = 20) -> dict[str, Any]:
    """The GPU work the calls of the span queued (those naming ``call``) and the calls behind the span's GPU work
    (those naming ``gpu``): per (call, GPU work) pair, how many GPU events and their time, with the SQL that joins
    the two tables by their correlation ids; the first ``limit`` links themselves; and the GPU's busy time."""
    span = span_of(run, window)
    paged(0, limit)
    events = run.events
    rows = events.rows
    links = run.links
    at = offsets(rows)
    answer = head(root, run)
    answer["window"] = {"start_ns": span[0], "end_ns": span[1]}
    answer["selected_by"] = "GPU events that ran in the window (overlapping it), with the calls that queued them"
    answer["gpu_busy"] = gpu_busy(run, span)
    # a GPU event's calls, gathered over all its stretches (a call without an id splits an OpenGL workload's): each
    # (call name, GPU event) pair counted once, as the pair's SQL counts it
    behind: dict[int, tuple[str, set[str], int, int]] = {}
    for g, first, last in zip(links.gpu.tolist(), links.first.tolist(), links.last.tolist()):
        grow, gi = _place(at, g)
        gpu_row = rows[grow]
        if not (gpu_row.ends[gi] > span[0] and gpu_row.starts[gi] < span[1]):
            continue
        arow, ai = _place(at, first)
        api_row = rows[arow]
        kind, names, _, _ = behind.setdefault(g, (api_row.kind, set(), arow, ai))
        names.update(events.names[int(n)] for n in api_row.names[ai:ai + last - first + 1])
    pairs: dict[tuple[str, str, str, str], list[int]] = {}
    listed: list[dict[str, Any]] = []
    call_needle, gpu_needle = (call or "").lower(), (gpu or "").lower()
    for g, (kind, call_names, arow, ai) in sorted(behind.items()):
        grow, gi = _place(at, g)
        gpu_row, api_row = rows[grow], rows[arow]
        gpu_name = events.names[int(gpu_row.names[gi])]
        chosen = sorted(n for n in call_names if call_needle in n.lower())
        if (gpu_needle and gpu_needle not in gpu_name.lower()) or not chosen:
            continue
        duration = int(gpu_row.ends[gi] - gpu_row.starts[gi])
        for name in chosen:
            pairs.setdefault((kind, name, gpu_row.kind, gpu_name), []).append(duration)
        if len(listed) < limit:
            listed.append({"calls": chosen, "thread": api_row.group, "call_start_ns": int(api_row.starts[ai]),
                           "gpu": gpu_name, "lane": gpu_row.group, "gpu_start_ns": int(gpu_row.starts[gi]),
                           "gpu_ns": duration})
    answer["pairs"] = [
        {"call_kind": ck, "call": cn, "gpu_kind": gk, "gpu": gn, "gpu_events": len(d), "gpu_ns": int(sum(d)),
         "evidence": {"sql": _pair_sql(run, ck, cn, gk, gn, span)}}
        for (ck, cn, gk, gn), d in sorted(pairs.items(), key=lambda item: -sum(item[1]))]
    answer["links"] = listed
    return answer


def gpu_busy(run: OpenRun, span: tuple[int, int]) -> dict[str, Any] | None:
    """How long the GPU ran any work in the span (its events cut to it, overlaps counted once): CUDA kernels and
    memory operations, and apart from them OpenGL workloads; None for a kind the run has none of."""
    found: dict[str, Any] = {"span_ns": span[1] - span[0]}
    for key, kinds in (("cuda", ("cuda_kernel", "memcpy")), ("opengl", ("opengl_gpu",))):
        rows = [row for row in run.events.rows if row.kind in kinds]
        if not rows:
            continue
        starts = np.concatenate([np.clip(row.starts, *span) for row in rows])
        ends = np.concatenate([np.clip(row.ends, *span) for row in rows])
        busy = union_ns([(starts[ends > starts], ends[ends > starts])])
        tables = tuple(t for t in (("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                    "CUPTI_ACTIVITY_KIND_MEMSET") if key == "cuda" else ("OPENGL_WORKLOAD",))
                       if run.schema.has(t, "start", "end"))
        found[key] = {"busy_ns": busy, "busy_pct": 100.0 * busy / max(1, span[1] - span[0]),
                      "evidence": {"sql": busy_sql(span, tables)}}
    return found if len(found) > 1 else None


def _place(at: np.ndarray, index: int) -> tuple[int, int]:
    row = int(np.searchsorted(at, index, side="right")) - 1
    return row, index - int(at[row])


def _pair_sql(run: OpenRun, call_kind: str, call: str, gpu_kind: str, gpu: str, span: tuple[int, int]) -> str | None:
    """The GPU events of that name in the span that the calls of that name queued: their count and time."""
    api = API_TABLES.get(call_kind)
    if api is None or gpu_kind not in GPU_OWNERS or call_kind not in API_KINDS:
        return None
    table, owner = GPU_OWNERS[gpu_kind]
    if gpu_kind == "cuda_kernel":
        column = next((c for c in ("shortName", "demangledName") if run.schema.has(table, c)), "shortName")
        gpu_name = f"(SELECT value FROM StringIds WHERE id = g.{column})"
    elif gpu_kind == "opengl_gpu":
        gpu_name = "(SELECT value FROM StringIds WHERE id = g.nameId)"
    else:
        return None  # a copy's name is made from its kind, not read: its pairs are checked through 'window'
    calls = (f"SELECT {pid_sql('a.globalTid')} AS pid, a.correlationId AS id FROM {api} AS a WHERE a.correlationId > 0 "
             f"AND (SELECT value FROM StringIds WHERE id = a.nameId) = {literal(call)}")
    if gpu_kind == "opengl_gpu":  # a workload is the work of a run of calls: its first id to its last
        queued = (f"EXISTS (SELECT 1 FROM calls AS c WHERE c.pid = {pid_sql('g.' + owner)} AND c.id BETWEEN "
                  f"g.correlationId AND coalesce(g.endCorrelationId, g.correlationId))")
    else:
        queued = f"({pid_sql('g.' + owner)}, g.correlationId) IN (SELECT pid, id FROM calls)"
    return (f"WITH calls AS MATERIALIZED ({calls}) SELECT count(*) AS gpu_events, sum(g.\"end\" - g.start) AS gpu_ns "
            f"FROM {table} AS g WHERE g.\"end\" > {span[0]} AND g.start < {span[1]} AND {gpu_name} = {literal(gpu)} "
            f"AND {queued}")
