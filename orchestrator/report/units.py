"""Numbers as people read them: times in the unit that suits them, shares as percentages."""
from __future__ import annotations


def format_ns(ns: float | int | None) -> str:
    if ns is None:
        return "–"
    value = float(ns)
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.{_digits(value / size)}f} {unit}"
    return f"{value:.0f} ns"


def format_ms(ns: float | int | None) -> str:
    """Frame times in ms, as the seeds' tables give them; below 0.1 ms (the GPU's time per frame of a light app)
    in the unit that suits them, so that no figure reads 0.00 ms."""
    if ns is None:
        return "–"
    return f"{float(ns) / 1e6:.2f} ms" if abs(float(ns)) >= 100_000 or not ns else format_ns(ns)


def format_pct(pct: float | None) -> str:
    return "–" if pct is None else f"{pct:.1f} %"


def format_bytes(size: float | int | None) -> str:
    if size is None:
        return "–"
    value = float(size)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _digits(value: float) -> int:
    return 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
