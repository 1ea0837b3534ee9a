"""The seed's TF-TRT benchmark (benchmark_detection.py) and the apps that print like it:
"First Inference : X ms" (the first run, engine building included), "Inference : Y ms" (the mean of the
next ones), and "FPS : Z" lines when there are. A "Killed" line (the kernel's OOM killer) is a failure.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, number

FIRST = re.compile(r"^\s*First Inference\s*:\s*([\d.]+)\s*ms", re.I)
MEAN = re.compile(r"^\s*Inference\s*:\s*([\d.]+)\s*ms", re.I)
FPS = re.compile(r"^\s*FPS\s*:\s*([\d.]+)", re.I)


def parse_tftrt_bench(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    failure = None
    for line in text.splitlines():
        for pattern, name, unit in ((FIRST, "first_inference_ms", "ms"), (MEAN, "inference_mean_ms", "ms"),
                                    (FPS, "fps", "frames/s")):
            match = pattern.match(line)
            if match:
                figures[name] = Figure(number(match.group(1)), unit)
        if line.strip() == "Killed":
            failure = "Killed (out of memory)"
    return Parsed("tftrt-bench", figures, failure)
