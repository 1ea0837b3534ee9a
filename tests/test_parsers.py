"""Tool-output parsers on real published output (sources in tests/data/parsers/SOURCES.md): every figure."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli

from orchestrator.errors import ParseError
from orchestrator.parsers import parse

DATA = Path(__file__).parent / "data" / "parsers"


def figures(tool: str, name: str) -> dict[str, float]:
    return {k: f.value for k, f in parse(tool, (DATA / name).read_text()).figures.items()}


def stats(prefix: str, *values: float) -> dict[str, float]:
    names = ("min", "max", "mean", "median", "p90", "p95", "p99")
    if len(values) == 5:
        names = ("min", "max", "mean", "median", "p99")
    return {f"{prefix}_{n}_ms": v for n, v in zip(names, values)}


def test_trtexec_10_performance_summary():
    assert figures("trtexec", "trtexec-10.3-summary.txt") == {
        "throughput_qps": 130.298,
        **stats("latency", 5.38672, 13.3664, 7.60628, 7.16092, 10.2996, 10.8698, 12.9675),
        **stats("enqueue", 2.72876, 15.0201, 7.63062, 7.86694, 10.1792, 11.7217, 14.1848),
        **stats("h2d", 0.0065918, 0.0698242, 0.0122212, 0.00814819, 0.0253906, 0.0270996, 0.0515137),
        **stats("gpu_compute", 5.34595, 13.3388, 7.58404, 7.14139, 10.2881, 10.8175, 12.9485),
        **stats("d2h", 0.00390625, 0.110596, 0.0100141, 0.00439453, 0.0254517, 0.0319824, 0.0994873),
        "total_host_walltime_s": 3.00082, "total_gpu_compute_s": 2.96536}


def test_trtexec_8_summary_with_the_99th_percentile_only():
    assert figures("trtexec", "trtexec-8-p99-only.txt") == {
        "throughput_qps": 759.832,
        **stats("latency", 2.02026, 62.6002, 2.13468, 2.09521, 2.16016),
        **stats("enqueue", 0.68811, 62.5577, 0.74662, 0.699463, 1.09021),
        **stats("h2d", 0.801147, 0.830566, 0.818888, 0.818848, 0.822998),
        **stats("gpu_compute", 1.20691, 61.7889, 1.30893, 1.26953, 1.33472),
        **stats("d2h", 0.00537109, 0.0314941, 0.00687307, 0.0065918, 0.00878906),
        "total_host_walltime_s": 3.00461, "total_gpu_compute_s": 2.98828, "trace_average_runs": 1000}
    parsed = parse("trtexec", (DATA / "trtexec-8-p99-only.txt").read_text())
    assert [(r.label, {k: f.value for k, f in r.figures.items()}) for r in parsed.records] == [
        ("trace average 1", {"runs": 1000, "gpu_latency_ms": 1.29198, "host_latency_ms": 2.1176,
                             "enqueue_ms": 0.710162}),
        ("trace average 2", {"runs": 1000, "gpu_latency_ms": 1.33715, "host_latency_ms": 2.16307,
                             "enqueue_ms": 0.796356})]


def test_trtexec_6_average_over_runs():
    parsed = parse("trtexec", (DATA / "trtexec-6-average.txt").read_text())
    assert {k: f.value for k, f in parsed.figures.items()} == {
        "gpu_mean_ms": 55.2518, "host_walltime_mean_ms": 55.3944, "p99_ms": 59.9569, "average_lines": 1}
    assert parsed.failure is None and parsed.figures["gpu_mean_ms"].unit == "ms"


def test_trtexec_averages_several_lines():
    text = ("[I] Average over 10 runs is 10.0 ms (host walltime is 11.0 ms, 99% percentile time is 12.5).\n"
            "[I] Average over 10 runs is 12.0 ms (host walltime is 13.0 ms, 99% percentile time is 14.0).\n")
    assert {k: f.value for k, f in parse("trtexec", text).figures.items()} == {
        "gpu_mean_ms": 11.0, "host_walltime_mean_ms": 12.0, "p99_ms": 14.0, "average_lines": 2}


def test_trtexec_failures_are_clean_with_their_reason():
    oom = parse("trtexec", (DATA / "trtexec-10.3-out-of-memory.txt").read_text())
    assert oom.figures == {}
    assert oom.failure == ("out of memory (Error[1]: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime "
                           "(out of memory))")
    failed = parse("trtexec", (DATA / "trtexec-8.4-failed.txt").read_text())
    assert failed.failure == "trtexec reported FAILED" and failed.details == {"version": "8.4.2"}


def test_tftrt_bench_first_inference_and_mean():
    parsed = parse("tftrt-bench", (DATA / "tftrt-bench-pose-pipeline.txt").read_text())
    assert {k: (f.value, f.unit) for k, f in parsed.figures.items()} == {
        "first_inference_ms": (18.01, "ms"), "inference_mean_ms": (11.27, "ms")}
    killed = parse("tftrt-bench", "First Inference : 30694.12 ms\nKilled\n")
    assert killed.failure == "Killed (out of memory)" and killed.figures["first_inference_ms"].value == 30694.12


def test_glmark2_scenes_and_score():
    parsed = parse("glmark2", (DATA / "glmark2-2020.04-one-scene.txt").read_text())
    assert {k: f.value for k, f in parsed.figures.items()} == {
        "build[use-vbo=false]_fps": 418, "build[use-vbo=false]_frame_ms": 2.392, "score": 418, "scenes": 1}
    assert parsed.details == {"version": "2020.04", "renderer": "Mesa DRI Intel(R) HD Graphics P4600/P4700 (HSW GT2)"}


def test_glmark2_scenes_that_drew_nothing_stay_infinite_and_json_says_null():
    parsed = parse("glmark2", (DATA / "glmark2-2021.02-softpipe.txt").read_text())
    values = {k: f.value for k, f in parsed.figures.items()}
    assert values["scenes"] == 12 and "score" not in values
    assert values["build[use-vbo=false]_fps"] == 1 and values["build[use-vbo=false]_frame_ms"] == 1000.0
    infinite = [k for k, v in values.items() if k.endswith("_frame_ms") and math.isinf(v)]
    assert len(infinite) == 11 and all(values[k.replace("_frame_ms", "_fps")] == 0 for k in infinite)
    assert json.loads(json.dumps(parsed.as_json()))["figures"]["bump[bump-render=height]_frame_ms"] == {
        "value": None, "unit": "ms"}


@pytest.mark.parametrize("name, expected", [
    ("jetson-inference-orin.txt", (0.05328, 0.03840, 4.47820, 4.85386, 0.04013, 0.00147, 4.57161, 4.89373)),
    ("jetson-inference-u2net-cuda-errors.txt", (0.05776, 0.05968, 59.59396, 59.20493, 0.04883, 0.0, 59.70056,
                                                59.26461)),
])
def test_jetson_inference_timing_report(name, expected):
    keys = [f"{part}_{clock}_ms" for part in ("pre_process", "network", "post_process", "total")
            for clock in ("cpu", "cuda")]
    assert figures("jetson-inference", name) == {**dict(zip(keys, expected)), "reports": 1}


def test_text_of_another_tool_is_a_parse_error():
    with pytest.raises(ParseError, match="holds none of the figures the 'glmark2' parser reads"):
        parse("glmark2", (DATA / "trtexec-10.3-summary.txt").read_text())
    with pytest.raises(ParseError, match="no parser 'nvprof'"):
        parse("nvprof", "")


def test_parse_command_prints_figures_and_json(tmp_path):
    done = run_cli("parse", "trtexec", str(DATA / "trtexec-6-average.txt"))
    assert done.returncode == 0, done.stderr
    assert "gpu_mean_ms" in done.stdout and "55.2518 ms" in done.stdout
    as_json = run_cli("parse", "jetson-inference", str(DATA / "jetson-inference-orin.txt"), "--json")
    document = json.loads(as_json.stdout)
    assert document["figures"]["network_cuda_ms"] == {"value": 4.85386, "unit": "ms"}
    failed = run_cli("parse", "trtexec", str(DATA / "trtexec-10.3-out-of-memory.txt"))
    assert failed.returncode == 0 and "failed: out of memory" in failed.stdout
    wrong = run_cli("parse", "glmark2", str(DATA / "jetson-inference-orin.txt"))
    assert wrong.returncode == 19 and wrong.stderr.count("\n") == 1
    assert "holds none of the figures the 'glmark2' parser reads" in wrong.stderr
    missing = run_cli("parse", "glmark2", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
