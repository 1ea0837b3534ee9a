"""The report's pure parts: chart geometry, decimation, the call tree as a page, tables, comparison deltas,
the header's facts and the templates' escaping. Fast: no browser, no nsys."""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
from jinja2 import UndefinedError

from orchestrator.analysis.analyzers.timeline import Event, representative_frame, stack_levels
from orchestrator.documents.run import RunDocument
from orchestrator.documents.shares import SHARES
from orchestrator.documents.summary import Summary
from orchestrator.documents.summary_sections import ApiRow, CallTreeNode
from orchestrator.errors import UsageError
from orchestrator.report import charts, frame_chart
from orchestrator.report.compare import comparison, delta, variant_labels
from orchestrator.report.header_part import clock_words, header_section
from orchestrator.report.page import report_page, tree_items
from orchestrator.report.render import environment, render
from orchestrator.report.run_data import RunData
from orchestrator.report.tables import SHOWN_ROWS, api_table, cell
from orchestrator.report.units import format_ms, format_ns
from remote_agent.messages import CurrentClocks


def test_decimation_keeps_the_extremes_of_every_stretch():
    values = np.sin(np.arange(50_000) / 500.0)
    values[12_345] = 40.0
    values[40_001] = -40.0
    kept = charts.decimate(values, 2000)
    assert len(kept) <= 2000 and kept[0] == 0 and np.all(np.diff(kept) > 0)
    assert {12_345, 40_001} <= set(kept.tolist())
    assert charts.decimate(values[:1500], 2000).tolist() == list(range(1500))


@pytest.mark.parametrize("low, high, expected", [(0, 20.6, [0, 5, 10, 15, 20]), (13.9, 20.1, [14, 16, 18, 20]),
                                                 (0, 0.93, [0, 0.2, 0.4, 0.6, 0.8])])
def test_nice_ticks(low, high, expected):
    assert charts.nice_ticks(low, high) == expected


def test_frame_series_draws_one_point_per_frame_and_marks_warmup():
    per_frame = [50_000_000, 30_000_000, 25_000_000] + [10_000_000] * 97
    chart = frame_chart.frame_series(per_frame, 2, {"p50": 10e6, "p90": 10e6, "p99": 10e6})
    assert chart.marks == 100 and len(chart.polyline.split()) == 100
    warmup = [r for r in chart.rects if r.cls == "warmup"]
    assert len(warmup) == 1 and warmup[0].tip == "warm-up: frames 1 to 2"
    first = [r for r in chart.rects if r.cls == "first"][0]
    assert first.tip == "first frame: 50.0 ms, above the scale"
    x, y = map(float, chart.polyline.split()[0].split(","))
    assert y < float(chart.polyline.split()[-1].split(",")[1])  # the slow first frame is drawn higher


def test_frame_series_fits_the_steady_frames_and_marks_a_slow_first_frame_apart():
    """The seed's first inference is ten times a steady one: scaled to it, the steady frames would be flat."""
    rng = np.random.default_rng(3)
    steady = rng.normal(16.6e6, 0.4e6, 400)
    per_frame = [74_500_000] + steady.astype(int).tolist()
    levels = {"p50": float(np.median(steady)), "p90": float(np.quantile(steady, 0.9)),
              "p99": float(np.quantile(steady, 0.99))}
    chart = frame_chart.frame_series(per_frame, 0, levels)
    ticks = [float(t.text) for t in chart.texts if t.cls == "axis" and t.anchor == "end" and t.x < 56]
    assert max(ticks) < 25  # ms up to the steady frames, not to 74.5
    ys = [float(p.split(",")[1]) for p in chart.polyline.split()[1:]]
    assert min(ys) > 14 + 5  # no steady frame at the top edge (the plot starts at 14)
    assert min(ys) < 14 + 0.1 * 216  # the slowest steady frame reaches near the top: the scale is theirs
    assert any(t.text == "first frame 74.5 ms ↑" for t in chart.texts)
    labels = sorted((t for t in chart.texts if t.cls.startswith("level-label")), key=lambda t: t.y)
    assert [t.text.split()[0] for t in labels] == ["p99", "p90", "p50"]
    assert all(b.y - a.y >= frame_chart.LABEL_GAP for a, b in zip(labels, labels[1:]))  # never on top of each other
    assert all(t.x >= charts.WIDTH - 96 for t in labels)  # right of the plot: no data under them


def test_frame_series_takes_the_unit_its_values_read_in():
    per_frame = [40_000] + [2_000 + k for k in range(50)]  # the GPU's time per frame of a light app: about 2 us
    chart = frame_chart.frame_series(per_frame, 0, {"p50": 2_025.0}, name="gpu-frame-series")
    assert [t.text for t in chart.texts if t.x < 20] == ["µs"]
    assert [t.text for t in chart.texts if t.cls.startswith("level-label")] == ["p50 2.02 µs"]
    assert format_ms(2_025) == "2.02 µs" and format_ms(0) == "0.00 ms" and format_ms(150_000) == "0.15 ms"


def test_spread_keeps_labels_apart_and_in_order():
    assert frame_chart.spread([100.0, 101.0, 50.0, 102.0]) == [100.0, 112.0, 50.0, 124.0]
    assert frame_chart.spread([5.0], low=20.0) == [20.0]


def test_histogram_counts_every_frame_and_folds_far_hitches_into_the_last_bar():
    rng = np.random.default_rng(1)
    frames = np.r_[rng.normal(16e6, 3e5, 5000), [400e6] * 3]
    chart = charts.histogram(frames)
    assert sum(r.count for r in chart.rects) == len(frames)
    assert all(r.h >= 2.0 for r in chart.rects)
    last = max(chart.rects, key=lambda r: r.x)
    edge = np.quantile(frames, 0.995) / 1e6
    assert f"{(frames / 1e6 > edge).sum()} of them above {edge:.2f} ms (up to 400.00 ms)" in last.tip
    assert len(chart.rects) > 10  # the far hitches did not squeeze every other frame into one bar
    assert charts.histogram([]).marks == 0


def test_hbars_scale_to_the_given_maximum():
    chart = charts.hbars("cores", [("CPU 0", 50.0, ""), ("CPU 1", 100.0, "")], 100.0)
    bars = [r for r in chart.rects if r.cls.startswith("mark")]
    assert bars[1].w == pytest.approx(2 * bars[0].w)
    assert [t.text for t in chart.texts] == ["CPU 0", "50.0 %", "CPU 1", "100.0 %"]


TREE = {"symbol": "[all samples]", "module": "", "samples": 100, "pct": 100.0, "children": [
    {"symbol": "main", "module": "app", "samples": 80, "pct": 80.0, "children": [
        {"symbol": "infer", "module": "app", "samples": 60, "pct": 60.0, "children": [
            {"symbol": "gemm", "module": "xnn", "samples": 50, "pct": 50.0, "children": []}]},
        {"symbol": "nms", "module": "app", "samples": 20, "pct": 20.0, "children": []}]},
    {"symbol": "worker", "module": "app", "samples": 20, "pct": 20.0, "children": []}]}


def test_flame_graph_places_callees_under_their_callers():
    chart = charts.flame_graph(CallTreeNode.from_json(TREE))
    by_name = {r.tip.split(" ")[0].rstrip(":"): r for r in chart.rects}
    assert chart.marks == 6
    assert by_name["main"].y == by_name["worker"].y == by_name["[all"].y + 17
    assert by_name["gemm"].x == by_name["infer"].x == by_name["main"].x == 0
    assert by_name["nms"].x == pytest.approx(charts.WIDTH * 0.6)
    assert by_name["worker"].x == pytest.approx(charts.WIDTH * 0.8)
    assert by_name["gemm"].w == pytest.approx(charts.WIDTH * 0.5 - 0.5)


def test_tree_items_close_every_branch_once():
    items = tree_items(CallTreeNode.from_json(TREE))
    assert [(i.depth, i.symbol) for i in items] == [(0, "[all samples]"), (1, "main"), (2, "infer"), (3, "gemm"),
                                                    (2, "nms"), (1, "worker")]
    assert [i.closes for i in items] == [0, 0, 0, 1, 1, 1]   # infer ends after gemm; main after nms; root last
    assert sum(i.closes for i in items) == sum(1 for i in items if not i.is_leaf)
    assert [i.opened for i in items] == [True, True, True, True, True, True]


def test_deep_trees_do_not_recurse():
    tree = CallTreeNode(symbol="leaf", samples=1, pct=100.0)
    for depth in range(3000):
        tree = CallTreeNode(symbol=f"f{depth}", samples=1, pct=100.0, children=[tree])
    items = tree_items(tree)
    assert len(items) == 3001 and items[-1].closes == 3000
    assert charts.flame_graph(tree, max_depth=80).marks == 81


def test_nested_events_stack_into_levels():
    events = [Event("t", "nvtx", "frame", 0, 100), Event("t", "nvtx", "detect", 0, 40),
              Event("t", "nvtx", "nms", 40, 50), Event("t", "nvtx", "landmark", 50, 100),
              Event("t", "nvtx", "next", 100, 120)]
    assert [(e["name"], e["level"]) for e in stack_levels(events)] == [
        ("frame", 0), ("detect", 1), ("nms", 1), ("landmark", 1), ("next", 0)]


def test_timeline_rows_follow_kinds_and_levels():
    timeline = {"start_ns": 1000, "end_ns": 2000, "lanes": [{"name": "app (1)", "events": [
        {"kind": "nvtx", "name": "frame", "start_ns": 900, "end_ns": 2100, "level": 0},
        {"kind": "opengl", "name": "eglSwapBuffers", "start_ns": 1500, "end_ns": 2000, "level": 0}]}]}
    chart = charts.timeline_chart(timeline)
    frame, swap = [r for r in chart.rects if r.cls.startswith("mark")]
    assert frame.x == 190 and frame.x + frame.w == pytest.approx(charts.WIDTH - 8)  # clipped to the span
    assert swap.y == frame.y + 14 and swap.x == pytest.approx(190 + (charts.WIDTH - 198) / 2)
    assert swap.tip == "eglSwapBuffers (opengl, 500 ns)"


def test_representative_frame_is_the_steady_one_nearest_the_median():
    assert representative_frame([90, 50, 12, 10, 11, 30], 2, 11.0) == 4
    assert representative_frame([90], 1, 90.0) == 0
    # a frame whose GPU work nsys did not wholly record is shown only when no other steady frame is there
    assert representative_frame([90, 50, 12, 10, 11, 30], 2, 11.5, incomplete=[4, 5]) == 2
    assert representative_frame([90, 50, 11], 2, 11.0, incomplete=[2]) == 2


def test_cells_keep_the_raw_number_and_show_units():
    assert cell("ns", 1234567.5).text == "1.23 ms" and cell("ns", 1234567.5).value == "1234567.5"
    assert cell("pct", 99.37894953407253).value == "99.37894953407253"
    assert cell("path", "/usr/lib/libc.so.6").text == "libc.so.6"
    assert cell("count", None).text == "–"
    rows = [{"name": f"call{i}", "calls": i, "total_ns": i * 10, "avg_ns": 10.0, "med_ns": 10.0, "min_ns": 10,
             "max_ns": 10, "std_ns": None, "pct": 1.0} for i in range(40)]
    table = api_table("osrt", [ApiRow.from_json(row) for row in rows])
    assert [c.key for c in table.columns][:3] == ["name", "calls", "pct"]
    assert table.shown == SHOWN_ROWS and len(table.hidden_rows) == 40 - SHOWN_ROWS


@pytest.mark.parametrize("ns, text", [(999, "999 ns"), (1500, "1.50 µs"), (81_000_000, "81.0 ms"),
                                      (165_400_000, "165 ms"), (2_500_000_000, "2.50 s")])
def test_format_ns(ns, text):
    assert format_ns(ns) == text
    assert format_ms(81_000_000) == "81.00 ms"


def test_deltas_say_which_way_things_went():
    assert delta(165e6, 81e6, "lower") == {"change": -84e6, "pct": pytest.approx(-50.909, abs=1e-3),
                                           "direction": "better"}
    assert delta(81e6, 165e6, "lower")["direction"] == "worse"
    assert delta(100.0, 100.5, "lower")["direction"] == "same"
    assert delta(1.0, 1.75, None)["direction"] == "more"
    assert delta(30.0, 48.0, "higher")["direction"] == "better"
    assert delta(None, 3.0, "lower") is None


def _run(name: str, command: list[str], mean: float | None) -> RunData:
    frames = None if mean is None else {"count": 100, "first_ns": 2 * mean, "source": "frame",
                                        "steady": {"mean_ns": mean, "p50_ns": mean, "p90_ns": mean, "p99_ns": mean}}
    summary = Summary.from_json({"frames": frames,
                                 "cores": [{"cpu": 0, "busy_pct": 100.0}, {"cpu": 1, "busy_pct": 50.0}],
                                 "threads": None, "hotspots": None,
                                 "verdict": {"kind": "cpu_bound", "summary": "busy"}})
    return RunData(Path(f"runs/{name}"), summary, as_run({"app": {"name": "pose", "command": command}}), None, None,
                   None, None, None)


def as_run(sections: dict) -> RunDocument:
    """run.json's sections as a run folder's reader gives them."""
    return RunDocument.from_json(sections)


def test_labels_come_from_what_differs_between_the_commands():
    runs = [_run("a", ["python3", "pose.py", "--threads", "1"], 30e6),
            _run("b", ["python3", "pose.py", "--threads", "2"], 20e6)]
    assert variant_labels(runs) == ["1", "2"]
    assert variant_labels(runs, ["one", "two"]) == ["one", "two"]
    with pytest.raises(UsageError, match="1 labels for 2 runs"):
        variant_labels(runs, ["one"])
    same = [_run("a", ["x"], 1e6), _run("b", ["x"], 1e6)]
    assert variant_labels(same) == ["a", "b"]


def test_comparison_document_has_values_and_deltas_per_metric():
    document = comparison([_run("a", ["gl", "--cpu"], 165e6), _run("b", ["gl", "--gpu"], 81e6),
                           _run("c", ["gl"], None)])
    assert [v["label"] for v in document["variants"]] == ["a", "b", "c"]  # one command has no word of its own
    steady = next(m for m in document["metrics"] if m["key"] == "steady_mean_ns")
    assert steady["values"] == [165e6, 81e6, None]
    assert steady["deltas"][1]["direction"] == "better" and steady["deltas"][2] is None
    cores = next(m for m in document["metrics"] if m["key"] == "cores_busy")
    assert cores["values"] == [1.5, 1.5, 1.5] and cores["deltas"][1]["direction"] == "same"


JETSON_RECORD = {
    "app": {"name": "gl2posenet", "command": ["./gl2posenet", "--delegate", "gpu"]},
    "target": {"name": "nano01", "address": "root@nano01:22"}, "started_at": "2026-11-30T03:20:51.238030+00:00",
    "facts": {"board": {"model": "NVIDIA Jetson Nano Developer Kit", "l4t": "32.7.1", "jetpack": "4.6.1",
                        "power_mode": {"name": "5W", "id": 1},
                        "clocks": {"cpu_mhz": [921, 921, 1479, 1479], "gpu_mhz": 640}},
              "system": {"os": "Ubuntu 18.04.6 LTS", "kernel": "4.9.253-tegra", "arch": "aarch64"},
              "nsys": {"version": "2021.2.4.12"}},
    "phases": {"connect": 0.5, "capture": 12.0, "pull": 1.5}}


def test_header_has_the_board_facts_and_the_command_that_opens_the_report():
    run = RunData(Path("runs/x"), None, as_run(JETSON_RECORD), None, None, None, "report.nsys-rep", "report.nsys-rep")
    header = header_section(run)
    facts = {f.label: f.value for f in header.facts}
    assert facts["target"] == "nano01 (root@nano01:22)"
    assert facts["board"] == "NVIDIA Jetson Nano Developer Kit"
    assert facts["L4T / JetPack"] == "32.7.1 / 4.6.1" and facts["power mode"] == "5W"
    assert facts["clocks"] == "CPU 921-1479 MHz, GPU 640 MHz"
    assert facts["command"] == "./gl2posenet --delegate gpu" and facts["nsys"] == "2021.2.4.12"
    assert facts["date"] == "2026-11-30 03:20:51 UTC"
    assert facts["run took"] == "14.0 s, 12.0 s of it in nsys (starting, tracing, stopping)"
    assert header.open_command == "nsys-ui report.nsys-rep" and header.title == "gl2posenet on nano01"
    assert clock_words(CurrentClocks(cpu_mhz=[], gpu_mhz=None)) is None and clock_words(None) is None


def test_a_page_without_summary_says_why_in_every_section():
    run = RunData(Path("runs/x"), None, as_run(JETSON_RECORD), None, None, "the export is truncated", None, None)
    page = report_page(run)
    assert page.verdict is None and page.frames is None and page.api_tables == []
    assert set(page.missing) == {"verdict", "frames", "hotspots", "cpu", "run-timeline", "timeline", "api"}
    assert page.missing["frames"] == "the report could not be analysed: the export is truncated"
    assert "the report could not be analysed: the export is truncated" in page.header.problems


def test_templates_escape_names_and_refuse_undefined_names():
    run = RunData(Path("runs/x"), None, as_run({**JETSON_RECORD, "app": {"name": "<b>\"x\"</b>", "command": []}}),
                  None, None, None, None, None)
    page = report_page(run)
    html = render("report.html", page.title, page=page)
    assert "<b>" not in html and "&lt;b&gt;&#34;x&#34;&lt;/b&gt;" in html
    with pytest.raises(UndefinedError):
        environment().from_string("{{ nothing.here }}").render()


def test_the_only_script_allowed_is_the_pages_own():
    run = RunData(Path("runs/x"), None, as_run(JETSON_RECORD), None, None, None, None, None)
    html = render("report.html", "t", page=report_page(run))
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
    assert "http://" not in html and "https://" not in html


def test_compare_says_which_share_of_the_frame_changed_most():
    from orchestrator.report.compare import change_words, share_changes
    base = {"steady_mean_ns": 20e6, **{f"share_{n}_ns": 0.0 for n in SHARES}, "share_cpu_ns": 15e6,
            "share_threads_ns": 5e6}
    other = {**base, "steady_mean_ns": 12e6, "share_cpu_ns": 9e6, "share_threads_ns": 3e6}
    [change] = share_changes([{"label": "1 thread", "values": base}, {"label": "2 threads", "values": other}])
    assert (change["share"], change["change_ns"], change["frame_change_ns"]) == ("cpu", -6e6, -8e6)
    assert change_words(change) == ("2 threads: the frame is 8.00 ms shorter; running on a CPU changed most "
                                    "(−6.00 ms per frame)")
    assert share_changes([{"label": "a", "values": base}, {"label": "b", "values": {**base, **{
        f"share_{n}_ns": None for n in SHARES}}}]) == []  # a run without the split: nothing to say
