"""The answers about one run: its summary, its frames, a span's statistics and its CPU hotspots. Each is a call into
the functions `analyze`, `report` and the page use, and each number carries its evidence: the SQL that recomputes it
from the run's export, or the document field it came from (``{"document": "summary.json", "field": ...}``).
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from ..analysis import AnalysisOptions
from ..analysis.analyzers.frames import first_steady_index
from ..analysis.analyzers.run_events import RunEvents
from ..analysis.analyzers.span_stats import NESTING_KINDS, SPAN_KINDS, chosen_rows, span_stats
from ..analysis.export.selection import parse_range
from ..documents.summary import Summary
from ..errors import UsageError
from ..figures.measured import run_flags
from ..figures.run_analysis import analyze_source
from ..targets.facts import board_kind
from .root import OpenRun, Root
from .sql import frame_list, self_sql, span_sql

SUMMARY = "summary.json"
SLOWEST = 5
CALL_KINDS = ("opengl", "osrt", "nvtx", "cuda_api")  # a frame's calls


def field(name: str, document: str = SUMMARY) -> dict[str, str]:
    return {"document": document, "field": name}


def span_of(run: OpenRun, window: str | None) -> tuple[int, int]:
    """A span: 'all', 'steady' (the steady frames), or START:END on the report's clock as --window takes it (a bare
    number is ns); none: the steady frames when the run has frames, else the whole capture (analyze's default)."""
    capture = run.summary.capture
    frames = run.summary.frames
    if window == "all" or (not window and (frames is None or frames.count < 2)):
        return capture.start_ns, capture.end_ns
    if not window or window == "steady":
        if frames is None or frames.count < 2:
            raise UsageError(f"{run.name} has no steady frames", "give a window as 'all' or START:END")
        first = first_steady_index(frames.count, frames.warmup.frames)
        return frames.frame_starts_ns[first], frames.frame_starts_ns[-1] + frames.per_frame_ns[-1]
    chosen = parse_range(window, (capture.start_ns, capture.end_ns))
    return chosen.start_ns, chosen.end_ns


def paged(offset: int, limit: int) -> None:
    """A page's offset and size, or a one-line error."""
    if offset < 0 or limit < 1:
        raise UsageError(f"offset {offset} and limit {limit}: a page starts at 0 or later and holds 1 or more",
                         "give offset >= 0 and limit >= 1")


def head(root: Root, run: OpenRun) -> dict[str, Any]:
    """What every answer about a run begins with: the run, and the export its SQL runs on."""
    export = run.export
    return {"run": run.name, "export": None if export is None else root.name_of(export)
            if root.holds(export.resolve()) else str(export),
            "summary_json": f"{run.name}/summary.json" if run.summary_from == "summary.json" else
            f"none in the folder: 'summary.json' fields are those 'orchestrate analyze {run.name} --json' prints"}


def summary_answer(root: Root, run: OpenRun) -> dict[str, Any]:
    """The verdict, the focus thread's shares, the frames' headline figures, next steps, validity, the board."""
    summary = run.summary
    verdict = summary.verdict
    attribution = summary.attribution
    answer = head(root, run)
    answer["unit"] = summary.unit
    answer["window"] = {**summary.window.as_json(), "evidence": field("window")}
    answer["verdict"] = None if verdict is None else {
        "kind": verdict.kind, "confidence": verdict.confidence, "summary": verdict.summary,
        "evidence": list(verdict.evidence), "source": field("verdict")}
    answer["shares"] = [] if attribution is None else [
        {"share": name, "ns": share.ns, "pct": share.pct, "calls": share.calls[:5],
         "evidence": field(f"attribution.shares.{name}.ns")}
        for name, share in attribution.shares.items() if share.ns]
    answer["focus_thread"] = attribution.thread if attribution is not None else None
    answer["frames"] = frames_headline(run)
    answer["next_steps"] = [{"why": step.why, "command": step.command} for step in summary.next_steps]
    answer["validity"] = validity(run)
    answer["board"] = board_state(run)
    return answer


def frames_headline(run: OpenRun) -> dict[str, Any] | None:
    frames = run.summary.frames
    if frames is None:
        return None
    steady = frames.steady
    first = first_steady_index(frames.count, frames.warmup.frames)
    listing = frame_list(frames.source, frames.kind, run.schema)
    found: dict[str, Any] = {
        "unit": frames.unit, "source": frames.source, "rule": frames.rule, "count": frames.count,
        "first_ns": frames.first_ns, "warmup": frames.warmup.frames, "steady_first": first,
        "steady": None if steady is None else steady.as_json(), "evidence": field("frames")}
    if listing is not None:  # each statement below runs after the WITH clause: with + sql
        found["evidence"] = {
            **field("frames"), "with": listing,
            "sql": {"count": "SELECT count(*) FROM frame_list",
                    "first_ns": "SELECT duration_ns FROM frame_list WHERE idx = 0",
                    "steady.mean_ns": f"SELECT avg(duration_ns) FROM frame_list WHERE idx >= {first}",
                    "steady.max_ns": f"SELECT max(duration_ns) FROM frame_list WHERE idx >= {first}",
                    "steady.min_ns": f"SELECT min(duration_ns) FROM frame_list WHERE idx >= {first}",
                    "steady.count": f"SELECT count(*) FROM frame_list WHERE idx >= {first}"}}
    return found


def validity(run: OpenRun) -> dict[str, Any]:
    document = run.document
    if document is None:
        return {"valid": None, "flags": [], "why": "a report alone: no run.json to tell how it was captured"}
    flags = run_flags(document)
    return {"valid": not flags and document.status == "ok", "status": document.status,
            "flags": [{"code": f.code, "what": f.what} for f in flags], "evidence": field("validity", "run.json")}


def board_state(run: OpenRun) -> dict[str, Any] | None:
    document = run.document
    if document is None:
        return None
    before, after = document.power_modes
    return {"target": document.target.name, "board_kind": board_kind(document.facts),
            "power_mode_before": before.to_wire(version=False) if before else None,
            "power_mode_after": after.to_wire(version=False) if after else None, "evidence": field("facts", "run.json")}


def frames_answer(root: Root, run: OpenRun, frame: int | None = None, slowest: int = SLOWEST) -> dict[str, Any]:
    """Frame statistics and the slowest steady frames; with ``frame``, that frame's own shares (the analysis of
    its span, as `analyze RUN --frame N` gives them) and its longest calls."""
    frames = run.summary.frames
    if frames is None:
        raise UsageError(f"{run.name} has no frames or iterations (no buffer swaps, no 'frame' NVTX range)",
                         "ask 'window' about a span of it instead")
    answer = head(root, run)
    answer["frames"] = frames_headline(run)
    durations = np.asarray(frames.per_frame_ns, dtype=np.int64)
    first = first_steady_index(frames.count, frames.warmup.frames)
    order = first + np.argsort(-durations[first:], kind="stable")[:max(0, slowest)]
    listing = frame_list(frames.source, frames.kind, run.schema)
    answer["slowest"] = [_frame_row(frames.frame_starts_ns, frames.per_frame_ns, int(i), listing) for i in order]
    if frame is not None:
        if not 0 <= frame < frames.count:
            raise UsageError(f"{frames.unit} {frame}: the run has {frames.unit}s 0 to {frames.count - 1}",
                             f"ask for a {frames.unit} between 0 and {frames.count - 1}")
        answer["frame"] = {**_frame_row(frames.frame_starts_ns, frames.per_frame_ns, frame, listing),
                           **one_frame(root, run, frame)}
    return answer


def _frame_row(starts: list[int], durations: list[int], index: int, listing: str | None) -> dict[str, Any]:
    """A frame's start and length; its SQL runs after the answer's frames.evidence.with."""
    row: dict[str, Any] = {"index": index, "start_ns": starts[index], "duration_ns": durations[index]}
    row["evidence"] = {"with": "frames.evidence.with",
                       "sql": f"SELECT start_ns, duration_ns FROM frame_list WHERE idx = {index}"} \
        if listing is not None else field(f"frames.per_frame_ns[{index}]")
    return row


def one_frame(root: Root, run: OpenRun, index: int) -> dict[str, Any]:
    """One frame's shares of the focus thread (the analysis with --frame), and its calls heaviest first; of a run
    folder that kept no report, what summary.json tells of the frame when the analysis told its story."""
    if run.export is None:
        told = run.summary.attribution
        story = told.story(index) if told else None
        return {"thread": told.thread if told else None,
                "shares": [] if story is None else [{"share": k, "ns": ns} for k, ns in story.shares.items() if ns],
                "shares_from": field(f"attribution.stories (the story of {run.summary.unit} {index})") if story else
                f"{run.name} holds no report: a {run.summary.unit}'s own shares need it (summary.json tells only the "
                "slowest, the median and each share's heaviest)", "calls": []}
    options = replace(AnalysisOptions(), frame=index)
    summary: Summary = analyze_source(run.source, options)
    attribution = summary.attribution
    span = (summary.window.start_ns, summary.window.end_ns)
    shares = [] if attribution is None else [
        {"share": name, "ns": share.ns, "pct": share.pct, "calls": share.calls[:5]}
        for name, share in attribution.shares.items() if share.ns]
    thread = attribution.thread if attribution is not None else None
    tid = _tid_in(thread)
    rows = chosen_rows(run.events, tid, CALL_KINDS) if tid else []
    calls = window_rows(run, span, rows, None, 0, 10)["rows"] if rows else []
    return {"thread": thread, "shares": shares, "shares_from": f"orchestrate analyze {run.name} --frame {index}",
            "calls": calls}


def _tid_in(thread: str | None) -> str | None:
    """'es2gears (4242)' or 'thread (4242)' -> '4242': the thread's id, which names it alone."""
    found = re.search(r"\((\d+)\)\s*$", thread or "")
    return found.group(1) if found else None


def window_answer(root: Root, run: OpenRun, window: str | None, thread: str | None = None, name: str | None = None,
                  kinds: list[str] | None = None, offset: int = 0, limit: int = 50) -> dict[str, Any]:
    """Per name, the events of the span (``window``) on the threads and GPU lanes holding ``thread``: count,
    total, self, mean, min, max, as the page's range selection shows them; each row with its SQL."""
    span = span_of(run, window)
    paged(offset, limit)
    unknown = sorted(set(kinds or ()) - set(SPAN_KINDS))
    if unknown:
        raise UsageError(f"unknown kind {unknown[0]}", f"give kinds among {', '.join(SPAN_KINDS)}")
    rows = chosen_rows(run.events, thread, kinds or SPAN_KINDS)
    if thread and not rows:
        raise UsageError(f"no thread or GPU lane holds '{thread}'", "give a thread's name or id as the page shows it")
    answer = head(root, run)
    answer["window"] = {"start_ns": span[0], "end_ns": span[1]}
    answer.update(window_rows(run, span, rows, name, offset, limit))
    return answer


def nesting_of(events: RunEvents, keys: tuple[int, ...]) -> tuple[str, ...]:
    """The kinds of calls and ranges the threads ``keys`` have rows of."""
    wanted = set(keys)
    return tuple(kind for kind in NESTING_KINDS
                 if any(row.kind == kind and row.key in wanted for row in events.rows))


def window_rows(run: OpenRun, span: tuple[int, int], rows: list[int], name: str | None, offset: int,
                limit: int) -> dict[str, Any]:
    stats = span_stats(run.events, span, rows, name, run.selves)
    shown = stats[offset:offset + limit]
    found = []
    for stat in shown:
        row = stat.as_json()
        sql = span_sql(stat.kind, stat.name, span, stat.keys, run.schema)
        own = self_sql(stat.kind, stat.name, span, stat.keys, run.schema, nesting_of(run.events, stat.keys))
        row["evidence"] = {"sql": sql, **({"self_sql": own} if own else {})}
        found.append(row)
    return {"rows": found, "total_rows": len(stats), "offset": offset,
            "after_this_page": max(0, len(stats) - offset - len(shown))}
