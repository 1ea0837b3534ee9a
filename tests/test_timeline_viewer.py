"""The whole-run timeline as a viewer, in a real headless Chromium, held against SQL over the export it was drawn
from: the time axis's ticks, search counts, a selected span's statistics per name, the link from a call to the
GPU work it queued, the wheel (plain scrolls the page, Ctrl zooms), the view clamped to the run, the `?`
overlay, and the page at two window sizes with nothing drawn over anything else."""
from __future__ import annotations

import math
import random
import re
import sqlite3

import pytest
from browser import assert_clean, open_page
from test_run_timeline_page import after_paint, opened_timeline

from orchestrator.analysis.analyzers.run_events import run_events
from orchestrator.analysis.analyzers.span_stats import chosen_rows, span_stats
from orchestrator.analysis.export.names import thread_names
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.selection import parse_range
from orchestrator.analysis.export.trace import Trace
from orchestrator.report import write_report

pytestmark = pytest.mark.integration
TL = "window.orchestrateTimeline"
UNIT_NS = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1.0}


@pytest.fixture(scope="module")
def es2gears(export, tmp_path_factory):
    source = export("es2gears-opengl")
    return source, write_report(source, tmp_path_factory.mktemp("viewer") / "es2gears.html")


@pytest.fixture(scope="module")
def flux(export, tmp_path_factory):
    source = export("flux_gtx1650_2019.export2022_4")
    return source, write_report(source, tmp_path_factory.mktemp("viewer") / "flux.html")


def sql(source, query: str, *args) -> list[tuple]:
    conn = sqlite3.connect(source)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def thread_label(source, gtid: int) -> str:
    """A thread as the page labels its rows."""
    conn = sqlite3.connect(source)
    try:
        name = thread_names(conn, probe(conn)).get(gtid)
    finally:
        conn.close()
    return f"{name} ({gtid & 0xFFFFFF})" if name else f"thread {gtid & 0xFFFFFF} of {(gtid >> 24) & 0xFFFFFF}"


def named_calls(source, table: str, pattern: str, low: int, high: int, extra: str = "") -> list[tuple]:
    """(start, end) of the table's events whose name holds ``pattern`` (any case) overlapping [low, high)."""
    return sql(source, f'SELECT t.start, t."end" FROM {table} AS t JOIN StringIds AS s ON s.id = t.nameId '
                       f'WHERE lower(s.value) LIKE ? AND t."end" > ? AND t.start < ? {extra}',
               f"%{pattern.lower()}%", low, high)


# the calls of a thread the page nests (OS runtime calls as the report's tables count them, OpenGL calls)
THREAD_CALLS = ('SELECT globalTid, start, "end" FROM OSRT_API WHERE eventClass = 27 AND globalTid = ? '
                'UNION ALL SELECT globalTid, start, "end" FROM OPENGL_API WHERE globalTid = ?')


def self_time_sql(source, table: str, name: str, low: int, high: int, extra: str = "") -> int:
    """The summed self time of the table's calls named ``name`` overlapping [low, high): each call's time less the
    calls inside it on its thread (on any row: OS calls inside an OpenGL call), each of those that no other call
    inside it holds, clipped to its end."""
    found = sql(source, f'SELECT t.globalTid, t.start, t."end" FROM {table} AS t JOIN StringIds AS s '
                        f'ON s.id = t.nameId WHERE s.value = ? AND t."end" > ? AND t.start < ? {extra}',
                name, low, high)
    total = 0
    calls_of: dict[int, list[tuple[int, int]]] = {}
    for tid, start, end in found:
        calls = calls_of.setdefault(tid, sorted(((a, b) for _, a, b in sql(source, THREAD_CALLS, tid, tid)),
                                                key=lambda c: (c[0], -c[1])))
        inside = [c for c in calls if start <= c[0] < end and (c[0], -c[1]) > (start, -end)]
        direct = [c for c in inside if not any(o != c and o[0] <= c[0] and c[1] <= o[1]
                                               and (o[0], -o[1]) < (c[0], -c[1]) for o in inside)]
        total += (end - start) - sum(min(c[1], end) - c[0] for c in direct)
    return total


def view(opened) -> list[int]:
    return opened.page.evaluate(f"{TL}.view")


def zoomed_canvas(opened, start_s: float, end_s: float) -> tuple[float, dict]:
    """The timeline zoomed to [start, end) seconds after its origin, its canvas scrolled into view: the origin,
    and the canvas's box."""
    origin = opened.page.evaluate(f"{TL}.origin")
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({origin} + {start_s * 1e9}, "
                                                     f"{origin} + {end_s * 1e9})"))
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    return origin, canvas.bounding_box()


def test_the_axis_ticks_cover_the_view_at_round_steps_and_read_as_their_times(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin = opened.page.evaluate(f"{TL}.origin")
    width = opened.page.evaluate("document.querySelector('#run-timeline canvas').clientWidth") - 190
    for low, high in [(None, None), (origin + 500_000_000, origin + 501_000_000), (origin + 800_000_000,
                                                                                   origin + 800_002_000)]:
        if low is not None:
            after_paint(opened, lambda low=low, high=high: opened.page.evaluate(f"{TL}.setWindow({low}, {high})"))
        start, end = view(opened)
        ticks = opened.page.evaluate(f"{TL}.ticks")
        assert 4 <= len(ticks) <= width / 60, ticks
        steps = {round(b["t"] - a["t"], 6) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1, ticks  # every label shown is one step from the next
        step = steps.pop()
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 9) in (1, 2, 5)
        assert (end - start) / (width / 110) <= step <= 2.5 * (end - start) / (width / 110)
        assert start <= ticks[0]["t"] < start + step and end - step <= ticks[-1]["t"] + step
        assert all(start <= tick["t"] < end for tick in ticks)
        for tick in ticks:  # "0.5005 s" or, deep in, "+200 ns" from the first
            number, unit = re.fullmatch(r"\+?([0-9.]+) (s|ms|µs|ns)", tick["label"]).groups()
            at = float(number) * UNIT_NS[unit] + (ticks[0]["t"] if tick["label"].startswith("+") else 0)
            assert at == pytest.approx(tick["t"], abs=step * 1e-3), tick
        pixel = [(tick["x"] - 190) / width * (end - start) + start for tick in ticks]
        assert pixel == pytest.approx([tick["t"] for tick in ticks], abs=(end - start) / width)
    assert ticks[1]["label"].startswith("+") and ticks[1]["label"].endswith(" ns")  # the 2 µs view
    assert_clean(opened, page)


def test_plain_wheel_scrolls_the_page_and_ctrl_wheel_zooms_at_the_pointer(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x, y = box["x"] + 190 + (box["width"] - 190) * 0.25, box["y"] + 40
    after_paint(opened, lambda: opened.page.mouse.move(x, y))  # the pointer's line and time
    before, scrolled = view(opened), opened.page.evaluate("window.scrollY")
    opened.page.mouse.wheel(0, 300)
    opened.page.wait_for_function(f"() => window.scrollY > {scrolled}")
    assert view(opened) == before  # the page scrolled; the timeline did not zoom
    box = canvas.bounding_box()
    x, y = box["x"] + 190 + (box["width"] - 190) * 0.25, box["y"] + 40
    after_paint(opened, lambda: opened.page.mouse.move(x, y))
    at = before[0] + (before[1] - before[0]) * 0.25
    scrolled = opened.page.evaluate("window.scrollY")
    opened.page.keyboard.down("Control")
    after = after_paint(opened, lambda: opened.page.mouse.wheel(0, -500))["view"]
    opened.page.keyboard.up("Control")
    assert (after[1] - after[0]) == pytest.approx((before[1] - before[0]) * math.exp(-1.0), rel=1e-3)
    assert after[0] + (after[1] - after[0]) * 0.25 == pytest.approx(at, abs=(before[1] - before[0]) * 1e-3)
    assert opened.page.evaluate("window.scrollY") == scrolled  # Ctrl+wheel zooms the timeline, not the page
    assert_clean(opened, page)


def test_the_view_never_leaves_the_run(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin, span = opened.page.evaluate(f"[{TL}.origin, {TL}.span]")
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    after_paint(opened, lambda: opened.page.mouse.move(box["x"] + 200, box["y"] + 40))
    opened.page.keyboard.down("Control")
    for _ in range(4):  # out, at the run's left edge, past the whole run
        after_paint(opened, lambda: opened.page.mouse.wheel(0, 800))
    opened.page.keyboard.up("Control")
    assert view(opened) == [origin, origin + span]
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({origin} - 5e8, {origin} + 1e6)"))
    assert view(opened) == [origin, origin + 501_000_000]  # as wide as asked, moved inside the run
    canvas.focus()
    for key in ["a"] * 5 + ["s"] * 3:
        after_paint(opened, lambda key=key: opened.page.keyboard.press(key))
        low, high = view(opened)
        assert origin <= low < high <= origin + span
    after_paint(opened, lambda: opened.page.evaluate(
        f"{TL}.setWindow({origin} + {span} - 1e6, {origin} + {span} + 9e8)"))
    assert view(opened) == [origin + span - 901_000_000, origin + span]
    assert_clean(opened, page)


def test_search_finds_as_many_events_as_sql_counts_in_view_and_steps_through_them(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin, span = opened.page.evaluate(f"[{TL}.origin, {TL}.span]")
    box = opened.page.locator("[data-tl-search]")
    box.fill("GLCLEAR")  # any case
    opened.page.wait_for_function(f"() => {TL}.search && {TL}.search.query === 'GLCLEAR'")

    def expected(low: int, high: int) -> int:
        calls = sum(len(named_calls(source, table, "glclear", low, high))
                    for table in ("OPENGL_API", "OPENGL_WORKLOAD"))
        samples = sql(source, "SELECT count(*) FROM COMPOSITE_EVENTS AS e JOIN SAMPLING_CALLCHAINS AS c "
                              "ON c.id = e.id AND c.stackDepth = 0 JOIN StringIds AS s ON s.id = c.symbol "
                              "WHERE lower(s.value) LIKE '%glclear%' AND e.start >= ? AND e.start < ?", low, high)
        return calls + samples[0][0]  # CPU samples in glClear (libGL's) are found too
    found = opened.page.evaluate(f"{TL}.search")
    assert found["names"] == 2  # glClear and glClearColor: calls, workloads (named by their first call), samples
    assert found["total"] == found["inView"] == expected(origin, origin + span) > 5000
    low, high = origin + 700_000_000, origin + 705_000_000
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({low}, {high})"))
    in_view = opened.page.evaluate(f"{TL}.search.inView")
    assert in_view == expected(low, high) > 0
    said = opened.page.locator("[data-tl-matches]").text_content()
    assert said.startswith(f"{found['total']:,} matches, {in_view:,} in view")
    stepped = []
    for key in ("Enter", "Enter", "Shift+Enter"):
        after_paint(opened, lambda key=key: box.press(key))
        stepped.append(opened.page.evaluate(f"{TL}.selected"))
    first, second, back = stepped
    assert "glclear" in first["name"].lower() and "glclear" in second["name"].lower()
    assert low <= first["start"] and (second["start"], second["row"]) > (first["start"], first["row"]) and back == first
    calls = named_calls(source, "OPENGL_API", "glclear", low, origin + span) + named_calls(
        source, "OPENGL_WORKLOAD", "glclear", low, origin + span)
    assert first["start"] == min(start for start, _ in calls if start >= low)  # the first match from the view's start
    shown = view(opened)
    assert shown[0] <= back["start"] < shown[1]
    assert_clean(opened, page)


@pytest.mark.parametrize("names", [(("opengl", "glClear"), ("opengl", "eglSwapBuffers"), ("osrt", "poll"))])
def test_a_selected_span_gives_each_name_the_figures_sql_gives_over_it(es2gears, browser, names):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin = opened.page.evaluate(f"{TL}.origin")
    low, high = origin + 900_000_000, origin + 960_000_000
    opened.page.evaluate(f"{TL}.select({low}, {high})")
    selection = opened.page.evaluate(f"{TL}.selection")
    stats = {(e["kind"], e["name"]): e for e in selection["stats"]}
    tables = {"opengl": ("OPENGL_API", ""), "osrt": ("OSRT_API", "AND t.eventClass = 27")}
    tsv = {tuple(line.split("\t")[:2]): line.split("\t") for line in selection["tsv"].splitlines()[1:]}
    for kind, name in names:
        table, extra = tables[kind]
        durations = [end - start for start, end in sql(
            source, f'SELECT t.start, t."end" FROM {table} AS t JOIN StringIds AS s ON s.id = t.nameId '
                    f'WHERE s.value = ? AND t."end" > ? AND t.start < ? {extra}', name, low, high)]
        got = stats[(kind, name)]
        assert (got["count"], got["total"], got["min"], got["max"]) == (
            len(durations), sum(durations), min(durations), max(durations)), name
        assert got["mean"] == pytest.approx(sum(durations) / len(durations))
        own = self_time_sql(source, table, name, low, high, extra)
        assert got["self"] == own  # less the calls inside them on their thread, whatever row draws them
        assert tsv[(kind, name)][2:5] == [str(len(durations)), str(sum(durations)), str(own)]
    window = parse_range(selection["window"].removeprefix("--window "), (origin, origin + 10**10))
    assert (window.start_ns, window.end_ns) == (low, high)  # `orchestrate analyze --window` reads the same span
    panel = opened.page.locator("[data-tl-panel]")
    assert panel.is_visible() and "glClear" in panel.locator("table").text_content()
    assert_clean(opened, page)


def test_each_duration_falls_in_the_histogram_bin_whose_edges_hold_it(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    durations = [0, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 1000, 1023, 1024, 1536, 999_999, 2**31, 2**32 - 1, 2**32, 3 * 2**33,
                 10**12]
    found = opened.page.evaluate("ds => ds.map(d => { const t = orchestrateTimelineTools, b = t.binOf(d); "
                                 "return [b, t.binEdges(b)]; })", durations)
    for duration, (bin_, (low, high)) in zip(durations, found):
        assert low <= duration < high, (duration, bin_, low, high)
    def half_octave(d: float) -> int:  # [2^(b-1), 1.5 * 2^(b-1)) and [1.5 * 2^(b-1), 2^b)
        if d < 1:
            return 0
        b = math.floor(math.log2(d)) + 1
        return 2 * b - 1 + (int(d // 2 ** (b - 2)) & 1 if b >= 2 else 0)
    assert [b for b, _ in found] == [half_octave(d) for d in durations]


def test_shift_drag_selects_the_span_and_rows_dragged_across(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin, box = zoomed_canvas(opened, 1.0, 1.01)
    canvas = opened.page.locator("#run-timeline canvas")
    place = next(p for p in opened.page.evaluate(f"{TL}.layout") if p["type"] == "row" and p["kind"] == "opengl")
    row = place["index"]
    start, end = view(opened)
    width = box["width"] - 190
    x0, x1, y = box["x"] + 190 + width * 0.3, box["x"] + 190 + width * 0.6, box["y"] + place["y"] + 4
    opened.page.keyboard.down("Shift")
    opened.page.mouse.move(x0, y)
    opened.page.mouse.down()
    opened.page.mouse.move(x1, y + 2, steps=5)
    opened.page.mouse.up()
    opened.page.keyboard.up("Shift")
    opened.page.wait_for_function(f"() => {TL}.selection !== null")
    selection = opened.page.evaluate(f"{TL}.selection")
    assert view(opened) == [start, end]  # a shift-drag selects; it does not pan
    assert selection["rows"] == [row]
    pixel = (end - start) / width
    assert selection["start"] == pytest.approx(start + 0.3 * (end - start), abs=1.5 * pixel)
    assert selection["end"] == pytest.approx(start + 0.6 * (end - start), abs=1.5 * pixel)
    assert {e["kind"] for e in selection["stats"]} == {"opengl"}
    expected = sql(source, 'SELECT count(*) FROM OPENGL_API WHERE "end" > ? AND start < ?',
                   int(math.ceil(selection["start"])), int(selection["end"]))[0][0]
    assert sum(e["count"] for e in selection["stats"]) == pytest.approx(expected, abs=1)
    canvas.focus()
    opened.page.keyboard.press("f")
    opened.page.wait_for_function(f"() => {TL}.view[1] - {TL}.view[0] < {(end - start) * 0.5}")
    assert view(opened)[0] == pytest.approx(selection["start"], abs=2)
    opened.page.keyboard.press("Escape")
    assert opened.page.evaluate(f"{TL}.selection") is None and opened.page.locator("[data-tl-panel]").is_hidden()
    assert_clean(opened, page)


def click_event(opened, kind: str, group: str, start: int, end: int) -> dict:
    """Bring [start, end) into view, click on it in its row, and return what the page selected."""
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({start} - {end - start}, {end} + {end - start})"))
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    place = next(p for p in opened.page.evaluate(f"{TL}.layout") if p["kind"] == kind and p["group"] == group)
    low, high = view(opened)
    x = box["x"] + 190 + (box["width"] - 190) * ((start + end) / 2 - low) / (high - low)
    after_paint(opened, lambda: opened.page.mouse.click(x, box["y"] + place["y"] + 4))
    return opened.page.evaluate(f"{TL}.selected")


def test_a_clicked_cuda_launch_links_to_the_kernel_with_its_correlation_id_and_back(flux, browser):
    source, page = flux
    opened = opened_timeline(browser, page)
    call_start, call_end, tid, kernel_start, kernel_end = sql(
        source, 'SELECT r.start, r."end", r.globalTid, k.start, k."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r '
                'JOIN StringIds AS s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k '
                'ON k.correlationId = r.correlationId WHERE s.value LIKE "cudaLaunchKernel%" ORDER BY r.start '
                'LIMIT 1 OFFSET 40')[0]
    picked = click_event(opened, "cuda_api", thread_label(source, tid), call_start, call_end)
    assert (picked["start"], picked["end"], picked["name"]) == (call_start, call_end, "cudaLaunchKernel_v7000")
    flows = opened.page.evaluate(f"{TL}.flows")
    assert [(f["to"]["kind"], f["to"]["start"], f["to"]["end"]) for f in flows] == [
        ("cuda_kernel", kernel_start, kernel_end)]
    details = opened.page.locator("[data-tl-details]").text_content()
    lag = opened.page.evaluate(f"orchestrateTimelineTools.duration({kernel_start - call_start})")
    assert "queued " in details and f"{lag} after the call" in details and lag.endswith(" µs")
    kernel_lane = flows[0]["to"]["group"]
    back = click_event(opened, "cuda_kernel", kernel_lane, kernel_start, kernel_end)
    assert (back["start"], back["end"]) == (kernel_start, kernel_end)
    flows = opened.page.evaluate(f"{TL}.flows")
    assert [(f["from"]["kind"], f["from"]["start"]) for f in flows] == [("cuda_api", call_start)]
    assert_clean(opened, page)


def test_a_call_that_queued_many_kernels_links_to_each(browser, tmp_path):
    """One launch of a graph queues 40 kernels under its one correlation id: a click on it links to all 40."""
    import numpy as np

    from orchestrator.analysis.analyzers.run_events import EventRow, RunEvents
    from orchestrator.report.render import render, write_page
    from orchestrator.report.run_timeline import timeline_data
    calls = np.array([0, 1_000, 2_000], dtype=np.int64)
    kernels = 3_000 + 500 * np.arange(42, dtype=np.int64)
    ids = np.array([7] * 40 + [8, 9], dtype=np.int64)  # the first call's 40, then one each for the others
    rows = [EventRow("app (1)", "cuda_api", calls, calls + 800, np.zeros(3, dtype=np.int32),
                     np.array([7, 8, 9]), np.array([7, 8, 9]), np.ones(3, dtype=np.int64)),
            EventRow("GPU 0 stream 7", "cuda_kernel", kernels, kernels + 400, np.ones(42, dtype=np.int32),
                     ids, ids, np.ones(42, dtype=np.int64))]
    data = timeline_data(RunEvents(rows, ["cudaGraphLaunch", "k"]), [], [])
    page_view = {"run_timeline": data, "run_timeline_href": None, "missing": {}, "unit": "frame"}
    path = write_page(render("timeline.html", "graph", page=page_view, report_href="report.html"),
                      tmp_path / "graph.html")
    opened = opened_timeline(browser, path)
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.pick(0, 0)"))
    flows = opened.page.evaluate(f"{TL}.flows")
    assert sorted(f["to"]["start"] for f in flows) == kernels[:40].tolist()
    assert "and 34 more links, drawn as arrows" in opened.page.locator("[data-tl-details]").text_content()
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.pick(0, 1)"))
    assert [f["to"]["start"] for f in opened.page.evaluate(f"{TL}.flows")] == [int(kernels[40])]
    assert_clean(opened, path)


def test_an_opengl_call_links_to_the_workload_whose_correlation_ids_hold_its_own(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    opened.page.evaluate(f"{TL}.find('glDrawArrays')")
    for _ in range(12):  # the first draws queue nothing nsys recorded; a later one does
        after_paint(opened, lambda: opened.page.evaluate(f"{TL}.step(1)"))
        if opened.page.evaluate(f"{TL}.flows.length"):
            break
    picked, flows = opened.page.evaluate(f"[{TL}.selected, {TL}.flows]")
    (cid,), = sql(source, "SELECT correlationId FROM OPENGL_API WHERE start = ? AND \"end\" = ?",
                  picked["start"], picked["end"])
    workloads = sql(source, 'SELECT start, "end" FROM OPENGL_WORKLOAD '
                            'WHERE correlationId <= ? AND endCorrelationId >= ?', cid, cid)
    assert sorted((f["to"]["start"], f["to"]["end"]) for f in flows) == sorted(workloads) and workloads
    assert {f["to"]["kind"] for f in flows} == {"opengl_gpu"}
    assert_clean(opened, page)


def test_an_nvtx_range_links_to_the_gpu_work_its_thread_queued_inside_it(flux, browser):
    source, page = flux
    opened = opened_timeline(browser, page)
    rows = opened.page.evaluate(f"{TL}.layout.filter(p => p.type === 'row')")
    nvtx = next(i for i, p in enumerate(rows) if p["kind"] == "nvtx")
    group = rows[nvtx]["group"]
    tid = int(group.rsplit("(", 1)[1].rstrip(")"))
    ranges = sql(source, 'SELECT start, "end" FROM NVTX_EVENTS WHERE (globalTid & 16777215) = ? AND "end" IS NOT NULL '
                         'ORDER BY start, "end" DESC', tid)
    for low, high in ranges:
        expected = sorted(sql(source, " UNION ALL ".join(
            f'SELECT g.start, g."end" FROM CUPTI_ACTIVITY_KIND_{t} AS g JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r '
            f'ON r.correlationId = g.correlationId WHERE (r.globalTid & 16777215) = ? AND r.start >= ? AND r."end" <= ?'
            for t in ("KERNEL", "MEMCPY", "MEMSET")), *([tid, low, high] * 3)))
        if 0 < len(expected) <= 256:
            break
    else:
        pytest.fail("no NVTX range with GPU work")
    index = ranges.index((low, high))  # the row's events are in start order, the longest first, as SQL sorts them
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.pick({nvtx}, {index})"))
    picked, flows = opened.page.evaluate(f"[{TL}.selected, {TL}.flows]")
    assert (picked["start"], picked["end"]) == (low, high)
    assert sorted((f["to"]["start"], f["to"]["end"]) for f in flows) == expected
    assert all(f["from"]["kind"] == "cuda_api" and low <= f["from"]["start"] for f in flows)
    assert_clean(opened, page)


def test_the_keys_overlay_opens_and_closes(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    overlay = opened.page.locator("#run-timeline .tl-help")
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.focus()
    assert overlay.is_hidden()
    opened.page.keyboard.press("?")
    assert overlay.is_visible() and opened.page.evaluate(f"{TL}.helpOpen")
    text = overlay.text_content()
    for action in ("Ctrl", "wheel", "Shift + drag", "Enter / Shift + Enter", "Esc", "W / S", "A / D"):
        assert action in text, action
    opened.page.keyboard.press("Escape")
    assert overlay.is_hidden() and not opened.page.evaluate(f"{TL}.helpOpen")
    opened.page.locator("[data-tl-help-open]").click()
    assert overlay.is_visible()
    opened.page.locator("[data-tl-help-close]").click()
    assert overlay.is_hidden()
    assert_clean(opened, page)


def boxes_apart(opened, selector: str) -> list[dict]:
    """The visible elements of ``selector`` whose boxes overlap another's."""
    return opened.page.evaluate("""selector => {
      const boxes = Array.from(document.querySelectorAll(selector)).filter(e => e.getClientRects().length)
        .map(e => ({text: e.textContent.slice(0, 40), b: e.getBoundingClientRect()}));
      const hit = [];
      boxes.forEach((p, i) => boxes.slice(i + 1).forEach(q => {
        if (p.b.left < q.b.right - 0.5 && q.b.left < p.b.right - 0.5 && p.b.top < q.b.bottom - 0.5 &&
            q.b.top < p.b.bottom - 0.5) { hit.push([p.text, q.text]); }
      }));
      return hit;
    }""", selector)


@pytest.mark.parametrize("size", [(1600, 1000), (1280, 800)])
def test_the_page_at_two_sizes_draws_nothing_over_anything_else(es2gears, browser, size):
    source, page = es2gears
    opened = open_page(browser, page)
    opened.page.set_viewport_size({"width": size[0], "height": size[1]})
    opened.page.wait_for_function("() => window.orchestrateTimeline && window.orchestrateTimeline.detailLoaded "
                                  "&& window.orchestrateTimeline.paints > 0")
    origin = opened.page.evaluate(f"{TL}.origin")
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({origin} + 1e9, {origin} + 1.004e9)"))
    opened.page.evaluate(f"{TL}.find('glClear')")
    opened.page.evaluate(f"{TL}.select({origin} + 1.001e9, {origin} + 1.002e9)")
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.step(1)"))
    assert boxes_apart(opened, ".tl-bar > *") == []
    assert boxes_apart(opened, ".tl-panel-head > *") == []
    assert boxes_apart(opened, "svg[data-chart='frame-series'] text") == []
    ticks = opened.page.evaluate(f"{TL}.ticks.map(t => [t.x, t.label])")
    widths = opened.page.evaluate("labels => { const c = document.createElement('canvas').getContext('2d'); "
                                  "c.font = '10px system-ui, sans-serif'; "
                                  "return labels.map(l => c.measureText(l).width); }", [label for _, label in ticks])
    right = opened.page.evaluate("document.querySelector('#run-timeline canvas').clientWidth")
    for (x, _), width, (next_x, _) in zip(ticks, widths, ticks[1:] + [(right - 3, "")]):
        assert x + 3 + width <= next_x, ticks  # each tick's label ends before the next one starts
    section = opened.page.locator("#run-timeline-section")
    section.scroll_into_view_if_needed()
    opened.page.locator("[data-tl-help-open]").click()
    help_box = opened.page.locator("#run-timeline .tl-help").bounding_box()
    assert help_box["x"] >= 0 and help_box["x"] + help_box["width"] <= size[0]
    opened.page.locator("[data-tl-help-close]").click()
    name = f"run-timeline-viewer-{size[0]}x{size[1]}"
    section.screenshot(path=str(opened.screenshot(name).with_name(f"{name}-section.png")))
    assert_clean(opened, page)


def test_the_page_and_the_window_tool_give_a_span_the_same_figures(es2gears, browser):
    """Random spans selected on the page: each (kind, name)'s count, total, self, min and max in the page's script
    equal span_stats's, the one Python function behind the MCP server's window (and every row the page read)."""
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin, span = opened.page.evaluate(f"[{TL}.origin, {TL}.span]")
    conn = sqlite3.connect(source)
    try:
        events = run_events(Trace(conn, probe(conn), source))
    finally:
        conn.close()
    rows = chosen_rows(events)
    chooser = random.Random(57)
    for _ in range(6):
        low = origin + chooser.randrange(0, int(span) - 10**6)
        high = low + chooser.randrange(10**5, 2 * 10**9)
        opened.page.evaluate(f"{TL}.select({low}, {high})")
        selection = opened.page.evaluate(f"{TL}.selection")
        assert selection["unread"] == 0
        on_page = {(e["kind"], e["name"]): (e["count"], e["total"], e["self"], e["min"], e["max"])
                   for e in selection["stats"]}
        found = {(s.kind, s.name): (s.count, s.total_ns, s.self_ns, s.min_ns, s.max_ns)
                 for s in span_stats(events, (low, high), rows)}
        assert found == on_page
        assert len(found) > 5
