"""`compare` for every run, frames or none: the GPU's work (busy, kernels by function, copies, CUDA API time), the
iterations, their deltas against the baseline with the largest movers named first, and a three-way verdict from the
two runs' per-iteration (or per-frame) distributions. Runs that cannot be compared (a CUDA run against an OpenGL
one) say so in one line. Pure over the summaries.
"""
from __future__ import annotations

from typing import Any

from ..documents.summary import Summary

MOVERS = 10  # kernel functions listed per variant, the largest changes first

# key, label, unit, which way is better: the busy time is the window's; the totals are the whole capture's, so a
# faster run that fits more iterations in a capture of the same length has more of them (neither way is better)
WORK_METRICS = (("gpu_busy_pct", "CUDA GPU busy (% of the window)", "pct", None),
                ("gpu_busy_ns", "CUDA GPU busy time (the window)", "ns", None),
                ("kernels_ns", "CUDA kernel time (the capture, all functions)", "ns", None),
                ("copies_ns", "CUDA copy time (the capture)", "ns", None),
                ("copied_bytes", "bytes copied (the capture)", "count", None),
                ("cuda_api_ns", "CUDA API time (the capture, all calls)", "ns", None))


def run_kind(summary: Summary) -> str:
    """What the run's GPU side is: "cuda", "opengl", or "cpu" (no GPU traced)."""
    if summary.kernel_functions or summary.cuda_api:
        return "cuda"
    if summary.opengl or summary.opengl_gpu:
        return "opengl"
    return "cpu"


def work_values(summary: Summary) -> dict[str, float | None]:
    """The run's figures for WORK_METRICS (None: the run has no such work)."""
    work = summary.gpu_work
    copies = [row for row in summary.memcpy or [] if row.direction != "memset"]
    return {"gpu_busy_pct": work.busy_pct if work else None, "gpu_busy_ns": work.busy_ns if work else None,
            "kernels_ns": sum(row.total_ns for row in summary.kernel_functions) if summary.kernel_functions
            else None,
            "copies_ns": sum(row.total_ns for row in copies) if copies else None,
            "copied_bytes": sum(row.bytes or 0 for row in copies) if copies else None,
            "cuda_api_ns": sum(row.total_ns for row in summary.cuda_api) if summary.cuda_api else None}


def kernels_of(summary: Summary) -> dict[str, int]:
    """Each kernel function's total time."""
    return {row.name: row.total_ns for row in summary.kernel_functions or []}


def steady_durations(summary: Summary) -> list[int]:
    """The steady frames' or iterations' durations (after the first and the warm-up)."""
    frames = summary.frames
    if frames is None or frames.count < 2:
        return []
    return list(frames.per_frame_ns[1 + frames.warmup.frames:])


def not_comparable(base: Summary, other: Summary, base_label: str, label: str) -> str | None:
    """One line when the two runs' GPU sides cannot be set against each other, else None."""
    kinds = run_kind(base), run_kind(other)
    if "cpu" in kinds or kinds[0] == kinds[1]:
        return None
    words = {"cuda": "a CUDA run", "opengl": "an OpenGL run"}
    return (f"{label} is {words[kinds[1]]} and {base_label} {words[kinds[0]]}: their GPU figures and "
            f"{'iterations' if 'cuda' in kinds else 'frames'} are not the same things; compare runs of one kind")


def kernel_movers(base: dict[str, int], other: dict[str, int], same_within_pct: float) -> list[dict]:
    """Per kernel function in either run: its time in each (over the capture), the change, and which way it went
    (more or less time: "worse"/"better" when the runs did the same work); the largest changes first (a function in
    one run only changes by all its time)."""
    found: list[dict[str, Any]] = []
    for name in set(base) | set(other):
        before, after = base.get(name), other.get(name)
        change = (after or 0) - (before or 0)
        pct = change * 100.0 / before if before else None
        if before is None:
            direction = "new"
        elif after is None:
            direction = "gone"
        elif change == 0 or (pct is not None and abs(pct) < same_within_pct):
            direction = "same"
        else:
            direction = "worse" if change > 0 else "better"
        found.append({"name": name, "base_ns": before, "ns": after, "change_ns": change, "pct": pct,
                      "direction": direction})
    found.sort(key=lambda row: (-abs(row["change_ns"]), row["name"]))
    return found


def work_comparison(summaries: list[Summary], labels: list[str], same_within_pct: float) -> dict:
    """The GPU-work part of the comparison document: per variant against the first, what cannot be compared, the
    kernel functions that moved most, and the verdict from the steady iterations' (frames') distributions."""
    from ..stats.estimates import compare_samples  # scipy loads only when runs are compared
    base, base_label = summaries[0], labels[0]
    found: list[dict] = []
    for summary, label in zip(summaries[1:], labels[1:]):
        refused = not_comparable(base, summary, base_label, label)
        if refused is not None:
            found.append({"label": label, "not_comparable": refused})
            continue
        movers = kernel_movers(kernels_of(base), kernels_of(summary), same_within_pct)
        a, b = steady_durations(base), steady_durations(summary)
        unit = summary.unit
        verdict = compare_samples(a, b, "lower").as_json() if a and b else None
        found.append({"label": label, "not_comparable": None, "unit": unit, "verdict": verdict,
                      "kernel_movers": movers[:MOVERS], "kernels_changed": sum(
                          1 for row in movers if row["direction"] not in ("same",)),
                      "kernels": len(movers)})
    return {"variants": found}
