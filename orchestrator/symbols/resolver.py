"""Unresolved sampled addresses -> function names, per module, with a record of how each module went."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .elf import FunctionTable, read_build_id
from .index import SymbolFiles
from .load_base import infer_base


@dataclass
class ModuleSymbols:
    module: str
    file: Path | None = None
    build_id: str | None = None
    base: int | None = None
    table: FunctionTable | None = None
    named_frames: int = 0
    resolved: int = 0
    unresolved: int = 0
    why: str = ""

    def to_json(self) -> dict:
        return {"module": self.module, "file": None if self.file is None else str(self.file),
                "build_id": self.build_id, "load_address": None if self.base is None else hex(self.base),
                "named_frames": self.named_frames, "resolved": self.resolved, "unresolved": self.unresolved,
                "why": self.why}


class Resolver:
    """Resolves the addresses of one report; ``prepare`` each module with the frames nsys named in it."""

    def __init__(self, files: SymbolFiles) -> None:
        self.files = files
        self.modules: dict[str, ModuleSymbols] = {}

    def prepare(self, module: str, named: Iterable[tuple[str, int]]) -> ModuleSymbols:
        state = ModuleSymbols(module)
        self.modules[module] = state
        named = list(named)
        local = Path(module)
        state.build_id = read_build_id(local) if module.startswith("/") and local.is_file() else None
        candidates = self.files.candidates(module, state.build_id)
        if not candidates:
            state.why = "no file of its name or build id in the symbol folders"
            return state
        reasons = []
        for path in candidates:
            table = self.files.functions(path)
            if table is None or not table.starts:
                reasons.append(f"{path.name} has no function symbols")
                continue
            base, known = infer_base(table, named)
            if base is None:
                reasons.append(f"{path.name}: " + ("none of the module's named frames is in it, so its load "
                                                   "address is unknown" if not known else
                                                   "its named frames do not agree on one load address"))
                continue
            state.file, state.table, state.base, state.named_frames = path, table, base, known
            state.build_id = state.build_id or self.files.build_id(path)
            state.why = ""
            return state
        state.why = "; ".join(reasons)
        return state

    def resolve(self, module: str, address: int) -> str | None:
        state = self.modules.get(module)
        if state is None or state.table is None or state.base is None:
            if state is not None:
                state.unresolved += 1
            return None
        name = state.table.name_at(address - state.base)
        if name is None:
            state.unresolved += 1
        else:
            state.resolved += 1
        return name

    def report(self) -> list[dict]:
        return [state.to_json() for state in self.modules.values()]
