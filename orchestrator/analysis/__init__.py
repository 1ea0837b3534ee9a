"""From an nsys report to the answers users dig for by hand in the GUI.

``analyze_report(path)`` opens a .sqlite/.nsys-rep/.qdrep and returns its ``Summary`` (summary.json's
document). Its rooms, in the order the data flows: ``export/`` reads the export into arrays, ``intervals/`` holds the
interval algebra, ``analyzers/`` each answer one question (frames, API tables, GPU work, each thread's time by share,
the verdict), and ``summary.py`` assembles their answers into summary.json.
"""
from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..documents.summary import Summary
from ..errors import ReportError
from .export.memory import keep_freed_memory
from .export.report_input import open_report
from .export.selection import AnalysisOptions
from .export.trace import Trace

__all__ = ["AnalysisOptions", "analyze_report"]


# What malformed table contents make SQLite, numpy and pandas raise.
UNREADABLE = (sqlite3.Error, ValueError, TypeError, KeyError, IndexError, OverflowError, ZeroDivisionError)


def analyze_report(path: Path, options: AnalysisOptions | None = None, nsys_hint: str | None = None) -> Summary:
    keep_freed_memory()
    conn, schema, export = open_report(path, nsys_hint)
    trace = Trace(conn, schema, export)
    trace.start_reading()
    try:
        with _collector_paused():
            from .summary import analyze_trace  # pandas and the analyzers load while the first tables are read
            summary = analyze_trace(trace, options)
    except ReportError as exc:  # say which file, in one bounded line
        raise ReportError(f"{export}: {_bounded(exc.message)}", exc.hint) from None
    except UNREADABLE as exc:  # values no exporter writes: hostile or damaged, never a traceback
        raise ReportError(f"{export} holds values the analysis cannot read ({type(exc).__name__}: "
                          f"{_bounded(str(exc))})",
                          "export it again from the .nsys-rep with 'nsys export --type sqlite'") from None
    finally:
        conn.close()
    summary["capture"]["export"] = str(export)
    return Summary.from_json(summary)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection during one analysis: the imports and the tables' arrays would set it off
    dozens of times (about a tenth of the analysis's time) to find next to nothing; it runs again after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _bounded(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."

