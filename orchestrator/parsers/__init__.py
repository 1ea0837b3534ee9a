"""Parsers of the console output of the tools apps are benchmarked with: pure functions on text.

Each parser returns a ``Parsed``: the figures it found (name -> value and unit, in the order the tool
printed them) and, when the tool itself says it failed, why. ``parse(name, text)`` raises ``ParseError``
when the text holds nothing the parser knows.
"""
from __future__ import annotations

from collections.abc import Callable

from ..errors import ParseError
from .benchmark_model import parse_benchmark_model
from .common import Figure, Parsed, Record
from .glmark2 import parse_glmark2
from .jetson_inference import parse_jetson_inference
from .tftrt_bench import parse_tftrt_bench
from .trtexec import parse_trtexec

PARSERS: dict[str, Callable[[str], Parsed]] = {
    "trtexec": parse_trtexec,
    "tftrt-bench": parse_tftrt_bench,
    "glmark2": parse_glmark2,
    "jetson-inference": parse_jetson_inference,
    "benchmark_model": parse_benchmark_model,
}

__all__ = ["PARSERS", "Figure", "Parsed", "Record", "parse"]


def parse(name: str, text: str, source: str = "the text") -> Parsed:
    if name not in PARSERS:
        raise ParseError(f"no parser '{name}'", "known: " + ", ".join(PARSERS))
    parsed = PARSERS[name](text)
    if not parsed.figures and parsed.failure is None:
        raise ParseError(f"{source} holds none of the figures the '{name}' parser reads",
                         "give the tool's console output (stdout and stderr), or pick another parser")
    return parsed
