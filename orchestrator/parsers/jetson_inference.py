"""jetson-inference's "Timing Report" (imageNet, detectNet, segNet ...): pre-process, network,
post-process, visualize and total, each as CPU (wall clock) and CUDA (GPU events) time. Lines of other
loggers in between (a "[cuda]" error, detections, "[OpenGL]") are skipped.

A log holds one report per frame (or per image, per network), each returned as a record in order. The
summary beside them: ``first_*`` are the first report's figures and the plain names the mean of the reports
after it (the first frame pays for warm-up, as the first inference does); ``reports`` says how many there
were. Rows before the first "Timing Report" line belong to a report whose head the log lacks: they are a
record of their own ("head cut"), left out of the summary, since it is not known which frame it was. A
report cut short is a record with the rows it has. With reports of several networks, each summary figure's
name starts with its network's file name.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from .common import Figure, Parsed, Record

ROW = re.compile(r"^\s*(?:\[TRT\]\s+)?(Pre-?Process|Network|Post-?Process|Visualize|Total)\s+CPU\s+([\d.]+)\s*ms\s+"
                 r"CUDA\s+([\d.]+)\s*ms", re.I)
HEAD = re.compile(r"^\s*(?:\[TRT\]\s+)?Timing Report\s*(.*?)\s*$")
NAMES = {"pre-process": "pre_process", "preprocess": "pre_process", "network": "network",
         "post-process": "post_process", "postprocess": "post_process", "visualize": "visualize", "total": "total"}


def parse_jetson_inference(text: str) -> Parsed:
    reports: list[tuple[str | None, dict[str, Figure]]] = []  # network (None: the head is not in the log)
    for line in text.splitlines():
        head = HEAD.match(line)
        if head:
            reports.append((head.group(1), {}))
            continue
        row = ROW.match(line)
        if row:
            if not reports or reports[-1][0] is None and not reports[-1][1]:
                reports[-1:] = [(None, {})]
            name = NAMES[row.group(1).lower()]
            figures = reports[-1][1]
            if f"{name}_cpu_ms" in figures:  # a row seen twice: another report whose head is not in the log
                reports.append((None, {}))
                figures = reports[-1][1]
            figures[f"{name}_cpu_ms"] = Figure(float(row.group(2)), "ms")
            figures[f"{name}_cuda_ms"] = Figure(float(row.group(3)), "ms")
    headed = [(network, figures) for network, figures in reports if network is not None]
    networks = list(dict.fromkeys(network for network, _ in headed))
    summary: dict[str, Figure] = {}
    for network in networks:
        rows = [figures for name, figures in headed if name == network and figures]
        prefix = f"{PurePosixPath(network).name}_" if len(networks) > 1 else ""
        summary.update(_summary(rows, prefix))
    records = tuple(Record(_label(n, network, len(networks)), figures)
                    for n, (network, figures) in enumerate(reports, 1) if figures)
    details = {"network": networks[-1]} if len(networks) == 1 else {"networks": ", ".join(networks)}
    return Parsed("jetson-inference", summary, None, details if networks else {}, records, frozenset(summary))


def _label(n: int, network: str | None, networks: int) -> str:
    if network is None:
        return f"report {n} (its head is not in the log)"
    return f"report {n}: {PurePosixPath(network).name}" if networks > 1 else f"report {n}"


def _summary(rows: list[dict[str, Figure]], prefix: str) -> dict[str, Figure]:
    if not rows:
        return {}
    figures: dict[str, Figure] = {}
    later = rows[1:] or rows
    if len(rows) > 1:
        figures.update({f"{prefix}first_{key}": figure for key, figure in rows[0].items()})
    keys = list(dict.fromkeys(key for values in later for key in values))
    for key in keys:
        seen = [values[key].value for values in later if key in values]
        figures[f"{prefix}{key}"] = Figure(sum(seen) / len(seen), "ms")
    figures[f"{prefix}reports"] = Figure(float(len(rows)), "reports")
    return figures
