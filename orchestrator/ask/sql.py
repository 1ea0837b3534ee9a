"""The SQL that recomputes an answer's figures from the run's export: what a user (or a test) runs with sqlite3 to
check a number. Pure: a row's kind, name and place in, one statement out, every value a literal (the client gives
no SQL; names are quoted as SQLite quotes them).

A span's row (kind, name, count, total, min, max, mean) is one statement; its self time another, which finds each
event's parent as the page does (the latest event before it on its thread still open at its start, of any of the
thread's rows of calls and ranges).
"""
from __future__ import annotations

from ..analysis.analyzers.api_summaries import MEMCPY_KINDS, memop_name
from ..analysis.analyzers.frames import NVTX_RANGE_TYPES
from ..analysis.analyzers.run_events import LANE_SHIFT, NO_STACK_NAME
from ..analysis.analyzers.run_events import THREAD_TABLES as RUN_THREAD_TABLES
from ..analysis.analyzers.span_stats import NESTING_KINDS
from ..analysis.export.calls import SWAP_CALLS
from ..analysis.export.reads import OSRT_CALL_CLASS
from ..analysis.export.schema import Schema

THREAD_TABLES = {**RUN_THREAD_TABLES, "nvtx": "NVTX_EVENTS"}  # a thread's rows: their table by kind
FIGURES = ('count(*) AS count, sum(e."end" - e.start) AS total_ns, min(e."end" - e.start) AS min_ns, '
           'max(e."end" - e.start) AS max_ns, avg(e."end" - e.start) AS mean_ns')

# a sample's leaf as the hotspots name it: its symbol, or for an address nsys could not name, its module's one frame
# ('[swrast_dri.so]': the module file's name; '[JIT]' for anonymous memory)
_SYMBOL = "(SELECT value FROM StringIds WHERE id = c.symbol)"
_MODULE = "rtrim(coalesce((SELECT value FROM StringIds WHERE id = c.module), ''), '/')"
LEAF_NAME = (f"(CASE WHEN {_SYMBOL} GLOB '0x[0-9a-fA-F]*' AND NOT substr({_SYMBOL}, 3) GLOB '*[^0-9a-fA-F]*' THEN "
             f"(CASE WHEN {_MODULE} = '//anon' THEN '[JIT]' WHEN {_MODULE} = '' THEN '[unknown]' "
             f"WHEN {_MODULE} GLOB '[[]*' THEN {_MODULE} "
             f"ELSE '[' || replace({_MODULE}, rtrim({_MODULE}, replace({_MODULE}, '/', '')), '') || ']' END) "
             f"ELSE coalesce({_SYMBOL}, '[unknown]') END)")


def literal(text: str) -> str:
    """A string as an SQLite literal."""
    return "'" + text.replace("'", "''") + "'"


def _in(column: str, values: tuple[int, ...]) -> str:
    return f"{column} IN ({', '.join(str(int(v)) for v in values)})"


def _thread_base(kind: str, schema: Schema, tids: tuple[int, ...],
                 tid_filter: str | None = None) -> tuple[str, str, str] | None:
    """(table, the filter every event of the row meets, its name expression) for a thread's kind; ``tid_filter``:
    the threads as SQL, instead of ``tids``."""
    table = THREAD_TABLES.get(kind)
    if table is None:
        return None
    where = ['e."end" IS NOT NULL', tid_filter or _in("e.globalTid", tids)]
    if kind == "nvtx":
        where.append(f"e.eventType IN ({', '.join(map(str, NVTX_RANGE_TYPES))})")
        text_id = "e.textId" if schema.has(table, "textId") else "NULL"
        text = "e.text" if schema.has(table, "text") else "NULL"
        name = (f"coalesce((SELECT value FROM StringIds WHERE id = {text_id}), {text}, "
                f"'[unnamed range]')")
    else:
        where.append("e.nameId IS NOT NULL")
        if table == "OSRT_API" and schema.has(table, "eventClass"):
            where.append(f"e.eventClass = {OSRT_CALL_CLASS}")
        name = "coalesce((SELECT value FROM StringIds WHERE id = e.nameId), '[unnamed]')"
    return table, " AND ".join(where), name


def _lanes(device: str, lane: str, keys: tuple[int, ...]) -> str:
    pairs = [f"({device} = {key >> LANE_SHIFT} AND {lane} = {key & ((1 << LANE_SHIFT) - 1)})" for key in keys]
    return "(" + " OR ".join(pairs) + ")"


def _gpu_base(kind: str, name: str, schema: Schema, keys: tuple[int, ...]) -> tuple[str, str] | None:
    """(table, filter) of a GPU row's events of that name."""
    if kind == "cuda_kernel":
        table = "CUPTI_ACTIVITY_KIND_KERNEL"
        column = next((c for c in ("shortName", "demangledName") if schema.has(table, c)), "shortName")
        return table, (f"{_lanes('e.deviceId', 'e.streamId', keys)} AND "
                       f"(SELECT value FROM StringIds WHERE id = e.{column}) = {literal(name)}")
    if kind == "opengl_gpu":
        device = "coalesce(e.gpu, 0)" if schema.has("OPENGL_WORKLOAD", "gpu") else "0"
        context = "coalesce(e.contextId, 0)" if schema.has("OPENGL_WORKLOAD", "contextId") else "0"
        return "OPENGL_WORKLOAD", (f'e."end" IS NOT NULL AND {_lanes(device, context, keys)} AND '
                                   f"(SELECT value FROM StringIds WHERE id = e.nameId) = {literal(name)}")
    if kind == "memcpy":
        lanes = _lanes("e.deviceId", "e.streamId", keys)
        if name == memop_name(-1):
            return "CUPTI_ACTIVITY_KIND_MEMSET", lanes
        copy_kinds = [k for k in MEMCPY_KINDS if memop_name(k) == name]
        return "CUPTI_ACTIVITY_KIND_MEMCPY", f"{lanes} AND {_in('e.copyKind', tuple(copy_kinds))}"
    return None


def span_sql(kind: str, name: str, span: tuple[int, int], keys: tuple[int, ...], schema: Schema) -> str | None:
    """One statement giving count, total_ns, min_ns, max_ns and mean_ns of the events of that kind and name in the
    span, on the rows ``keys`` (threads' globalTids or GPU lanes); None for a kind no table holds as such (a
    thread's state, made from its scheduling events)."""
    a, b = span
    overlap = f'e."end" > {a} AND e.start < {b}'
    if kind == "sample":
        chosen = f"e.start >= {a} AND e.start < {b} AND {_in('e.globalTid', keys)}"
        if name == NO_STACK_NAME:  # samples nsys kept no call stack for
            return (f"SELECT count(*) AS count FROM COMPOSITE_EVENTS AS e WHERE {chosen} AND NOT EXISTS "
                    f"(SELECT 1 FROM SAMPLING_CALLCHAINS AS c WHERE c.id = e.id AND c.stackDepth = 0)")
        return (f"SELECT count(*) AS count FROM COMPOSITE_EVENTS AS e JOIN SAMPLING_CALLCHAINS AS c ON c.id = e.id "
                f"AND c.stackDepth = 0 WHERE {chosen} AND {LEAF_NAME} = {literal(name)}")
    thread = _thread_base(kind, schema, keys)
    if thread is not None:
        table, where, name_of = thread
        return f"SELECT {FIGURES} FROM {table} AS e WHERE {where} AND {overlap} AND {name_of} = {literal(name)}"
    gpu = _gpu_base(kind, name, schema, keys)
    if gpu is None:
        return None
    table, where = gpu
    return f"SELECT {FIGURES} FROM {table} AS e WHERE {where} AND {overlap}"


def self_sql(kind: str, name: str, span: tuple[int, int], keys: tuple[int, ...], schema: Schema,
             nesting: tuple[str, ...] = NESTING_KINDS) -> str | None:
    """One statement giving self_ns: the events' time less that of the events directly inside each on its thread,
    whatever kind they are (an OS call inside an OpenGL call is its child), clipped to its end; GPU work does not
    nest: its self time is its total. ``nesting``: the kinds of calls and ranges those threads have (fewer tables
    read, a shorter statement)."""
    if kind not in THREAD_TABLES:
        return None
    parts = []
    for rank, other in enumerate(NESTING_KINDS):  # of equal start and end, the rows' order: nvtx, opengl, ...
        base = _thread_base(other, schema, keys, "e.globalTid IN (SELECT tid FROM threads)")
        if (other != kind and other not in nesting) or base is None or not schema.has(base[0], "start", "end",
                                                                                       "globalTid"):
            continue
        table, where, name_of = base  # only the asked kind's names are read: the others' events are children
        parts.append(f"SELECT ({rank} << 40) | e.rowid AS id, {literal(other)} AS kind, e.start, e.\"end\", "
                     f"e.globalTid, {name_of if other == kind else 'NULL'} AS name FROM {table} AS e WHERE {where}")
    a, b = span
    return (
        f"WITH threads(tid) AS (VALUES {', '.join(f'({int(key)})' for key in keys)}), "
        f"ev AS MATERIALIZED ({' UNION ALL '.join(parts)}), "
        f"own AS MATERIALIZED (SELECT * FROM ev WHERE \"end\" > {a} AND start < {b} AND kind = {literal(kind)} "
        f"AND name = {literal(name)}), "
        # every event that may be inside one of the span's or between the two: from their first start to their last end
        f"near AS MATERIALIZED (SELECT * FROM ev WHERE \"end\" > (SELECT min(start) FROM own) "
        f"AND start < (SELECT max(\"end\") FROM own)), "
        f"placed AS MATERIALIZED (SELECT c.id, (SELECT p.id FROM near AS p WHERE p.globalTid = c.globalTid "
        f"AND p.\"end\" > c.start AND (p.start < c.start OR (p.start = c.start AND (p.\"end\" > c.\"end\" OR "
        f"(p.\"end\" = c.\"end\" AND p.id < c.id)))) ORDER BY p.start DESC, p.\"end\", p.id DESC LIMIT 1) AS parent, "
        f"c.start, c.\"end\" FROM near AS c) "
        f"SELECT sum(p.\"end\" - p.start - coalesce((SELECT sum(min(c.\"end\", p.\"end\") - c.start) FROM placed "
        f"AS c WHERE c.parent = p.id), 0)) AS self_ns FROM own AS p")


def frame_list(source: str, kind: str, schema: Schema) -> str | None:
    """A WITH clause that ends in frame_list(idx, start_ns, duration_ns): the run's frames as the analysis finds
    them (analysis/analyzers/frames.py), from the export alone; None for a CUDA run's iterations, whose rules
    (iterations.py) are no one statement: their figures come from summary.json."""
    if kind == "opengl" and schema.has("OPENGL_API", "start", "end", "nameId", "globalTid"):
        calls = SWAP_CALLS if source in SWAP_CALLS else (source,)
        named = (f"e.nameId IN (SELECT id FROM StringIds WHERE value IN ({', '.join(map(literal, calls))})) "
                 f'AND e."end" IS NOT NULL')
        return (f"WITH thread AS (SELECT e.globalTid AS tid FROM OPENGL_API AS e WHERE {named} GROUP BY e.globalTid "
                f"ORDER BY count(*) DESC, e.globalTid LIMIT 1), "
                f"marks AS (SELECT e.\"end\" AS t, row_number() OVER (ORDER BY e.\"end\") - 1 AS idx "
                f"FROM OPENGL_API AS e WHERE {named} AND e.globalTid = (SELECT tid FROM thread)), "
                f"first_call AS (SELECT min(start) AS t FROM OPENGL_API WHERE globalTid = (SELECT tid FROM thread)), "
                f"frame_list AS (SELECT idx, coalesce(lag(t) OVER (ORDER BY idx), (SELECT t FROM first_call)) "
                f"AS start_ns, t - coalesce(lag(t) OVER (ORDER BY idx), (SELECT t FROM first_call)) AS duration_ns "
                f"FROM marks) ")
    if kind == "nvtx" and schema.has("NVTX_EVENTS", "start", "end", "eventType", "globalTid"):
        texts: list[str] = []
        if schema.has("NVTX_EVENTS", "text"):
            texts.append(f"e.text = {literal(source)}")
        if schema.has("NVTX_EVENTS", "textId"):
            texts.append(f"e.textId IN (SELECT id FROM StringIds WHERE value = {literal(source)})")
        if not texts:
            return None
        ranges = (f"SELECT e.start, e.\"end\", e.globalTid FROM NVTX_EVENTS AS e WHERE e.eventType IN "
                  f"({', '.join(map(str, NVTX_RANGE_TYPES))}) AND e.\"end\" IS NOT NULL AND ({' OR '.join(texts)})")
        return (f"WITH ranges AS ({ranges}), "  # every thread's, as nvtx_frames takes them
                f"frame_list AS (SELECT row_number() OVER (ORDER BY start) - 1 AS idx, start AS start_ns, "
                f"\"end\" - start AS duration_ns FROM ranges) ")
    return None


def busy_sql(span: tuple[int, int], tables: tuple[str, ...]) -> str:
    """One statement giving busy_ns: how long any of the tables' GPU work ran inside the span (their intervals cut
    to it and merged where they overlap: islands of overlapping intervals, each counted once)."""
    a, b = span
    cut = " UNION ALL ".join(f'SELECT max(start, {a}) AS s, min("end", {b}) AS e FROM {table} '
                             f'WHERE "end" > {a} AND start < {b}' for table in tables)
    return (f"WITH cut AS ({cut}), ordered AS (SELECT s, e, max(e) OVER (ORDER BY s, e ROWS BETWEEN UNBOUNDED "
            f"PRECEDING AND 1 PRECEDING) AS reach FROM cut), islands AS (SELECT s, e, sum(CASE WHEN reach IS NULL "
            f"OR s > reach THEN 1 ELSE 0 END) OVER (ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island FROM ordered) "
            f"SELECT coalesce(sum(length), 0) AS busy_ns FROM (SELECT max(e) - min(s) AS length FROM islands "
            f"GROUP BY island)")
