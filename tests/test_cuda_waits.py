"""Waits for the GPU inside CUDA calls, on real CUDA exports: the verdict's GPU share against an independent reading
of the same export in SQL and plain Python (the time the focus thread spends inside calls that wait for the GPU,
those that overlap GPU work), within 5 points; and the share named "not traced" when the GPU's work was not."""
from __future__ import annotations

import bisect
import re
import shutil
import sqlite3

import pytest

from orchestrator.analysis import analyze_report

EXPORTS = ["flux_gtx1650_2019.export2022_4", "abacus_titanrtx_2020.export2022_4", "nsu_v100_2022.export2022_4",
           "ompoffload_t4_2023", "openacc_rtx3080_2020", "instantngp_rtx3070_2021.export2022_4",
           "trt_multistream_gtx1070_2021.export2022_4", "tensorrt_layers_2023", "nvfuser_matmul_2024",
           "cudf_nvtx_2020.export2022_4"]
# CUDA's synchronisations and synchronous copies, by their documented names (the runtime's and the driver's)
WAITING = re.compile(r"^(cuda(Device|Stream|Event|Thread)Synchronize|cuda(Memcpy|Memcpy2D|Memcpy3D|MemcpyToSymbol|"
                     r"MemcpyFromSymbol|MemcpyPeer)|cu(Ctx|Stream|Event)Synchronize|cuMemcpy(DtoH|HtoD|2D|3D|Peer)?)"
                     r"(_v\d+)?$")
POINTS = 5.0


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if found and start <= found[-1][1]:
            found[-1] = (found[-1][0], max(found[-1][1], end))
        else:
            found.append((start, end))
    return found


def waiting_ns(path, tid: int, life: tuple[int, int]) -> int:
    """The thread's time inside calls that wait for the GPU (by name, or queuing a copy from or to pageable memory)
    that overlap some GPU work, clipped to its life."""
    with sqlite3.connect(path) as conn:
        names = {i for i, value in conn.execute("SELECT id, value FROM StringIds") if WAITING.match(value)}
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE name IN ("
                                             "'CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', "
                                             "'CUPTI_ACTIVITY_KIND_MEMSET')")]
        pageable = {c for (c,) in conn.execute("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                               "WHERE srcKind = 0 OR dstKind = 0")} \
            if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables else set()
        calls = [(s, e) for s, e, n, c in conn.execute(
            'SELECT start, "end", nameId, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME '
            "WHERE globalTid & 0xFFFFFF = ?", (tid,)) if n in names or c in pageable]
        work = _merged([tuple(row) for t in tables for row in conn.execute(f'SELECT start, "end" FROM {t}')])
    starts = [s for s, _ in work]
    total = 0
    for start, end in _merged(calls):
        at = bisect.bisect_left(starts, end)  # the work starting before the call ends: does the last reach in?
        if at and work[at - 1][1] > start:
            total += max(0, min(end, life[1]) - max(start, life[0]))
    return total


@pytest.mark.parametrize("name", EXPORTS)
def test_the_gpu_share_is_the_time_inside_calls_that_wait_for_the_gpu(export, name):
    path = export(name)
    summary = analyze_report(path).as_json()
    found = summary["attribution"]
    tid = int(re.search(r"\((\d+)\)$", found["thread"]).group(1))
    life = (found["start_ns"], found["end_ns"])  # the thread's life in the window (the shares may read a sample)
    expected = waiting_ns(path, tid, life) * 100.0 / (life[1] - life[0])
    gpu = found["shares"]["gpu"]["pct"]
    assert abs(gpu - expected) <= POINTS, (gpu, expected)
    largest = max(found["shares"], key=lambda share: found["shares"][share]["pct"])
    if expected > 50:
        assert largest == "gpu" and summary["verdict"]["kind"] in ("gpu_wait", "gpu_bound")


def test_a_copy_to_pageable_memory_is_a_wait_for_the_gpu(export):
    """flux's 630 cuMemcpyDtoHAsync calls copy into pageable memory: synchronous, each waits for its stream; the
    GPU share names them, and holds their whole time."""
    path = export("flux_gtx1650_2019.export2022_4")
    summary = analyze_report(path).as_json()
    gpu = summary["attribution"]["shares"]["gpu"]
    assert summary["attribution"]["thread"] == "python3 (18176)" and "cuMemcpyDtoHAsync" in gpu["calls"]
    with sqlite3.connect(path) as conn:
        copies_ns = conn.execute(
            'SELECT sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m '
            "ON m.correlationId = r.correlationId WHERE m.dstKind = 0 AND r.globalTid & 0xFFFFFF = 18176").fetchone()[0]
        syncs_ns = conn.execute(
            'SELECT sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId '
            "WHERE s.value IN ('cuEventSynchronize', 'cuCtxSynchronize', 'cuStreamSynchronize') "
            "AND r.globalTid & 0xFFFFFF = 18176").fetchone()[0]
    assert copies_ns > 200e6
    assert gpu["ns"] >= copies_ns + syncs_ns - 1e6  # the copies and the synchronisations, whole


def test_without_the_gpus_work_the_wait_is_not_traced(export, tmp_path):
    """The same capture without its GPU tables (as when the GPU is not traced): the waits in synchronising calls
    are still the GPU's, said to be not traced, with the step that records the GPU's work."""
    path = tmp_path / "no-gpu.sqlite"
    shutil.copyfile(export("flux_gtx1650_2019.export2022_4"), path)
    with sqlite3.connect(path) as conn:
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            conn.execute(f"DROP TABLE {table}")
    from orchestrator.documents.summary import Summary
    from orchestrator.figures.next_steps import next_steps
    summary = analyze_report(path)
    found = summary.attribution
    assert found is not None and not found.sources.gpu_work
    assert found.title("gpu") == "waiting for the GPU (not traced)"
    assert found.share("gpu").pct > 20
    [line] = [f for f in summary.verdict.findings if f.text.startswith("waiting for the GPU")]
    assert line.text.startswith("waiting for the GPU (not traced): ") and "not recorded" in line.text
    steps = next_steps(Summary.from_json(summary.as_json()), None, str(path))
    [step] = [s for s in steps if s.rule == "gpu_trace"]
    assert "--trace osrt,cuda" in step.command and "waits for the GPU in cuEventSynchronize" in step.why


def test_a_thread_stalled_by_four_byte_readbacks_is_not_cpu_bound(export):
    """instant-ngp's training loop: 937 copies of 4 bytes from the device into pageable memory, each waiting for the
    GPU's queue to drain; the thread waits for the GPU (nsys-ai calls it GPU-bound too), never "running on a CPU"."""
    summary = analyze_report(export("instantngp_rtx3070_2021.export2022_4")).as_json()
    assert summary["verdict"]["kind"] in ("gpu_bound", "gpu_wait")
    gpu = summary["attribution"]["shares"]["gpu"]
    assert gpu["pct"] > 80 and "cudaMemcpyAsync" in gpu["calls"]


def test_small_synchronous_readbacks_are_named(export):
    """flux's training loop (5.5 s to 7 s of its capture) copies a few bytes from the device into pageable memory
    again and again (cuMemcpyDtoHAsync): each copy stalls the host until the GPU's queue drains. Named with their
    count, sizes, kind and the time they hold (SQL's: copies to the host, of the thread's process), and a step that
    says what to do; over the whole capture they hold 7 % of the thread's time, under the 10 % that names them."""
    from orchestrator.analysis import AnalysisOptions
    from orchestrator.documents.summary import Summary
    from orchestrator.figures.next_steps import next_steps
    path = export("flux_gtx1650_2019.export2022_4")
    summary = analyze_report(path, AnalysisOptions(window="5.5s:7s"))
    found = summary.attribution
    assert found is not None and summary.frames is None
    with sqlite3.connect(path) as conn:
        count, held, low, high = conn.execute(
            'SELECT count(*), sum(min(r."end", ?) - max(r.start, ?)), min(m.bytes), max(m.bytes) '
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
            "WHERE m.bytes <= 4096 AND (m.srcKind = 0 OR m.dstKind = 0) AND m.copyKind IN (2, 4, 12) "
            "AND r.globalTid & 0xFFFFFF = 18176 AND r.globalTid >> 24 = m.globalPid >> 24 "
            'AND r."end" > ? AND r.start < ?', (found.end_ns, found.start_ns, found.start_ns, found.end_ns)).fetchone()
    [line] = [f for f in summary.verdict.findings if f.kind == "readbacks"]
    pct = held * 100.0 / (found.end_ns - found.start_ns)
    assert count > 300 and pct > 10
    size = f"{low} bytes" if low == high else f"{low} to {high} bytes"
    assert line.text == (f"{count} copies of {size}, device to pageable, each stalling the host "
                         f"{held / count / 1e6:.3g} ms on average: the GPU's queue drains each time ({pct:.0f} % of "
                         "python3 (18176)'s time, in cuMemcpyDtoHAsync)")
    [step] = [s for s in next_steps(Summary.from_json(summary.as_json()), None, str(path)) if s.rule == "readbacks"]
    window = summary.window
    assert step.command.endswith(f"--thread 18176 --window {window.start_ns}:{window.end_ns}")
    assert "pinned memory" in step.why
    whole = analyze_report(path)
    assert not [f for f in whole.verdict.findings if f.kind == "readbacks"]


def test_readbacks_that_hold_little_of_the_time_are_not_named(export):
    """instant-ngp's 936 four-byte readbacks in its steady iterations hold under 10 % of its thread's time (its
    waits are cudaDeviceSynchronize's): not a stalling readback here."""
    path = export("instantngp_rtx3070_2021.export2022_4")
    summary = analyze_report(path)
    found = summary.attribution
    with sqlite3.connect(path) as conn:
        held = conn.execute(
            'SELECT sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m '
            "ON m.correlationId = r.correlationId AND r.globalTid >> 24 = m.globalPid >> 24 WHERE m.bytes <= 4096 "
            'AND r.start >= ? AND r."end" <= ?',
            (found.start_ns, found.end_ns)).fetchone()[0]
    assert 0 < held < 0.10 * (found.end_ns - found.start_ns)
    assert not [f for f in summary.verdict.findings if f.kind == "readbacks"]
