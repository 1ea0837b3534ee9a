"""The seed's TF-TRT benchmark (benchmark_detection.py) and the apps that print like it:
"First Inference : X ms" (the first run, engine building included), "Inference : Y ms" (the mean of the
next ones), and "FPS : Z" lines when there are. A "Killed" line (the kernel's OOM killer) is a failure.

Also the TF-TRT examples of tensorflow/tensorrt: TF1's image_classification.py ("step 10/50,
iter_time(ms)=4.4785, images/sec=1786" lines, then "results of NAME:" with "images/sec: 1798",
"99th_percentile(ms): 4.48", "total_time(s): 0.1", "latency_mean(ms): 4.45", median, min; before them the
graph's sizes and the conversion's seconds) and TF2's notebooks ("Step 0:  7.6ms" lines, or "Steps 0-50
average: 10.1ms", then "Throughput: 2108 images/s").

And the TF-TRT lab and tutorial scripts: "average(sec):0.07,fps:13.65" (one per model a lab compares),
"needed time in inference-0:  0.00078" lines (seconds) and "average inference time:  0.00064", and a detector's
"FPS: 16.37" per frame.

Lines that repeat (steps, inferences, frames, averages) are each a record, in order; the summary beside them:
for steps their mean and how many were printed, for inferences and frames the first apart and the mean of
the rest (as the seed's first and steady inference), for the lab's averages the last line's.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, Record, number

FLOAT = r"([\d.]+(?:e[-+]?\d+)?)"
FIRST = re.compile(r"^\s*First Inference\s*:\s*([\d.]+)\s*ms", re.I)
MEAN = re.compile(r"^\s*Inference\s*:\s*([\d.]+)\s*ms", re.I)
FPS = re.compile(r"^\s*FPS\s*:\s*([\d.]+)", re.I)
STEP = re.compile(r"^\s*step\s+(\d+)(?:/\d+)?\s*[:,]\s*(?:iter_time\(ms\)=)?([\d.]+)\s*(?:ms)?\b"
                  r"(?:\s*,\s*images/sec\s*=\s*([\d.]+))?", re.I)
STEP_RANGE = re.compile(r"^\s*steps\s+(\d+-\d+)\s+average\s*:\s*([\d.]+)\s*ms", re.I)
LAB_AVERAGE = re.compile(rf"average\s*\(sec\)\s*[:=]\s*{FLOAT}\s*,?\s*fps\s*[:=]\s*{FLOAT}", re.I)
NEEDED = re.compile(rf"^\s*needed time in inference-(\d+)\s*:\s*{FLOAT}\s*$", re.I)
NEEDED_MEAN = re.compile(rf"^\s*average inference time\s*:\s*{FLOAT}\s*$", re.I)
SUMMARY = {"images/sec": ("images_per_s", "images/s"), "99th_percentile(ms)": ("p99_ms", "ms"),
           "total_time(s)": ("total_s", "s"), "latency_mean(ms)": ("latency_mean_ms", "ms"),
           "latency_median(ms)": ("latency_median_ms", "ms"), "latency_min(ms)": ("latency_min_ms", "ms"),
           "graph_size(MB)(native_tf)": ("graph_native_mb", "MB"), "graph_size(MB)(trt)": ("graph_trt_mb", "MB"),
           "time(s)(trt_conversion)": ("conversion_s", "s")}
THROUGHPUT = re.compile(r"^\s*Throughput\s*:\s*([\d.]+)\s*images/s", re.I)


def parse_tftrt_bench(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    failure = None
    steps: list[Record] = []
    repeated: dict[str, list[Record]] = {"average": [], "inference": [], "frame": []}
    for line in text.splitlines():
        if _repeated_line(line, steps, repeated):
            continue
        head, _, rest = line.strip().partition(": ")
        value = re.match(r"[\d.]+(?:e[-+]?\d+)?$", rest.strip(), re.I)
        if head in SUMMARY and value:
            name, unit = SUMMARY[head]
            figures[name] = Figure(number(value.group(0)), unit)
            continue
        throughput, needed_mean = THROUGHPUT.match(line), NEEDED_MEAN.match(line)
        if throughput:
            figures["images_per_s"] = Figure(number(throughput.group(1)), "images/s")
        elif needed_mean:
            figures["average_inference_s"] = Figure(number(needed_mean.group(1)), "s")
        for pattern, name, unit in ((FIRST, "first_inference_ms", "ms"), (MEAN, "inference_mean_ms", "ms")):
            match = pattern.match(line)
            if match:
                figures[name] = Figure(number(match.group(1)), unit)
        if line.strip() == "Killed":
            failure = "Killed (out of memory)"
    derived: dict[str, Figure] = {}
    if steps:
        derived["step_mean_ms"] = Figure(sum(step.figures["step_ms"].value for step in steps) / len(steps), "ms")
        derived["steps_printed"] = Figure(float(len(steps)), "steps")
    derived.update(_first_and_rest(repeated["inference"], "inference_s", "inference", "ms", 1000))
    derived.update(_first_and_rest(repeated["frame"], "fps", "fps", "frames/s", 1))
    if repeated["average"]:
        derived.update(repeated["average"][-1].figures)
    figures.update(derived)
    records = tuple(steps) + tuple(record for kind in repeated.values() for record in kind)
    return Parsed("tftrt-bench", figures, failure, records=records, from_records=frozenset(derived))


def _repeated_line(line: str, steps: list[Record], repeated: dict[str, list[Record]]) -> bool:
    """A line of those that repeat into its record; whether it was one."""
    step, steps_range, lab = STEP.match(line), STEP_RANGE.match(line), LAB_AVERAGE.search(line)
    needed, fps = NEEDED.match(line), FPS.match(line)
    if step:
        found = {"step_ms": Figure(number(step.group(2)), "ms")}
        if step.group(3) is not None:
            found["images_per_s"] = Figure(number(step.group(3)), "images/s")
        steps.append(Record(f"step {step.group(1)}", found))
    elif steps_range:
        steps.append(Record(f"steps {steps_range.group(1)}", {"step_ms": Figure(number(steps_range.group(2)), "ms")}))
    elif lab:
        repeated["average"].append(Record(f"average {len(repeated['average']) + 1}", {
            "average_s": Figure(number(lab.group(1)), "s"), "fps": Figure(number(lab.group(2)), "frames/s")}))
    elif needed:
        repeated["inference"].append(Record(f"inference {needed.group(1)}",
                                            {"inference_s": Figure(number(needed.group(2)), "s")}))
    elif fps:
        repeated["frame"].append(Record(f"frame {len(repeated['frame']) + 1}",
                                        {"fps": Figure(number(fps.group(1)), "frames/s")}))
    return bool(step or steps_range or lab or needed or fps)


def _first_and_rest(records: list[Record], key: str, name: str, unit: str, scale: float) -> dict[str, Figure]:
    """first_NAME and NAME_mean (the rest's mean), in unit; one line alone is NAME."""
    values = [record.figures[key].value * scale for record in records]
    if len(values) == 1:
        return {name if name == "fps" else f"{name}_mean_{unit}": Figure(values[0], unit)}
    if not values:
        return {}
    suffix = f"_{unit}" if unit == "ms" else ""
    rest = values[1:]
    return {f"first_{name}{suffix}": Figure(values[0], unit),
            f"{name}_mean{suffix}": Figure(sum(rest) / len(rest), unit)}
