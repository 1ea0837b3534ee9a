"""Variants side by side: the A/B table people type by hand, with deltas against the first run. Pure.

``comparison(runs)`` is the JSON document (``orchestrate compare --json``); ``comparison_page`` is what the
compare page draws from it.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

from ..documents.shares import SHARE_TITLES_OF_RUNS, SHARES
from ..documents.study import MetricFigures
from ..documents.summary import Summary
from ..errors import UsageError
from ..figures.run_metrics import metric_figures
from ..stats.gate import NO_BASELINE
from . import charts
from .charts import Chart
from .compare_work import WORK_METRICS, work_comparison, work_values
from .run_data import RunData
from .units import format_ms

COMPARE_VERSION = 1
SAME_WITHIN_PCT = 1.0  # a change smaller than this is "same": run-to-run noise on a board is larger
TOP_FUNCTIONS = 5

# key, label, unit, which way is better ("lower", "higher" or None when neither is); a label's {unit} is what the
# compared runs' frames are: "frame", or "iteration" (CUDA or TensorRT runs')
METRICS = (("first_frame_ns", "first {unit} (first inference)", "ns", "lower"),
           ("steady_mean_ns", "steady mean", "ns", "lower"),
           ("p50_ns", "steady p50", "ns", "lower"),
           ("p90_ns", "steady p90", "ns", "lower"),
           ("p99_ns", "steady p99", "ns", "lower"),
           ("frames_per_s", "{unit}s per second", "1/s", "higher"),
           ("frames", "{unit}s captured", "count", None),
           ("cores_busy", "cores busy", "cores", None))
# the focus thread's time per frame by what it waits for: which share a change came from
SHARE_METRICS = tuple((f"share_{name}_ns", f"per {{unit}}: {SHARE_TITLES_OF_RUNS[name]}", "ns", "lower")
                      for name in SHARES)


def compared_unit(variants: list[dict]) -> str:
    """What the compared runs' frames are: "iteration" when every run that has them counts iterations, else
    "frame" (a CUDA run against an OpenGL one is said not comparable on its own line)."""
    units = {v["frames_unit"] for v in variants if v.get("frames_unit")}
    return "iteration" if units == {"iteration"} else "frame"


def variant_labels(runs: list[RunData], given: list[str] | None = None) -> list[str]:
    """The user's labels, else app names when they differ, else the words of the commands that differ,
    else the run folders' names."""
    if given:
        if len(given) != len(runs):
            raise UsageError(f"{len(given)} labels for {len(runs)} runs", "give one --label per run, in the same order")
        return list(given)
    apps = [(run.document.app.name if run.document else None) or run.source.stem for run in runs]
    if len(set(apps)) == len(apps):
        return apps
    commands = [run.document.app.command if run.document else [] for run in runs]
    common = set.intersection(*(set(c) for c in commands)) if commands else set()
    differing = [" ".join(shlex.quote(w) for w in c if w not in common) for c in commands]
    if all(differing) and len(set(differing)) == len(differing):
        return differing
    return [run.source.name for run in runs]


def variant(label: str, run: RunData) -> dict:
    summary, document = run.summary or Summary(), run.document
    frames, steady, verdict = summary.frames, summary.steady, summary.verdict
    hot = summary.self_hotspots
    return {
        "label": label, "source": str(run.source),
        "app": (document.app.name or None) if document else None,
        "target": document.target.name if document and document.target.name != "unknown" else None,
        "status": document.status if document else None, "analysis_error": run.analysis_error,
        "frames_source": frames.source if frames else None,
        "frames_unit": frames.unit if frames else None,
        "values": {
            "first_frame_ns": frames.first_ns if frames else None,
            "steady_mean_ns": steady.mean_ns if steady else None, "p50_ns": steady.p50_ns if steady else None,
            "p90_ns": steady.p90_ns if steady else None, "p99_ns": steady.p99_ns if steady else None,
            "frames_per_s": 1e9 / steady.mean_ns if steady and steady.mean_ns else None,
            "frames": frames.count if frames else None,
            "cores_busy": summary.cores_busy,
            **{f"share_{name}_ns": _per_frame_ns(summary, name) for name in SHARES},
            **work_values(summary),
        },
        "top_functions": [{"symbol": h.symbol, "pct": h.pct} for h in hot[:TOP_FUNCTIONS]],
        "verdict": {"kind": verdict.kind, "summary": verdict.summary} if verdict else None,
    }


def _per_frame_ns(summary: Summary, name: str) -> float | None:
    """A share of the focus thread's time in a frame, on average (None without frames or the split)."""
    found = summary.attribution
    ms = found.ms_per_frame(name) if found is not None else None
    return None if ms is None else ms * 1e6


def share_changes(variants: list[dict], unit: str = "frame") -> list[dict]:
    """Per variant against the first: which share of the frame's (iteration's: ``unit``) time changed the most,
    and by how much."""
    base = variants[0]["values"]
    found = []
    for variant in variants[1:]:
        values = variant["values"]
        changes = {name: values[f"share_{name}_ns"] - base[f"share_{name}_ns"] for name in SHARES
                   if values[f"share_{name}_ns"] is not None and base[f"share_{name}_ns"] is not None}
        if not changes:
            continue
        name = max(changes, key=lambda n: (abs(changes[n]), -SHARES.index(n)))
        frame = (values["steady_mean_ns"] - base["steady_mean_ns"]
                 if values["steady_mean_ns"] is not None and base["steady_mean_ns"] is not None else None)
        found.append({"label": variant["label"], "share": name, "title": SHARE_TITLES_OF_RUNS[name],
                      "change_ns": changes[name], "frame_change_ns": frame, "unit": unit})
    return found


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
    names = variant_labels(runs, labels)
    variants = [variant(label, run) for label, run in zip(names, runs)]
    base, counted = variants[0]["values"], compared_unit(variants)
    metrics = []
    for key, label, unit, better in METRICS + WORK_METRICS + SHARE_METRICS:
        values = [v["values"][key] for v in variants]
        metrics.append({"key": key, "label": label.format(unit=counted), "unit": unit, "better": better,
                        "values": values, "deltas": [None] + [delta(base[key], value, better) for value in values[1:]]})
    summaries = [run.summary or Summary() for run in runs]
    return {"compare_version": COMPARE_VERSION, "baseline": variants[0]["label"], "variants": variants,
            "metrics": metrics, "same_within_pct": SAME_WITHIN_PCT, "repeats": repeats(runs, variants, labels),
            "share_changes": share_changes(variants, counted),
            "work": work_comparison(summaries, names, SAME_WITHIN_PCT)}


def repeat_key(run: RunData, given: str | None) -> str:
    """Runs are repeats of one variant when the user gave them the same label, or when they ran the same
    app (command and environment) on the same target."""
    if given is not None:
        return "label:" + given
    document = run.document
    if document is None or not document.app.command:
        return "source:" + str(run.source)
    return "app:" + json.dumps([document.app.command, document.app.env, document.target.name])


def _started(run: RunData) -> str:
    return run.document.started_at if run.document else ""


def repeats(runs: list[RunData], variants: list[dict], given: list[str] | None) -> dict | None:
    """When some variant was run more than once: each variant's distribution (median and 95 % interval per
    metric) and, against the first variant, the verdict of the study's statistics instead of one delta: the
    k-th run of each variant (by start time) is one round, as in a study whose cells take turns."""
    from ..stats.estimates import compare_rounds
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(repeat_key(run, given[i] if given else None), []).append(i)
    if all(len(members) == 1 for members in groups.values()):
        return None
    members = [sorted(found, key=lambda i: _started(runs[i])) for found in groups.values()]
    labels = variant_labels([runs[m[0]] for m in members], [given[m[0]] for m in members] if given else None)
    figures: list[dict[str, MetricFigures]] = []  # each group's, by metric
    for indices in members:
        metrics = {}
        for key, _, unit, better in METRICS:
            values = [variants[i]["values"][key] for i in indices if variants[i]["values"][key] is not None]
            if values:
                metrics[key] = metric_figures(values, [variants[i]["values"][key] for i in indices], unit, better)
        figures.append(metrics)
    verdicts = []
    counted = compared_unit(variants)
    for label, metrics in zip(labels[1:], figures[1:]):
        for key, title, _, better in METRICS:
            a, b = figures[0].get(key), metrics.get(key)
            if a is not None and b is not None and key != "frames":
                diff = compare_rounds(*a.paired_with(b), better)
                verdicts.append({"metric": key, "title": title.format(unit=counted), "base": labels[0],
                                 "other": label, **diff.as_json()})
    found = [{"label": label, "runs": [variants[i]["label"] for i in indices],
              "metrics": {key: metric.as_json() for key, metric in metrics.items()}}
             for label, indices, metrics in zip(labels, members, figures)]
    return {"groups": found, "verdicts": verdicts}


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
class RepeatRow:
    label: str
    runs: int
    cells: list[str]  # per metric: median and interval


@dataclass(frozen=True)
class ComparePage:
    title: str
    labels: list[str]
    rows: list[CompareRow]
    charts: list[tuple[str, Chart]]
    variants: list[dict]
    missing: list[str]
    repeat_titles: list[str]
    repeat_rows: list[RepeatRow]
    repeat_verdicts: list[dict]
    changes: list[str]  # per variant: which share of the frame's time changed the most
    work: list[str] = field(default_factory=list)  # per variant: the verdict on its iterations, the kernels that moved
    gate: list[str] = field(default_factory=list)  # per variant and metric: the gate's verdict, or why there is none


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
    drawn, counted = [], compared_unit(document["variants"])
    for key, title in (("steady_mean_ns", f"steady mean per {counted} (ms)"),
                       ("first_frame_ns", f"first {counted} (ms)"), ("cores_busy", "cores busy")):
        metric = next(m for m in document["metrics"] if m["key"] == key)
        pairs = [(label, value) for label, value in zip(labels, metric["values"]) if value is not None]
        if not pairs:
            continue
        scale = 1e6 if metric["unit"] == "ns" else 1.0
        fmt = "{:.2f} ms" if metric["unit"] == "ns" else "{:.2f}"
        bars = [(label, value / scale, f"{label}: {fmt.format(value / scale)}") for label, value in pairs]
        drawn.append((title, charts.hbars(f"compare-{key}", bars, value_format=fmt)))
    missing = [f"{v['label']}: {v['analysis_error'] or 'no frames or iterations in this run'}"
               for v in document["variants"] if v["values"]["steady_mean_ns"] is None]
    found = document.get("repeats") or {"groups": [], "verdicts": []}
    shown = [(key, title.format(unit=counted), unit) for key, title, unit, _ in METRICS
             if key != "frames" and any(key in g["metrics"] for g in found["groups"])]
    repeat_rows = [RepeatRow(g["label"], len(g["runs"]), [_estimate_text(g["metrics"].get(key), unit)
                                                          for key, _, unit in shown]) for g in found["groups"]]
    title = " vs ".join(g["label"] for g in found["groups"]) if found["groups"] else " vs ".join(labels)
    rows = [row for row, metric in zip(rows, document["metrics"])  # shares no run has stay out of the table
            if not metric["key"].startswith("share_") or any(v is not None and v > 0 for v in metric["values"])]
    rows = [row for row, metric in zip(rows, document["metrics"])  # nor the GPU's figures no run has
            if metric["key"] not in WORK_KEYS or any(v is not None for v in metric["values"])]
    return ComparePage(title, labels, rows, drawn, document["variants"], missing, [t for _, t, _ in shown],
                       repeat_rows, found["verdicts"], [change_words(c) for c in document.get("share_changes") or []],
                       work_lines((document.get("work") or {}).get("variants") or []), gate_lines(document.get("gate")))


WORK_KEYS = {key for key, *_ in WORK_METRICS}


def work_lines(variants: list[dict]) -> list[str]:
    """Per variant: why it cannot be compared, or the verdict on its steady iterations (frames) and the kernel
    functions that moved most."""
    lines = []
    for found in variants:
        if found.get("not_comparable"):
            lines.append(found["not_comparable"])
            continue
        verdict = found.get("verdict")
        said = f"{found['label']}: steady {found['unit']}s {verdict['verdict']}, {verdict['reason']}" if verdict \
            else f"{found['label']}: no steady {found['unit']}s on both sides to judge by"
        moved = [row for row in found.get("kernel_movers") or [] if row["direction"] != "same"][:3]
        if moved:
            said += "; kernels that moved most: " + ", ".join(f"{row['name']} ({_moved(row)})" for row in moved)
        elif found.get("kernels"):
            said += f"; all {found['kernels']} kernel functions unchanged (within {SAME_WITHIN_PCT:g} %)"
        lines.append(said)
    return lines


def gate_lines(gate: dict | None) -> list[str]:
    """Per variant and metric: the gate's verdict against the baseline run's jobs, else why there is none (the
    results layer's compare_gate adds ``gate`` to the document); nothing without a results database."""
    if not gate or not gate.get("database"):
        return []
    if gate.get("reason"):
        return [f"the gate: {gate['reason']}"]
    where = f" on {gate['branch']}" if gate.get("branch") else ""
    lines = []
    for found in gate.get("verdicts") or []:
        said = found["note"]
        if found["verdict"] == NO_BASELINE:
            said = f"the gate has no baseline{where} yet: {said}"
        elif found["verdict"]:
            said = f"the gate says {found['verdict']} against {found['jobs']} jobs of the baseline{where}: {said}"
        lines.append(f"{found['label']}, {found['metric']}: {said}")
    return lines


def _moved(row: dict) -> str:
    return format_delta({"change": row["change_ns"], "pct": row["pct"], "direction": row["direction"]}, "ns")


def change_words(change: dict) -> str:
    """'2 threads: the frame is 1.20 ms shorter; running on a CPU changed most (−1.10 ms per frame)'"""
    frame, unit = change.get("frame_change_ns"), change.get("unit") or "frame"
    moved = "" if frame is None else f"the {unit} is {abs(frame) / 1e6:.2f} ms {'longer' if frame > 0 else 'shorter'}; "
    sign = "+" if change["change_ns"] > 0 else "−"
    return f"{change['label']}: {moved}{change['title']} changed most ({sign}{abs(change['change_ns']) / 1e6:.2f} ms " \
           f"per {unit})"


def _estimate_text(metric: dict | None, unit: str) -> str:
    if metric is None:
        return "–"
    low, high = metric["ci95"]
    return f"{format_value(metric['median'], unit)} [{format_value(low, unit)}–{format_value(high, unit)}]"
