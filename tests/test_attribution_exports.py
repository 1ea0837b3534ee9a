"""The attribution on real exports (es2gears under Xvfb, the TFLite pose pipeline on XNNPACK, an OpenMP offload
on CUDA), each share the verdict names recomputed with SQL apart from the analysis (share_sql.py)."""
from __future__ import annotations

import sqlite3

import pytest
from share_sql import POINTS, cuda_wait_ns, display_ns, frames_read, global_tid, pct_of, renderer_wait_ns, running_ns

from orchestrator.analysis import analyze_report
from orchestrator.documents.shares import SHARES
from orchestrator.documents.summary import Summary


def assert_frames_add_up(summary: Summary) -> None:
    """Every frame's shares add up to the frame's time (within 1 %)."""
    found = summary.attribution
    assert found is not None
    per_frame = summary.as_json()["frames"]["per_frame_ns"]
    for k in range(found.frame_count):
        index = found.first_frame + k * found.sampled_every
        total = sum(found.share(name).per_frame_ns[k] for name in SHARES if found.share(name).per_frame_ns)
        assert total == pytest.approx(per_frame[index], rel=0.01)


def test_es2gears_copies_into_the_x_socket_on_a_cpu_and_waits_on_the_x_server_off_one(export):
    """writev's copy of each frame into the X socket, on a CPU, is running; only off a CPU is the thread blocked on
    the X server. The running share is the thread's CPU time the threads table shows."""
    path = export("es2gears-opengl")
    summary = analyze_report(path)
    found, verdict = summary.attribution, summary.as_json()["verdict"]
    assert found is not None and found.thread.startswith("es2gears_x11")
    spans = frames_read(summary)
    with sqlite3.connect(path) as conn:
        gtid = global_tid(conn, found.thread)
        display = pct_of(display_ns(conn, gtid, spans), spans)
        renderer = pct_of(renderer_wait_ns(conn, gtid, spans), spans)
        running = pct_of(running_ns(conn, gtid, spans), spans)
    assert found.share("display").pct == pytest.approx(display, abs=2.0)
    assert found.share("gpu").pct == pytest.approx(renderer, abs=2.0)
    assert found.share("cpu").pct == pytest.approx(running, abs=1.0)
    [thread] = [t for t in summary.threads if t.tid == int(found.thread.rsplit("(", 1)[1].rstrip(")"))]
    assert found.on_cpu_pct == pytest.approx(thread.cpu_pct, abs=1.0)  # the CPU section's figure
    assert (int(found.share("cpu").pct), int(found.share("gpu").pct), int(found.share("display").pct)) == (43, 35, 15)
    assert "writev" in found.share("cpu").inside and found.share("display").calls[:2] == ["poll", "writev"]
    assert verdict["kind"] == "cpu_bound" and verdict["share"] == "cpu" == found.largest
    # llvmpipe is the CPU: never "waiting for the GPU", no vsync (vblank_mode=0; frames far under a refresh)
    assert "waiting for the GPU" not in verdict["summary"] and "vsync" not in verdict["summary"]
    assert "do not represent the board's GPU" in verdict["summary"]
    assert "inside writev" in verdict["summary"]
    assert found.share("threads").threads and found.share("threads").threads[0].startswith("llvmpipe-")
    assert found.sources.context_switches and found.sources.os_runtime
    assert found.confidence == "low"  # waiting for llvmpipe weighs 82 % of running: neither is clearly the cause
    assert_frames_add_up(summary)


def test_xnnpack_with_two_threads_runs_on_a_cpu(export):
    path = export("tflite-pose-xnnpack")
    summary = analyze_report(path)
    found = summary.attribution
    assert found is not None and found.frame_count == 59 and found.sampled_every == 1  # frame 0 is the first frame
    spans = frames_read(summary)
    with sqlite3.connect(path) as conn:
        [[gtid]] = conn.execute("SELECT DISTINCT n.globalTid FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
                                "WHERE s.value = 'frame'").fetchall()
        running = pct_of(running_ns(conn, gtid, spans), spans)
    assert found.largest == "cpu" and found.share("cpu").pct == pytest.approx(running, abs=POINTS)
    assert found.share("cpu").calls[0].startswith("xnn_")  # the hottest functions of the thread
    assert summary.as_json()["verdict"]["kind"] == "cpu_bound" and summary.as_json()["verdict"]["confidence"] == "high"
    assert_frames_add_up(summary)


def test_an_openmp_offload_waits_for_its_copies_on_the_gpu(export):
    path = export("ompoffload_t4_2023")
    summary = analyze_report(path)
    found, verdict = summary.attribution, summary.as_json()["verdict"]
    # no frames: 50 iterations, each ending with a cuStreamSynchronize (at a steady period), back to back
    assert found is not None and found.frames is not None and found.frames.unit == "iteration"
    assert summary.frames is not None and summary.frames.source == "cuStreamSynchronize"
    spans = [(found.start_ns, found.end_ns)]
    with sqlite3.connect(path) as conn:
        gtid = global_tid(conn, found.thread)
        waiting = pct_of(cuda_wait_ns(conn, gtid, spans), spans)
    assert found.largest == "gpu" and found.share("gpu").pct == pytest.approx(waiting, abs=POINTS)
    assert verdict["kind"] in ("gpu_wait", "gpu_bound") and verdict["confidence"] == "medium"  # no OS runtime trace
    assert any("no OS runtime trace" in line for line in verdict["evidence"])
    assert "cuMemcpyDtoHAsync" in found.share("gpu").calls


def test_without_a_thread_to_follow_the_verdict_says_so(export):
    """A legacy export with neither frames nor CPU data still gets a focus thread from its CUDA calls; its time
    outside traced calls is unexplained, and the verdict says how little it knows."""
    summary = analyze_report(export("openacc_rtx3080_2020"))
    found = summary.attribution
    assert found is not None and found.largest == "unexplained" and found.confidence == "low"
    assert summary.as_json()["verdict"]["kind"] == "unexplained" and summary.as_json()["verdict"]["confidence"] == "low"
    assert len(found.missing) == 2


def test_the_slowest_frame_tells_its_own_story_as_sql_does(export):
    """The slowest steady frame's shares and longest calls are that frame's alone, recomputed with SQL over it (the
    run's averages are another figure)."""
    path = export("es2gears-opengl")
    summary = analyze_report(path)
    found, frames = summary.attribution, summary.frames
    assert found is not None and frames is not None
    first = frames.count - frames.steady.count
    steady = frames.per_frame_ns[first:]
    slowest = first + steady.index(max(steady))
    story = found.story(slowest)
    assert story is not None and "the slowest steady frame" in story.told
    lo, hi = frames.frame_starts_ns[slowest], frames.frame_starts_ns[slowest] + frames.per_frame_ns[slowest]
    assert (story.start_ns, story.end_ns) == (lo, hi) and sum(story.shares.values()) == pytest.approx(hi - lo, abs=2)
    with sqlite3.connect(path) as conn:
        gtid = global_tid(conn, found.thread)
        spans = [(lo, hi)]
        assert story.shares["display"] == pytest.approx(display_ns(conn, gtid, spans), abs=1)
        assert story.shares["gpu"] == pytest.approx(renderer_wait_ns(conn, gtid, spans), abs=1)
        assert story.shares["cpu"] == pytest.approx(running_ns(conn, gtid, spans), abs=1)
        # its longest call: the OS call holding most of the frame, and the GL call it was made in
        name, start, end, within = conn.execute(
            """SELECT s.value, o.start, o."end", (SELECT g.value FROM OPENGL_API a JOIN StringIds g ON g.id = a.nameId
                   WHERE a.globalTid = o.globalTid AND a.start <= o.start AND o.start < a."end")
               FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
               WHERE o.globalTid = ? AND o.start < ? AND o."end" > ?
               ORDER BY min(o."end", ?) - max(o.start, ?) DESC LIMIT 1""", (gtid, hi, lo, hi, lo)).fetchone()
    longest = story.calls[0]
    assert (longest.name, longest.inside, longest.ns) == (name, within, min(end, hi) - max(start, lo))
    assert longest.ns > 0.5 * (hi - lo)  # es2gears's slowest frame: one writev of the frame into the X socket
    # every frame the verdict's findings name carries its own story
    for finding in summary.verdict.findings if summary.verdict else []:
        if finding.kind.startswith("share_") and finding.frames:
            assert found.story(finding.frames[0].index) is not None, finding.kind


def test_another_threads_time_by_tid_or_name(export):
    from orchestrator.analysis import AnalysisOptions
    from orchestrator.errors import UsageError
    path = export("es2gears-opengl")
    for wanted in ("7193", "llvmpipe-1"):
        found = analyze_report(path, AnalysisOptions(thread=wanted)).attribution
        assert found is not None and found.thread == "llvmpipe-1 (7193)"
        assert found.largest == "threads"  # a render thread waits for its share of each frame's work
    with pytest.raises(UsageError) as raised:
        analyze_report(path, AnalysisOptions(thread="nope"))
    assert raised.value.message == "--thread nope: no such thread in the capture"
    assert "es2gears_x11 (7188)" in raised.value.hint
