"""Which part of a capture to analyse: parsing --window and --process, checked against the capture."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError


@dataclass(frozen=True)
class AnalysisOptions:
    window: str | None = None       # "all" or "START:END"
    frame: int | None = None
    steady: bool = False
    process: str | None = None
    thread: str | None = None       # the thread the shares and verdict are about (its tid or name), else chosen
    frame_range: str | None = None  # what delimits frames: an NVTX range name, eglSwapBuffers, glFinish...
    symbols: tuple[Path, ...] = ()  # folders of unstripped copies or debug files, to name unresolved addresses
    renderer: str | None = None     # the GPU by name (the app's GL_RENDERER, the board's GPU), for the verdict
    traces: tuple[str, ...] | None = None  # what the capture was asked to trace (None: not known), to check it holds
    sampled: bool = False                  # whether it was asked to sample the CPU
    vsync_off: bool = False                # the app's environment turned vsync off (vblank_mode=0...)


_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s)?\s*$")
_UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


@dataclass(frozen=True)
class Window:
    kind: str          # steady, all, frame, range
    start_ns: int
    end_ns: int

    def as_tuple(self) -> tuple[int, int]:
        return self.start_ns, self.end_ns

    def to_json(self) -> dict:
        return {"kind": self.kind, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "duration_ns": self.end_ns - self.start_ns}


def parse_time(text: str) -> int:
    """'1500000', '1.5ms', '2s' -> ns; a bare number is ns like every time in the summary."""
    match = _TIME.match(text)
    if not match:
        raise UsageError(f"--window: cannot read '{text}' as a time",
                         "write e.g. 2s:3.5s, 200ms:1s or 1000000:2000000 (ns)")
    return int(round(float(match.group(1)) * _UNIT_NS[match.group(2) or "ns"]))


def parse_range(text: str, capture: tuple[int, int]) -> Window:
    """START:END on the capture's clock (ns from the session start, as nsys shows them)."""
    if text.count(":") != 1:
        raise UsageError(f"--window '{text}' is not START:END or 'all'", "write e.g. --window 2s:3.5s")
    start, end = (parse_time(part) for part in text.split(":"))
    if end <= start:
        raise UsageError(f"--window {text}: the end is not after the start", "write START:END with START < END")
    lo, hi = capture
    if end <= lo or start >= hi:
        raise UsageError(f"--window {text} lies outside the capture ({lo / 1e9:.3f}s to {hi / 1e9:.3f}s)",
                         f"pick times between {lo / 1e9:.3f}s and {hi / 1e9:.3f}s")
    return Window("range", max(start, lo), min(end, hi))


def pick_processes(processes: list[dict], wanted: str | None) -> list[int] | None:
    """pids of the process ``wanted`` names: by pid, or by any name it had (its last executable after 'sh -c'
    or exec, its first), whole, as the file name of a path, or as the kernel's 15 characters of it; None
    means every process."""
    if not wanted:
        return None
    if wanted.isdecimal() and wanted.isascii():
        pids = [p["pid"] for p in processes if p["pid"] == int(wanted)]
    else:
        pids = [p["pid"] for p in processes if any(_names_it(name, wanted) for name in p.get("aliases") or [p["name"]])]
    if not pids:
        known = [f"{p['name'] or '?'} ({p['pid']})" for p in processes]
        raise UsageError(f"--process {wanted}: no such process in the capture",
                         f"give a name or pid of: {', '.join(known[:12]) or 'none seen'}")
    return pids


def pick_thread(names: dict[int, str], wanted: str) -> int:
    """The globalTid of the thread ``wanted`` names: its tid, or its name when one thread has it."""
    if wanted.isdecimal() and wanted.isascii():
        found = [gtid for gtid in names if gtid & 0xFFFFFF == int(wanted)]
    else:
        found = [gtid for gtid, name in names.items() if name == wanted]
    if len(found) == 1:
        return found[0]
    if found:
        raise UsageError(f"--thread {wanted}: {len(found)} threads have that name",
                         "give one's tid: " + ", ".join(str(gtid & 0xFFFFFF) for gtid in sorted(found)[:12]))
    known = [f"{name or '?'} ({gtid & 0xFFFFFF})" for gtid, name in sorted(names.items())]
    raise UsageError(f"--thread {wanted}: no such thread in the capture",
                     f"give a tid or name of: {', '.join(known[:12]) or 'none seen'}")


def _names_it(name: str, wanted: str) -> bool:
    base, wanted_base = name.rsplit("/", 1)[-1], wanted.rsplit("/", 1)[-1]
    return wanted in (name, base) or wanted_base == base or (len(base) == 15 and wanted_base.startswith(base))
