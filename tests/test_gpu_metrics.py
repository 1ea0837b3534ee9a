"""GPU hardware metrics per frame. No public export with GPU_METRICS rows was found (none from a Jetson at all):
these tests add the two tables, as NVIDIA's exporter documents them for nsys 2023.4 and later, to the real
es2gears export, with metric names a published gb20x/GA107 export carries (see tests/data/nsys/README.md),
and check the per-frame means against plain loops."""
from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest
from browser import assert_clean, open_page

from orchestrator.analysis import analyze_report
from orchestrator.analysis.analyzers.gpu_metrics import as_shown, metric_unit
from orchestrator.report import write_report

# the exporter's DDL (Exporter data schema, nsys 2024): GPU_METRICS and TARGET_INFO_GPU_METRICS
DDL = """
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
                                      metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL,
                          value INTEGER NOT NULL);
"""
GPU0 = (1 << 48) + (1 << 32)  # typeId: its low byte is the GPU
NAMES = {0: "GPC Clock Frequency [MHz]", 7: "SMs Active [Throughput %]", 17: "Compute Warps in Flight [Avg]",
         19: "DRAM Read Bandwidth [Throughput %]"}
PERIOD_NS = 100_000  # 10 kHz, nsys's default


@pytest.fixture(scope="module")
def sampled(export, tmp_path_factory):
    """es2gears with 10 kHz of metrics over its whole capture: SMs active rises with time, the clock is in
    Hz as nsys 2025 writes it."""
    path = tmp_path_factory.mktemp("metrics") / "es2gears-metrics.sqlite"
    shutil.copy(export("es2gears-opengl"), path)
    with sqlite3.connect(path) as conn:
        [[low, high]] = conn.execute("SELECT min(start), max(end) FROM OPENGL_API").fetchall()
        conn.executescript(DDL)
        conn.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, ?, 'GA10B', ?, ?)",
                         [(GPU0, GPU0, m, n) for m, n in NAMES.items()])
        times = np.arange(low, high, PERIOD_NS)
        series = {0: np.full(len(times), 1_300_500_000), 7: (times - low) * 100 // (high - low),
                  17: np.full(len(times), 40), 19: np.arange(len(times)) % 7}
        conn.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)",
                         [(int(t), GPU0, m, int(v[i])) for m, v in series.items() for i, t in enumerate(times)])
    return path, times, series


def test_metrics_are_averaged_per_frame_as_a_plain_loop_does(sampled):
    path, times, series = sampled
    summary = analyze_report(path).as_json()
    section, frames = summary["gpu_metrics"], summary["frames"]
    assert section["gpus"] == [0] and section["left_out"] == ["Compute Warps in Flight [Avg]"]
    by_name = {m["name"]: m for m in section["metrics"]}
    assert set(by_name) == {"GPC Clock Frequency [MHz]", "SMs Active [Throughput %]",
                            "DRAM Read Bandwidth [Throughput %]"}
    starts = frames["frame_starts_ns"]
    ends = starts[1:] + [starts[-1] + frames["per_frame_ns"][-1]]
    active = by_name["SMs Active [Throughput %]"]
    expected = []
    for a, b in zip(starts, ends):
        inside = [v for t, v in zip(times, series[7]) if a <= t < b]
        expected.append(sum(inside) / len(inside) if inside else None)
    assert active["per_frame_mean"] == pytest.approx(expected)
    window = summary["window"]
    in_window = [v for t, v in zip(times, series[7]) if window["start_ns"] <= t < window["end_ns"]]
    assert (active["unit"], active["samples"]) == ("%", len(in_window))
    assert active["mean"] == pytest.approx(np.mean(in_window))
    steady = [m for m in expected[frames["count"] - frames["steady"]["count"]:] if m is not None]
    assert active["steady_median"] == pytest.approx(np.median(steady))
    clock = by_name["GPC Clock Frequency [MHz]"]
    assert (clock["unit"], clock["mean"]) == ("MHz", pytest.approx(1300.5))  # nsys 2025's Hz, read as MHz


def test_units_kept_and_clocks_read_in_hz_or_mhz():
    assert [metric_unit(n) for n in NAMES.values()] == ["MHz", "%", None, "%"]
    assert metric_unit("SM Active") is None  # no unit said: not guessed
    assert as_shown(np.array([1300]), "MHz").tolist() == [1300.0]
    # a clock above 2**31 Hz wraps negative as a signed 32-bit value
    assert as_shown(np.array([2_400_000_000 - 2**32]), "MHz").tolist() == [2400.0]


def test_a_report_without_metrics_has_none(export):
    assert analyze_report(export("es2gears-opengl")).as_json()["gpu_metrics"] is None


def test_the_page_shows_each_metric_per_steady_frame(sampled, browser, tmp_path):
    path = sampled[0]
    summary = analyze_report(path).as_json()
    page_path = write_report(path, tmp_path / "metrics.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    shown = opened.page.locator("#gpu-metrics + dl").inner_text()
    active = next(m for m in summary["gpu_metrics"]["metrics"] if m["name"] == "SMs Active [Throughput %]")
    assert f"{active['steady_median']:.1f} % per steady frame (median), {active['mean']:.1f} % over the window " \
           f"({active['samples']:,} samples)" in shown
    assert "1300.5 MHz over the window" in shown and "Compute Warps in Flight [Avg]" in shown
