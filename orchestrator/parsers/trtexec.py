"""trtexec (TensorRT's benchmark tool).

TensorRT 5-6 print one line per batch of runs: "Average over 10 runs is 55.2518 ms (host walltime is 55.3944
ms, 99% percentile time is 59.9569)." (TensorRT 3-5: without the parenthesis, or with "(percentile time is
Y)" alone, its level not printed: percentile_ms); each line is a record, and the
summary their mean (the percentile: the highest). TensorRT 7 (JetPack 4.4-4.6) prints
blocks: a "Host Latency" (7.1.0: "Host latency") line, then "min: X ms (end to end Y ms)", max, mean, median,
"percentile: X ms at 99% (...)", "throughput: N qps", "walltime: N s"; an "Enqueue Time" and a "GPU Compute"
block alike, "total compute time: N s" last. The throughput 7.1 prints as 0 qps is left out (it misreports
it). A log of several runs has a record per run; its summary is the last run's, and says how many runs it
held. The logger's "[date-time] [I] " prefix may be malformed, cut or missing.

TensorRT 7 and 8 also print "Warmup completed 4 queries over 200 ms", "Timing trace has 56 queries over 3.09807
s" and, under "Trace averages of N runs:", a line per N runs ("Average on 10 runs - GPU latency: X ms - Host
latency: Y ms (end to end Z ms, enqueue W ms)"): each of those lines is a record (their run's, in a log of
several runs). TensorRT 8 and 10 print "=== Performance summary ===": a throughput, then min/max/mean/median/
percentiles for the latency (8.2-8.4: and the end-to-end host latency), the enqueue time, H2D, GPU compute and D2H,
and two totals in seconds. A run that failed ends with "&&&& FAILED"; its reason is the first error line ("[E]"),
said plainly for out-of-memory.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, Record, number, strip_prefix

NUM = r"([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan))"
OLD_AVERAGE = re.compile(rf"Average over (\d+) runs is {NUM} ms(?:\s*\((?:host walltime is {NUM} ms)?(?:,\s*)?"
                         rf"(?:(?:(\d+(?:\.\d+)?)%\s*)?percentile time is {NUM})?)?", re.I)
STAT = re.compile(rf"(min|max|mean|median|percentile\((\d+(?:\.\d+)?)%\))\s*=\s*{NUM}\s*(ms|s)\b", re.I)
SECTIONS = {"Latency": "latency", "End-to-End Host Latency": "end_to_end", "Enqueue Time": "enqueue",
            "H2D Latency": "h2d", "GPU Compute Time": "gpu_compute", "GPU Compute": "gpu_compute", "D2H Latency": "d2h",
            "Host Latency": "latency"}
TOTALS = {"Total Host Walltime": "total_host_walltime_s", "Total GPU Compute Time": "total_gpu_compute_s"}
VERSION = re.compile(r"\[TensorRT v(\d+)\]")
TRACE_AVERAGE = re.compile(rf"^Average on (\d+) runs - GPU latency: {NUM} ms - Host latency: {NUM} ms"
                           rf"(?: \((?:end to end {NUM} ms)?(?:,\s*)?(?:enqueue {NUM} ms)?\))?", re.I)
WARMUP = re.compile(rf"^Warmup completed {NUM} queries over {NUM} ms", re.I)
TRACE = re.compile(rf"^Timing trace has {NUM} queries over {NUM} s", re.I)
TRACE_WINDOW = re.compile(r"^Trace averages of (\d+) runs:", re.I)
BLOCKS = {"host latency": "latency", "enqueue time": "enqueue", "gpu compute": "gpu_compute"}
BLOCK_STAT = re.compile(rf"^(min|max|mean|median):\s*{NUM}\s*ms(?:\s*\(end to end\s*{NUM}\s*ms\))?$", re.I)
BLOCK_PERCENTILE = re.compile(rf"^percentile:\s*{NUM}\s*ms at (\d+(?:\.\d+)?)%(?:\s*\(end to end\s*{NUM}\s*ms at "
                              r"[\d.]+%\))?$", re.I)
BLOCK_TOTALS = {"throughput": ("throughput_qps", "qps"), "walltime": ("total_host_walltime_s", "s"),
                "total compute time": ("total_gpu_compute_s", "s")}
OOM = re.compile(r"out of memory|OutOfMemory|insufficient memory|Killed", re.I)


def parse_trtexec(text: str) -> Parsed:
    runs: list[tuple[dict[str, Figure], list[Record]]] = [({}, [])]  # each run's figures and trace averages
    details: dict[str, str] = {}
    averages: list[Record] = []
    errors: list[str] = []
    failed = False
    block: list[str | None] = [None]  # the TensorRT 7 block the lines are in
    for raw in text.splitlines():
        line = strip_prefix(raw)
        if _starts_run(raw, line, runs[-1][0]):  # another run in the same log
            runs.append(({}, []))
            block[0] = None
        figures, traces = runs[-1]
        if line.lower() in BLOCKS:
            block[0] = BLOCKS[line.lower()]
            continue
        if block[0] and _block_line(line, block[0], figures, details):
            continue
        if raw.lstrip().startswith("&&&& FAILED"):
            failed = True
        version = VERSION.search(raw)
        if version and "version" not in details:
            details["version"] = _version(version.group(1))
        if re.match(r"^\s*\[[^\]]*\]\s*\[E\]", raw) or raw.lstrip().startswith("[E]"):
            errors.append(line)
        if raw.strip() == "Killed":
            errors.append("Killed")
        old = OLD_AVERAGE.search(line)
        if old:
            averages.append(_average_line(old, len(averages) + 1))
        elif not _trace_line(line, figures, traces):
            _summary_line(line, figures)
    ran = [(figures, traces) for figures, traces in runs if figures or traces]
    figures = dict(ran[-1][0]) if ran else {}
    records: list[Record] = list(averages)
    for n, (found, traces) in enumerate(ran, 1):
        label = f"run {n}: " if len(ran) > 1 else ""
        if len(ran) > 1:
            records.append(Record(f"run {n}", found))
        records += [Record(label + trace.label, trace.figures) for trace in traces]
    derived = set(figures) if len(ran) > 1 else set()  # the last run's, which its record holds
    if averages:
        figures.update(_mean_of_lines(averages))
        derived.update(_mean_of_lines(averages))
    if len(ran) > 1:
        details["runs"] = f"{len(ran)} (the figures are the last run's)"
    failure = None
    if failed or (errors and not figures):
        failure = _reason(errors) if errors else "trtexec reported FAILED"
    return Parsed("trtexec", figures, failure, details, tuple(records), frozenset(derived))


def _starts_run(raw: str, line: str, current: dict[str, Figure]) -> bool:
    """Whether the line begins a run after one that printed its latency (a log of several runs)."""
    if not any(name.startswith(("latency_", "throughput_qps")) for name in current):
        return False
    return raw.lstrip().startswith("&&&& RUNNING") or line.lower() == "host latency" or bool(WARMUP.match(line))


def _summary_line(line: str, figures: dict[str, Figure]) -> None:
    """A TensorRT 8-10 performance summary's line into figures."""
    if line.startswith("Throughput:"):
        match = re.search(rf"{NUM}\s*qps", line)
        if match:
            figures["throughput_qps"] = Figure(number(match.group(1)), "qps")
        return
    head = line.split(":", 1)[0].strip()
    if head in TOTALS:
        match = re.search(rf"{NUM}\s*s\b", line.split(":", 1)[1])
        if match:
            figures[TOTALS[head]] = Figure(number(match.group(1)), "s")
    elif head in SECTIONS and "=" in line:
        for stat in STAT.finditer(line):
            name = _percentile_name(stat.group(2)) if stat.group(2) else stat.group(1).lower()
            figures[f"{SECTIONS[head]}_{name}_ms"] = Figure(_in_ms(number(stat.group(3)), stat.group(4)), "ms")


def _trace_line(line: str, figures: dict[str, Figure], traces: list[Record]) -> bool:
    """A TensorRT 7-8 warm-up, timing trace or trace average line into figures or records; whether it was one."""
    warmup, trace, average = WARMUP.match(line), TRACE.match(line), TRACE_AVERAGE.match(line)
    window = TRACE_WINDOW.match(line)
    if window:
        figures["trace_average_runs"] = Figure(number(window.group(1)), "runs")
    elif warmup:
        figures["warmup_queries"] = Figure(number(warmup.group(1)), "queries")
        figures["warmup_ms"] = Figure(number(warmup.group(2)), "ms")
    elif trace:
        figures["trace_queries"] = Figure(number(trace.group(1)), "queries")
        figures["trace_s"] = Figure(number(trace.group(2)), "s")
    elif average:
        found = {"runs": Figure(number(average.group(1)), "runs"),
                 "gpu_latency_ms": Figure(number(average.group(2)), "ms"),
                 "host_latency_ms": Figure(number(average.group(3)), "ms")}
        for name, value in (("end_to_end_ms", average.group(4)), ("enqueue_ms", average.group(5))):
            if value is not None:
                found[name] = Figure(number(value), "ms")
        traces.append(Record(f"trace average {len(traces) + 1}", found))
    return bool(window or warmup or trace or average)


def _average_line(found: re.Match[str], n: int) -> Record:
    """One 'Average over N runs is X ms (host walltime is Y ms, 99% percentile time is Z)' line."""
    figures = {"runs": Figure(float(found.group(1)), "runs"), "gpu_mean_ms": Figure(number(found.group(2)), "ms")}
    if found.group(3) is not None:
        figures["host_walltime_mean_ms"] = Figure(number(found.group(3)), "ms")
    if found.group(5) is not None:  # TensorRT 4 printed no percentile's level
        name = _percentile_name(found.group(4)) if found.group(4) else "percentile"
        figures[f"{name}_ms"] = Figure(number(found.group(5)), "ms")
    return Record(f"average {n}", figures)


def _mean_of_lines(lines: list[Record]) -> dict[str, Figure]:
    """The average lines' summary: each figure's mean over the lines that have it (a percentile: the highest)."""
    summary: dict[str, Figure] = {}
    for name in dict.fromkeys(name for line in lines for name in line.figures if name != "runs"):
        seen = [line.figures[name].value for line in lines if name in line.figures]
        value = max(seen) if name.startswith("p") else sum(seen) / len(seen)
        summary[name] = Figure(value, "ms")
    summary["average_lines"] = Figure(float(len(lines)), "lines")
    return summary


def _block_line(line: str, block: str, figures: dict[str, Figure], details: dict[str, str]) -> bool:
    """One line of a TensorRT 7 block into figures; whether it was one."""
    stat = BLOCK_STAT.match(line)
    if stat:
        figures[f"{block}_{stat.group(1).lower()}_ms"] = Figure(number(stat.group(2)), "ms")
        if stat.group(3) is not None:
            figures[f"end_to_end_{stat.group(1).lower()}_ms"] = Figure(number(stat.group(3)), "ms")
        return True
    share = BLOCK_PERCENTILE.match(line)
    if share:
        name = _percentile_name(share.group(2))
        figures[f"{block}_{name}_ms"] = Figure(number(share.group(1)), "ms")
        if share.group(3) is not None:
            figures[f"end_to_end_{name}_ms"] = Figure(number(share.group(3)), "ms")
        return True
    head, _, rest = line.partition(":")
    if head.lower() in BLOCK_TOTALS:
        name, unit = BLOCK_TOTALS[head.lower()]
        match = re.search(rf"{NUM}\s*{unit}\b", rest)
        if match and name == "throughput_qps" and number(match.group(1)) == 0:
            details["throughput"] = "printed as 0 qps (TensorRT 7 misreports it): left out"
        elif match:
            figures[name] = Figure(number(match.group(1)), unit)
        return True
    return False


def _in_ms(value: float, unit: str) -> float:
    return value * 1000 if unit.lower() == "s" else value


def _percentile_name(share: str) -> str:
    """'90' -> 'p90', '99.9' -> 'p99.9', '95.0' -> 'p95'."""
    return "p" + (share[:-2] if share.endswith(".0") else share)


def _version(digits: str) -> str:
    """'8402' -> '8.4.2', '100300' -> '10.3.0' (trtexec's packed version: major, minor, two-digit patch)."""
    if len(digits) >= 6:
        return f"{int(digits[:-4])}.{int(digits[-4:-2])}.{int(digits[-2:])}"
    if len(digits) == 4:
        return f"{digits[0]}.{digits[1]}.{int(digits[2:])}"
    return digits


def _reason(errors: list[str]) -> str:
    for line in errors:
        if OOM.search(line):
            return f"out of memory ({line})"
    return errors[0]
