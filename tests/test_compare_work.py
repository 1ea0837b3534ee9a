"""`compare` for runs without frames, on copies of a real CUDA export (instant-ngp's training loop, 937 iterations)
changed in known ways: every time x1.2, one kernel function's durations x1.5, nothing. Each copy is compared with
the export itself."""
from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from orchestrator.report import compare_runs, write_comparison
from orchestrator.report.compare import comparison_page

SOURCE = "instantngp_rtx3070_2021.export2022_4"
TIMES = ("start", "end", "timestamp", "startTime", "stopTime")
KERNEL = "kernel_mlp_fused"  # the function with the most GPU time


def changed_copy(source, target, factor: float = 1.0, kernel: str | None = None):
    """The export with every timestamp scaled by ``factor``, and ``kernel``'s kernels 1.5x as long."""
    shutil.copyfile(source, target)
    with sqlite3.connect(target) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            times = [c[1] for c in conn.execute(f"PRAGMA table_info('{table}')") if c[1] in TIMES]
            if factor != 1.0 and times:
                conn.execute(f"UPDATE {table} SET " + ", ".join(
                    f'"{c}" = CAST(round("{c}" * {factor}) AS INTEGER)' for c in times))
        if kernel:
            conn.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + CAST(round(("end" - start) * 1.5) '
                         "AS INTEGER) WHERE shortName = (SELECT id FROM StringIds WHERE value = ?)", (kernel,))
    return target


def compared(export, tmp_path, **change) -> tuple[dict, dict]:
    source = export(SOURCE)
    copy = changed_copy(source, tmp_path / "changed.sqlite", **change)
    document = compare_runs([source, copy], ["base", "changed"], page_dir=tmp_path)
    metrics = {m["key"]: m for m in document["metrics"]}
    [work] = document["work"]["variants"]
    return metrics, work


def test_every_time_scaled_by_1_2_is_20_percent_slower(export, tmp_path):
    metrics, work = compared(export, tmp_path, factor=1.2)
    for key in ("steady_mean_ns", "first_frame_ns", "gpu_busy_ns", "kernels_ns", "cuda_api_ns"):
        assert metrics[key]["deltas"][1]["pct"] == pytest.approx(20.0, abs=0.5), key
        # times per iteration are worse; the totals (the window's, the capture's) are more: neither way is better
        assert metrics[key]["deltas"][1]["direction"] == ("worse" if key.endswith("frame_ns") or
                                                          key == "steady_mean_ns" else "more"), key
    assert metrics["frames"]["deltas"][1]["direction"] == "same"
    assert work["unit"] == "iteration" and work["verdict"]["verdict"] == "slower"
    assert work["verdict"]["relative"] == pytest.approx(0.2, abs=0.005)
    top = work["kernel_movers"][:5]
    assert top[0]["name"] == KERNEL
    assert all(row["pct"] == pytest.approx(20.0, abs=0.5) for row in top)


def test_the_comparison_of_iteration_runs_speaks_of_iterations(export, tmp_path):
    source = export(SOURCE)
    copy = changed_copy(source, tmp_path / "changed.sqlite", factor=1.2)
    document = compare_runs([source, copy], ["base", "changed"], page_dir=tmp_path)
    labels = {m["key"]: m["label"] for m in document["metrics"]}
    assert (labels["first_frame_ns"], labels["frames_per_s"], labels["frames"]) == (
        "first iteration (first inference)", "iterations per second", "iterations captured")
    assert labels["share_gpu_ns"].startswith("per iteration: waiting for the GPU")
    [change] = document["share_changes"]
    page = comparison_page(document)
    assert [title for title, _ in page.charts][:2] == ["steady mean per iteration (ms)", "first iteration (ms)"]
    assert page.changes[0].startswith("changed: the iteration is ") and page.changes[0].endswith(" per iteration)")
    html, _ = write_comparison(document, tmp_path / "compare.html")
    said = re.sub(r"<[^>]+>", " ", html.read_text().split("<script")[0])  # the page's words, not its markup
    assert "frame" not in said.lower() and "iterations per second" in said


def test_one_kernel_slower_is_named_first_and_the_rest_unchanged(export, tmp_path):
    metrics, work = compared(export, tmp_path, kernel=KERNEL)
    first, *rest = work["kernel_movers"]
    assert (first["name"], first["direction"]) == (KERNEL, "worse")
    assert first["pct"] == pytest.approx(50.0, abs=0.5)
    assert rest and all(row["direction"] == "same" and row["change_ns"] == 0 for row in rest)
    assert work["kernels_changed"] == 1
    assert work["verdict"]["verdict"] == "no clear difference"  # the CPU's iterations did not move
    assert metrics["steady_mean_ns"]["deltas"][1]["direction"] == "same"


def test_an_unchanged_copy_is_no_change(export, tmp_path):
    metrics, work = compared(export, tmp_path)
    assert work["verdict"]["verdict"] == "no clear difference" and work["kernels_changed"] == 0
    assert all(m["deltas"][1] is None or m["deltas"][1]["direction"] == "same" for m in metrics.values())


def test_a_cuda_run_against_an_opengl_one_says_so_in_one_line(export, tmp_path):
    document = compare_runs([export(SOURCE), export("es2gears-opengl")], ["cuda", "gl"], page_dir=tmp_path)
    [work] = document["work"]["variants"]
    assert work["not_comparable"] == ("gl is an OpenGL run and cuda a CUDA run: their GPU figures and iterations are "
                                      "not the same things; compare runs of one kind")
