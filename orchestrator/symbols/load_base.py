"""Where a module was loaded, from the report alone: the frames nsys did name in it.

Each named frame (function name, sampled address) pins the load address to the addresses that put the
sample inside that function's extent in the file; shared objects and position-independent executables
load at a page boundary, so each frame leaves a few page-aligned candidates. The load address is the one
candidate every named frame agrees on; none or several is no answer.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .elf import FunctionTable

PAGE = 4096


def candidate_bases(table: FunctionTable, name: str, address: int) -> set[int]:
    bases = set()
    for start, size in table.extents(name):
        first = ((address - start - size) // PAGE) * PAGE
        for base in range(first, address - start + 1, PAGE):
            if 0 <= address - base - start <= size and base >= 0:
                bases.add(base)
    return bases


def infer_base(table: FunctionTable, named: Iterable[tuple[str, int]]) -> tuple[int | None, int]:
    """(the load address every named frame agrees on, or None; how many named frames the file knows)."""
    votes: Counter[int] = Counter()
    known = 0
    for name, address in set(named):
        bases = candidate_bases(table, name, address)
        if bases:
            known += 1
            votes.update(bases)
    if not known:
        return None, 0
    agreed = [base for base, count in votes.items() if count == known]
    return (agreed[0] if len(agreed) == 1 else None), known
