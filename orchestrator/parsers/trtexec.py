"""trtexec (TensorRT's benchmark tool).

TensorRT 5-6 print one line per batch of runs: "Average over 10 runs is 55.2518 ms (host walltime is 55.3944
ms, 99% percentile time is 59.9569)." (averaged here over the lines). TensorRT 7 (JetPack 4.4-4.6) prints
blocks: a "Host Latency" (7.1.0: "Host latency") line, then "min: X ms (end to end Y ms)", max, mean, median,
"percentile: X ms at 99% (...)", "throughput: N qps", "walltime: N s"; an "Enqueue Time" and a "GPU Compute"
block alike, "total compute time: N s" last. The throughput 7.1 prints as 0 qps is left out (it misreports
it). A log of several runs gives the last run's figures, and says how many runs it held. TensorRT 8 and 10
print "=== Performance summary ===": a throughput, then min/max/mean/median/percentiles for the latency, the
enqueue time, H2D, GPU compute and D2H, and two totals in seconds. A run that failed ends with "&&&& FAILED";
its reason is the first error line ("[E]"), said plainly for out-of-memory.
"""
from __future__ import annotations

import re

from .common import Figure, Parsed, number, strip_prefix

NUM = r"([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan))"
OLD_AVERAGE = re.compile(rf"Average over (\d+) runs is {NUM} ms \(host walltime is {NUM} ms, (\d+)% percentile "
                         rf"time is {NUM}\)", re.I)
STAT = re.compile(rf"(min|max|mean|median|percentile\((\d+(?:\.\d+)?)%\))\s*=\s*{NUM}\s*(ms|s)\b", re.I)
SECTIONS = {"Latency": "latency", "Enqueue Time": "enqueue", "H2D Latency": "h2d", "GPU Compute Time": "gpu_compute",
            "GPU Compute": "gpu_compute", "D2H Latency": "d2h", "Host Latency": "latency"}
TOTALS = {"Total Host Walltime": "total_host_walltime_s", "Total GPU Compute Time": "total_gpu_compute_s"}
VERSION = re.compile(r"\[TensorRT v(\d+)\]")
BLOCKS = {"host latency": "latency", "enqueue time": "enqueue", "gpu compute": "gpu_compute"}
BLOCK_STAT = re.compile(rf"^(min|max|mean|median):\s*{NUM}\s*ms(?:\s*\(end to end\s*{NUM}\s*ms\))?$", re.I)
BLOCK_PERCENTILE = re.compile(rf"^percentile:\s*{NUM}\s*ms at (\d+(?:\.\d+)?)%(?:\s*\(end to end\s*{NUM}\s*ms at "
                              r"[\d.]+%\))?$", re.I)
BLOCK_TOTALS = {"throughput": ("throughput_qps", "qps"), "walltime": ("total_host_walltime_s", "s"),
                "total compute time": ("total_gpu_compute_s", "s")}
OOM = re.compile(r"out of memory|OutOfMemory|insufficient memory|Killed", re.I)


def parse_trtexec(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    details: dict[str, str] = {}
    averages: list[tuple[float, float, float]] = []
    errors: list[str] = []
    failed = False
    block: list[str | None] = [None]  # the TensorRT 7 block the lines are in
    runs = 0
    for raw in text.splitlines():
        line = strip_prefix(raw)
        if line.lower() in BLOCKS:
            if line.lower() == "host latency":
                runs += 1
                if runs > 1:  # another run in the same log: its figures replace the last's
                    figures.clear()
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
            averages.append((number(old.group(2)), number(old.group(3)), number(old.group(5))))
            details["percentile"] = old.group(4)
            continue
        if line.startswith("Throughput:"):
            match = re.search(rf"{NUM}\s*qps", line)
            if match:
                figures["throughput_qps"] = Figure(number(match.group(1)), "qps")
            continue
        head = line.split(":", 1)[0].strip()
        if head in TOTALS:
            match = re.search(rf"{NUM}\s*s\b", line.split(":", 1)[1])
            if match:
                figures[TOTALS[head]] = Figure(number(match.group(1)), "s")
            continue
        if head in SECTIONS and "=" in line:
            for stat in STAT.finditer(line):
                name = _percentile_name(stat.group(2)) if stat.group(2) else stat.group(1).lower()
                figures[f"{SECTIONS[head]}_{name}_ms"] = Figure(_in_ms(number(stat.group(3)), stat.group(4)), "ms")
    if averages:
        count = len(averages)
        figures["gpu_mean_ms"] = Figure(sum(a[0] for a in averages) / count, "ms")
        figures["host_walltime_mean_ms"] = Figure(sum(a[1] for a in averages) / count, "ms")
        figures[f"p{details['percentile']}_ms"] = Figure(max(a[2] for a in averages), "ms")
        figures["average_lines"] = Figure(float(count), "lines")
    if runs > 1:
        details["runs"] = f"{runs} (the figures are the last run's)"
    failure = None
    if failed or (errors and not figures):
        failure = _reason(errors) if errors else "trtexec reported FAILED"
    return Parsed("trtexec", figures, failure, details)


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
