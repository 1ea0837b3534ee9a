"""The seed's TF-TRT benchmark (benchmark_detection.py) and the apps that print like it:
"First Inference : X ms" (the first run, engine building included), "Inference : Y ms" (the mean of the
next ones), and "FPS : Z" lines when there are. A "Killed" line (the kernel's OOM killer) is a failure.

Also the TF-TRT examples of tensorflow/tensorrt: TF1's image_classification.py ("step 10/50,
iter_time(ms)=4.4785, images/sec=1786" lines, then "results of NAME:" with "images/sec: 1798",
"99th_percentile(ms): 4.48", "total_time(s): 0.1", "latency_mean(ms): 4.45", median, min) and TF2's notebooks
("Step 0:  7.6ms" lines, then "Throughput: 2108 images/s"); the step lines give a mean step time and how many
steps were printed.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, number

FIRST = re.compile(r"^\s*First Inference\s*:\s*([\d.]+)\s*ms", re.I)
MEAN = re.compile(r"^\s*Inference\s*:\s*([\d.]+)\s*ms", re.I)
FPS = re.compile(r"^\s*FPS\s*:\s*([\d.]+)", re.I)
STEP = re.compile(r"^\s*step\s+\d+(?:/\d+)?\s*[:,]\s*(?:iter_time\(ms\)=)?([\d.]+)\s*(?:ms)?\b", re.I)
SUMMARY = {"images/sec": ("images_per_s", "images/s"), "99th_percentile(ms)": ("p99_ms", "ms"),
           "total_time(s)": ("total_s", "s"), "latency_mean(ms)": ("latency_mean_ms", "ms"),
           "latency_median(ms)": ("latency_median_ms", "ms"), "latency_min(ms)": ("latency_min_ms", "ms")}
THROUGHPUT = re.compile(r"^\s*Throughput\s*:\s*([\d.]+)\s*images/s", re.I)


def parse_tftrt_bench(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    failure = None
    steps: list[float] = []
    for line in text.splitlines():
        step = STEP.match(line)
        if step:
            steps.append(number(step.group(1)))
            continue
        head, _, rest = line.strip().partition(": ")
        value = re.match(r"[\d.]+(?:e[-+]?\d+)?$", rest.strip(), re.I)
        if head in SUMMARY and value:
            name, unit = SUMMARY[head]
            figures[name] = Figure(number(value.group(0)), unit)
            continue
        throughput = THROUGHPUT.match(line)
        if throughput:
            figures["images_per_s"] = Figure(number(throughput.group(1)), "images/s")
            continue
        for pattern, name, unit in ((FIRST, "first_inference_ms", "ms"), (MEAN, "inference_mean_ms", "ms"),
                                    (FPS, "fps", "frames/s")):
            match = pattern.match(line)
            if match:
                figures[name] = Figure(number(match.group(1)), unit)
        if line.strip() == "Killed":
            failure = "Killed (out of memory)"
    if steps:
        figures["step_mean_ms"] = Figure(sum(steps) / len(steps), "ms")
        figures["steps_printed"] = Figure(float(len(steps)), "steps")
    return Parsed("tftrt-bench", figures, failure)
