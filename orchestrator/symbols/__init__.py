"""Names for the addresses nsys could not symbolise, from unstripped copies or debug files on the host.

``SymbolFiles(dirs)`` indexes the ELF files under the given folders by build id and by file name;
``Resolver`` turns (module path, address) into a function name using a module's load address inferred
from the frames nsys did name (load_base.py).
"""
from __future__ import annotations

from .elf import FunctionTable, read_build_id
from .index import SymbolFiles
from .resolver import Resolver

__all__ = ["FunctionTable", "Resolver", "SymbolFiles", "read_build_id"]
