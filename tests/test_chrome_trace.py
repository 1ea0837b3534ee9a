"""`orchestrate trace`: the Chrome trace event format written from real exports, event for event against SQL
written here, then opened in a real consumer, speedscope (from npm), in headless Chromium."""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from browser import REPO
from conftest import run_cli

from orchestrator.analysis import AnalysisOptions, analyze_report
from orchestrator.report.chrome_trace import GPU_PID, write_chrome_trace

NSYS_THREADS = ("SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                "WHERE s.value LIKE '[NSys%'")
# category -> SQL of (name, start, end) of the events overlapping :start..:end, in the app's threads
THREAD_SQL = {
    "NVTX": """SELECT coalesce(e.text, s.value), e.start, e."end" FROM NVTX_EVENTS e LEFT JOIN StringIds s
               ON s.id = e.textId WHERE e.eventType IN (59, 60, 70, 71)""",
    "OS runtime": """SELECT s.value, e.start, e."end" FROM OSRT_API e JOIN StringIds s ON s.id = e.nameId
                     WHERE e.eventClass = 27""",
    "OpenGL": """SELECT s.value, e.start, e."end" FROM OPENGL_API e JOIN StringIds s ON s.id = e.nameId WHERE 1""",
    "CUDA API": """SELECT s.value, e.start, e."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME e JOIN StringIds s
                   ON s.id = e.nameId WHERE 1""",
}
GPU_SQL = {
    "CUDA kernel": """SELECT s.value, e.start, e."end", e.deviceId, e.streamId FROM CUPTI_ACTIVITY_KIND_KERNEL e
                      JOIN StringIds s ON s.id = e.shortName WHERE 1""",
    "OpenGL GPU": """SELECT s.value, e.start, e."end", coalesce(e.gpu, 0), 0 FROM OPENGL_WORKLOAD e
                     JOIN StringIds s ON s.id = e.nameId WHERE 1""",
}


def table_exists(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None


def expected_events(path: Path, start: int, end: int) -> dict[str, Counter]:
    """Per category, the (name, start ns, duration ns) of every event overlapping the span, from SQL."""
    found: dict[str, Counter] = {}
    overlap = ' AND e.start < :end AND e."end" > :start'
    with sqlite3.connect(path) as conn:
        for category, query in {**THREAD_SQL, **GPU_SQL}.items():
            table = query.split(" FROM ")[1].split()[0]
            if not table_exists(conn, table):
                continue
            where = overlap + (f" AND e.globalTid NOT IN ({NSYS_THREADS})" if category in THREAD_SQL else "")
            rows = conn.execute(query + where, {"start": start, "end": end}).fetchall()
            if rows:
                found[category] = Counter((row[0], row[1], row[2] - row[1]) for row in rows)
    return found


def written_events(trace: dict, category: str) -> Counter:
    """The trace's events of a category as (name, start ns, duration ns): microseconds back to ns."""
    return Counter((e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
                   for e in trace["traceEvents"] if e.get("cat") == category)


def write(source: Path, tmp_path: Path, **options) -> dict:
    written = write_chrome_trace(source, tmp_path / "trace.json", AnalysisOptions(**options))
    return json.loads(written.path.read_text())


@pytest.mark.parametrize("name", ["tflite-pose-xnnpack", "es2gears-opengl", "openacc_rtx3080_2020",
                                  "nsu_v100_2022.export2022_4"])
def test_every_event_of_the_window_with_the_reports_names_and_times(name, export, tmp_path):
    path = export(name)
    trace = write(path, tmp_path)
    summary = analyze_report(path).as_json()
    other = trace["otherData"]
    assert (other["window"], other["start_ns"], other["end_ns"]) == (
        summary["window"]["kind"], summary["window"]["start_ns"], summary["window"]["end_ns"])
    assert other["truncated_at_ns"] is None
    expected = expected_events(path, other["start_ns"], other["end_ns"])
    assert expected  # every one of these reports has events in its window
    for category, events in expected.items():
        assert written_events(trace, category) == events, category
    samples = [e for e in trace["traceEvents"] if e.get("cat") == "CPU sample"]
    assert len(samples) == (summary["hotspots"]["samples"] if summary["hotspots"] else 0)
    if samples:
        hottest = Counter(e["name"] for e in samples).most_common(1)[0]
        assert hottest == (summary["hotspots"]["self"][0]["symbol"], summary["hotspots"]["self"][0]["samples"])
        assert all(e["ph"] == "i" and e["s"] == "t" and e["args"]["stack"][0] == e["name"] for e in samples)
    frames = [e for e in trace["traceEvents"] if e.get("cat") == "frame"]
    if summary["frames"]:
        starts, durations = summary["frames"]["frame_starts_ns"], summary["frames"]["per_frame_ns"]
        shown = [i for i, (s, d) in enumerate(zip(starts, durations))
                 if s + d > other["start_ns"] and s < other["end_ns"]]
        assert [(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in frames] == \
            [(f"frame {i}", starts[i], durations[i]) for i in shown]
    else:
        assert not frames
    assert_tracks_are_named(trace, path)


def assert_tracks_are_named(trace: dict, path: Path) -> None:
    meta = {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"
            and "name" in e["args"]}
    with sqlite3.connect(path) as conn:
        threads = {(gtid >> 24 & 0xFFFFFF, gtid & 0xFFFFFF): name for gtid, name in conn.execute(
            "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId")}
    tracks = {(e["pid"], e["tid"]) for e in trace["traceEvents"] if e["ph"] != "M"}
    for pid, tid in tracks:
        assert ("process_name", pid, 0) in meta and ("thread_name", pid, tid) in meta
        if pid < GPU_PID and (pid, tid) in threads:
            assert meta[("thread_name", pid, tid)] == threads[(pid, tid)]
        if pid >= GPU_PID:
            assert meta[("process_name", pid, 0)] == f"GPU {pid - GPU_PID}"


def test_gpu_streams_are_tracks_of_their_gpu(export, tmp_path):
    path = export("abacus_titanrtx_2020.export2022_4")
    trace = write(path, tmp_path, window="all")
    with sqlite3.connect(path) as conn:
        kernel_streams = set(conn.execute("SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL"))
        copy_streams = set(conn.execute("SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY"))
    def tracks(category: str) -> set:
        return {(e["pid"] - GPU_PID, e["tid"]) for e in trace["traceEvents"] if e.get("cat") == category}
    assert tracks("CUDA kernel") == kernel_streams and len(kernel_streams) == 4
    assert copy_streams <= tracks("CUDA memory")
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == GPU_PID}
    assert names[78] == "stream 78"


def test_one_frame_and_a_bounded_size(export, tmp_path):
    path = export("es2gears-opengl")
    summary = analyze_report(path).as_json()
    one = write(path, tmp_path, frame=10)
    start, duration = summary["frames"]["frame_starts_ns"][10], summary["frames"]["per_frame_ns"][10]
    assert (one["otherData"]["start_ns"], one["otherData"]["end_ns"]) == (start, start + duration)
    assert [e["name"] for e in one["traceEvents"] if e.get("cat") == "frame"] == ["frame 10"]
    whole = write(path, tmp_path, window="all")
    timed = sorted(round(e["ts"] * 1000) for e in whole["traceEvents"] if e["ph"] not in "Msf")  # not flows
    cut = write_chrome_trace(path, tmp_path / "cut.json", AnalysisOptions(window="all"), max_events=1000)
    capped = json.loads(cut.path.read_text())
    assert cut.events == capped["otherData"]["events"] == 1000
    assert cut.truncated_at_ns == capped["otherData"]["truncated_at_ns"] == timed[1000]
    assert max(round(e["ts"] * 1000) for e in capped["traceEvents"] if e["ph"] != "M") <= timed[1000]
    assert capped["otherData"]["flows"] < whole["otherData"]["flows"]  # only those whose two slices it holds
    assert cut.path.stat().st_size < 300_000


def test_trace_command_writes_beside_the_report_and_says_when_it_stops(export, tmp_path):
    path = export("es2gears-opengl")
    done = run_cli("trace", str(path), "--window", "all", "--max-events", "500")
    assert done.returncode == 0, done.stderr
    written = Path(done.stdout.strip().splitlines()[-1])
    assert written == path.with_name("es2gears-opengl.trace.json") and written.is_file()
    assert "stops at" in done.stderr and "--window" in done.stderr
    bad = run_cli("trace", str(path), "--max-events", "0")
    assert bad.returncode == 2 and "needs at least one event" in bad.stderr


# -- speedscope, a real consumer ----------------------------------------------------------------------------------

SPEEDSCOPE = Path(os.environ.get("ORCHESTRATE_SPEEDSCOPE",
                                 REPO / ".venv/speedscope/node_modules/speedscope/dist/release"))


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture
def served(tmp_path):
    """speedscope and the trace on one localhost server (speedscope fetches #profileURL=)."""
    if not (SPEEDSCOPE / "index.html").is_file():
        if os.environ.get("CI"):
            pytest.fail("speedscope is missing: scripts/setup.sh installs it with npm")
        pytest.skip("needs speedscope (scripts/setup.sh installs it with npm)")
    site = tmp_path / "site"
    site.mkdir()
    for item in SPEEDSCOPE.iterdir():
        (site / item.name).symlink_to(item)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def ms(ns: float) -> str:
    return f"{ns / 1e6:.2f}ms"


@pytest.mark.integration
def test_speedscope_opens_the_trace_with_its_tracks_and_times(export, browser, served, tmp_path):
    site, base = served
    path = export("tflite-pose-xnnpack")
    write_chrome_trace(path, site / "pose.json")
    trace = json.loads((site / "pose.json").read_text())
    page = browser.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    page.goto(f"{base}/index.html#profileURL={base}/pose.json")
    page.get_by_text("Sandwich").wait_for()
    assert "Importing as Trace Event Format profile" in console, console
    assert not [line for line in console if "error" in line.lower()], console
    # one profile per track with complete events; the Frames track weighs the frames' time
    tracks = {(e["pid"], e["tid"]) for e in trace["traceEvents"] if e["ph"] == "X"}
    page.get_by_text(re.compile(rf"\(1/{len(tracks)}\)")).click()
    listing = page.locator("body").inner_text()
    frames = [e for e in trace["traceEvents"] if e.get("cat") == "frame"]
    framed = sum(round(e["dur"] * 1000) for e in frames)
    assert re.search(rf"Frames \(frame\) \(tid 0\)\s+{re.escape(ms(framed))}", listing), listing
    # the main thread's NVTX stages: speedscope's totals are the report's, to its 0.01 ms
    page.get_by_text(re.compile(r"python \(tid \d+\)")).first.click()
    page.get_by_text("Sandwich").click()
    page.get_by_text("landmark", exact=True).first.wait_for()
    rows = page.locator("body").inner_text()
    with sqlite3.connect(path) as conn:
        other = trace["otherData"]
        for stage in ("detect", "landmark"):
            total = conn.execute('SELECT sum(e."end" - e.start) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON '
                                 's.id = e.textId WHERE coalesce(e.text, s.value) = ? AND e.start < ? AND e."end" > ?',
                                 (stage, other["end_ns"], other["start_ns"])).fetchone()[0]
            assert re.search(rf"{re.escape(ms(total))} \([\d.]+%\)\s+[\d.]+ms \([\d.]+%\)\s+{stage}\b", rows), \
                (stage, ms(total), rows[:2000])
    page.close()


# -- flows: the Trace Event Format's rules, and one flow per link the report page draws --------------------------

def flow_problems(trace: dict) -> tuple[list[str], dict]:
    """The Trace Event Format's rules for flow events (ph "s", "t", "f"), checked over a trace: each carries an id,
    cat, name, ts, pid and tid; (cat, name, id) names one flow, with one "s", then any "t", then one "f", in time
    order; "s" and "t" bind to the slice enclosing them on their thread (the deepest: the latest begun of those
    still open), "f" to that one with "bp": "e", else to the next slice to begin on its thread. Returns the
    problems and each flow's bound slices, in order."""
    slices: dict[tuple, list[dict]] = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            slices.setdefault((event["pid"], event["tid"]), []).append(event)
    for track in slices.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
    problems: list[str] = []
    found: dict[tuple, list[dict]] = {}
    for event in trace["traceEvents"]:
        if event["ph"] not in ("s", "t", "f"):
            continue
        missing = [key for key in ("id", "cat", "name", "ts", "pid", "tid") if key not in event]
        if missing:
            problems.append(f"a flow event without {missing}: {event}")
            continue
        found.setdefault((event["cat"], event["name"], event["id"]), []).append(event)

    def bound(event: dict) -> dict | None:
        track = slices.get((event["pid"], event["tid"]), [])
        if event["ph"] == "f" and event.get("bp") != "e":
            later = [s for s in track if s["ts"] >= event["ts"]]
            return later[0] if later else None
        open_ = [s for s in track if s["ts"] <= event["ts"] <= s["ts"] + s["dur"]]
        return open_[-1] if open_ else None
    bindings: dict[tuple, list[dict]] = {}
    for key, events in found.items():
        ordered = sorted(events, key=lambda e: (e["ts"], "stf".index(e["ph"])))
        phases = "".join(e["ph"] for e in ordered)
        if not re.fullmatch(r"st*f", phases):
            problems.append(f"flow {key}: phases {phases} in time order, not s, t..., f")
        ends = [bound(e) for e in ordered]
        if any(end is None for end in ends):
            problems.append(f"flow {key}: an event bound to no slice")
        bindings[key] = ends
    return problems, bindings


def test_the_flow_rules_hold_on_a_hand_made_trace_and_catch_each_broken_one():
    """The validator itself, on flows right and wrong: it must not pass what the format does not allow."""
    calls = [{"ph": "X", "name": "launch", "ts": 10, "dur": 5, "pid": 1, "tid": 1},
             {"ph": "X", "name": "kernel", "ts": 20, "dur": 5, "pid": 9, "tid": 3}]
    good = [{"ph": "s", "id": 1, "cat": "flow", "name": "q", "ts": 10, "pid": 1, "tid": 1},
            {"ph": "f", "bp": "e", "id": 1, "cat": "flow", "name": "q", "ts": 20, "pid": 9, "tid": 3}]
    problems, bindings = flow_problems({"traceEvents": calls + good})
    assert problems == [] and [e["name"] for e in bindings[("flow", "q", 1)]] == ["launch", "kernel"]
    next_slice = [dict(good[1], ts=18, bp=None)]  # without bp "e": the next slice on its thread, the kernel
    assert flow_problems({"traceEvents": calls + good[:1] + next_slice})[1][("flow", "q", 1)][1]["name"] == "kernel"
    for broken in ([good[0]], [good[1]], good + [dict(good[0])], [dict(good[0], ts=30), dict(good[1], ts=20)],
                   [good[0], dict(good[1], tid=4)], [dict(good[0], ts=9), good[1]], [{"ph": "s", "ts": 10}]):
        assert flow_problems({"traceEvents": calls + broken})[0], broken


@pytest.mark.parametrize("name", ["es2gears-opengl", "flux_gtx1650_2019.export2022_4"])
def test_one_flow_per_link_the_page_draws_from_a_call_to_the_gpu_work_it_queued(name, export, tmp_path):
    from orchestrator.analysis.analyzers.flows import flows, offsets
    from orchestrator.analysis.analyzers.run_events import run_events
    from orchestrator.analysis.export.schema import probe
    from orchestrator.analysis.export.trace import Trace
    path = export(name)
    trace = write(path, tmp_path, window="all")
    problems, bindings = flow_problems(trace)
    assert problems == []
    drawn = {(s["name"], round(s["ts"] * 1000), f["name"], round(f["ts"] * 1000)) for s, f in bindings.values()}
    conn = sqlite3.connect(path)
    try:
        events = run_events(Trace(conn, probe(conn), path))
        rows, names = [row for row in events.rows if len(row.starts)], events.names
        links = flows(rows)  # the links the page embeds (report/run_timeline.py), each drawn from its first call
    finally:
        conn.close()
    at = offsets(rows)

    def event(place: int) -> tuple[str, int]:
        r = int(np.searchsorted(at, place, side="right")) - 1
        return names[int(rows[r].names[place - at[r]])], int(rows[r].starts[place - at[r]])
    expected = {(*event(first), *event(gpu)) for first, gpu in zip(links.first.tolist(), links.gpu.tolist())}
    assert len(links) > 1000 and len(bindings) == len(links) == trace["otherData"]["flows"]
    assert drawn == expected  # each flow from the call's own slice to the GPU work's, as the page draws it
