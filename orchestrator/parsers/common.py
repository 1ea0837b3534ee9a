"""What every parser returns."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str

    def as_json(self) -> dict[str, object]:
        value: object = self.value if math.isfinite(self.value) else None  # JSON has no inf
        return {"value": value, "unit": self.unit}


@dataclass(frozen=True)
class Record:
    """One of the several things a log holds in turn (a timing report, a run, a step): its label ("report 3",
    "run 2: threads=4") and its own figures."""
    label: str
    figures: dict[str, Figure]

    def as_json(self) -> dict[str, object]:
        return {"label": self.label, "figures": {name: figure.as_json() for name, figure in self.figures.items()}}


@dataclass(frozen=True)
class Parsed:
    """figures: the log's summary (for a log of several records, the first's and the steady ones' beside each
    other); records: each record's own figures, in the order printed; from_records: the summary's figures worked
    out from the records (a mean of them, a copy of the last run's), not read from a line of their own."""
    tool: str
    figures: dict[str, Figure] = field(default_factory=dict)
    failure: str | None = None
    details: dict[str, str] = field(default_factory=dict)
    records: tuple[Record, ...] = ()
    from_records: frozenset[str] = frozenset()

    def as_json(self) -> dict[str, object]:
        return {"tool": self.tool, "failure": self.failure, "details": dict(self.details),
                "figures": {name: figure.as_json() for name, figure in self.figures.items()},
                "records": [record.as_json() for record in self.records],
                "from_records": sorted(self.from_records)}


def number(text: str) -> float:
    """'12.5', 'inf', '-nan' -> float (what C's printf writes)."""
    return float(text.strip().lower().replace("-nan", "nan"))


def strip_prefix(line: str) -> str:
    """A line without the logger's '[date-time] [I] ' or '[TRT] ' prefixes, also when the first of them is cut
    ('26:35] [I] ...': a log copied from its middle) or the last is glued to the text ('[I]Average ...')."""
    rest = line.strip()
    cut = re.match(r"^[^\s\[\]]*\]\s*", rest)
    if cut:
        rest = rest[cut.end():]
    while rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            break
        rest = rest[close + 1:].lstrip()
    return rest
