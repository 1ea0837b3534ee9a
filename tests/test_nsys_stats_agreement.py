"""Our API summaries carry the very numbers `nsys stats` prints, on the same files, with the real nsys."""
from __future__ import annotations

import shutil

import pytest
from nsys_stats import REPORTS, assert_same_numbers, nsys_projection, nsys_stats

from orchestrator.analysis import analyze_report

pytestmark = pytest.mark.integration

EXPORTS = ["es2gears-opengl", "python-cpu-sampling", "tflite-pose-xnnpack", "flux_gtx1650_2019.export2022_4",
           "abacus_titanrtx_2020.export2022_4", "nsu_v100_2022.export2022_4", "ompoffload_t4_2023",
           "openacc_rtx3080_2020", "cpuonly_sampling_2024", "instantngp_rtx3070_2021.export2022_4",
           "trt_multistream_gtx1070_2021.export2022_4", "tensorrt_layers_2023", "nvfuser_matmul_2024",
           "cudf_nvtx_2020.export2022_4"]


@pytest.mark.parametrize("name", EXPORTS)
def test_summaries_equal_nsys_stats(name, export, host_nsys):
    path = export(name)
    summary = analyze_report(path).as_json()
    compared = sum(assert_same_numbers(section, summary[section], nsys_stats(host_nsys, report, path))
                   for section, report in REPORTS.items())
    assert compared > 0  # every export here has at least one summary nsys also makes


@pytest.mark.parametrize("report", ["flux_gtx1650_2019.qdrep", "tflite-pose-xnnpack.nsys-rep"])
def test_reports_are_exported_first_and_still_agree(report, tmp_path, host_nsys):
    from conftest import NSYS_DATA
    copy = tmp_path / report
    shutil.copyfile(NSYS_DATA / report, copy)
    summary = analyze_report(copy).as_json()
    assert summary["capture"]["export"] == str(copy.with_suffix(".sqlite"))
    for section in ("nvtx", "cuda_kernels", "cuda_api", "memcpy", "osrt"):
        expected = nsys_stats(host_nsys, REPORTS[section], copy.with_suffix(".sqlite"))
        assert_same_numbers(section, summary[section], expected)


CUDA_EXPORTS = ["flux_gtx1650_2019.export2022_4", "abacus_titanrtx_2020.export2022_4", "nsu_v100_2022.export2022_4",
                "ompoffload_t4_2023", "openacc_rtx3080_2020", "instantngp_rtx3070_2021.export2022_4",
                "trt_multistream_gtx1070_2021.export2022_4", "tensorrt_layers_2023", "nvfuser_matmul_2024",
                "cudf_nvtx_2020.export2022_4"]


@pytest.mark.parametrize("name", CUDA_EXPORTS)
def test_kernels_by_function_are_gpukernsum_base_summed_by_name(name, export, host_nsys):
    """A function's row holds every launch of it: nsys's gpukernsum:base rows (one per function, grid and block)
    summed by name; its launch shapes are the default gpukernsum rows naming it."""
    path = export(name)
    summary = analyze_report(path).as_json()
    base = nsys_stats(host_nsys, "gpukernsum:base", path)
    assert base is not None
    summed = base.groupby("Name").agg(calls=("Instances", "sum"), total=("Total Time (ns)", "sum"),
                                      low=("Min (ns)", "min"), high=("Max (ns)", "max"), shapes=("Name", "size"))
    ours = {row["name"]: row for row in summary["kernel_functions"]}
    assert sorted(ours) == sorted(summed.index)
    for function, row in summed.iterrows():
        mine = ours[function]
        assert (mine["calls"], mine["total_ns"], mine["min_ns"], mine["max_ns"]) == \
            (row["calls"], row["total"], row["low"], row["high"]), function
    totals = [row["total_ns"] for row in summary["kernel_functions"]]
    assert totals == sorted(totals, reverse=True)
    for function, row in ours.items():  # its launch shapes, under it
        shapes = [k for k in summary["cuda_kernels"] if k["function"] == function]
        assert sum(k["calls"] for k in shapes) == row["calls"] and len(shapes) >= row["shapes"] >= 1


NVTX_CUDA_EXPORTS = ["flux_gtx1650_2019.export2022_4", "trt_multistream_gtx1070_2021.export2022_4",
                     "tensorrt_layers_2023", "nvfuser_matmul_2024", "cudf_nvtx_2020.export2022_4"]


@pytest.mark.parametrize("name", NVTX_CUDA_EXPORTS)
def test_gpu_time_per_nvtx_range_is_nvtxgpuproj(name, export, host_nsys):
    """Each NVTX range's projection on the GPU is nsys's own (`nsys stats -r nvtxgpuproj`, row by row: its range,
    projected start and duration, GPU operations, level and parent), and the tree in summary.json sums them by
    the path of range names."""
    from orchestrator.analysis.analyzers.nvtx_gpu import projections
    from orchestrator.analysis.export.report_input import open_report
    from orchestrator.analysis.export.trace import Trace
    path = export(name)
    theirs = nsys_projection(host_nsys, path)
    conn, schema, export_path = open_report(path, None)
    trace = Trace(conn, schema, export_path)
    try:
        ours = projections(trace)
    finally:
        trace.close()
        conn.close()
    assert ours is not None and len(ours) == len(theirs) > 0
    mine = ours.set_index("rangeId")
    for range_id, row in theirs.iterrows():
        got = mine.loc[range_id]
        parent = -1 if row["ParentId"] in ("", "None") else int(row["ParentId"])
        assert (got["name"], got["proj_start"], got["proj_end"] - got["proj_start"], got["start"],
                got["end"] - got["start"], got["ops"], got["level"], got["parent"]) == \
            (str(row["Name"]), row["Projected Start (ns)"], row["Projected Duration (ns)"], row["Orig Start (ns)"],
             row["Orig Duration (ns)"], row["NumGPUOps"], row["Lvl"], parent), range_id
    tree = {tuple(row["path"]): row for row in analyze_report(path).as_json()["nvtx_gpu"]}
    by_path: dict[tuple[str, ...], list[int]] = {}
    for _, row in theirs.iterrows():
        stack = [int(i) for i in str(row["RangeStack"]).split(":") if i]
        if all(i in theirs.index for i in stack):  # every range around it queued GPU work: its names are here
            by_path.setdefault(tuple(str(theirs.loc[i, "Name"]) for i in stack), []).append(
                int(row["Projected Duration (ns)"]))
    assert by_path
    for names, durations in by_path.items():
        assert (tree[names]["ranges"], tree[names]["gpu_ns"]) == (len(durations), sum(durations)), names
