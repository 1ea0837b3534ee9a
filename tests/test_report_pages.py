"""report.html and compare.html opened in a real headless Chromium: drawn, offline, quiet, and equal to
summary.json. Pages of the real exports in tests/data/nsys (OpenGL, TFLite, Python sampling, CUDA-only)
plus the edge cases: markup in names, a failed run, a very long run. Screenshots go to test-artifacts/."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from browser import ARTIFACTS, assert_clean, open_page

from orchestrator.analysis import analyze_report
from orchestrator.documents.run import RunDocument
from orchestrator.documents.summary import Summary
from orchestrator.invocation import program
from orchestrator.report import compare_runs, load_run, write_comparison, write_report, write_run_report
from orchestrator.report.charts import MAX_SERIES_POINTS, decimate
from orchestrator.report.page import HOT_BARS, THREAD_BARS
from orchestrator.report.run_data import RunData
from orchestrator.report.tables import API_TITLES, SHOWN_ROWS
from orchestrator.report.units import format_ms

pytestmark = pytest.mark.integration
# one of every exporter generation: the 2020.5 legacy schema, 2022.4 (ours and re-exports), 2023.3, 2024.6
EXPORTS = ["es2gears-opengl", "tflite-pose-xnnpack", "python-cpu-sampling", "abacus_titanrtx_2020.export2022_4",
           "flux_gtx1650_2019.export2022_4", "openacc_rtx3080_2020", "nsu_v100_2022.export2022_4",
           "ompoffload_t4_2023", "cpuonly_sampling_2024"]


def tree_nodes(node: dict) -> int:
    return 1 + sum(tree_nodes(kid) for kid in node["children"])


def assert_tables_equal_summary(opened, summary: dict) -> int:
    """Every API table's cells hold summary.json's exact numbers, every row of it."""
    checked = 0
    for key in (*API_TITLES, "nvtx_gpu"):
        records = summary[key]
        if not records:
            assert opened.page.locator(f"table[data-table='{key}']").count() == 0
            continue
        shown = opened.table_values(key)
        assert len(shown) == len(records)
        headings = opened.page.eval_on_selector_all(f"table[data-table='{key}'] th",
                                                     "ths => ths.map(t => t.textContent)")
        for row, record in zip(shown, records):
            numbers = [float(v) for v in row if _is_number(v)]
            expected = [float(v) for k, v in record.items() if isinstance(v, (int, float)) and k in _numeric(headings)]
            assert sorted(numbers) == sorted(expected)
            assert row[0] == "› " * record.get("depth", 0) + str(record["name"])
        checked += 1
    return checked


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _numeric(headings: list[str]) -> set[str]:
    names = {"calls": "calls", "time %": "pct", "total": "total_ns", "avg": "avg_ns", "median": "med_ns",
             "min": "min_ns", "max": "max_ns", "std dev": "std_ns", "bytes": "bytes", "launch shapes": "shapes",
             "ranges": "ranges", "GPU operations": "gpu_ops", "GPU time": "gpu_ns", "GPU avg": "gpu_avg_ns",
             "GPU median": "gpu_med_ns", "range time (CPU)": "range_ns"}
    return {names[h] for h in headings if h in names}


@pytest.mark.parametrize("name", EXPORTS)
def test_report_of_a_real_export_draws_every_chart_and_matches_the_summary(name, export, browser, tmp_path):
    source = export(name)
    page_path = write_report(source, tmp_path / f"{name}.html")
    summary = analyze_report(source).as_json()
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    # the whole-run timeline read both its binaries and painted every row, on every exporter generation
    opened.page.wait_for_function("() => window.orchestrateTimeline.detailLoaded && window.orchestrateTimeline.paints")
    assert opened.page.locator("[data-tl-status]").text_content() == ""
    drawn = opened.page.evaluate("window.orchestrateTimeline.rows")
    assert drawn and opened.page.evaluate("window.orchestrateTimeline.shapes") > 0
    assert_clean(opened, page_path)
    charts = opened.charts()
    frames, hotspots = summary["frames"], summary["hotspots"]
    if frames:
        assert charts["frame-series"]["drawn"] <= MAX_SERIES_POINTS
        if frames["count"] <= MAX_SERIES_POINTS:
            assert charts["frame-series"]["drawn"] == frames["count"]
        assert charts["frame-histogram"]["counts"] == frames["steady"]["count"]  # every steady frame in a bar
    else:
        assert "frame-series" not in charts
        assert "no frames" in opened.page.locator("[data-section=frames] [data-missing]").inner_text()
    if hotspots:
        assert charts["hotspots-modules"]["drawn"] == min(HOT_BARS, len(hotspots["modules"]))
        assert charts["hotspots-self"]["drawn"] == min(HOT_BARS, len(hotspots["self"]))
        if hotspots["grouped_addresses"]:
            note = opened.page.locator("[data-symbols-note]").first.inner_text()
            assert f"{hotspots['grouped_addresses']:,} addresses" in note
        assert charts["flame-graph"]["drawn"] == tree_nodes(hotspots["tree"])
        assert opened.page.locator(".tree .node").count() == tree_nodes(hotspots["tree"])
    else:
        assert "--sample cpu" in opened.page.locator("[data-section=hotspots] [data-missing]").inner_text()
    if summary["threads"]:
        assert charts["threads"]["drawn"] == min(THREAD_BARS, len(summary["threads"]))
    if summary["cores"]:
        assert charts["cores"]["drawn"] == len(summary["cores"])
    timeline = load_run(source, tmp_path).timeline
    assert charts["frame-timeline"]["drawn"] == timeline["events"] > 0
    gpu = summary["gpu_frames"]
    if gpu and gpu["kinds"]:  # the GPU's side of each frame: its figures, its series, its rows in the timelines
        # every frame, or each stretch's lowest and highest (thinned as frame times are)
        assert charts["gpu-frame-series"]["drawn"] == len(decimate(np.asarray(gpu["per_frame_ns"])))
        facts = opened.page.locator("[data-section=frames] #gpu-frames + dl").inner_text()
        unit = frames["unit"]
        for kind in gpu["kinds"][:6]:  # the page names the six that weigh most
            longest = f"the longest {format_ms(kind['longest_ns'])} ({unit} {kind['longest_frame']})"
            count = kind["steady_median_count"]
            if count:  # one call, or several
                assert f"over {count:g} call{'' if count == 1 else 's'}, {longest}" in facts
            else:  # in under half the steady frames: in how many
                steady = kind["count_per_frame"][gpu["steady_first"]:]
                seen = sum(1 for c in steady if c)
                assert f"recorded in {seen:,} of {len(steady):g} steady {unit}s (a median of none), {longest}" \
                    in facts
        if summary["attribution"]["software_renderer"]:  # the CPU's work, said so
            assert "The software renderer's side of each frame (on the CPU)" in opened.page.inner_text("#frames")
            assert "a software renderer, its work runs on the CPU" in facts and "0 calls" not in facts
        gpu_kind = "opengl_gpu" if summary["opengl_gpu"] else "cuda_kernel"
        gpu_lanes = [lane for lane in timeline["lanes"] if any(e["kind"] == gpu_kind for e in lane["events"])]
        if gpu_kind == "opengl_gpu":
            assert [lane["name"] for lane in gpu_lanes] == ["GPU 0 OpenGL context 1"]
        assert opened.page.locator(f"[data-chart=frame-timeline] rect.k-{gpu_kind}").count() == sum(
            1 for lane in gpu_lanes for e in lane["events"] if e["kind"] == gpu_kind)
    else:
        assert "gpu-frame-series" not in charts
    # the verdict's findings: where each happens, and a marker on the frame carrying most of it
    findings = summary["verdict"]["findings"]
    placed = [f for f in findings if f["frames"]]
    assert opened.page.locator("[data-where]").count() == len(placed)
    marked = {f["frames"][0]["index"] for f in placed}
    assert opened.page.locator("svg[data-chart=frame-series] rect.finding").count() == len(marked)
    # the findings heaviest in a shown frame outline their calls on their thread in its timeline
    slowest = timeline["slowest"]
    outlined_events = 0
    for shown, chart in ((timeline, "frame-timeline"), (slowest, "slowest-frame-timeline")):
        if shown is None:
            continue
        here = [f for f in findings if any(fr["index"] == shown["frame"] for fr in f["frames"])]
        outlined = {(f["thread"], call) for f in here if f["thread"] for call in f["names"]}
        expected = sum(1 for lane in shown["lanes"] for e in lane["events"] if (lane["name"], e["name"]) in outlined)
        assert opened.page.locator(f"svg[data-chart={chart}] rect.ev.finding").count() == expected
        outlined_events += expected
    if name == "es2gears-opengl":  # its slowest frame is where it waits most in eglSwapBuffers
        assert outlined_events > 0
    if frames and frames["steady"]["count"] > 1:
        steady = frames["per_frame_ns"][frames["count"] - frames["steady"]["count"]:]
        assert slowest["frame"] == frames["count"] - len(steady) + steady.index(max(steady))
        assert charts["slowest-frame-timeline"]["drawn"] == slowest["events"] > 0
    else:
        assert slowest is None and "slowest-frame-timeline" not in charts
    assert assert_tables_equal_summary(opened, summary) == sum(1 for k in (*API_TITLES, "nvtx_gpu") if summary[k])
    if summary["gpu_work"]:  # the CUDA GPU's work per stream: summary.json's numbers, every row
        streams = summary["gpu_work"]["streams"]
        shown = opened.table_values("gpu_streams")
        assert len(shown) == len(streams) > 0
        for row, record in zip(shown, streams):
            assert sorted(float(v) for v in row) == sorted(float(v) for v in record.values())
    else:
        assert opened.page.locator("table[data-table='gpu_streams']").count() == 0
    opened.screenshot(f"report-{name}")


def test_cuda_only_report_shows_gpu_lanes_and_says_what_is_missing(export, browser, tmp_path):
    page_path = write_report(export("abacus_titanrtx_2020.export2022_4"), tmp_path / "cuda.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    lanes = opened.page.locator("[data-chart=frame-timeline] text.label").all_text_contents()
    assert any(lane.startswith("GPU 0 stream") for lane in lanes)
    kernels = opened.page.locator("[data-chart=frame-timeline] rect.k-cuda_kernel").count()
    assert kernels > 100
    absent = opened.page.locator("[data-section=apis] .absent").inner_text()
    assert "OpenGL API" in absent and "profile with --trace including opengl" in absent
    caption = opened.page.locator("[data-section=timeline] .note").inner_text()
    assert caption.startswith("no frames: 50.0 ms of the capture, around the median kernel launch")


def test_tables_sort_by_raw_numbers_and_show_all_rows(export, browser, tmp_path):
    source = export("abacus_titanrtx_2020.export2022_4")
    summary = analyze_report(source).as_json()
    kernels = summary["cuda_kernels"]
    assert len(kernels) > SHOWN_ROWS
    page_path = write_report(source, tmp_path / "sort.html")
    opened = open_page(browser, page_path)
    table = opened.page.locator("table[data-table='cuda_kernels']")
    assert table.locator("tbody tr").count() == SHOWN_ROWS
    headings = table.locator("th").all_text_contents()
    column = headings.index("calls")

    def calls_shown() -> list[float]:
        return opened.page.eval_on_selector_all("table[data-table='cuda_kernels'] tbody tr",
                                                f"rows => rows.map(r => Number(r.cells[{column}].dataset.v))")
    table.locator("th", has_text="calls").click()  # sorting takes every row in first
    assert calls_shown() == sorted((row["calls"] for row in kernels), reverse=True)
    table.locator("th", has_text="calls").click()
    assert calls_shown() == sorted(row["calls"] for row in kernels)
    assert table.locator("th", has_text="calls").get_attribute("aria-sort") == "ascending"
    assert opened.console == []


MARKUP = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\"> & 'quoted'"


def test_markup_and_quotes_in_names_are_shown_as_text(export, browser, tmp_path):
    source = export("tflite-pose-xnnpack")
    real = load_run(source, tmp_path)
    summary = real.summary.as_json()  # summary.json as a hand might edit it
    summary["hotspots"]["self"][0]["symbol"] = MARKUP
    summary["hotspots"]["inclusive"][0]["symbol"] = MARKUP
    summary["hotspots"]["tree"]["children"][0]["symbol"] = MARKUP
    summary["threads"][0]["name"] = MARKUP
    summary["nvtx"][0]["name"] = MARKUP
    summary["verdict"]["summary"] = MARKUP
    timeline = copy.deepcopy(real.timeline)
    timeline["lanes"][0]["name"] = MARKUP
    timeline["lanes"][0]["events"][0]["name"] = MARKUP
    document = RunDocument.from_json({"app": {"name": MARKUP, "command": [MARKUP]}, "target": {"name": "local"}})
    run = RunData(source, Summary.from_json(summary), document, timeline, None, None, "report.nsys-rep",
                  f"{MARKUP}.nsys-rep")
    page_path = write_run_report(run, tmp_path / "markup.html")
    opened = open_page(browser, page_path)
    assert opened.page.evaluate("window.pwned") is None
    assert opened.page.locator("script:not([type='application/octet-stream'])").count() == 1  # the page's own
    assert opened.page.locator("img").count() == 0
    text = opened.page.locator("body").inner_text()
    assert text.count(MARKUP) >= 6  # title, verdict, tables, tree, command...
    assert opened.page.title() == f"{MARKUP} on local"
    assert opened.console == [] and opened.dialogs == []
    opened.screenshot("report-markup-in-names")


def test_a_failed_run_without_report_says_what_is_missing(browser, tmp_path):
    run_dir = tmp_path / "20261130T000000Z-nano01-gl2posenet"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "nsys_failed", "app": {"name": "gl2posenet", "command": ["./gl2posenet"]},
        "target": {"name": "nano01", "address": "root@nano01:22"},
        "facts": {"board": {"model": "NVIDIA Jetson Nano Developer Kit", "l4t": "32.7.1", "jetpack": "4.6.1",
                            "power_mode": {"name": "MAXN", "id": 0}, "clocks": {"cpu_mhz": [1479] * 4, "gpu_mhz": 921}},
                  "system": {"os": "Ubuntu 18.04.6 LTS", "kernel": "4.9.253-tegra", "arch": "aarch64"},
                  "nsys": {"version": "2021.2.4.12"}},
        "app_exit": {"status": 139, "ended": "exited by itself"},
        "error": {"type": "ReportError", "message": "nsys exited with 139 before starting the app", "exit_code": 10},
        "phases": {"connect": 0.4, "capture": 2.0}}))
    page_path = write_report(run_dir)
    assert page_path == run_dir / "report.html"
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    problems = opened.page.locator(".problem").all_inner_texts()
    assert problems[0] == "nsys exited with 139 before starting the app"
    assert "exited by itself (exit status 139)" in problems[1]
    facts = opened.page.locator("header .facts").inner_text()
    for shown in ("NVIDIA Jetson Nano Developer Kit", "32.7.1 / 4.6.1", "MAXN", "CPU 1479 MHz, GPU 921 MHz"):
        assert shown in facts
    missing = opened.page.locator("[data-missing]").all_inner_texts()
    assert len(missing) >= 6 and all(text for text in missing)
    assert "No Nsight Systems report came back" in missing[0]
    opened.screenshot("report-failed-run")


def test_a_long_run_is_decimated_and_its_big_tables_capped(export, browser, tmp_path):
    real = load_run(export("tflite-pose-xnnpack"), tmp_path)
    summary = real.summary.as_json()
    rng = np.random.default_rng(7)
    frames = 60_000
    durations = (14e6 + rng.gamma(2.0, 4e5, frames)).astype(np.int64)
    durations[31_337] = 90_000_000  # one hitch: the decimated series must keep it
    starts = np.cumsum(np.r_[0, durations[:-1]]) + 1_000_000
    summary["frames"].update(count=frames, per_frame_ns=durations.tolist(), frame_starts_ns=starts.tolist())
    summary["frames"]["steady"]["count"] = frames - 1
    summary["osrt"] = [{**summary["osrt"][0], "name": f"call_{i}", "calls": i + 1} for i in range(3000)]
    run = RunData(real.source, Summary.from_json(summary), None, real.timeline, None, None, None, None)
    page_path = write_run_report(run, tmp_path / "long.html")
    assert page_path.stat().st_size < 3_000_000
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    series = opened.charts()["frame-series"]
    assert 1000 < series["drawn"] <= MAX_SERIES_POINTS
    highest = opened.page.evaluate("() => Math.min(...Array.from(document.querySelector('polyline.series').points)"
                                   ".map(p => p.y))")
    assert highest < 30  # the 90 ms hitch is drawn near the top of the plot
    assert opened.charts()["frame-histogram"]["counts"] == frames - 1
    assert opened.page.locator("table[data-table='osrt'] tbody tr").count() == SHOWN_ROWS
    opened.screenshot("report-long-run")
    opened.page.locator("table[data-table='osrt']").locator("xpath=..").locator("button.show-all").click()
    assert opened.page.locator("table[data-table='osrt'] tbody tr").count() == 3000


def test_compare_page_and_json_put_variants_side_by_side(export, browser, tmp_path):
    first, second = export("tflite-pose-xnnpack"), export("es2gears-opengl")
    document = compare_runs([first, second], ["pose", "gears"], page_dir=tmp_path)
    assert [v["label"] for v in document["variants"]] == ["pose", "gears"]
    by_key = {m["key"]: m for m in document["metrics"]}
    steady = by_key["steady_mean_ns"]
    assert steady["deltas"][0] is None
    change = steady["values"][1] - steady["values"][0]
    assert steady["deltas"][1]["change"] == change
    assert steady["deltas"][1]["direction"] == ("worse" if change > 0 else "better")
    assert document["variants"][0]["top_functions"][0]["symbol"].startswith("xnn_")
    page_path, data_path = write_comparison(document, tmp_path / "compare.html")
    assert json.loads(data_path.read_text()) == document
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    header = opened.page.eval_on_selector_all("table.compare thead th", "ths => ths.map(t => t.textContent)")
    assert header == ["metric", "pose", "gears"]
    assert opened.charts()["compare-cores_busy"]["drawn"] == 2
    opened.screenshot("compare-two-exports")
    assert (ARTIFACTS / "compare-two-exports.png").stat().st_size > 10_000


def test_compare_of_repeats_compares_distributions(export, browser, tmp_path):
    pose, gears = export("tflite-pose-xnnpack"), export("es2gears-opengl")
    document = compare_runs([pose, pose, gears, gears], ["pose", "pose", "gears", "gears"], page_dir=tmp_path)
    groups = document["repeats"]["groups"]
    assert [(g["label"], g["runs"]) for g in groups] == [("pose", ["pose", "pose"]), ("gears", ["gears", "gears"])]
    steady = [g["metrics"]["steady_mean_ns"] for g in groups]
    assert all(m["values"][0] == m["values"][1] == m["median"] and m["ci95"] == [m["median"]] * 2 for m in steady)
    [verdict] = [v for v in document["repeats"]["verdicts"] if v["metric"] == "steady_mean_ns"]
    assert verdict["verdict"] == ("slower" if steady[1]["median"] > steady[0]["median"] else "faster")
    assert verdict["rounds"] == 2 and verdict["base"] == "pose" and verdict["other"] == "gears"
    assert verdict["p_value"] == 0.0  # the same two reports a side: every round's ratio the same
    assert compare_runs([pose, gears], page_dir=tmp_path)["repeats"] is None  # no repeats: one delta each
    page_path, _ = write_comparison(document, tmp_path / "compare.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    rows = opened.page.eval_on_selector_all("table[data-table='repeats'] tbody tr",
                                            "trs => trs.map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    assert rows == [["pose", "2"], ["gears", "2"]]
    shown = opened.page.eval_on_selector_all("table[data-table='repeat-verdicts'] td[data-verdict]",
                                             "tds => tds.map(t => t.dataset.verdict)")
    assert verdict["verdict"] in shown


def test_report_of_an_nsys_rep_links_it_and_says_how_to_open_it(host_nsys, browser, tmp_path):
    source = tmp_path / "pose capture.nsys-rep"  # a space: the command must quote it
    source.write_bytes((Path(__file__).parent / "data" / "nsys" / "tflite-pose-xnnpack.nsys-rep").read_bytes())
    page_path = write_report(source)
    assert page_path == tmp_path / "pose capture.html" and (tmp_path / "pose capture.sqlite").is_file()
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    link = opened.page.locator("header .open a")
    assert link.get_attribute("href") == "pose capture.nsys-rep"
    assert opened.page.locator("header code.command").inner_text() == "nsys-ui 'pose capture.nsys-rep'"
    # and the command that writes the same events for Perfetto UI, run as printed (quoted)
    trace = opened.page.locator("[data-tl-trace] code.command").inner_text()
    assert trace == f"{program()} trace '{source}'"
    assert opened.charts()["frame-series"]["drawn"] == 60
