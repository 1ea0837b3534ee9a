"""Reading an ELF file: its build id and its function symbols (.symtab, else .dynsym), with pyelftools."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True)
class FunctionTable:
    """Function symbols sorted by address (file virtual addresses, as the symbol tables hold them)."""
    starts: tuple[int, ...]
    sizes: tuple[int, ...]
    names: tuple[str, ...]

    @classmethod
    def build(cls, functions: dict[int, tuple[int, str]]) -> FunctionTable:
        ordered = sorted(functions.items())
        return cls(tuple(a for a, _ in ordered), tuple(s for _, (s, _) in ordered), tuple(n for _, (_, n) in ordered))

    def name_at(self, address: int) -> str | None:
        """The function whose extent holds ``address`` (its end included: return addresses point there)."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0:
            return None
        end = self.starts[i] + self.sizes[i]
        return self.names[i] if address <= end else None

    def extents(self, name: str) -> list[tuple[int, int]]:
        return [(a, s) for a, s, n in zip(self.starts, self.sizes, self.names) if n == name]

    def to_json(self) -> dict:
        return {"starts": list(self.starts), "sizes": list(self.sizes), "names": list(self.names)}

    @classmethod
    def from_json(cls, data: dict) -> FunctionTable:
        return cls(tuple(data["starts"]), tuple(data["sizes"]), tuple(data["names"]))


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def read_build_id(path: Path) -> str | None:
    """The GNU build id as hex, or None (no note, not ELF, unreadable)."""
    try:
        with path.open("rb") as handle:
            elf = ELFFile(handle)
            for section in elf.iter_sections():
                if isinstance(section, NoteSection):
                    for note in section.iter_notes():
                        if note["n_type"] == "NT_GNU_BUILD_ID":
                            return str(note["n_desc"])
    except (OSError, ELFError, ValueError):
        return None
    return None


def read_functions(path: Path) -> FunctionTable:
    """Function symbols with an address: the full .symtab when the file has one, plus .dynsym."""
    functions: dict[int, tuple[int, str]] = {}
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        for table in (".dynsym", ".symtab"):  # .symtab last: its names win where both name an address
            section = elf.get_section_by_name(table)
            if not isinstance(section, SymbolTableSection):
                continue
            for symbol in section.iter_symbols():
                if symbol["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and symbol["st_value"] and symbol.name:
                    functions[int(symbol["st_value"])] = (int(symbol["st_size"]), symbol.name)
    return FunctionTable.build(functions)

