"""Per-API duration summaries over the whole capture, equal to the matching `nsys stats` reports.

osrt = osrtsum, nvtx = nvtxsum, khr_debug = khrdebugsum, cuda_api = cudaapisum, memcpy = gpumemtimesum (cuda_kernels
= gpukernsum and kernel_functions = gpukernsum:base summed by name are cuda_work.py's) (2022.4 names; 2023+
call them osrt_sum, nvtx_sum, ...). OpenGL has no such report
in nsys 2022.4; opengl and opengl_gpu use the same statistics over OPENGL_API and OPENGL_WORKLOAD.
Each function returns a DataFrame with a ``name`` column and durations.STAT_COLUMNS, or None when the
export has no such data.
"""
from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd

from ..export.durations import summarize
from ..export.names import pid_sql, string_values
from ..export.trace import Trace

NVTX_RANGE_STYLES = {59: "PushPop", 60: "StartEnd", 70: "PushPop", 71: "StartEnd"}
NVTX_DOMAIN_CREATE = 75
KHR_DEBUG_PUSHPOP = 62
MEMCPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
                8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}
MEMSET = -1


def memop_name(kind: int) -> str:
    if kind == MEMSET:
        return "[CUDA memset]"
    unified = "Unified Memory " if kind >= 11 else ""
    return f"[CUDA {unified}memcpy {MEMCPY_KINDS[kind]}]"
_VERSION_SUFFIX = re.compile(r"_v\d{4}$")


def _named(conn: sqlite3.Connection, table: pd.DataFrame, id_column: str) -> pd.DataFrame:
    names = string_values(conn, table[id_column])
    table.insert(0, "name", [names.get(int(i), f"<string {int(i)}>") for i in table[id_column]])
    return table.drop(columns=[id_column])


def _by_name_id(trace: Trace, table: str) -> pd.DataFrame | None:
    rows = trace.events(table)
    if rows is None:
        return None
    return _named(trace.local_conn(), summarize({"nameId": rows["nameId"]}, rows["dur"]), "nameId")


def osrt(trace: Trace) -> pd.DataFrame | None:
    return _by_name_id(trace, "OSRT_API")


def opengl(trace: Trace) -> pd.DataFrame | None:
    return _by_name_id(trace, "OPENGL_API")


def opengl_gpu(trace: Trace) -> pd.DataFrame | None:
    return _by_name_id(trace, "OPENGL_WORKLOAD")


def cuda_api(trace: Trace) -> pd.DataFrame | None:
    table = _by_name_id(trace, "CUPTI_ACTIVITY_KIND_RUNTIME")
    if table is not None:  # cudaLaunchKernel_v7000 -> cudaLaunchKernel, as nsys stats shows it
        table["name"] = [_VERSION_SUFFIX.sub("", name) for name in table["name"]]
    return table


def memcpy(trace: Trace) -> pd.DataFrame | None:
    """Memory copies by kind plus memsets, with bytes moved; direction is the copy kind (HtoD, DtoH...)."""
    kinds, durations, sizes = [], [], []
    copies = trace.events("CUPTI_ACTIVITY_KIND_MEMCPY")
    if copies is not None:
        known = (copies["kind"] >= 0) & (copies["kind"] <= max(MEMCPY_KINDS))  # nsys leaves other kinds out
        kinds.append(copies["kind"][known])
        durations.append(copies["dur"][known])
        sizes.append(copies["bytes"][known])
    sets = trace.events("CUPTI_ACTIVITY_KIND_MEMSET")
    if sets is not None:
        kinds.append(np.full(len(sets["dur"]), MEMSET))
        durations.append(sets["dur"])
        sizes.append(sets["bytes"])
    if not durations or not sum(len(d) for d in durations):
        return None
    kind = np.concatenate(kinds)
    table = summarize({"kind": kind}, np.concatenate(durations))
    moved = pd.Series(np.concatenate(sizes)).groupby(kind).sum()
    table["bytes"] = [int(moved[k]) for k in table["kind"]]
    table["direction"] = ["memset" if k == MEMSET else MEMCPY_KINDS[int(k)] for k in table["kind"]]
    table.insert(0, "name", [memop_name(int(k)) for k in table["kind"]])
    return table.drop(columns=["kind"])


def nvtx(trace: Trace) -> pd.DataFrame | None:
    """NVTX ranges by "domain:name" and style; an open range ends at the last NVTX timestamp, as in nvtxsum."""
    conn, schema = trace.local_conn(), trace.schema
    if not schema.has("NVTX_EVENTS", "start", "end", "eventType", "globalTid"):
        return None
    styles = ",".join(str(t) for t in NVTX_RANGE_STYLES)
    has_domain = schema.has("NVTX_EVENTS", "domainId")

    def column(name: str, missing: str = "NULL") -> str:
        return name if schema.has("NVTX_EVENTS", name) else f"{missing} AS {name}"
    last = conn.execute('SELECT max(max(start), max(coalesce("end", start))) FROM NVTX_EVENTS').fetchone()[0]
    frame = pd.read_sql_query(
        f'SELECT coalesce("end", :last) - start AS dur, eventType, {column("textId")}, {column("text")},'
        f' {column("domainId", "0")}, {pid_sql()} AS pid FROM NVTX_EVENTS WHERE eventType IN ({styles})',
        conn, params={"last": last})
    if frame.empty:
        return None
    texts = string_values(conn, frame["textId"].dropna())
    frame["label"] = [t if pd.isna(i) else texts.get(int(i), t) for i, t in zip(frame["textId"], frame["text"])]
    domains = _nvtx_domains(conn) if has_domain else {}
    frame["name"] = [f"{domains[(d, p)]}:{label}" if (d, p) in domains else label
                     for d, p, label in zip(frame["domainId"], frame["pid"], frame["label"])]
    frame["style"] = frame["eventType"].map(NVTX_RANGE_STYLES)
    return _summarize_labels(frame, ["name", "style"])


def _nvtx_domains(conn: sqlite3.Connection) -> dict[tuple[int, int], str]:
    rows = conn.execute(f"SELECT domainId, {pid_sql()}, text FROM NVTX_EVENTS "
                        "WHERE eventType = ? AND text IS NOT NULL ORDER BY start", (NVTX_DOMAIN_CREATE,))
    domains: dict[tuple[int, int], str] = {}
    for domain, pid, text in rows:
        domains.setdefault((int(domain), int(pid)), text)
    return domains


def khr_debug(trace: Trace) -> pd.DataFrame | None:
    """KHR_debug push/pop groups by name (khrdebugsum), open ones ending at the last timestamp."""
    conn, schema = trace.local_conn(), trace.schema
    if not schema.has("KHR_DEBUG_EVENTS", "id", "start", "end", "eventClass", "textId"):
        return None
    last = conn.execute('SELECT max(max(start), max(coalesce("end", start))) FROM KHR_DEBUG_EVENTS').fetchone()[0]
    frame = pd.read_sql_query('SELECT coalesce(k."end", :last) - k.start AS dur, coalesce(s.value, k.id) AS name '
                              "FROM KHR_DEBUG_EVENTS AS k LEFT JOIN StringIds AS s ON s.id = k.textId "
                              "WHERE k.eventClass = :cls", conn, params={"last": last, "cls": KHR_DEBUG_PUSHPOP})
    table = _summarize_labels(frame.astype({"name": str}), ["name"])
    return None if table is None else table[table["total_ns"] > 0].reset_index(drop=True)


def _summarize_labels(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame | None:
    """Summarise a small frame grouped by text columns (names that are not StringIds)."""
    if frame.empty:
        return None
    factorized = {column: pd.factorize(frame[column]) for column in by}
    table = summarize({column: codes for column, (codes, _) in factorized.items()},
                      frame["dur"].to_numpy(dtype=np.int64))
    for column, (_, labels) in factorized.items():
        table[column] = [labels[i] for i in table[column]]
    return table
