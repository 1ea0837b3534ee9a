"""study.html: the seeds' own tables (rows = one variable, columns = the combinations of the others,
cell = median with its interval), a chart per metric, every variant side by side, the verdicts, and a
link to every run's report. Pure: study.json in, the page's typed context out."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..documents.shares import SHARE_TITLES_OF_RUNS, SHARES
from ..documents.study import StudyCell, StudyDocument
from ..figures.run_metrics import SHARE_PREFIX, share_metric
from ..report import charts
from ..report.charts import Chart, Interval
from ..report.render import Fact, render, write_page

FIRST_METRICS = ("steady_mean_ms", "first_frame_ms", "steady_p90_ms", "frames_per_s", "cores_busy")
TITLES = {"steady_mean_ms": "steady mean per {unit}", "first_frame_ms": "first {unit} (first inference)",
          "steady_p90_ms": "steady p90 per {unit}", "frames_per_s": "{unit}s per second", "cores_busy": "cores busy",
          "iteration_mean_ms": "steady mean per iteration"}  # {unit}: "frame", or "iteration" (study_unit)


@dataclass(frozen=True)
class TableCell:
    text: str
    interval: str
    state: str  # "ok", "failed" or "missing"
    tip: str = ""


@dataclass(frozen=True)
class MetricTable:
    key: str
    title: str
    unit: str
    row_variable: str
    columns: list[str]
    rows: list[tuple[str, list[TableCell]]]


@dataclass(frozen=True)
class Variant:
    label: str
    status: str
    reason: str | None
    cores_busy: str
    top_function: str | None
    verdict: str | None
    runs: list[tuple[str, str]]  # (run folder, href of its report)
    notes: list[str]


@dataclass(frozen=True)
class Verdict:
    metric: str
    base: str
    other: str
    verdict: str
    change: str
    why: str


@dataclass(frozen=True)
class SharesTable:
    """Each cell's frame time by what its app waits for: a column per share (median ms per frame)."""
    titles: list[str]
    keys: list[str]
    rows: list[tuple[str, list[TableCell]]]


@dataclass(frozen=True)
class StudyPage:
    title: str
    description: str
    facts: list[Fact]
    tables: list[MetricTable]
    charts: list[tuple[str, Chart]]
    variants: list[Variant]
    verdicts: list[Verdict]
    interval: str
    shares: SharesTable | None = None
    unit: str = "frame"  # what the cells' frames are: "frame", or "iteration" (CUDA or TensorRT runs')


def study_unit(cells: list[StudyCell]) -> str:
    """"iteration" when every cell with steady frames counts iterations (a CUDA or TensorRT app's), else "frame"."""
    timed = [cell for cell in cells if cell.metric("steady_mean_ms") is not None]
    return "iteration" if timed and all(cell.metric("iteration_mean_ms") is not None for cell in timed) else "frame"


def metric_keys(cells: list[StudyCell]) -> list[str]:
    present = {key for cell in cells for key in cell.metrics or {} if not key.startswith(SHARE_PREFIX)}
    return [k for k in FIRST_METRICS if k in present] + sorted(k for k in present if k not in FIRST_METRICS)


def layout(document: StudyDocument) -> tuple[str, list[str], list[str], dict[tuple[str, str], StudyCell]]:
    """(row variable, row values, column labels, (row, column) -> cell): the first variable down the side,
    the combinations of the others across."""
    variables = document.variables
    by_place: dict[tuple[str, str], StudyCell] = {}
    rows: list[str] = []
    columns: list[str] = []
    for cell in document.cells:
        values = cell.variables
        row = f"{variables[0]}={values[variables[0]]}" if variables else "all"
        rest = ", ".join(f"{k}={values[k]}" for k in variables[1:])
        column = rest or ("value" if variables else "the cell")
        if row not in rows:
            rows.append(row)
        if column not in columns:
            columns.append(column)
        by_place[(row, column)] = cell
    return (variables[0] if variables else "cell"), rows, columns, by_place


def study_page(document: StudyDocument) -> StudyPage:
    row_variable, rows, columns, by_place = layout(document)
    tables, drawn, counted = [], [], study_unit(document.cells)
    for key in metric_keys(document.cells):
        unit = next(figures.unit for c in document.cells if (figures := c.metric(key)) is not None)
        table_rows = []
        values: dict[tuple[str, str], Interval | str] = {}
        for row in rows:
            found = []
            for column in columns:
                cell = by_place.get((row, column))
                found.append(_table_cell(cell, key))
                if cell is None:
                    continue
                metric = cell.metric(key)
                if metric is not None:
                    values[(row, column)] = Interval(metric.median, *metric.ci95)
                elif cell.status == "failed":
                    values[(row, column)] = cell.reason or "failed"
            table_rows.append((row, found))
        title = TITLES[key].format(unit=counted) if key in TITLES else \
            key.replace("app.", "the app's own ").replace("_", " ")
        tables.append(MetricTable(key, title, unit, row_variable, columns, table_rows))
        drawn.append((f"{title} ({unit})", charts.grouped_bars(f"study-{key}", rows, columns, values, unit)))
    labels = {c.index: c.label or "the cell" for c in document.cells}
    return StudyPage(
        title=f"study {document.name}", description=document.description,
        facts=[Fact("target", document.target),
               Fact("repeat", f"{document.repeat} runs per cell"), Fact("status", _status(document)),
               Fact("cells", str(len(document.cells))), Fact("started", document.started),
               Fact("study file", document.file)],
        tables=tables, charts=drawn, variants=[_variant(c) for c in document.cells],
        verdicts=[Verdict(v.metric, labels[v.base], labels[v.other], v.verdict, f"{v.relative:+.1%}", v.reason)
                  for v in document.comparisons],
        interval=document.interval, shares=shares_table(document.cells), unit=counted)


def shares_table(cells: list[StudyCell]) -> SharesTable | None:
    present = [name for name in SHARES if any((found := c.metric(share_metric(name))) is not None and found.median
                                              for c in cells)]
    if not present:
        return None
    rows = [(cell.label or "the cell", [_table_cell(cell, share_metric(name)) for name in present]) for cell in cells]
    return SharesTable([SHARE_TITLES_OF_RUNS[name] for name in present], present, rows)


def _status(document: StudyDocument) -> str:
    failed = len(document.failed_cells)
    text = {"complete": "complete", "interrupted": "interrupted (run it again to go on)"}.get(
        document.status, document.status)
    return text + (f", {failed} cell(s) failed" if failed else "")


def _table_cell(cell: StudyCell | None, key: str) -> TableCell:
    if cell is None:
        return TableCell("–", "", "missing", "not in the study (excluded)")
    metric = cell.metric(key)
    if metric is not None:
        low, high = metric.ci95
        return TableCell(f"{metric.median:.4g}", f"{low:.4g}–{high:.4g}", "ok",
                         f"{len(metric.values)} runs: " + ", ".join(f"{v:.4g}" for v in metric.values))
    if cell.status == "failed":
        return TableCell("failed", "", "failed", cell.reason or "")
    return TableCell("–", "", "missing", "no such figure in these runs")


def _variant(cell: StudyCell) -> Variant:
    busy = cell.metric("cores_busy")
    top = cell.top_function
    return Variant(cell.label or "the cell", cell.status, cell.reason,
                   f"{busy.median:.2f}" if busy else "–", charts.shorten(top, 90) if top else None,
                   cell.verdict, [(name, f"{name}/report.html") for name in cell.runs], cell.notes)


def write_study_page(document: StudyDocument, folder: Path) -> Path:
    page = study_page(document)
    return write_page(render("study.html", page.title, page=page), folder / "study.html")
