"""jetson-inference's "Timing Report" (imageNet, detectNet, segNet ...): pre-process, network,
post-process, visualize and total, each as CPU (wall clock) and CUDA (GPU events) time. Lines of other
loggers in between (a "[cuda]" error) are skipped.

A log holds one report per frame (or per image, per network): with several, ``first_*`` are the first
report's figures and the plain names the mean of the reports after it (the first frame pays for warm-up, as
the first inference does); ``reports`` says how many there were. Rows before the first "Timing Report"
line belong to a report whose head the log lacks and are left out; a report cut short counts with the rows
it has. With reports of several networks, each figure's name starts with its network's file name.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from .common import Figure, Parsed

ROW = re.compile(r"^\s*\[TRT\]\s+(Pre-Process|Network|Post-Process|Visualize|Total)\s+CPU\s+([\d.]+)\s*ms\s+CUDA\s+"
                 r"([\d.]+)\s*ms", re.I)
HEAD = re.compile(r"^\s*\[TRT\]\s+Timing Report\s+(.+?)\s*$")
NAMES = {"pre-process": "pre_process", "network": "network", "post-process": "post_process",
         "visualize": "visualize", "total": "total"}


def parse_jetson_inference(text: str) -> Parsed:
    reports: list[tuple[str, dict[str, float]]] = []
    for line in text.splitlines():
        head = HEAD.match(line)
        if head:
            reports.append((head.group(1), {}))
            continue
        row = ROW.match(line)
        if row and reports:
            name = NAMES[row.group(1).lower()]
            reports[-1][1][f"{name}_cpu_ms"] = float(row.group(2))
            reports[-1][1][f"{name}_cuda_ms"] = float(row.group(3))
    networks = list(dict.fromkeys(network for network, _ in reports))
    figures: dict[str, Figure] = {}
    for network in networks:
        rows = [values for name, values in reports if name == network and values]
        prefix = f"{PurePosixPath(network).name}_" if len(networks) > 1 else ""
        figures.update(_figures(rows, prefix))
    details = {"network": networks[-1]} if len(networks) == 1 else {"networks": ", ".join(networks)}
    return Parsed("jetson-inference", figures, None, details if networks else {})


def _figures(rows: list[dict[str, float]], prefix: str) -> dict[str, Figure]:
    if not rows:
        return {}
    figures: dict[str, Figure] = {}
    later = rows[1:] or rows
    if len(rows) > 1:
        figures.update({f"{prefix}first_{key}": Figure(value, "ms") for key, value in rows[0].items()})
    keys = list(dict.fromkeys(key for values in later for key in values))
    for key in keys:
        seen = [values[key] for values in later if key in values]
        figures[f"{prefix}{key}"] = Figure(sum(seen) / len(seen), "ms")
    figures[f"{prefix}reports"] = Figure(float(len(rows)), "reports")
    return figures
