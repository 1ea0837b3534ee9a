"""The report page's part that draws the board during the capture (summary.json's "board" and "energy", or a
run without nsys's samples): a chart per figure the board gave, and the energy per frame. Pure."""
from __future__ import annotations

from dataclasses import dataclass

from ..documents.summary import Summary
from . import charts
from .charts import Chart
from .render import Fact


@dataclass(frozen=True)
class BoardSection:
    """The board during the capture: its figures drawn under the frame chart, and the energy per frame."""
    source: str
    charts: list[tuple[str, Chart]]
    energy: list[Fact]


# what the report draws of the board's samples, in this order: (series key, title, unit)
BOARD_LINES = (("cpu_mhz", "CPU clock (the highest of the online cores)", "MHz"),
               ("cpu_load_pct", "CPU load (mean of the online cores)", "%"), ("gpu_mhz", "GPU clock", "MHz"),
               ("gpu_pct", "GPU load", "%"), ("temp_c", "hottest zone", "°C"), ("power_mw", "board power", "mW"))


def board_part(summary: Summary) -> BoardSection | None:
    board, drawn, capture = summary.board, summary.board_series_ns, summary.capture
    span = (capture.start_ns, capture.end_ns)
    lines = [(f"{title} ({unit})", charts.board_line(f"board-{key}", drawn[key], unit, span))
             for key, title, unit in BOARD_LINES if drawn.get(key)]
    if not lines or board is None:
        return None
    energy = summary.energy
    facts = [Fact("energy per frame (median of the steady frames)", f"{energy.median_mj:.4g} mJ"),
             Fact("mean power", f"{energy.mean_power_mw:.0f} mW on {energy.rail}"),
             Fact("frames measured", str(energy.frames))] if energy and energy.median_mj is not None else []
    return BoardSection(f"{board.samples} samples from {board.source}", lines, facts)
