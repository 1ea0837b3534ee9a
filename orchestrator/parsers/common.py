"""What every parser returns."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str

    def as_json(self) -> dict[str, object]:
        value: object = self.value if math.isfinite(self.value) else None  # JSON has no inf
        return {"value": value, "unit": self.unit}


@dataclass(frozen=True)
class Parsed:
    tool: str
    figures: dict[str, Figure] = field(default_factory=dict)
    failure: str | None = None
    details: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"tool": self.tool, "failure": self.failure, "details": dict(self.details),
                "figures": {name: figure.as_json() for name, figure in self.figures.items()}}


def number(text: str) -> float:
    """'12.5', 'inf', '-nan' -> float (what C's printf writes)."""
    return float(text.strip().lower().replace("-nan", "nan"))


def strip_prefix(line: str) -> str:
    """A line without the logger's '[date-time] [I] ' or '[TRT] ' prefixes."""
    rest = line.strip()
    while rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            break
        rest = rest[close + 1:].lstrip()
    return rest
