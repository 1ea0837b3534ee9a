"""TFLite's (LiteRT's) ``benchmark_model``.

It prints, after the model's size and "Initialized session in X ms.", one "count=N first=.. curr=.. min=..
max=.. avg=.. std=.." line for the warm-up runs and one for the timed runs (each in microseconds; a single
warm-up run has no avg), then "Inference timings in us: Init: .., First inference: .., Warmup (avg): ..,
Inference (avg): .." and, from 2.x, "Memory footprint delta from the start of the tool (MB): init=..
overall=..". TF 1.x printed "Average inference timings in us: Warmup: .., Init: .., no stats: ..". Lines may
carry an "INFO: " prefix; numbers may be written as 4.69509e+06. Times are given here in ms.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, number

NUM = r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
TIMINGS = re.compile(r"inference timings in us:\s*(.*)$", re.I)
PAIR = re.compile(rf"([A-Za-z][A-Za-z ()]*?):\s*{NUM}")
STATS = re.compile(rf"\b(count|first|curr|min|max|avg|std|p5|median|p95)={NUM}")
MEMORY = re.compile(rf"Memory footprint delta from the start of the tool \(MB\):\s*init={NUM}\s+overall={NUM}")
TIMING_NAMES = {"Init": "init_ms", "First inference": "first_inference_ms", "Warmup (avg)": "warmup_mean_ms",
                "Inference (avg)": "inference_mean_ms", "Warmup": "warmup_mean_ms", "no stats": "inference_mean_ms"}
STAT_NAMES = {"min": "inference_min_ms", "max": "inference_max_ms", "std": "inference_std_ms",
              "median": "inference_median_ms", "p5": "inference_p5_ms", "p95": "inference_p95_ms"}
ERROR = re.compile(r"^(?:ERROR:|E\s|.*(?:Failed to|Aborted|Segmentation fault))", re.I)


def _prefix(line: str) -> str:
    return line[len("INFO:"):].strip() if line.startswith("INFO:") else line.strip()


def parse_benchmark_model(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    details: dict[str, str] = {}
    runs: list[dict[str, float]] = []
    errors = []
    for raw in text.splitlines():
        line = _prefix(raw)
        if line.startswith("The input model file size (MB):"):
            figures["model_size_mb"] = Figure(number(line.rsplit(":", 1)[1]), "MB")
        elif line.startswith("Initialized session in"):
            match = re.search(rf"{NUM}\s*ms", line)
            if match:
                figures["session_init_ms"] = Figure(number(match.group(1)), "ms")
        elif line.startswith("count="):
            runs.append({key: number(value) for key, value in STATS.findall(line)})
        elif TIMINGS.search(line):
            for name, value in PAIR.findall(TIMINGS.search(line).group(1)):  # type: ignore[union-attr]
                if name.strip() in TIMING_NAMES:
                    figures[TIMING_NAMES[name.strip()]] = Figure(number(value) / 1000, "ms")
        elif MEMORY.search(line):
            found = MEMORY.search(line)
            assert found is not None
            figures["memory_init_mb"] = Figure(number(found.group(1)), "MB")
            figures["memory_overall_mb"] = Figure(number(found.group(2)), "MB")
        elif line.startswith(("Graph: [", "Graph:[")):
            details["model"] = line.split("[", 1)[1].rstrip("]")
        elif "GPU delegate created" in line or "Use gpu: [1]" in line:
            details["delegate"] = "gpu"
        elif "XNNPACK delegate" in line and "delegate" not in details:
            details["delegate"] = "xnnpack"
        elif ERROR.match(line):
            errors.append(line)
    if len(runs) >= 2:  # the warm-up runs' line first, then the timed runs'
        timed = runs[1]
        figures["runs"] = Figure(timed.get("count", 0.0), "runs")
        for key, name in STAT_NAMES.items():
            if key in timed:
                figures[name] = Figure(timed[key] / 1000, "ms")
    timed_out = "inference_mean_ms" not in figures
    failure = errors[0] if errors and timed_out else None
    return Parsed("benchmark_model", figures, failure, details)
