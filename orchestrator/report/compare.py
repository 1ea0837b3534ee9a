"""Variants side by side: the A/B table people type by hand, with deltas against the first run. Pure.

``comparison(runs)`` is the JSON document (``orchestrate compare --json``); ``comparison_page`` is what the
compare page draws from it.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..errors import UsageError
from . import charts
from .charts import Chart
from .page import cores_busy
from .run_data import RunData
from .units import format_ms

COMPARE_VERSION = 1
SAME_WITHIN_PCT = 1.0  # a change smaller than this is "same": run-to-run noise on a board is larger
TOP_FUNCTIONS = 5

# key, label, unit, which way is better ("lower", "higher" or None when neither is)
METRICS = (("first_frame_ns", "first frame (first inference)", "ns", "lower"),
           ("steady_mean_ns", "steady mean", "ns", "lower"),
           ("p50_ns", "steady p50", "ns", "lower"),
           ("p90_ns", "steady p90", "ns", "lower"),
           ("p99_ns", "steady p99", "ns", "lower"),
           ("frames_per_s", "frames per second", "1/s", "higher"),
           ("frames", "frames captured", "count", None),
           ("cores_busy", "cores busy", "cores", None))


def variant_labels(runs: list[RunData], given: list[str] | None = None) -> list[str]:
    """The user's labels, else app names when they differ, else the words of the commands that differ,
    else the run folders' names."""
    if given:
        if len(given) != len(runs):
            raise UsageError(f"{len(given)} labels for {len(runs)} runs", "give one --label per run, in the same order")
        return list(given)
    apps = [((run.record or {}).get("app") or {}).get("name") or run.source.stem for run in runs]
    if len(set(apps)) == len(apps):
        return apps
    commands = [((run.record or {}).get("app") or {}).get("command") or [] for run in runs]
    common = set.intersection(*(set(c) for c in commands)) if commands else set()
    differing = [" ".join(shlex.quote(w) for w in c if w not in common) for c in commands]
    if all(differing) and len(set(differing)) == len(differing):
        return differing
    return [run.source.name for run in runs]


def variant(label: str, run: RunData) -> dict:
    summary, record = run.summary or {}, run.record or {}
    frames = summary.get("frames")
    steady = frames["steady"] if frames else {}
    hot = (summary.get("hotspots") or {}).get("self") or []
    verdict = summary.get("verdict")
    return {
        "label": label, "source": str(run.source),
        "app": (record.get("app") or {}).get("name"), "target": (record.get("target") or {}).get("name"),
        "status": record.get("status"), "analysis_error": run.analysis_error,
        "frames_source": frames["source"] if frames else None,
        "values": {
            "first_frame_ns": frames["first_ns"] if frames else None,
            "steady_mean_ns": steady.get("mean_ns"), "p50_ns": steady.get("p50_ns"),
            "p90_ns": steady.get("p90_ns"), "p99_ns": steady.get("p99_ns"),
            "frames_per_s": 1e9 / steady["mean_ns"] if steady.get("mean_ns") else None,
            "frames": frames["count"] if frames else None,
            "cores_busy": cores_busy(summary),
        },
        "top_functions": [{"symbol": h["symbol"], "pct": h["pct"]} for h in hot[:TOP_FUNCTIONS]],
        "verdict": {"kind": verdict["kind"], "summary": verdict["summary"]} if verdict else None,
    }


def delta(base: float | None, value: float | None, better: str | None) -> dict | None:
    """value against base: the change, in units and in percent, and which way it went."""
    if base is None or value is None:
        return None
    change = value - base
    pct = change * 100.0 / base if base else None
    if change == 0 or (pct is not None and abs(pct) < SAME_WITHIN_PCT):
        direction = "same"
    elif better is None:
        direction = "more" if change > 0 else "fewer"
    elif (change < 0) == (better == "lower"):
        direction = "better"
    else:
        direction = "worse"
    return {"change": change, "pct": pct, "direction": direction}


def comparison(runs: list[RunData], labels: list[str] | None = None) -> dict:
    variants = [variant(label, run) for label, run in zip(variant_labels(runs, labels), runs)]
    base = variants[0]["values"]
    metrics = []
    for key, label, unit, better in METRICS:
        values = [v["values"][key] for v in variants]
        metrics.append({"key": key, "label": label, "unit": unit, "better": better, "values": values,
                        "deltas": [None] + [delta(base[key], value, better) for value in values[1:]]})
    return {"compare_version": COMPARE_VERSION, "baseline": variants[0]["label"], "variants": variants,
            "metrics": metrics, "same_within_pct": SAME_WITHIN_PCT}


@dataclass(frozen=True)
class CompareCell:
    text: str
    delta: str
    direction: str  # better, worse, same, more, fewer, or "" for the baseline and missing values


@dataclass(frozen=True)
class CompareRow:
    label: str
    cells: list[CompareCell]


@dataclass(frozen=True)
class ComparePage:
    title: str
    labels: list[str]
    rows: list[CompareRow]
    charts: list[tuple[str, Chart]]
    variants: list[dict]
    missing: list[str]


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    if unit == "ns":
        return format_ms(value)
    if unit == "count":
        return f"{int(value):,}"
    return f"{value:.2f}" if unit == "cores" else f"{value:.1f}"


def format_delta(found: dict | None, unit: str) -> str:
    if found is None:
        return ""
    sign = "+" if found["change"] > 0 else "−" if found["change"] < 0 else "±"
    size = abs(found["change"])
    amount = f"{size / 1e6:.2f} ms" if unit == "ns" else f"{size:.2f}" if unit == "cores" else f"{size:,.1f}"
    pct = f" ({sign}{abs(found['pct']):.1f} %)" if found["pct"] is not None else ""
    return f"{sign}{amount}{pct}, {found['direction']}"


def comparison_page(document: dict) -> ComparePage:
    labels = [v["label"] for v in document["variants"]]
    rows = []
    for metric in document["metrics"]:
        cells = [CompareCell(format_value(value, metric["unit"]), format_delta(found, metric["unit"]),
                             found["direction"] if found else "")
                 for value, found in zip(metric["values"], metric["deltas"])]
        rows.append(CompareRow(metric["label"], cells))
    drawn = []
    for key, title in (("steady_mean_ns", "steady mean per frame (ms)"), ("first_frame_ns", "first frame (ms)"),
                       ("cores_busy", "cores busy")):
        metric = next(m for m in document["metrics"] if m["key"] == key)
        pairs = [(label, value) for label, value in zip(labels, metric["values"]) if value is not None]
        if not pairs:
            continue
        scale = 1e6 if metric["unit"] == "ns" else 1.0
        fmt = "{:.2f} ms" if metric["unit"] == "ns" else "{:.2f}"
        bars = [(label, value / scale, f"{label}: {fmt.format(value / scale)}") for label, value in pairs]
        drawn.append((title, charts.hbars(f"compare-{key}", bars, value_format=fmt)))
    missing = [f"{v['label']}: {v['analysis_error'] or 'no frames in this run'}" for v in document["variants"]
               if v["values"]["steady_mean_ns"] is None]
    return ComparePage(" vs ".join(labels), labels, rows, drawn, document["variants"], missing)
