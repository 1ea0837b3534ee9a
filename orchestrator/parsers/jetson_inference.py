"""jetson-inference's "Timing Report" (imageNet, detectNet, segNet ...): pre-process, network,
post-process and total, each as CPU (wall clock) and CUDA (GPU events) time. Lines of other loggers in
between (a "[cuda]" error) are skipped; with several reports the last one counts and ``reports`` says
how many there were."""
from __future__ import annotations

import re

from .common import Figure, Parsed

ROW = re.compile(r"^\s*\[TRT\]\s+(Pre-Process|Network|Post-Process|Total)\s+CPU\s+([\d.]+)\s*ms\s+CUDA\s+"
                 r"([\d.]+)\s*ms", re.I)
HEAD = re.compile(r"^\s*\[TRT\]\s+Timing Report\s+(.+?)\s*$")
NAMES = {"pre-process": "pre_process", "network": "network", "post-process": "post_process", "total": "total"}


def parse_jetson_inference(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    details: dict[str, str] = {}
    reports = 0
    for line in text.splitlines():
        head = HEAD.match(line)
        if head:
            reports += 1
            details["network"] = head.group(1)
            continue
        row = ROW.match(line)
        if row:
            name = NAMES[row.group(1).lower()]
            figures[f"{name}_cpu_ms"] = Figure(float(row.group(2)), "ms")
            figures[f"{name}_cuda_ms"] = Figure(float(row.group(3)), "ms")
    if reports:
        figures["reports"] = Figure(float(reports), "reports")
    return Parsed("jetson-inference", figures, None, details)
