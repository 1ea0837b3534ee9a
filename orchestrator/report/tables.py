"""Sortable tables of a report: summary.json's rows with display text and the raw value to sort by.

Each cell keeps the exact number of summary.json (``value``) beside what is shown (``text``): the page
sorts by the first, people read the second.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..documents.record import Record
from ..documents.summary_sections import ApiRow, FunctionHotspot, GpuWork, ModuleHotspot, NvtxGpuRow, ThreadUse
from .units import format_bytes, format_ns, format_pct

SHOWN_ROWS = 25  # rows drawn at first; the rest wait behind "show all"

API_TITLES = {"opengl": "OpenGL API", "opengl_gpu": "OpenGL GPU workload", "osrt": "OS runtime",
              "nvtx": "NVTX ranges", "khr_debug": "KHR_debug groups", "cuda_api": "CUDA API",
              "kernel_functions": "CUDA kernels by function", "cuda_kernels": "CUDA kernel launch shapes",
              "memcpy": "CUDA memory operations"}
API_HINTS = {"opengl": "profile with --trace including opengl (apps that load GL through libepoxy are not seen)",
             "opengl_gpu": "needs the opengl trace on a GPU whose driver nsys reads",
             "osrt": "profile with --trace including osrt",
             "nvtx": "the app marks no NVTX ranges (or nvtx is not traced)",
             "khr_debug": "the app pushes no KHR_debug groups",
             "cuda_api": "no CUDA calls traced (profile with --trace including cuda on a CUDA app)",
             "kernel_functions": "no CUDA kernels ran while tracing",
             "cuda_kernels": "no CUDA kernels ran while tracing",
             "memcpy": "no CUDA memory copies or sets were traced"}
# summary.json key -> (heading, kind of value)
COLUMNS = {"name": ("name", "text"), "style": ("style", "text"), "grid": ("grid", "text"),
           "block": ("block", "text"), "direction": ("direction", "text"), "calls": ("calls", "count"),
           "pct": ("time %", "pct"), "total_ns": ("total", "ns"), "avg_ns": ("avg", "ns"),
           "med_ns": ("median", "ns"), "min_ns": ("min", "ns"), "max_ns": ("max", "ns"), "std_ns": ("std dev", "ns"),
           "bytes": ("bytes", "bytes"), "symbol": ("function", "text"), "module": ("module", "path"),
           "samples": ("samples", "count"), "tid": ("tid", "id"), "cpu_pct": ("CPU %", "pct"),
           "cpu_ns": ("CPU time", "ns"), "top_symbol": ("hottest function", "text"), "path": ("file", "text"),
           "function": ("function", "text"), "shapes": ("launch shapes", "count"), "ranges": ("ranges", "count"),
           "gpu_ops": ("GPU operations", "count"), "gpu_ns": ("GPU time", "ns"), "gpu_avg_ns": ("GPU avg", "ns"),
           "gpu_med_ns": ("GPU median", "ns"), "range_ns": ("range time (CPU)", "ns"), "device": ("device", "id"),
           "context": ("context", "id"), "stream": ("stream", "id"), "kernels": ("kernels", "count"),
           "kernels_ns": ("kernel time", "ns"), "copies": ("copies", "count"), "copies_ns": ("copy time", "ns"),
           "sets": ("sets", "count"), "sets_ns": ("set time", "ns"), "busy_ns": ("busy", "ns"),
           "busy_pct": ("busy %", "pct")}
API_ORDER = ("name", "function", "style", "grid", "block", "shapes", "direction", "calls", "pct", "total_ns", "avg_ns",
             "med_ns", "min_ns",
             "max_ns", "std_ns", "bytes")


@dataclass(frozen=True)
class Cell:
    text: str
    value: str  # what the table sorts by: the raw number, or the text itself


@dataclass(frozen=True)
class Column:
    key: str
    heading: str
    numeric: bool


@dataclass(frozen=True)
class Table:
    key: str
    title: str
    columns: list[Column]
    rows: list[list[Cell]]
    shown: int  # rows drawn at first

    @property
    def hidden_rows(self) -> list[list[Cell]]:
        return self.rows[self.shown:]


def cell(kind: str, value) -> Cell:
    if value is None:
        return Cell("–", "")
    if kind == "ns":
        return Cell(format_ns(value), repr(value))
    if kind == "pct":
        return Cell(format_pct(value), repr(value))
    if kind == "bytes":
        return Cell(format_bytes(value), repr(value))
    if kind == "path":  # the file name is what people recognise; the full path sorts and stays in data-v
        return Cell(str(value).rsplit("/", 1)[-1], str(value))
    if kind == "id":
        return Cell(str(value), repr(value))
    if kind == "count":
        return Cell(f"{value:,}", repr(value))
    return Cell(str(value), str(value))


def table(key: str, title: str, entries: list[dict], order: tuple[str, ...], shown: int = SHOWN_ROWS) -> Table:
    keys = [k for k in order if entries and k in entries[0]]
    columns = [Column(k, COLUMNS[k][0], COLUMNS[k][1] not in ("text", "path")) for k in keys]
    rows = [[cell(COLUMNS[k][1], entry.get(k)) for k in keys] for entry in entries]
    return Table(key, title, columns, rows, min(shown, len(rows)))


def api_table(key: str, entries: Sequence[ApiRow]) -> Table:
    return table(key, API_TITLES[key], _as_json(entries), API_ORDER)


def nvtx_gpu_table(entries: Sequence[NvtxGpuRow]) -> Table:
    """GPU time per NVTX range, as a tree: a range's name follows a mark per range around it."""
    rows = [{**row.as_json(), "name": "› " * row.depth + row.name} for row in entries]
    return table("nvtx_gpu", "GPU time per NVTX range (through the CUDA or OpenGL calls inside each)", rows,
                 ("name", "ranges", "gpu_ops", "gpu_ns", "gpu_avg_ns", "gpu_med_ns", "range_ns"))


def gpu_streams_table(work: GpuWork) -> Table:
    """The CUDA GPU's work over the window per device, context and stream, the busiest first."""
    title = (f"CUDA GPU busy {format_pct(work.busy_pct)} of the window ({format_ns(work.busy_ns)}): kernels "
             f"{format_ns(work.kernels_ns)}, copies {format_ns(work.copies_ns)}, sets {format_ns(work.sets_ns)}; "
             "per device, context and stream")
    return table("gpu_streams", title, _as_json(work.streams),
                 ("device", "context", "stream", "busy_pct", "busy_ns", "kernels", "kernels_ns", "copies", "copies_ns",
                  "sets", "sets_ns"))


def threads_table(entries: Sequence[ThreadUse]) -> Table:
    return table("threads", "Threads", _as_json(entries), ("name", "tid", "cpu_pct", "cpu_ns", "top_symbol"))


def hotspot_table(key: str, title: str, entries: Sequence[FunctionHotspot]) -> Table:
    return table(key, title, _as_json(entries), ("symbol", "samples", "pct", "module"))


def modules_table(entries: Sequence[ModuleHotspot]) -> Table:
    return table("hotspots_modules", "Self time by module", _as_json(entries), ("module", "samples", "pct", "path"))


def _as_json(rows: Sequence[Record]) -> list[dict]:
    """The rows as summary.json holds them: a table shows the columns its rows have."""
    return [row.as_json() for row in rows]
