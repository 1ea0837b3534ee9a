"""The whole-run timeline's rows (analysis/analyzers/run_events.py) against SQL on the real exports, and its binary
(report/run_timeline.py) read back as the page reads it."""
from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
import struct
import zlib

import numpy as np
import pytest

from orchestrator.analysis.analyzers.frames import NVTX_RANGE_TYPES
from orchestrator.analysis.analyzers.run_events import EventRow, RunEvents, StackNodes, run_events
from orchestrator.analysis.export.names import tid_of
from orchestrator.analysis.export.report_input import open_report
from orchestrator.analysis.export.trace import Trace
from orchestrator.report.levels import EXACT_EVENTS, level_runs
from orchestrator.report.run_timeline import ESCAPE, timeline_data

# (table, kind, extra condition) of the thread rows
THREAD_SQL = (("OPENGL_API", "opengl", "nameId IS NOT NULL"), ("OSRT_API", "osrt", "eventClass = 27"),
              ("CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_api", "nameId IS NOT NULL"),
              ("NVTX_EVENTS", "nvtx", f"eventType IN ({','.join(map(str, NVTX_RANGE_TYPES))})"))

# nsys's own threads in the app are left out, as everywhere in the analysis
NOT_NSYS = ("globalTid NOT IN (SELECT globalTid FROM ThreadNames AS t JOIN StringIds AS s ON s.id = t.nameId "
            "WHERE s.value LIKE '[NSys%')")


def events_of(path) -> tuple[RunEvents, sqlite3.Connection]:
    conn, schema, export = open_report(path, None)
    trace = Trace(conn, schema, export)
    try:
        return run_events(trace), conn
    finally:
        trace.close()


@pytest.mark.parametrize("name", ["es2gears-opengl", "tflite-pose-xnnpack", "nsu_v100_2022.export2022_4",
                                  "abacus_titanrtx_2020.export2022_4",
                                  "python-cpu-sampling"])
def test_every_row_holds_what_sql_counts_for_its_thread_or_lane(export, name):
    events, conn = events_of(export(name))
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        by_kind: dict[str, int] = {}
        for row in events.rows:
            by_kind[row.kind] = by_kind.get(row.kind, 0) + len(row.starts)
            assert (np.diff(row.starts) >= 0).all() and (row.ends >= row.starts).all()
            assert row.names.min() >= 0 and row.names.max() < len(events.names)
        for table, kind, condition in THREAD_SQL:
            if table not in tables:
                continue
            counted = conn.execute(f'SELECT count(*) FROM {table} WHERE "end" IS NOT NULL AND globalTid IS NOT NULL '
                                   f"AND {condition} AND {NOT_NSYS}").fetchone()[0]
            assert by_kind.get(kind, 0) == counted, kind
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            kernels = conn.execute('SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL '
                                   'WHERE "end" IS NOT NULL').fetchone()[0]
            assert by_kind.get("cuda_kernel", 0) == kernels
        memory = sum(conn.execute(f'SELECT count(*) FROM {t} WHERE "end" IS NOT NULL').fetchone()[0]
                     for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET") if t in tables)
        assert by_kind.get("memcpy", 0) == memory  # copies and sets, one row per stream
        assert len({(row.group, row.kind) for row in events.rows}) == len(events.rows)
        if "COMPOSITE_EVENTS" in tables:
            assert by_kind.get("sample", 0) == conn.execute(
                f"SELECT count(*) FROM COMPOSITE_EVENTS WHERE globalTid IS NOT NULL AND {NOT_NSYS}").fetchone()[0]
        assert events.count == sum(by_kind.values()) > 0
    finally:
        conn.close()


def test_an_opengl_row_names_its_calls_as_the_export_does(export):
    events, conn = events_of(export("es2gears-opengl"))
    try:
        row = next(r for r in events.rows if r.kind == "opengl")
        first = conn.execute("SELECT s.value FROM OPENGL_API AS o JOIN StringIds AS s ON s.id = o.nameId "
                             "WHERE o.start = ? ORDER BY o.rowid LIMIT 1", (int(row.starts[0]),)).fetchone()[0]
        assert events.names[row.names[0]] == first
    finally:
        conn.close()


def read_back(data) -> tuple[dict, list[dict]]:
    """The page's reading of the two binaries (templates/timeline_data.js's parse and parseDetail), in Python;
    the header gets the flows read back as "flows": (GPU places, first API places, last API places)."""
    overview = zlib.decompress(base64.b64decode(data.overview))
    detail = zlib.decompress(base64.b64decode(data.detail)) if data.detail else b""
    length = struct.unpack_from("<I", overview)[0]
    header = json.loads(overview[4:4 + length])
    offsets = {"overview": 4 + length, "detail": 0}
    binaries = {"overview": overview, "detail": detail}

    def take(where: str, dtype: str, n: int) -> list:
        size = np.dtype(dtype).itemsize * n
        values = np.frombuffer(binaries[where], dtype="u1", count=size, offset=offsets[where])
        if dtype == "<u4":  # byte-planed
            values = values.reshape(4, n).T.copy().view("<u4").ravel()
        else:
            values = values.view(dtype)
        offsets[where] += size + (-size % 4)
        return values.tolist()

    def unescaped(parts: list[list], escapes: list[float]) -> list[list]:
        left = iter(escapes)
        return [[next(left) if v == ESCAPE else v for v in part] for part in parts]

    parents, frames = (np.array(take("overview", "<u4", header["stacks"]), dtype=np.int64) for _ in range(2))
    header["stack_nodes"] = (parents - 1, frames)
    rows = []
    for meta in header["rows"]:
        n, where = meta["count"], "detail" if meta["detail"] else "overview"
        events = [take(where, "<u4", n), take(where, "<u4", n)]
        names = take(where, "<u4", n)
        nodes = None
        if meta["kind"] == "sample" and header["stacks"]:  # a sample's stack node in place of its name: its leaf's
            nodes, names = names, frames[names].tolist()
        if meta["detail"]:
            events = unescaped(events, take("detail", "<f8", meta["detail_escapes"]))
        levels, values = [], []
        for level in meta["levels"]:
            levels += [take("overview", "<u4", level["runs"]), take("overview", "<u4", level["runs"])]
            values.append((level["width"], take("overview", "u1", level["runs"])))
        parts = unescaped(([] if meta["detail"] else events) + levels, take("overview", "<f8", meta["escapes"]))
        if not meta["detail"]:
            events, levels = parts[:2], parts[2:]
        else:
            levels = parts
        starts = np.cumsum(events[0])
        rows.append({"starts": starts, "ends": starts + np.array(events[1]), "names": names, "nodes": nodes,
                     "levels": [(width, np.cumsum(levels[2 * i]), levels[2 * i + 1], vals)
                                for i, (width, vals) in enumerate(values)]})
    n = header["links"]
    first = np.cumsum(take("detail", "<u4", n)).astype(np.int64) if n else np.empty(0, dtype=np.int64)
    lengths, steps = (np.array(take("detail", "<u4", n), dtype=np.int64) for _ in range(2))
    gpu = np.cumsum(np.where(steps & 1, -(steps + 1) // 2, steps // 2))  # zigzag'd steps
    header["flows"] = (gpu, first, first + lengths)
    assert offsets["detail"] == len(detail)
    return header, rows


def test_the_binary_reads_back_to_every_event_level_and_escape():
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 10**9, 40_000)) + 5_000_000_000
    starts[-1] = starts[-2] + 6_000_000_000  # a gap past 32 bits
    ends = starts + rng.integers(0, 50_000, len(starts))
    ends[0] = starts[0] + 5_000_000_000      # a call longer than 32 bits of ns
    nodes = rng.integers(0, 3, len(starts[::3]))  # three stacks: main > draw > glClear, main > draw, main > swap
    stacks = StackNodes(np.array([-1, 0, 1, 0]), np.array([3, 4, 2, 1]))
    rows = [EventRow("app (1)", "opengl", starts, ends, rng.integers(0, 3, len(starts)).astype(np.int32)),
            EventRow("app (1)", "sample", starts[::3], starts[::3], stacks.frames[nodes + 1], stacks=nodes + 1)]
    events = RunEvents(rows, ["glDrawArrays", "eglSwapBuffers", "glClear", "main", "draw"], stacks)
    data = timeline_data(events, [(5_000_000_000, 5_016_000_000)],
                         [{"title": "cpu bound", "start_ns": 5_000_000_000, "end_ns": 5_016_000_000}],
                         {"GPU load (%)": [[5_000_000_000, 10.0], [5_100_000_000, 90.0]]})
    header, back = read_back(data)
    assert [p.tolist() for p in header["stack_nodes"]] == [[-1, 0, 1, 0], [3, 4, 2, 1]]
    origin = header["origin"]
    assert origin == int(starts[0]) and data.events == len(starts) + len(starts[::3])
    at = 5_000_000_000 - origin  # times in the page count from the first event
    assert header["frames"] == [[at, 16_000_000]] and header["findings"][0]["end_ns"] == at + 16_000_000
    assert header["board"] == {"GPU load (%)": [[float(at), 10.0], [at + 100_000_000.0, 90.0]]}
    assert header["rows"][0]["detail"] and header["rows"][0]["detail_escapes"] == 2  # the gap and the long call
    assert not header["rows"][1]["detail"]
    for row, got in zip(rows, back):
        assert got["starts"].tolist() == (row.starts - origin).tolist()
        assert got["ends"].tolist() == (row.ends - origin).tolist()
        assert got["names"] == row.names.tolist()
        assert got["nodes"] == (row.stacks.tolist() if row.kind == "sample" else None)
        assert bool(got["levels"]) == (len(row.starts) > EXACT_EVENTS)  # 40,000 calls have levels, 13,334 samples not
        for width, first, lengths, values in got["levels"]:
            runs = level_runs(row.starts, row.ends, origin, width, row.kind == "sample")
            assert first.tolist() == runs.starts.tolist() and lengths == runs.lengths.tolist()
            assert values == runs.values.tolist()


def test_samples_are_named_as_the_hotspots_name_their_leaf_functions(export):
    from orchestrator.analysis import analyze_report
    source = export("python-cpu-sampling")
    events, conn = events_of(source)
    conn.close()
    counts: dict[str, int] = {}
    for row in events.rows:
        if row.kind == "sample":
            for code in row.names.tolist():
                counts[events.names[code]] = counts.get(events.names[code], 0) + 1
    hot = analyze_report(source).as_json()["hotspots"]["self"][:3]
    assert [h["symbol"] for h in hot][2].startswith("[")  # an unresolved address, grouped under its module
    for spot in hot:  # the window of the analysis is the whole run here: the same counts
        assert counts.get(spot["symbol"]) == spot["samples"], spot


def sql_stacks(conn: sqlite3.Connection) -> dict[int, list[str]]:
    """Each sample's (COMPOSITE_EVENTS.id's) stack, leaf first, from SAMPLING_CALLCHAINS by stackDepth, named as
    the hotspots name frames: an address nsys could not name is its module's frame ("[libGLX_mesa.so.0]", once
    for a run of them), nsys's pseudo-frames above the leaf left out."""
    chains: dict[int, list[str]] = {}
    for sample, depth, value, module in conn.execute(
            "SELECT c.id, c.stackDepth, s.value, m.value FROM SAMPLING_CALLCHAINS AS c JOIN StringIds AS s "
            "ON s.id = c.symbol LEFT JOIN StringIds AS m ON m.id = c.module ORDER BY c.id, c.stackDepth"):
        module = {"//anon": "[JIT]", "": "[unknown]"}.get(module or "", module or "")  # perf's names for them
        frame = value if not value.startswith("0x") else module if module.startswith("[") else \
            f"[{os.path.basename(module)}]"
        chain = chains.setdefault(sample, [])
        if depth and value.startswith("["):
            continue
        if not (chain and chain[-1] == frame and frame.startswith("[")):
            chain.append(frame)
    return chains


@pytest.mark.parametrize("name", ["python-cpu-sampling", "es2gears-opengl"])
def test_each_samples_stack_is_its_call_chain_as_sql_reads_it(export, name):
    """Leaf first, as SQL reads the call chain (sql_stacks); stacks stored once each."""
    events, conn = events_of(export(name))
    try:
        chains = sql_stacks(conn)
        sampled = conn.execute("SELECT e.start, e.globalTid, e.id FROM COMPOSITE_EVENTS AS e").fetchall()
    finally:
        conn.close()
    by_time = {(start, tid_of(gtid)): chains.get(sample) for start, gtid, sample in sampled}
    nodes = events.stacks
    keys = list(zip(nodes.parents.tolist(), nodes.frames.tolist()))
    assert len(set(keys)) == len(keys)  # no node twice: a stack is stored once
    checked = 0
    for row in events.rows:
        if row.kind != "sample":
            continue
        tid = int(re.search(r"\((\d+)\)$|^thread (\d+) of", row.group).group(1, 2)[row.group.startswith("thread ")])
        for start, node, leaf in zip(row.starts.tolist(), row.stacks.tolist(), row.names.tolist()):
            chain = by_time[(start, tid)]
            stack = [events.names[k] for k in nodes.stack(node)]
            assert events.names[leaf] == stack[0]
            assert stack == chain
            checked += 1
    assert checked == sum(len(row.starts) for row in events.rows if row.kind == "sample") > 300
