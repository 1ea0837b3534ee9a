"""The symbol folders given with --symbols: every ELF file under them, by build id and by file name.

Function tables are cached per build id under the cache folder, so a library is read once however many
reports name it.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from elftools.common.exceptions import ELFError

from ..errors import OrchestratorError, UsageError
from ..files import write_text
from .elf import FunctionTable, is_elf, read_build_id, read_functions

DEBUG_SUFFIX = ".debug"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "orchestrate" / "symbols"


class SymbolFiles:
    def __init__(self, dirs: list[Path], cache: Path | None = None) -> None:
        self.by_build_id: dict[str, Path] = {}
        self.by_name: dict[str, list[Path]] = defaultdict(list)
        self.cache = cache or default_cache()
        self._tables: dict[Path, FunctionTable | None] = {}
        self._build_ids: dict[Path, str | None] = {}
        for folder in dirs:
            if not folder.is_dir():
                raise UsageError(f"--symbols {folder}: no such folder",
                                 "give a folder holding unstripped copies or .debug files of the board's libraries")
            for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p)):
                build_id = self._build_ids[path] = read_build_id(path)
                if build_id and build_id not in self.by_build_id:
                    self.by_build_id[build_id] = path
                name = path.name[:-len(DEBUG_SUFFIX)] if path.name.endswith(DEBUG_SUFFIX) else path.name
                self.by_name[name].append(path)

    def build_id(self, path: Path) -> str | None:
        """The file's build id: read when the folders were indexed, else now."""
        if path not in self._build_ids:
            self._build_ids[path] = read_build_id(path)
        return self._build_ids[path]

    def candidates(self, module: str, build_id: str | None) -> list[Path]:
        """Files that may hold the module's symbols: the one with its build id first, then those of its name."""
        found = self.by_build_id.get(build_id) if build_id else None
        named = [path for path in self.by_name.get(os.path.basename(module), []) if path != found]
        return ([found] if found else []) + named

    def functions(self, path: Path) -> FunctionTable | None:
        """The file's function table, from the cache when its build id was read before."""
        if path in self._tables:
            return self._tables[path]
        build_id = self.build_id(path)
        cached = self.cache / f"{build_id}.json" if build_id else None
        table = None
        if cached is not None and cached.is_file():
            try:
                table = FunctionTable.from_json(json.loads(cached.read_text()))
            except (ValueError, KeyError, OSError):
                table = None
        if table is None:
            try:
                table = read_functions(path)
            except (OSError, ELFError, ValueError):
                table = None
            if table is not None and cached is not None:
                self._store(cached, table)
        self._tables[path] = table
        return table

    def _store(self, cached: Path, table: FunctionTable) -> None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_text(cached, json.dumps(table.to_json()))
        except (OSError, OrchestratorError):
            pass  # a cache that cannot be written only costs a second read
