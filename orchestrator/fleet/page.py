"""fleet.html: every board's recap line, then boards x apps (or study cells) grouped by board kind: the
frame time with its interval, the verdict and the validity flags, a link to each report. Pure:
fleet.json in, the page's typed context out."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..documents.fleet import BoardSummary, FleetBoard, FleetCell, FleetDocument
from ..report import charts
from ..report.charts import Chart, Interval
from ..report.render import Fact, render, write_page


@dataclass(frozen=True)
class RecapRow:
    target: str
    status: str
    reason: str
    kind: str
    software: str
    seconds: str
    folder: str | None
    doubts: list[str]


@dataclass(frozen=True)
class GridCell:
    text: str
    interval: str
    state: str      # "ok", "failed", "flagged" or "missing"
    verdict: str
    flags: list[str]
    href: str | None
    energy: str = ""


@dataclass(frozen=True)
class KindGroup:
    kind: str
    columns: list[str]
    rows: list[tuple[str, list[GridCell]]]
    chart: Chart | None


@dataclass(frozen=True)
class FleetPage:
    title: str
    facts: list[Fact]
    counts: dict[str, int]
    recap: list[RecapRow]
    groups: list[KindGroup]
    interval: str


def _software(board: BoardSummary) -> str:
    parts = [f"L4T {board.l4t}" if board.l4t else None, f"JetPack {board.jetpack}" if board.jetpack else None,
             board.power_mode, f"nsys {board.nsys}" if board.nsys else None]
    return ", ".join(p for p in parts if p) or "–"


def _cell(found: FleetCell | None) -> GridCell:
    if found is None:
        return GridCell("–", "", "missing", "", [], None)
    frame = found.frame_ms
    flags = [flag.what for flag in found.flags]
    failed = found.status not in ("ok", None)
    if frame and frame.median is not None:
        low, high = frame.low, frame.high
        interval = f"{low:.4g}–{high:.4g}" if low is not None and high is not None else ""
        energy = f"{found.energy_mj:.4g} mJ per frame" if found.energy_mj is not None else ""
        return GridCell(f"{frame.median:.4g} ms", interval, "flagged" if flags else "ok",
                        found.verdict or "", flags, found.report, energy)
    return GridCell("failed" if failed else "no frames", "", "failed" if failed else "missing",
                    found.reason or found.verdict or "", flags, found.report)


def fleet_page(document: FleetDocument) -> FleetPage:
    boards = document.boards
    recap = [RecapRow(b.target, b.status, b.reason or "", b.board.kind or "–",
                      _software(b.board), f"{b.seconds:.0f} s", b.folder,
                      list(dict.fromkeys(f.what for c in b.cells for f in c.flags)))
             for b in boards]
    by_kind: dict[str, list[FleetBoard]] = {}
    for board in boards:
        kind = board.board.kind if board.board.fingerprint else "kind unknown (not reached)"
        by_kind.setdefault(kind, []).append(board)
    groups: list[KindGroup] = []
    interval = ""
    for kind, members in sorted(by_kind.items()):
        columns = list(dict.fromkeys(c.label for b in members for c in b.cells))
        rows = []
        values: dict[tuple[str, str], Interval | str] = {}
        for board in members:
            mine = {c.label: c for c in board.cells}
            rows.append((board.target, [_cell(mine.get(label)) for label in columns]))
            for label, found in mine.items():
                interval = interval or found.interval
                frame = found.frame_ms
                if frame and frame.median is not None and frame.low is not None and frame.high is not None:
                    values[(board.target, label)] = Interval(frame.median, frame.low, frame.high)
                elif found.status not in ("ok", None):
                    values[(board.target, label)] = found.reason or "failed"
        measured = any(isinstance(v, Interval) for v in values.values())
        drawn = charts.grouped_bars(f"fleet-{len(groups)}", [b.target for b in members], columns,
                                    values, "ms", interval or "interval") if measured else None
        groups.append(KindGroup(kind, columns, rows, drawn))
    return FleetPage(
        title=f"fleet: {document.what} on {len(boards)} board(s)",
        facts=[Fact("ran", f"{document.kind} {document.what}"),
               Fact("limit", document.limit), Fact("inventory", document.inventory),
               Fact("forks", str(document.forks)), Fact("status", document.status),
               Fact("started", document.started), Fact("finished", document.finished or "")],
        counts={k: int(v) for k, v in document.recap.items()}, recap=recap, groups=groups, interval=interval)


def write_fleet_page(document: FleetDocument, folder: Path) -> Path:
    page = fleet_page(document)
    return write_page(render("fleet.html", page.title, page=page), folder / "fleet.html")
