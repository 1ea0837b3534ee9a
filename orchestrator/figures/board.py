"""What a run's board samples add to its analysis: the series the report draws on the report's own clock,
and the energy of each steady frame. Pure over the samples and summary.json's figures."""
from __future__ import annotations

from statistics import median
from typing import Any

import numpy as np

from ..analysis.analyzers.energy import energy_per_frame_mj
from ..analysis.analyzers.frames import first_steady_index
from ..documents.summary import warmup_of
from ..documents.summary_sections import BoardSeries, Energy, SummaryFrames
from .board_samples import series, total_power_mw


def board_section(samples: list[dict[str, Any]], source: str | None, utc_epoch_ns: int | None) -> BoardSeries | None:
    """{'source', 'samples', 'series': {metric: [[report ns, value], ...]}} (times on the report's clock when
    the export says when its time 0 was, else seconds from the first sample under 'series_s')."""
    if not samples:
        return None
    drawn = series(samples)
    section: dict[str, Any] = {"source": source, "samples": len(samples)}
    if utc_epoch_ns is not None:
        offset_s = samples[0]["t"] - utc_epoch_ns / 1e9
        section["series_ns"] = {key: [[int(round((at + offset_s) * 1e9)), value] for at, value in points]
                                for key, points in drawn.items()}
    else:
        section["series_s"] = {key: [[at, value] for at, value in points] for key, points in drawn.items()}
    return BoardSeries.from_wire(section)


def energy_section(samples: list[dict[str, Any]], frames: SummaryFrames | None,
                   utc_epoch_ns: int | None) -> Energy | None:
    """Energy of each steady frame (mJ) and their median, where the board reports power and the export
    places its frames in time."""
    if not frames or utc_epoch_ns is None:
        return None
    powered: list[tuple[float, float]] = []
    rail = ""
    for sample in samples:
        found = total_power_mw(sample)
        if found is not None:
            rail = found[0]
            powered.append((sample["t"], found[1]))
    if len(powered) < 2:
        return None
    per_frame = np.asarray(frames.per_frame_ns, dtype=np.float64)
    starts = np.asarray(frames.frame_starts_ns, dtype=np.float64)
    if not len(per_frame) or len(starts) != len(per_frame):
        return None
    first = first_steady_index(len(per_frame), warmup_of(frames))
    # on a clock that starts at the first sample: seconds since 1970 in a float lose a microsecond or so
    t0_ns = int(round(powered[0][0] * 1e9))
    begin = (utc_epoch_ns - t0_ns + starts[first:]) / 1e9
    energy = energy_per_frame_mj([round(t - powered[0][0], 6) for t, _ in powered], [mw for _, mw in powered],
                                 begin, begin + per_frame[first:] / 1e9)
    measured = [e for e in energy if e is not None]
    if not measured:
        return None
    return Energy(rail=rail, frames=len(measured), median_mj=round(median(measured), 4),
                  mean_power_mw=round(sum(mw for _, mw in powered) / len(powered), 1), per_frame_mj=energy)
