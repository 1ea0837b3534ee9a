"""The figures a study, a fleet, the results database and the gate keep of each run: from its analysis
(summary.json) and from what the app's output parser found in app.stdout.log. Pure over the run folder's
files."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..documents.run import read_run_or_none
from ..documents.shares import SHARES
from ..documents.study import MetricFigures
from ..documents.summary import Summary, read_summary
from ..errors import ParseError, UsageError
from ..parsers import parse

SHARE_PREFIX = "share_"


def share_metric(name: str) -> str:
    """The metric of a share's time per frame: 'share_display_ms'."""
    return f"{SHARE_PREFIX}{name}_ms"


# name: (unit, which way is faster: "lower", "higher" or None when neither)
REPORT_METRICS: dict[str, tuple[str, str | None]] = {
    "first_frame_ms": ("ms", "lower"),
    "steady_mean_ms": ("ms", "lower"),
    "steady_p90_ms": ("ms", "lower"),
    "frames_per_s": ("frames/s", "higher"),
    "cores_busy": ("cores", None),
    "gpu_ms_per_frame": ("ms", "lower"),
    "iteration_mean_ms": ("ms", "lower"),   # a CUDA or TensorRT run's steady iterations (its steady_mean_ms)
    "gpu_busy_pct": ("%", None),            # the CUDA GPU's busy time over the window
    # the focus thread's time per frame by what it waits for (analysis/intervals/attribution.py)
    **{share_metric(name): ("ms", "lower") for name in SHARES},
}
FASTER_WHEN_UNIT = {"ms": "lower", "s": "lower", "qps": "higher", "frames/s": "higher"}


@dataclass(frozen=True)
class RunMetrics:
    values: dict[str, float]
    units: dict[str, tuple[str, str | None]]
    top_function: str | None = None
    verdict: str | None = None
    app_failure: str | None = None
    notes: list[str] = field(default_factory=list)


def run_metrics(run_dir: Path, parser: str | None) -> RunMetrics:
    summary = _summary_of(run_dir)
    values: dict[str, float] = {}
    steady = summary.steady
    for name, raw in (("first_frame_ms", summary.first_frame_ns),
                      ("steady_mean_ms", steady.mean_ns if steady else None),
                      ("steady_p90_ms", steady.p90_ns if steady else None)):
        if raw is not None:
            values[name] = raw / 1e6
    if steady is not None and steady.mean_ns:
        values["frames_per_s"] = 1e9 / steady.mean_ns
        if summary.frames is not None and summary.frames.unit == "iteration":
            values["iteration_mean_ms"] = steady.mean_ns / 1e6
    if summary.gpu_work is not None:
        values["gpu_busy_pct"] = summary.gpu_work.busy_pct
    busy = summary.cores_busy
    if busy is not None:
        values["cores_busy"] = busy
    gpu = summary.gpu_ns_per_frame
    if gpu is not None:
        values["gpu_ms_per_frame"] = gpu / 1e6
    found = summary.attribution
    for name in SHARES if found is not None and found.frame_count else ():
        ms = found.ms_per_frame(name) if found is not None else None
        if ms is not None:
            values[share_metric(name)] = ms
    units = {name: REPORT_METRICS[name] for name in values}
    notes: list[str] = []
    failure = None
    if parser:
        text = "".join((run_dir / name).read_text(errors="replace") for name in ("app.stdout.log", "app.stderr.log")
                       if (run_dir / name).is_file())
        try:
            parsed = parse(parser, text, "the app's output")
        except ParseError as exc:
            notes.append(_missing_figures(exc, run_dir))
        else:
            failure = parsed.failure
            for name, figure in parsed.figures.items():
                values[f"app.{name}"] = figure.value
                units[f"app.{name}"] = (figure.unit, FASTER_WHEN_UNIT.get(figure.unit))
    return RunMetrics(values, units, summary.top_function, summary.verdict_kind, failure, notes)


def _summary_of(run_dir: Path) -> Summary:
    """The run's summary; an empty one when it has none or it cannot be read (no figures, no error: the
    run's own status says why)."""
    try:
        return read_summary(run_dir) or Summary()
    except UsageError:
        return Summary()


def _missing_figures(exc: ParseError, run_dir: Path) -> str:
    """Why a run has none of its app's figures; an app stopped at its duration_s never printed them."""
    run = read_run_or_none(run_dir)
    ended = run.app_ending if run else ""
    if ended.startswith("stopped by the agent"):
        return (f"{exc.message}: the app was {ended}, before it printed its figures; give it less work or a longer "
                f"duration_s")
    return exc.message


def metric_figures(values: list[float], rounds: list[float | None], unit: str,
                   faster_when: str | None) -> MetricFigures:
    """A metric over several runs (a study cell's, a repeated variant's in compare): the values, their median and its
    95 % interval (stats.estimates), each round's value, its unit and which way is better. ValueError without a
    finite value."""
    from ..stats.estimates import estimate  # scipy loads only where figures over runs are made
    found = estimate(values)
    return MetricFigures(list(found.values), found.median, list(found.ci95), len(found.values), rounds, unit,
                         faster_when)
