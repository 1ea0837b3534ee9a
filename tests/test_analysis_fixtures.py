"""The analysis on real exports (recorded with nsys 2022.4 here, public CUDA reports), asserted by value.

Expected figures come from plain SQL over the same export or from the app's design (60 frames of the pose
pipeline), never from the analysis itself.
"""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from orchestrator.analysis import AnalysisOptions, analyze_report
from orchestrator.analysis.analyzers.evidence import gpu_busy_ns
from orchestrator.analysis.export.frame_names import module_frame
from orchestrator.analysis.export.report_input import open_report
from orchestrator.analysis.export.trace import Trace
from orchestrator.errors import UsageError

SECTIONS = {"summary_version", "capture", "window", "frames", "gpu_frames", "gpu_metrics", "gpu_work", "nvtx_gpu",
            "hotspots", "cores", "cpu_source", "threads", "osrt", "opengl", "opengl_gpu", "nvtx", "khr_debug",
            "cuda_api", "cuda_kernels", "kernel_functions", "memcpy", "attribution", "capture_gaps", "verdict"}


def sql(path, query, *params):
    with sqlite3.connect(path) as conn:
        return conn.execute(query, params).fetchone()


def events_span(*columns: tuple[str, str, str]) -> str:
    """SQL for the first start and the last end over (table, start column, end column)."""
    union = " UNION ALL ".join(f"SELECT {start} AS a, {end} AS b FROM {table}" for table, start, end in columns)
    return f"SELECT min(a), max(b) FROM ({union})"


@pytest.fixture(scope="module")
def pose(export):
    return analyze_report(export("tflite-pose-xnnpack")).as_json()


@pytest.fixture(scope="module")
def gears(export):
    return analyze_report(export("es2gears-opengl")).as_json()


def test_every_section_is_present_and_json_ready(pose, gears):
    assert set(pose) == SECTIONS and set(gears) == SECTIONS
    assert pose["opengl"] is None and pose["cuda_kernels"] is None  # what the report lacks is null
    json.loads(json.dumps(pose))


def test_pose_frames_are_the_sixty_nvtx_frame_ranges(pose, export):
    path = export("tflite-pose-xnnpack")
    first_start, first_end = sql(path, "SELECT start, end FROM NVTX_EVENTS JOIN StringIds s ON s.id = textId "
                                       "WHERE s.value = 'frame' ORDER BY start LIMIT 1")
    mean_rest = sql(path, "SELECT avg(end - start) FROM (SELECT start, end FROM NVTX_EVENTS JOIN StringIds s "
                          "ON s.id = textId WHERE s.value = 'frame' ORDER BY start LIMIT -1 OFFSET 1)")[0]
    frames = pose["frames"]
    assert (frames["source"], frames["kind"], frames["count"]) == ("frame", "nvtx", 60)
    assert frames["first_ns"] == first_end - first_start
    assert frames["warmup"]["frames"] == 0
    assert frames["steady"]["count"] == 59
    assert frames["steady"]["mean_ns"] == pytest.approx(mean_rest)
    assert 13e6 < frames["steady"]["p50_ns"] < 16e6           # ~14.5 ms per frame on this machine
    assert frames["first_ns"] > frames["steady"]["p90_ns"]     # the first inference is the slow one
    assert pose["window"]["kind"] == "steady"
    assert pose["window"]["start_ns"] == pose["frames"]["frame_starts_ns"][1]


def test_pose_hotspots_are_xnnpack_kernels_and_it_is_cpu_bound(pose):
    hot = pose["hotspots"]
    assert hot["self"][0]["symbol"].startswith("xnn_f32_gemm")
    assert sum(row["pct"] for row in hot["self"][:5] if row["symbol"].startswith("xnn_")) > 60
    # pseudo-frames ([Broken backtraces]...) left out; a module's unresolved addresses are its one frame
    assert all(not row["symbol"].startswith("[") or row["symbol"] == module_frame(row["module"])
               for row in hot["inclusive"])
    assert hot["modules"][0]["module"] == "libpywrap_litert_common.so" and hot["modules"][0]["pct"] > 90
    assert hot["tree"]["samples"] == hot["samples"]
    assert sum(child["samples"] for child in hot["tree"]["children"]) <= hot["samples"]
    assert [c["cpu"] for c in pose["cores"]] == [0, 1] and pose["cpu_source"] == "context switches"
    assert sum(c["busy_pct"] for c in pose["cores"]) > 150     # two XNNPACK threads keep both cores busy
    main = pose["threads"][0]
    assert main["name"] == "python" and main["cpu_pct"] > 90 and main["top_symbol"].startswith("xnn_")
    assert pose["verdict"]["kind"] == "cpu_bound"
    assert any("cores busy" in line for line in pose["verdict"]["evidence"])


def test_pose_nvtx_ranges_match_the_pipeline_stages(pose):
    ranges = {row["name"]: row for row in pose["nvtx"]}
    assert set(ranges) == {"frame", "detect", "nms", "landmark"}
    assert all(row["calls"] == 60 and row["style"] == "PushPop" for row in ranges.values())
    stages = ranges["detect"]["avg_ns"] + ranges["landmark"]["avg_ns"] + ranges["nms"]["avg_ns"]
    assert stages < ranges["frame"]["avg_ns"]


def test_gears_frames_are_swaps_with_a_slow_first_frame(gears, export):
    path = export("es2gears-opengl")
    swaps, last_end = sql(path, "SELECT count(*), max(o.end) FROM OPENGL_API o JOIN StringIds s ON s.id = o.nameId "
                                "WHERE s.value = 'eglSwapBuffers'")
    frames = gears["frames"]
    assert (frames["source"], frames["count"]) == ("eglSwapBuffers", swaps)
    assert sum(frames["per_frame_ns"][1:]) == last_end - frames["frame_starts_ns"][1]  # frames tile the run
    assert frames["first_ns"] > 20 * frames["steady"]["p50_ns"]
    calls = {row["name"]: row["calls"] for row in gears["opengl"]}
    assert calls["eglSwapBuffers"] == swaps
    assert 3 * swaps <= calls["glDrawArrays"] <= 3 * (swaps + 1)  # three gears a frame; the last may be unswapped
    assert gears["opengl_gpu"] and gears["osrt"]


def test_gears_names_its_waits_and_its_software_renderer(gears):
    """On llvmpipe the "GPU" is a pool of render threads; es2gears's thread runs llvmpipe's own work and copies
    each frame into the X socket on a CPU, and waits for the render threads and the X server in its swap
    (test_attribution_exports recomputes the shares with SQL)."""
    verdict = gears["verdict"]
    assert (verdict["kind"], verdict["confidence"]) == ("cpu_bound", "low")  # llvmpipe's share close behind
    [renderer] = [f for f in verdict["findings"] if f["kind"] == "renderer"]
    assert renderer["text"] == ("the renderer is a software renderer: its work runs on the CPU (llvmpipe-0, "
                                "llvmpipe-1), so these figures do not represent the board's GPU")
    [busy] = [f for f in verdict["findings"] if f["kind"] == "gpu_busy"]
    assert busy["names"] == ["glClear", "glDrawArrays"] and "nsys (glClear, glDrawArrays) covers" in busy["text"]
    swap = next(row for row in gears["opengl"] if row["name"] == "eglSwapBuffers")
    assert swap["total_ns"] > 0.6 * gears["window"]["duration_ns"]


def test_gears_threads_show_the_llvmpipe_workers(gears):
    names = {row["name"] for row in gears["threads"]}
    assert {"es2gears_x11", "llvmpipe-0", "llvmpipe-1"} <= names
    assert gears["hotspots"]["excluded_threads"] >= 1   # nsys's own [NSys] threads


MODULE_COUNTS = """SELECT CASE m.value WHEN '//anon' THEN '[JIT]'
    ELSE replace(m.value, rtrim(m.value, replace(m.value, '/', '')), '') END AS module, count(*)
    FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS c ON c.id = e.id AND c.stackDepth = 0
    JOIN StringIds m ON m.id = c.module WHERE e.start BETWEEN ? AND ? AND e.globalTid NOT IN (SELECT t.globalTid
    FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId WHERE s.value LIKE '[NSys%') GROUP BY module
    ORDER BY 2 DESC, 1 LIMIT 4"""


def test_gears_hotspots_by_module_and_no_bare_addresses(gears, export):
    hot, window = gears["hotspots"], gears["window"]
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        expected = conn.execute(MODULE_COUNTS, (window["start_ns"], window["end_ns"])).fetchall()
    assert [(row["module"], row["samples"]) for row in hot["modules"][:4]] == expected
    assert [row["module"] for row in hot["modules"][:3]] == ["swrast_dri.so", "[JIT]", "libc.so.6"]
    assert hot["modules"][0]["pct"] > 50 and hot["modules"][0]["path"].endswith("/dri/swrast_dri.so")
    # Mesa's stripped driver is one frame, not one per instruction address, in the tables and the tree
    assert hot["self"][0]["symbol"] == "[swrast_dri.so]" and hot["self"][0]["samples"] == expected[0][1]
    assert hot["grouped_addresses"] > 500

    def frames(node):
        yield node
        for child in node["children"]:
            assert not (child["symbol"] == node["symbol"] and child["symbol"].startswith("["))  # no towers
            yield from frames(child)
    symbols = [node["symbol"] for node in frames(hot["tree"])] + [row["symbol"] for row in hot["inclusive"]]
    assert not [symbol for symbol in symbols if symbol.startswith("0x")]


def test_sampled_python_app_without_frames_uses_the_whole_capture(export):
    summary = analyze_report(export("python-cpu-sampling")).as_json()
    path = export("python-cpu-sampling")
    # the whole capture is every event: scheduling and samples start before the session's startTime
    start, stop = sql(path, events_span(("SCHED_EVENTS", "start", "start"), ("COMPOSITE_EVENTS", "start", "start"),
                                        ("OSRT_API", "start", '"end"'), ("ANALYSIS_DETAILS", "startTime", "stopTime")))
    assert start < sql(path, "SELECT startTime FROM ANALYSIS_DETAILS")[0]
    app_samples = sql(path, "SELECT count(*) FROM COMPOSITE_EVENTS WHERE globalTid NOT IN (SELECT t.globalTid "
                      "FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId WHERE s.value LIKE '[NSys%')")[0]
    assert summary["hotspots"]["samples"] == app_samples  # every sample but nsys's own threads'
    assert summary["frames"] is None
    assert summary["window"] == {"kind": "all", "start_ns": start, "end_ns": stop, "duration_ns": stop - start}
    assert summary["hotspots"]["self"][0]["symbol"] == "_PyEval_EvalFrameDefault"
    assert "math_sqrt" in [row["symbol"] for row in summary["hotspots"]["self"][:3]]


def test_cuda_report_sections(export):
    summary = analyze_report(export("nsu_v100_2022.export2022_4")).as_json()
    path = export("nsu_v100_2022.export2022_4")
    kernels, kernel_ns = sql(path, "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert sum(k["calls"] for k in summary["cuda_kernels"]) == kernels
    assert sum(k["total_ns"] for k in summary["cuda_kernels"]) == kernel_ns
    assert {m["direction"] for m in summary["memcpy"]} <= {"HtoD", "DtoH", "DtoD", "memset"}
    copied = sql(path, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0]
    assert sum(m["bytes"] for m in summary["memcpy"]) == copied
    assert all(not row["name"].endswith(("_v3020", "_v7000")) for row in summary["cuda_api"])
    assert len(summary["capture"]["platform"]["gpus"]) == 4
    assert summary["hotspots"] is None and summary["frames"] is None


@pytest.mark.parametrize("name", ["nsu_v100_2022.export2022_4", "abacus_titanrtx_2020.export2022_4"])
def test_gpu_busy_time_is_the_union_of_kernels_and_memory_operations(export, name):
    path = export(name)
    with sqlite3.connect(path) as conn:
        tables = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
                  if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
        rows = sorted(conn.execute(" UNION ALL ".join(f'SELECT start, "end" FROM {t}' for t in tables)))
    first, last = rows[0][0], max(end for _, end in rows)

    def union(low: int, high: int) -> int:  # a sweep over the clipped intervals, in plain Python
        covered, reach = 0, low
        for start, end in rows:
            start, end = max(start, low, reach), min(end, high)
            if end > start:
                covered, reach = covered + end - start, end
        return covered
    conn, schema, export_path = open_report(path, None)
    trace = Trace(conn, schema, export_path)
    try:
        for window in [(first - 10, last + 10), (first + (last - first) // 3, first + (last - first) // 2)]:
            assert gpu_busy_ns(trace, window) == union(*window) > 0
    finally:
        trace.close()
        conn.close()


def test_2023_export_with_renamed_metadata(export):
    summary = analyze_report(export("ompoffload_t4_2023")).as_json()
    assert summary["capture"]["nsys_version"].startswith("2023.3")
    assert summary["cuda_kernels"] and summary["cuda_api"]
    heat = summary["threads"][0]
    assert heat["name"] == "heat" and heat["cpu_pct"] > 90
    assert summary["verdict"]["kind"] in ("gpu_bound", "gpu_wait")
    [busy] = [f for f in summary["verdict"]["findings"] if f["kind"] == "gpu_busy"]
    assert busy["text"].startswith("GPU work recorded by nsys (") and " covers " in busy["text"]
    by_name: dict[str, int] = {}  # a kernel's rows (one per grid and block) summed: most GPU time first
    for row in summary["cuda_kernels"]:
        by_name[row["name"]] = by_name.get(row["name"], 0) + row["total_ns"]
    assert busy["names"][0] == max(by_name, key=by_name.__getitem__)
    assert summary["kernel_functions"][0]["name"] == "nvkernel_solve_F1L204_2"


def test_2019_report_nvtx_text_ranges(export):
    summary = analyze_report(export("flux_gtx1650_2019.export2022_4")).as_json()
    assert summary["nvtx"] and summary["nvtx"][0]["style"] == "StartEnd"
    assert summary["capture"]["platform"]["gpus"] == ["GeForce GTX 1650"]


# the hottest self frame in SQL: a module's unresolved addresses (0x...) count as one '[file name]' frame
LEAF_COUNTS = """SELECT CASE WHEN s.value GLOB '0x[0-9a-f]*'
    THEN '[' || replace(m.value, rtrim(m.value, replace(m.value, '/', '')), '') || ']' ELSE s.value END AS frame,
    count(*) FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS c ON c.id = e.id AND c.stackDepth = 0
    JOIN StringIds s ON s.id = c.symbol JOIN StringIds m ON m.id = c.module GROUP BY frame ORDER BY 2 DESC, 1 LIMIT 1"""


def test_2024_export_counts_the_samples_before_the_session_start(export):
    path = export("cpuonly_sampling_2024")
    summary = analyze_report(path).as_json()
    start = sql(path, "SELECT startTime FROM ANALYSIS_DETAILS")[0]
    assert sql(path, "SELECT count(*) FROM COMPOSITE_EVENTS WHERE start < ?", start)[0] == 28
    assert summary["capture"]["nsys_version"].startswith("2024.6")
    assert summary["window"]["kind"] == "all" and summary["window"]["start_ns"] < start
    assert summary["hotspots"]["samples"] == sql(path, "SELECT count(*) FROM COMPOSITE_EVENTS")[0] == 44
    symbol, samples = sql(path, LEAF_COUNTS)
    hottest = summary["hotspots"]["self"][0]
    assert (hottest["symbol"], hottest["samples"]) == (symbol, samples) == ("[libnvidia-ptxjitcompiler.so.1]", 13)
    assert summary["hotspots"]["self"][1]["symbol"] == "__memset_avx2_unaligned_erms"


def test_legacy_2020_export_has_the_figures_of_its_2022_reexport(export, tmp_path, host_nsys):
    from conftest import NSYS_DATA
    legacy = analyze_report(export("openacc_rtx3080_2020")).as_json()
    copy = tmp_path / "openacc_rtx3080_2020.qdrep"
    shutil.copyfile(NSYS_DATA / copy.name, copy)
    current = analyze_report(copy).as_json()  # exported here by the host's nsys 2022.4
    assert legacy["capture"]["export_schema"] == "legacy" and current["capture"]["export_schema"] == "current"
    for section in ("cuda_kernels", "cuda_api", "memcpy", "osrt", "nvtx"):
        assert legacy[section] == current[section], section
    gpus = ["NVIDIA GeForce RTX 3080"]
    assert legacy["capture"]["platform"]["gpus"] == current["capture"]["platform"]["gpus"] == gpus
    path = export("openacc_rtx3080_2020")
    kernels, kernel_ns = sql(path, "SELECT count(*), sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert (sum(k["calls"] for k in legacy["cuda_kernels"]), sum(k["total_ns"] for k in legacy["cuda_kernels"])) \
        == (kernels, kernel_ns) == (1934, 4481929)
    copied = sql(path, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0]
    assert sum(m["bytes"] for m in legacy["memcpy"] if m["direction"] != "memset") == copied
    # no session span in the legacy schema: its capture is the span of its events
    first, last = sql(path, events_span(*((f"CUPTI_ACTIVITY_KIND_{kind}", "start", '"end"')
                                          for kind in ("RUNTIME", "KERNEL", "MEMCPY", "MEMSET"))))
    assert (legacy["capture"]["start_ns"], legacy["capture"]["end_ns"]) == (first, last)


@pytest.mark.parametrize("options, message", [
    (AnalysisOptions(window="50s:60s"), "outside the capture"),
    (AnalysisOptions(window="2s:1s"), "not after the start"),
    (AnalysisOptions(window="soon"), "not START:END"),
    (AnalysisOptions(frame=60), "frames 0 to 59"),
    (AnalysisOptions(process="nope"), "no such process"),
    (AnalysisOptions(frame_range="inference"), "no frames delimited by 'inference'"),
])
def test_bad_selections_are_usage_errors(export, options, message):
    with pytest.raises(UsageError, match=message):
        analyze_report(export("tflite-pose-xnnpack"), options).as_json()


def test_one_frame_and_a_time_window(export):
    path = export("tflite-pose-xnnpack")
    whole = analyze_report(path, AnalysisOptions(window="all")).as_json()
    one = analyze_report(path, AnalysisOptions(frame=10)).as_json()
    assert one["window"]["kind"] == "frame"
    assert one["window"]["duration_ns"] == one["frames"]["per_frame_ns"][10]
    assert 0 < one["hotspots"]["samples"] < whole["hotspots"]["samples"]
    assert one["osrt"] == whole["osrt"]  # API sections always cover the whole capture
    start = whole["capture"]["start_ns"]
    window = f"{start / 1e6 + 100:.0f}ms:{start / 1e6 + 300:.0f}ms"
    timed = analyze_report(path, AnalysisOptions(window=window)).as_json()
    assert timed["window"]["duration_ns"] == pytest.approx(200e6, abs=1e6)


@pytest.mark.parametrize("name", ["abacus_titanrtx_2020.export2022_4", "flux_gtx1650_2019.export2022_4"])
def test_gpu_work_per_stream_adds_up_to_the_tables(export, name):
    """The CUDA GPU's work over the window (the whole capture here) per device, context and stream: each kind's
    count and time are the tables' rows in that stream, summed in SQL."""
    path = export(name)
    summary = analyze_report(path, AnalysisOptions(window="all")).as_json()
    work = summary["gpu_work"]
    window = summary["window"]
    assert window["kind"] == "all"
    expected: dict[tuple[int, int, int], dict[str, int]] = {}
    for kind, table in (("kernels", "CUPTI_ACTIVITY_KIND_KERNEL"), ("copies", "CUPTI_ACTIVITY_KIND_MEMCPY"),
                        ("sets", "CUPTI_ACTIVITY_KIND_MEMSET")):
        with sqlite3.connect(path) as conn:
            rows = conn.execute(f'SELECT deviceId, contextId, streamId, count(*), sum("end" - start) FROM {table} '
                                "GROUP BY 1, 2, 3").fetchall()
        for device, context, stream, count, total in rows:
            expected.setdefault((device, context, stream), {})[kind] = count
            expected[(device, context, stream)][f"{kind}_ns"] = total
    found = {(s["device"], s["context"], s["stream"]): s for s in work["streams"]}
    assert sorted(found) == sorted(expected)
    for key, figures in expected.items():
        for column, value in figures.items():
            assert found[key][column] == value, (key, column)
    assert work["kernels"] == sum(s["kernels"] for s in work["streams"])
    assert work["busy_ns"] <= work["kernels_ns"] + work["copies_ns"] + work["sets_ns"]
    assert work["busy_pct"] == pytest.approx(work["busy_ns"] * 100 / (window["end_ns"] - window["start_ns"]))
    busiest = [s["busy_ns"] for s in work["streams"]]
    assert busiest == sorted(busiest, reverse=True)
