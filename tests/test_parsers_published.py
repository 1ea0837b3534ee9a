"""The parsers on tools' real published output (tests/data/parsers/SOURCES.md names each source): every figure a
log holds, asserted; a figure a log does not hold is absent, never 0; a tool that crashed is a failure."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from parser_truth import scores, shares

from orchestrator.parsers import PARSERS, parse

DATA = Path(__file__).parent / "data" / "parsers"


def values(tool: str, name: str) -> dict[str, float]:
    return {key: figure.value for key, figure in parse(tool, (DATA / name).read_text()).figures.items()}


def trt7(latency: tuple, end_to_end: tuple, gpu: tuple, enqueue: tuple | None = None, **totals: float) -> dict:
    """A TensorRT 7 log's figures: min, max, mean, median, p99 of each block (None: the block lacks that line)."""
    stats = ("min", "max", "mean", "median", "p99")
    found = {f"latency_{s}_ms": v for s, v in zip(stats, latency)}
    found.update({f"end_to_end_{s}_ms": v for s, v in zip(stats, end_to_end)})
    found.update({f"gpu_compute_{s}_ms": v for s, v in zip(stats, gpu) if v is not None})
    found.update({f"enqueue_{s}_ms": v for s, v in zip(stats, enqueue or ()) if v is not None})
    return {**found, **totals}


TRT7 = {
    "trtexec-7.1-host-latency-resnet50-int8-b1.txt": trt7(
        (55.1414, 57.542, 55.3094, 55.2737, 57.542), (55.1486, 57.561, 55.3221, 55.2913, 57.561),
        (55.0791, 57.4766, 55.2468, 55.2111, 57.4766), (3.87885, 5.10864, None, 4.06059, None),
        throughput_qps=18.0758, total_host_walltime_s=3.09807, total_gpu_compute_s=3.09382, warmup_queries=4,
        warmup_ms=200, trace_queries=56, trace_s=3.09807, trace_average_runs=3),
    "trtexec-7.1.0-host-latency-lowercase-resnet50-int8-b64-dla-era.txt": trt7(
        (73.1875, 79.78, 73.515, 73.5, 73.75), (73.1875, 79.7888, 73.5256, 73.5119, 73.75),
        (71.5625, 78.0872, 71.8974, 71.875, 72.125),
        throughput_qps=870.434, total_host_walltime_s=735.265, total_gpu_compute_s=718.974, warmup_queries=192,
        warmup_ms=200, trace_queries=640000, trace_s=735.265, trace_average_runs=100),
    "trtexec-7.1-host-latency-xaviernx-yolov4-fp16.txt": trt7(
        (4.34442, 7.12915, 4.52398, 4.49951, 5.46606), (4.35388, 7.14398, 4.53851, 4.51025, 6.10291),
        (4.2439, 7.02356, 4.42492, 4.40088, 5.36792), (2.3894, 4.89722, None, 2.64331, None),
        total_host_walltime_s=3.00956, total_gpu_compute_s=2.93372),  # its "throughput: 0 qps" left out
    "trtexec-7.1-host-latency-xavieragx-yolov5s-tensorrtx707.txt": trt7(
        (6.14319, 9.15771, 6.84532, 6.60986, 8.90259), (6.15247, 9.69702, 6.87277, 6.62183, 8.97888), (),
        throughput_qps=145.5, total_host_walltime_s=3.01718),
    "trtexec-7.x-host-latency-trt2054-zero-qps.txt": trt7(
        (1.64058, 6.2915, 1.66069, 1.65601, 1.67065), (1.66368, 7.65552, 3.00909, 3.01636, 3.03931), (),
        total_host_walltime_s=3.00461),
    "trtexec-7.1-host-latency-resnet50-fp16-7runs-clock2018.txt": trt7(  # the last of its 7 runs (batch 128)
        (2668.07, 2689.09, 2679.05, 2679.98, 2689.09), (2668.07, 2689.09, 2679.05, 2679.99, 2689.09),
        (2660.1, 2680.99, 2670.99, 2671.88, 2680.99), (2.10245, 2.85181, None, 2.84375, None),
        throughput_qps=47.7781, total_host_walltime_s=8.03716, total_gpu_compute_s=8.01297, warmup_queries=128,
        warmup_ms=200, trace_queries=384, trace_s=8.03716, trace_average_runs=3),
}


@pytest.mark.parametrize("name", TRT7)
def test_trtexec_of_tensorrt_7_every_figure(name):
    assert values("trtexec", name) == TRT7[name]


def test_trtexec_says_what_it_left_out_and_how_many_runs_a_log_held():
    zero = parse("trtexec", (DATA / "trtexec-7.1-host-latency-xaviernx-yolov4-fp16.txt").read_text())
    assert zero.details == {"throughput": "printed as 0 qps (TensorRT 7 misreports it): left out"}
    assert zero.failure is None
    seven = parse("trtexec", (DATA / "trtexec-7.1-host-latency-resnet50-fp16-7runs-clock2018.txt").read_text())
    assert seven.details == {"runs": "7 (the figures are the last run's)"}


def test_a_tensorrt_6_log_cut_mid_line_keeps_what_it_holds():
    assert values("trtexec", "trtexec-6.x-avg-over-10-runs-truncated-xavier-retinanet118.txt") == {
        "gpu_mean_ms": 55.2518, "host_walltime_mean_ms": 55.3944, "p99_ms": 59.9569, "average_lines": 1}


def test_jetson_inference_several_reports_first_frame_and_the_mean_of_the_rest():
    found = values("jetson-inference", "jetson-inference-timing-report-xaviernx-ssd-mobilenet-7frames.txt")
    first = {"pre_process": (0.39181, 0.30445), "network": (9.21164, 9.24570), "post_process": (1.25921, 1.14074),
             "visualize": (67.38385, 68.84650), "total": (78.24651, 79.53738)}
    for part, (cpu, cuda) in first.items():
        assert (found[f"first_{part}_cpu_ms"], found[f"first_{part}_cuda_ms"]) == (cpu, cuda)
    network_cuda = [6.43939, 3.04947, 3.45616, 5.96934, 3.36922, 3.13037]  # frames 2-7
    assert found["network_cuda_ms"] == pytest.approx(sum(network_cuda) / 6, abs=1e-9)
    total_cpu = [74.24718, 3.73100, 4.15990, 6.69447, 4.22051, 3.94892]
    assert found["total_cpu_ms"] == pytest.approx(sum(total_cpu) / 6, abs=1e-9)
    assert found["reports"] == 7 and len(found) == 21


def test_jetson_inference_a_report_cut_at_either_end():
    """The log starts inside a report (its rows left out: the report's head is not in it) and ends inside
    another (counted with the rows it has)."""
    found = values("jetson-inference", "jetson-inference-timing-report-u2net-ros-partial-cudaerr-1789.txt")
    assert found == {
        "first_pre_process_cpu_ms": 0.05776, "first_pre_process_cuda_ms": 0.05968,
        "first_network_cpu_ms": 59.59396, "first_network_cuda_ms": 59.20493,
        "first_post_process_cpu_ms": 0.04883, "first_post_process_cuda_ms": 0.0,
        "first_total_cpu_ms": 59.70056, "first_total_cuda_ms": 59.26461,
        "pre_process_cpu_ms": 0.02909, "pre_process_cuda_ms": 0.06, "network_cpu_ms": 54.75547,
        "network_cuda_ms": 54.34557, "reports": 2}
    assert "total_cpu_ms" not in found and 271.25882 not in found.values()


BENCHMARK_MODEL = {
    "benchmark_model-2.x-qcom-rb1-gpu.txt": (
        {"model_size_mb": 4.2761, "session_init_ms": 1361.24, "init_ms": 1361.236, "first_inference_ms": 125.113,
         "warmup_mean_ms": 115.344, "inference_mean_ms": 115.246, "memory_init_mb": 132.816,
         "memory_overall_mb": 132.816, "runs": 50, "inference_min_ms": 111.842, "inference_max_ms": 119.614,
         "inference_std_ms": 1.329, "inference_median_ms": 115.35, "inference_p5_ms": 112.107,
         "inference_p95_ms": 116.62},
        {"model": "mobilenet_quant_v1_224.tflite", "delegate": "gpu"}),
    "benchmark_model-2.20-ti-am62x-xnnpack.txt": (
        {"model_size_mb": 67.3128, "session_init_ms": 614.333, "init_ms": 614.333, "first_inference_ms": 905.463,
         "warmup_mean_ms": 905.463, "inference_mean_ms": 899.641, "memory_init_mb": 146.363,
         "memory_overall_mb": 150.141, "runs": 50, "inference_min_ms": 898.007, "inference_max_ms": 906.121,
         "inference_std_ms": 1.549, "inference_median_ms": 899.281, "inference_p5_ms": 898.333,
         "inference_p95_ms": 904.305},
        {"model": "/usr/share/oob-demo-assets/models/ssd_mobilenet_v2_coco.tflite", "delegate": "xnnpack"}),
    "benchmark_model-1.15label-android-arm-gpu-tf43541.txt": (  # cut before its memory lines: none here
        {"model_size_mb": 7.07479, "session_init_ms": 870.557, "init_ms": 870.557, "first_inference_ms": 130.565,
         "warmup_mean_ms": 122.373, "inference_mean_ms": 119.375, "runs": 50, "inference_min_ms": 113.737,
         "inference_max_ms": 124.776, "inference_std_ms": 1.948},
        {"model": "/data/local/tmp/tflite/denoising_32bit.tflite", "delegate": "gpu"}),
    "benchmark_model-1.x-android-oldformat-yuenshome77.txt": (  # TF 1.x: no first inference, no model size
        {"session_init_ms": 9.933, "warmup_mean_ms": 76.6059, "init_ms": 9.933, "inference_mean_ms": 66.7676,
         "runs": 15, "inference_min_ms": 66.699, "inference_max_ms": 66.838, "inference_std_ms": 0.039}, {}),
    "benchmark_model-2.x-aarch64-openvoiceos-whisper7.txt": (  # numbers as 4.69509e+06
        {"model_size_mb": 40.9627, "session_init_ms": 12.397, "init_ms": 12.397, "first_inference_ms": 5334.923,
         "warmup_mean_ms": 5334.92, "inference_mean_ms": 4695.09, "runs": 32, "inference_min_ms": 4679.189,
         "inference_max_ms": 4779.314, "inference_std_ms": 16.547},
        {"model": "models/whisper.tflite"}),
}


@pytest.mark.parametrize("name", BENCHMARK_MODEL)
def test_tflite_benchmark_model_every_figure(name):
    expected, details = BENCHMARK_MODEL[name]
    parsed = parse("benchmark_model", (DATA / name).read_text())
    assert {k: pytest.approx(v, rel=1e-12) for k, v in expected.items()} == {
        k: f.value for k, f in parsed.figures.items()}
    assert parsed.details == details and parsed.failure is None


def test_tf_trt_benchmarks_of_both_generations():
    assert values("tftrt-bench", "tftrt-tf1-ngc19.09-image_classification-mobilenet_v2-p100.txt") == {
        "images_per_s": 1798, "p99_ms": 4.48, "total_s": 0.1, "latency_mean_ms": 4.45, "latency_median_ms": 4.45,
        "latency_min_ms": 4.41, "step_mean_ms": pytest.approx((4.4785 + 4.4987 + 4.4539 + 4.4658 + 4.4386) / 5),
        "steps_printed": 5, "graph_native_mb": 23.6, "graph_trt_mb": 36.0, "conversion_s": 43.7}
    assert values("tftrt-bench", "tftrt-tf2-notebook-resnet50-fp32-bs16.txt") == {
        "images_per_s": 2108, "step_mean_ms": pytest.approx((7.6 * 18 + 7.5 * 2) / 20), "steps_printed": 20}


@pytest.mark.parametrize("name, scenes, said", [
    ("glmark2-2020.04-rpi4-v3d-segfault.txt", 4, "Segmentation fault (core dumped)"),
    ("glmark2-2017.07-intel-kabylake-abort.txt", 0,
     "glmark2: intel_bufmgr_gem.c:1409: drm_intel_gem_bo_unreference: Assertion `atomic_read(&bo_gem->refcount) > 0' "
     "failed."),
    ("glmark2-2021.02-gtx1080-shader-error-truncated.txt", 11, "Error: Failed to add fragment shader from file None:"),
])
def test_glmark2_that_crashed_before_its_score_is_a_failure(name, scenes, said):
    parsed = PARSERS["glmark2"]((DATA / name).read_text())
    assert parsed.failure == f"glmark2 crashed after {scenes} scenes, before its score: {said}"
    assert "score" not in parsed.figures
    assert parsed.figures.get("scenes", None) == (None if scenes == 0 else parsed.figures["scenes"])


def test_glmark2_whose_output_just_stops_is_no_failure_and_a_whole_run_has_its_score():
    stopped = parse("glmark2", (DATA / "glmark2-2017.07-imx6-etnaviv-crash.txt").read_text())
    assert stopped.failure is None and {k: f.value for k, f in stopped.figures.items()} == {
        "build[use-vbo=false]_fps": 97, "build[use-vbo=false]_frame_ms": 10.309,
        "build[use-vbo=true]_fps": 102, "build[use-vbo=true]_frame_ms": 9.804,
        "texture[texture-filter=nearest]_fps": 83, "texture[texture-filter=nearest]_frame_ms": 12.048,
        "texture[texture-filter=linear]_fps": 81, "texture[texture-filter=linear]_frame_ms": 12.346, "scenes": 4}
    whole = values("glmark2", "glmark2-2023.01-pixel6pro-virgl-mali-g78-complete.txt")
    assert whole["score"] == 566 and whole["scenes"] == 33
    assert (whole["build[use-vbo=false]_fps"], whole["build[use-vbo=false]_frame_ms"]) == (600, 1.667)
    assert (whole["terrain_fps"], whole["terrain_frame_ms"]) == (94, 10.693)
    assert len(whole) == 2 * 33 + 2


def test_every_labelled_figure_is_a_number_its_log_prints():
    """The hand labelling (tests/parser_truth.py) holds no typo: each value is one of the log's printed numbers."""
    for log in sorted(DATA.glob("*.txt")):
        truth = log.with_suffix(".truth.json")
        assert truth.is_file(), f"{log.name} has no labelling"
        printed = {float(n) for n in re.findall(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", log.read_text(), re.I)}
        for figure in json.loads(truth.read_text())["figures"]:
            if figure["value"] is None:  # printed as inf (glmark2's frame time of a scene that drew nothing)
                assert figure["printed"] == "inf"
                continue
            assert float(figure["value"]) in printed, f"{log.name}: {figure}"


def test_the_parsers_read_95_percent_of_each_tools_labelled_figures_as_the_docs_say():
    found = shares(scores())
    for tool, (read, labelled) in found.items():
        assert labelled >= 100 and read / labelled >= 0.95, (tool, read, labelled)
    said = (Path(__file__).parent.parent / "docs" / "statistics.md").read_text()
    for tool, (read, labelled) in found.items():
        assert f"| {tool} | {read} of {labelled} | {100 * read / labelled:.1f} % |" in said, tool
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())  # lines wrapped anywhere
    read, labelled = found.pop("all")
    assert f"{100 * read / labelled:.1f} % of the {labelled:,} figures" in readme
    assert all(f"{tool} {100 * read / labelled:.1f} %" in readme for tool, (read, labelled) in found.items())


def records(tool: str, name: str) -> list[tuple[str, dict[str, float]]]:
    return [(r.label, {k: f.value for k, f in r.figures.items()})
            for r in parse(tool, (DATA / name).read_text()).records]


def test_every_timing_report_is_a_record_in_order_and_a_report_without_its_head_stands_apart():
    seven = records("jetson-inference", "jetson-inference-timing-report-xaviernx-ssd-mobilenet-7frames.txt")
    assert [label for label, _ in seven] == [f"report {n}" for n in range(1, 8)]
    assert [found["network_cuda_ms"] for _, found in seven] == [9.24570, 6.43939, 3.04947, 3.45616, 5.96934, 3.36922,
                                                                3.13037]
    assert all(len(found) == 10 for _, found in seven)
    cut = records("jetson-inference", "jetson-inference-timing-report-u2net-ros-partial-cudaerr-1789.txt")
    assert [label for label, _ in cut] == ["report 1 (its head is not in the log)", "report 2", "report 3"]
    assert cut[0][1]["total_cpu_ms"] == 271.25882 and len(cut[2][1]) == 4  # the last: cut after its Network row


def test_a_trtexec_log_of_seven_runs_has_each_runs_figures_and_trace_averages():
    found = records("trtexec", "trtexec-7.1-host-latency-resnet50-fp16-7runs-clock2018.txt")
    runs = [(label, figures) for label, figures in found if ":" not in label]
    assert [label for label, _ in runs] == [f"run {n}" for n in range(1, 8)]
    assert [figures["trace_queries"] for _, figures in runs] == [113, 136, 144, 176, 192, 4096, 384]
    first = [figures for label, figures in found if label.startswith("run 1: trace average")]
    assert first[0] == {"runs": 3, "gpu_latency_ms": 26.9138, "host_latency_ms": 26.9751, "end_to_end_ms": 26.9875,
                        "enqueue_ms": 1.83366}


def test_trtexec_of_tensorrt_5_every_average_line_and_their_summary():
    text = ("[I] Average over 10 runs is 5.2 ms (host walltime is 5.4 ms, 99% percentile time is 6.0).\n"
            "Average over 10 runs is 5.0 ms (host walltime is 5.2 ms, 99% percentile time is 7.5).\n"
            "Average over 10 runs is 4.9 ms.\n")
    parsed = parse("trtexec", text)
    assert [(r.label, {k: f.value for k, f in r.figures.items()}) for r in parsed.records] == [
        ("average 1", {"runs": 10, "gpu_mean_ms": 5.2, "host_walltime_mean_ms": 5.4, "p99_ms": 6.0}),
        ("average 2", {"runs": 10, "gpu_mean_ms": 5.0, "host_walltime_mean_ms": 5.2, "p99_ms": 7.5}),
        ("average 3", {"runs": 10, "gpu_mean_ms": 4.9})]
    assert {k: f.value for k, f in parsed.figures.items()} == {
        "gpu_mean_ms": pytest.approx(5.0333333), "host_walltime_mean_ms": pytest.approx(5.3), "p99_ms": 7.5,
        "average_lines": 3}


def test_benchmark_model_count_lines_are_records():
    assert records("benchmark_model", "benchmark_model-2.20-ti-am62x-xnnpack.txt") == [
        ("warm-up", {"runs": 1, "last_ms": 905.463, "p5_ms": 905.463, "median_ms": 905.463, "p95_ms": 905.463}),
        ("timed", {"runs": 50, "first_ms": 900.416, "last_ms": 898.333, "min_ms": 898.007, "max_ms": 906.121,
                   "mean_ms": 899.641, "std_ms": 1.549, "p5_ms": 898.333, "median_ms": 899.281, "p95_ms": 904.305})]


def test_tf_trt_lab_and_tutorial_lines():
    lab = parse("tftrt-bench", (DATA / "tftrt-tf1.15-xaviernx-w251-lab-mobilenetv2-keras-frozen-trt-3runs.txt")
                .read_text())
    assert [(r.label, {k: f.value for k, f in r.figures.items()}) for r in lab.records] == [
        ("average 1", {"average_s": 0.07, "fps": 13.65}), ("average 2", {"average_s": 0.02, "fps": 40.59}),
        ("average 3", {"average_s": 0.0, "fps": 216.24})]
    assert {k: f.value for k, f in lab.figures.items()} == {"average_s": 0.0, "fps": 216.24}
    needed = values("tftrt-bench", "tftrt-tf1-trt4-ardianumam-lenet-mnist-per-iteration-needed-time.txt")
    assert needed["first_inference_ms"] == pytest.approx(0.782012939453125)
    assert 0.5 < needed["inference_mean_ms"] < 0.7 and "average_inference_s" in needed
    frames = parse("tftrt-bench", (DATA / "tftrt-tf2-xaviernx-yolov4-fp16-detect-video-per-frame-fps-tail-excerpt.txt")
                   .read_text())
    assert len(frames.records) == 118 and frames.figures["first_fps"].value == 1.90
    steps = values("tftrt-bench", "tftrt-tf2-trt7-v100-dli-workshop-vgg19-fp16-steps-average-throughput.txt")
    assert steps == {"step_mean_ms": pytest.approx((10.1 + 9.8 + 10.0) / 3), "steps_printed": 3, "images_per_s": 1616}
