"""TFLite's (LiteRT's) ``benchmark_model``.

It prints, after the model's size and "Initialized session in X ms.", one "count=N first=.. curr=.. min=..
max=.. avg=.. std=.." line for the warm-up runs and one for the timed runs (each in microseconds; a single
warm-up run has no avg), then "Inference timings in us: Init: .., First inference: .., Warmup (avg): ..,
Inference (avg): .." and, from 2.x, "Memory footprint delta from the start of the tool (MB): init=..
overall=..". TF 1.x printed "Average inference timings in us: Warmup: .., Init: .., no stats: ..". Lines may
carry an "INFO: " prefix; numbers may be written as 4.69509e+06. Times are given here in ms.

Each count line is a record ("warm-up", "timed": its count, first, last, min, max, mean, std and percentiles). A
console session may hold several runs of the tool (thread counts, delegates one after the other): each begins
with "STARTING!" (or, without it, with a model size or session line after a run's timings); each run is then a
record too, labelled with its threads and delegate, before its count lines; the summary is the last run's, and
says how many there were. With --enable_op_profiling, each profile's "Timings (microseconds): count=.. first=..
avg=.." line (and its "Memory (bytes): count=N") is a record named after the profile's heading; the
per-operator tables are not figures of the run. Ports for microcontrollers print "[Init Phase] - Memory usage:
max resident set size = 0 MB, total malloc-ed size = 0 MB" (and "[Overall]").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .common import Figure, Parsed, Record, number

NUM = r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
TIMINGS = re.compile(r"inference timings in us:\s*(.*)$", re.I)
PAIR = re.compile(rf"([A-Za-z][A-Za-z ()]*?):\s*{NUM}")
STATS = re.compile(rf"\b(count|first|curr|min|max|avg|std|p5|median|p95)={NUM}")
MEMORY = re.compile(rf"Memory footprint delta from the start of the tool \(MB\):\s*init={NUM}\s+overall={NUM}")
PROFILE_HEAD = re.compile(r"^(?:Operator-wise )?Profiling Info for (.+?):?$")
PROFILE = re.compile(r"^Timings \(microseconds\):\s*(.*)$")
PROFILE_MEMORY = re.compile(r"^Memory \(bytes\):\s*count=(\d+)")
MEMORY_USAGE = re.compile(rf"^\[(Init Phase|Overall)\] - Memory usage: max resident set size = {NUM} MB, "
                          rf"total malloc-ed size = {NUM} MB")
THREADS = re.compile(r"^(?:Num threads|#threads used for CPU inference|num_threads):\s*\[?(\d+)\]?", re.I)
TIMING_NAMES = {"Init": "init_ms", "First inference": "first_inference_ms", "Warmup (avg)": "warmup_mean_ms",
                "Inference (avg)": "inference_mean_ms", "Warmup": "warmup_mean_ms", "no stats": "inference_mean_ms"}
STAT_NAMES = {"first": "first_ms", "curr": "last_ms", "min": "min_ms", "max": "max_ms", "avg": "mean_ms",
              "std": "std_ms", "p5": "p5_ms", "median": "median_ms", "p95": "p95_ms"}
SUMMARY_STATS = {"min": "inference_min_ms", "max": "inference_max_ms", "std": "inference_std_ms",
                 "median": "inference_median_ms", "p5": "inference_p5_ms", "p95": "inference_p95_ms"}
ERROR = re.compile(r"^(?:ERROR:|E\s|.*(?:Failed to|Aborted|Segmentation fault))", re.I)


@dataclass
class _Run:
    figures: dict[str, Figure] = field(default_factory=dict)
    stat_lines: list[dict[str, float]] = field(default_factory=list)
    profiles: list[Record] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def timed(self) -> bool:
        return "inference_mean_ms" in self.figures or len(self.stat_lines) >= 2

    def summary(self) -> dict[str, Figure]:
        """The run's figures with its timed runs' statistics (inference_*: the second count line's)."""
        found = dict(self.figures)
        if len(self.stat_lines) >= 2:  # the warm-up runs' line first, then the timed runs'
            timed = self.stat_lines[1]
            found["runs"] = Figure(timed.get("count", 0.0), "runs")
            for key, name in SUMMARY_STATS.items():
                if key in timed:
                    found[name] = Figure(timed[key] / 1000, "ms")
        return found

    def count_lines(self, label: str) -> list[Record]:
        records = []
        for n, line in enumerate(self.stat_lines):
            role = ("warm-up", "timed")[n] if n < 2 else f"count line {n + 1}"
            found = {"runs": Figure(line["count"], "runs")} if "count" in line else {}
            found.update({name: Figure(line[key] / 1000, "ms") for key, name in STAT_NAMES.items() if key in line})
            records.append(Record(f"{label}{role}", found))
        return records + [Record(label + profile.label, profile.figures) for profile in self.profiles]


def _prefix(line: str) -> str:
    return line[len("INFO:"):].strip() if line.startswith("INFO:") else line.strip()


def parse_benchmark_model(text: str) -> Parsed:
    runs = [_Run()]
    for raw in text.splitlines():
        line = _prefix(raw)
        starts = line.startswith("STARTING!") and (runs[-1].figures or runs[-1].stat_lines) or \
            line.startswith(("The input model file size (MB):", "Initialized session in")) and runs[-1].timed
        if starts:
            runs.append(_Run())
        _read_line(line, runs[-1])
    ran = [run for run in runs if run.figures or run.stat_lines]
    last = next((run for run in reversed(ran) if run.timed), ran[-1] if ran else _Run())
    summary = last.summary()
    figures = {name: summary[name] for name in _ORDER if name in summary} | {
        name: figure for name, figure in summary.items() if name not in _ORDER}
    details = dict(last.details)
    details.pop("threads", None)
    records: list[Record] = []
    for n, run in enumerate(ran, 1):
        label = f"{_label(n, run)}: " if len(ran) > 1 else ""
        if len(ran) > 1:
            records.append(Record(label[:-2], run.summary()))
        records += run.count_lines(label)
    # the timed count line's statistics (its record holds them), and with several runs the last one's figures
    derived = set(figures) if len(ran) > 1 else {"runs", *SUMMARY_STATS.values()} & set(figures)
    if len(ran) > 1:
        details["runs"] = f"{len(ran)} (the figures are the last run's)"
    errors = [error for run in ran for error in run.errors]
    timed_out = "inference_mean_ms" not in figures
    failure = errors[0] if errors and timed_out else None
    return Parsed("benchmark_model", figures, failure, details, tuple(records), frozenset(derived))


# the summary's first names in the order earlier releases printed them
_ORDER = ("model_size_mb", "session_init_ms", "init_ms", "first_inference_ms", "warmup_mean_ms", "inference_mean_ms",
          "memory_init_mb", "memory_overall_mb", "runs", "inference_min_ms", "inference_max_ms", "inference_std_ms",
          "inference_median_ms", "inference_p5_ms", "inference_p95_ms")


def _label(n: int, run: _Run) -> str:
    said = [f"threads={run.details['threads']}"] if "threads" in run.details else []
    said += [f"delegate={run.details['delegate']}"] if "delegate" in run.details else []
    return f"run {n}" + (f": {', '.join(said)}" if said else "")


def _profile_line(line: str, run: _Run) -> bool:
    """An op profile's heading, timings or memory line, or a microcontroller port's memory usage; whether it was."""
    head, timings, memory = PROFILE_HEAD.match(line), PROFILE.match(line), PROFILE_MEMORY.match(line)
    usage = MEMORY_USAGE.match(line)
    if head:
        run.details["profile"] = head.group(1)
    elif timings:
        stats = {key: number(value) for key, value in STATS.findall(timings.group(1))}
        found = {"runs": Figure(stats["count"], "runs")} if "count" in stats else {}
        found.update({name: Figure(stats[key] / 1000, "ms") for key, name in STAT_NAMES.items() if key in stats})
        run.profiles.append(Record(f"profile: {run.details.get('profile', 'operators')}", found))
    elif memory and run.profiles:
        run.profiles[-1].figures["memory_records"] = Figure(float(memory.group(1)), "records")
    elif usage:
        phase = "init" if usage.group(1) == "Init Phase" else "overall"
        run.figures[f"memory_{phase}_max_rss_mb"] = Figure(number(usage.group(2)), "MB")
        run.figures[f"memory_{phase}_malloc_mb"] = Figure(number(usage.group(3)), "MB")
    return bool(head or timings or memory or usage)


def _read_line(line: str, run: _Run) -> None:
    figures, details = run.figures, run.details
    threads = THREADS.match(line)
    if _profile_line(line, run):
        return
    if line.startswith("The input model file size (MB):"):
        figures["model_size_mb"] = Figure(number(line.rsplit(":", 1)[1]), "MB")
    elif line.startswith("Initialized session in"):
        match = re.search(rf"{NUM}\s*ms", line)
        if match:
            figures["session_init_ms"] = Figure(number(match.group(1)), "ms")
    elif line.startswith("count="):
        run.stat_lines.append({key: number(value) for key, value in STATS.findall(line)})
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
    elif threads:
        details["threads"] = threads.group(1)
    elif "GPU delegate created" in line or "Use gpu: [1]" in line:
        details["delegate"] = "gpu"
    elif "XNNPACK delegate" in line and "delegate" not in details:
        details["delegate"] = "xnnpack"
    elif ERROR.match(line):
        run.errors.append(line)
