"""The whole-run timeline of report.html in a real headless Chromium: drawn offline from the page's own data,
each row's events in view equal to SQL's count over the same window, zoom, pan, hover and the frame chart's
click doing what they say (tests/test_timeline_viewer.py holds its axis, search, selection and links)."""
from __future__ import annotations

import math
import sqlite3

import pytest
from browser import assert_clean, open_page

from orchestrator.analysis import analyze_report
from orchestrator.analysis.export.names import thread_names
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.selection import parse_range
from orchestrator.report import write_report

pytestmark = pytest.mark.integration
READY = ("() => window.orchestrateTimeline && window.orchestrateTimeline.ready "
         "&& window.orchestrateTimeline.paints > 0 && window.orchestrateTimeline.detailLoaded")


def timeline(opened) -> dict:
    return opened.page.evaluate("() => { const t = window.orchestrateTimeline; "
                                "return {rows: t.rows, view: t.view, shapes: t.shapes, paints: t.paints, "
                                "origin: t.origin, span: t.span}; }")


def opened_timeline(browser, page):
    """The page open in Chromium, its timeline painted with both its binaries read."""
    opened = open_page(browser, page)
    opened.page.wait_for_function(READY)
    return opened


def after_paint(opened, action) -> dict:
    """Do ``action`` and return the timeline once a paint showed every change it made (a paint of an earlier
    change, a pointer's move the browser made up after a scroll, does not count)."""
    inputs = opened.page.evaluate("window.orchestrateTimeline.inputs")
    action()
    opened.page.wait_for_function(f"() => {{ const t = window.orchestrateTimeline; "
                                  f"return t.inputs > {inputs} && t.painted === t.inputs; }}")
    return timeline(opened)


@pytest.fixture(scope="module")
def es2gears_page(export, tmp_path_factory):
    source = export("es2gears-opengl")
    page = write_report(source, tmp_path_factory.mktemp("run-timeline") / "es2gears.html")
    return source, page, analyze_report(source).as_json()


def sql_in_window(source, kind_table: str, low: int, high: int) -> dict[str, int]:
    """Thread label -> the calls of that table overlapping [low, high), as the page labels threads."""
    conn = sqlite3.connect(source)
    try:
        names = thread_names(conn, probe(conn))
        condition = "eventClass = 27" if kind_table == "OSRT_API" else "nameId IS NOT NULL"
        rows = conn.execute(f'SELECT globalTid, count(*) FROM {kind_table} WHERE "end" > ? AND start < ? '
                            f'AND {condition} GROUP BY globalTid', (low, high)).fetchall()
    finally:
        conn.close()
    return {f"{names[gtid]} ({gtid & 0xFFFFFF})" if names.get(gtid) else f"thread {gtid & 0xFFFFFF} of "
            f"{(gtid >> 24) & 0xFFFFFF}": count for gtid, count in rows if not names.get(gtid, "").startswith("[NSys")}


def test_the_whole_run_is_drawn_offline_in_a_few_thousand_shapes(es2gears_page, browser):
    source, page, summary = es2gears_page
    opened = opened_timeline(browser, page)
    assert_clean(opened, page)
    seen = timeline(opened)
    kinds = {(row["kind"], row["mode"]) for row in seen["rows"]}
    assert ("osrt", "level") in kinds  # 45,000 OS runtime calls on one thread: drawn from its per-pixel summary
    assert 0 < seen["shapes"] < 5000
    width = opened.page.evaluate("document.querySelector('#run-timeline canvas').clientWidth")
    assert width > 900
    text = opened.page.locator("[data-tl-window]").text_content()
    assert text.startswith("--window ") and text.endswith("s")
    opened.screenshot("run-timeline-es2gears")


def test_zoomed_to_a_frame_each_row_shows_the_calls_sql_finds_there(es2gears_page, browser):
    source, page, summary = es2gears_page
    opened = opened_timeline(browser, page)
    frames = summary["frames"]
    index = frames["count"] // 2
    low = frames["frame_starts_ns"][index]
    high = low + frames["per_frame_ns"][index]
    seen = after_paint(opened, lambda: opened.page.evaluate(f"window.orchestrateTimeline.setWindow({low}, {high})"))
    assert seen["view"] == [low, high]
    shown = opened.page.locator("[data-tl-window]").text_content().removeprefix("--window ")
    window = parse_range(shown, (summary["capture"]["start_ns"], summary["capture"]["end_ns"]))
    assert abs(window.start_ns - low) <= 500 and abs(window.end_ns - high) <= 500  # analyze reads the same span
    for kind, table in (("opengl", "OPENGL_API"), ("osrt", "OSRT_API")):
        expected = sql_in_window(source, table, low, high)
        drawn = {row["group"]: row["visible"] for row in seen["rows"] if row["kind"] == kind}
        assert all(row["mode"] == "events" for row in seen["rows"])
        assert {g: n for g, n in drawn.items() if n} == expected, kind
    assert sum(expected.values()) + sum(drawn.values()) > 0


def test_ctrl_wheel_zooms_at_the_pointer_and_keys_and_drags_pan(es2gears_page, browser):
    source, page, summary = es2gears_page
    opened = opened_timeline(browser, page)
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    label_w = 190
    before = timeline(opened)["view"]
    x = box["x"] + label_w + (box["width"] - label_w) * 0.25
    at = before[0] + (before[1] - before[0]) * 0.25  # the time under the pointer
    after_paint(opened, lambda: opened.page.mouse.move(x, box["y"] + 30))  # the pointer's line and time
    opened.page.keyboard.down("Control")
    after = after_paint(opened, lambda: opened.page.mouse.wheel(0, -500))["view"]
    opened.page.keyboard.up("Control")
    assert (after[1] - after[0]) == pytest.approx((before[1] - before[0]) * math.exp(-1.0), rel=1e-3)
    assert after[0] + (after[1] - after[0]) * 0.25 == pytest.approx(at, abs=(before[1] - before[0]) * 1e-3)
    canvas.focus()
    panned = after_paint(opened, lambda: opened.page.keyboard.press("d"))["view"]
    assert panned[0] - after[0] == pytest.approx((after[1] - after[0]) * 0.1, rel=1e-3)
    zoomed = after_paint(opened, lambda: opened.page.keyboard.press("w"))["view"]
    assert zoomed[1] - zoomed[0] == pytest.approx((panned[1] - panned[0]) * 0.8, rel=1e-3)

    def drag() -> None:
        opened.page.mouse.move(box["x"] + 600, box["y"] + 30)
        opened.page.mouse.down()
        opened.page.mouse.move(box["x"] + 500, box["y"] + 30, steps=4)
        opened.page.mouse.up()
    dragged = after_paint(opened, drag)["view"]
    shift = 100 / (box["width"] - label_w) * (zoomed[1] - zoomed[0])
    assert dragged[0] - zoomed[0] == pytest.approx(shift, rel=0.02)
    assert_clean(opened, page)


def test_a_click_on_the_frame_chart_shows_that_frame_and_hover_names_a_call(es2gears_page, browser):
    source, page, summary = es2gears_page
    opened = opened_timeline(browser, page)
    frames = summary["frames"]
    axis = [float(v) for v in opened.page.get_attribute("svg[data-chart='frame-series']", "data-index-axis").split(",")]
    index = 1000
    x_view = axis[0] + (axis[1] - axis[0]) * index / (axis[2] - 1)
    opened.page.locator("svg[data-chart='frame-series']").scroll_into_view_if_needed()
    svg_box = opened.page.locator("svg[data-chart='frame-series']").bounding_box()
    x = svg_box["x"] + x_view * svg_box["width"] / 960
    seen = after_paint(opened, lambda: opened.page.mouse.click(x, svg_box["y"] + 100))


    def fits(k: int) -> bool:  # the view is frame k with 5 % on each side
        start, length = frames["frame_starts_ns"][k], frames["per_frame_ns"][k]
        return (abs(seen["view"][0] - (start - 0.05 * length)) < 1 + length * 1e-6
                and abs(seen["view"][1] - (start + 1.05 * length)) < 1 + length * 1e-6)
    # a pixel of the chart is about three of its 2,445 frames: the click shows the slowest of the frames within 4
    # pixels of it (the spike the eye aims at), so no frame nearer the click is slower than the one shown
    per_px = (axis[2] - 1) / (axis[1] - axis[0]) / (svg_box["width"] / 960)
    near = int(4 * per_px) + 1
    [shown] = [k for k in range(index - near - 1, index + near + 2) if fits(k)]
    inner = frames["per_frame_ns"][index - near + 2:index + near - 1]
    assert frames["per_frame_ns"][shown] >= max(inner), (shown, seen["view"])
    row = next(i for i, r in enumerate(seen["rows"]) if r["kind"] == "opengl" and r["visible"])
    canvas = opened.page.locator("#run-timeline canvas").bounding_box()
    place = [p for p in opened.page.evaluate("window.orchestrateTimeline.layout") if p["type"] == "row"][row]
    assert (place["group"], place["kind"]) == (seen["rows"][row]["group"], "opengl")
    y = canvas["y"] + place["y"] + 5
    tip = opened.page.locator("#run-timeline .tl-tip")
    for fraction in [i / 40 for i in range(4, 38)]:  # along the row until the pointer is on a call
        opened.page.mouse.move(canvas["x"] + 190 + (canvas["width"] - 190) * fraction, y)
        if tip.is_visible():
            break
    text = tip.text_content()
    assert tip.is_visible() and "start " in text and text.split("\n")[1].startswith(seen["rows"][row]["group"])
    assert_clean(opened, page)


def test_a_run_too_large_for_one_page_gets_its_timeline_on_a_page_beside_it(export, browser, tmp_path, monkeypatch):
    import orchestrator.report as report
    monkeypatch.setattr(report, "ONE_PAGE_BYTES", 100_000)  # as if es2gears' 0.7 MB of events were 24 MB
    page = write_report(export("es2gears-opengl"), tmp_path / "es2gears.html")
    aside = tmp_path / "es2gears.timeline.html"
    assert aside.is_file() and page.stat().st_size < aside.stat().st_size
    opened = open_page(browser, page)
    assert_clean(opened, page)
    link = opened.page.locator("[data-tl-aside] a")
    assert link.get_attribute("href") == "es2gears.timeline.html"
    assert opened.page.locator("#run-timeline").count() == 0
    beside = opened_timeline(browser, aside)
    assert_clean(beside, aside)
    assert beside.page.locator("header a").get_attribute("href") == "es2gears.html"
    assert timeline(beside)["rows"] and timeline(beside)["shapes"] > 0


def test_a_double_click_on_the_frames_fits_that_frame_and_whole_run_goes_back(es2gears_page, browser):
    source, page, summary = es2gears_page
    opened = opened_timeline(browser, page)
    frames = summary["frames"]
    index = frames["count"] // 3
    start, length = frames["frame_starts_ns"][index], frames["per_frame_ns"][index]
    # first closer in, around that frame, so that a pixel of the frames' strip is inside it
    after_paint(opened, lambda: opened.page.evaluate(
        f"window.orchestrateTimeline.setWindow({start - 2 * length}, {start + 3 * length})"))
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    place = next(p for p in opened.page.evaluate("window.orchestrateTimeline.layout") if p["type"] == "frames")
    x = box["x"] + 190 + (box["width"] - 190) * 2.5 / 5  # the middle of the frame
    seen = after_paint(opened, lambda: opened.page.mouse.dblclick(x, box["y"] + place["y"] + place["h"] / 2))
    assert seen["view"][0] == pytest.approx(start - 0.05 * length, abs=2)
    assert seen["view"][1] == pytest.approx(start + 1.05 * length, abs=2)
    whole = after_paint(opened, lambda: opened.page.locator("[data-tl-all]").click())
    assert whole["view"][1] - whole["view"][0] == pytest.approx(whole["span"], abs=1)
    assert_clean(opened, page)


def test_a_range_around_twenty_thousand_others_still_lets_the_view_close_in_on_them(browser, tmp_path):
    """One NVTX range around the whole run, 20,000 ranges inside it 100 ns apart: at 2 us the row shows its 21
    ranges in view one by one (not a summary of every range since the outer one began)."""
    import numpy as np

    from orchestrator.analysis.analyzers.run_events import EventRow, RunEvents
    from orchestrator.report.render import render, write_page
    from orchestrator.report.run_timeline import timeline_data
    inner = 1000 + 100 * np.arange(20_000, dtype=np.int64)
    starts = np.concatenate([[0], inner])
    ends = np.concatenate([[2_100_000], inner + 50])
    names = np.concatenate([[0], np.ones(len(inner), dtype=np.int64)]).astype(np.int32)
    data = timeline_data(RunEvents([EventRow("app (1)", "nvtx", starts, ends, names)], ["main", "step"]), [], [])
    page_view = {"run_timeline": data, "run_timeline_href": None, "missing": {}, "unit": "frame"}
    path = write_page(render("timeline.html", "nested", page=page_view, report_href="report.html"),
                      tmp_path / "nested.html")
    opened = opened_timeline(browser, path)
    assert_clean(opened, path)
    assert timeline(opened)["rows"][0]["mode"] == "level"  # 20,001 ranges at full zoom: its summary
    seen = after_paint(opened, lambda: opened.page.evaluate("window.orchestrateTimeline.setWindow(1000000, 1002000)"))
    assert seen["rows"][0]["mode"] == "events" and seen["rows"][0]["visible"] == 21
    layout = [p for p in opened.page.evaluate("window.orchestrateTimeline.layout") if p["type"] == "row"]
    assert layout[0]["kind"] == "nvtx" and layout[0]["h"] > 14  # the ranges inside the outer one: a lane below it
    opened.page.evaluate("window.orchestrateTimeline.select(0, 2200000)")  # the whole run: its own time per range
    stats = {e["name"]: e for e in opened.page.evaluate("window.orchestrateTimeline.selection.stats")}
    assert stats["main"]["total"] == 2_100_000 and stats["main"]["self"] == 2_100_000 - 20_000 * 50
    assert stats["step"]["count"] == 20_000 and stats["step"]["self"] == stats["step"]["total"] == 20_000 * 50


def test_a_view_is_one_link_fragment_written_and_read_back(es2gears_page, browser):
    """The one fragment format frame links and shared views use: what is written reads back the same, and what is
    not one of its parts (or not of its kind) reads as not said."""
    _, page, _ = es2gears_page
    opened = opened_timeline(browser, page)
    link = {"window": [4_201_000_000, 4_208_000_000], "selection": [4_202_500_001, 4_203_000_000], "frame": 4224,
            "search": "glClear & eglSwapBuffers", "pins": [7, 2], "folds": [1], "hiddenKinds": ["osrt", "sample"],
            "hideEmpty": True, "selectionRows": [3, 4]}
    fragment = opened.page.evaluate("(link) => orchestrateTimelineTools.fragmentOf(link)", link)
    assert fragment == ("#window=4.201s:4.208s&select=4.202500001s:4.203s&frame=4224"
                        "&search=glClear%20%26%20eglSwapBuffers&pin=7.2&fold=1&hide=osrt.sample&empty=hide&rows=3.4")
    assert opened.page.evaluate("(f) => orchestrateTimelineTools.linkOf(f)", fragment) == link
    assert opened.page.evaluate("(f) => orchestrateTimelineTools.linkOf(f)", "#window=4.2s:4.1s&frame=-1&select&x=1") \
        == {"window": None, "selection": None, "frame": None, "search": None, "pins": None, "folds": None,
            "hiddenKinds": None, "hideEmpty": None, "selectionRows": None}
    assert opened.page.evaluate("() => orchestrateTimelineTools.fragmentOf({window: null, selection: null, "
                                "frame: null, search: null})") == ""


def test_a_span_over_a_row_of_many_calls_sums_its_whole_blocks_as_it_sums_its_events(browser, tmp_path):
    """300,000 calls of three names with nested ones and spans past 32 bits among them: a span over most of the row
    (its whole blocks of 16,384 calls summed once, the calls at its edges one by one) and a span inside one block
    give each name the count, total, self, min and max numpy gives over the same calls."""
    import numpy as np

    from orchestrator.analysis.analyzers.run_events import EventRow, RunEvents
    from orchestrator.report.render import render, write_page
    from orchestrator.report.run_timeline import timeline_data
    rng = np.random.default_rng(5)
    n = 300_000
    starts = np.cumsum(rng.integers(2_000, 9_000, n)).astype(np.int64)
    ends = starts + rng.integers(10, 1_500, n)
    outer = np.arange(0, n, 97)  # every 97th call encloses the next one: nesting, self times below totals
    ends[outer] = np.maximum(ends[outer], ends[np.minimum(outer + 1, n - 1)] + 5)
    names = rng.integers(0, 3, n).astype(np.int32)
    data = timeline_data(RunEvents([EventRow("app (1)", "opengl", starts, ends, names)],
                                   ["glDrawArrays", "glClear", "eglSwapBuffers"]), [], [])
    page_view = {"run_timeline": data, "run_timeline_href": None, "missing": {}, "unit": "frame"}
    path = write_page(render("timeline.html", "blocks", page=page_view, report_href="report.html"),
                      tmp_path / "blocks.html")
    opened = opened_timeline(browser, path)
    opened.page.wait_for_function("() => window.orchestrateTimeline.detailLoaded")
    origin = int(starts[0])
    inside = np.zeros(n, dtype=bool)
    inside[outer[outer + 1 < n] + 1] = True  # the enclosed calls: their time is off their parent's self time
    for low, high in ((starts[1000] + 7, starts[n - 2000] - 3), (starts[200_000] + 1, starts[200_300])):
        opened.page.evaluate(f"window.orchestrateTimeline.select({low}, {high}, [0])")
        got = {e["name"]: e for e in opened.page.evaluate("window.orchestrateTimeline.selection.stats")}
        chosen = (ends > low) & (starts < high)
        for key, name in enumerate(["glDrawArrays", "glClear", "eglSwapBuffers"]):
            mine = chosen & (names == key)
            durations = (ends - starts)[mine]
            parent = np.maximum(np.arange(n) - 1, 0)
            children = inside & chosen[parent] & (names[parent] == key)  # a self time is its call's, whole
            own = int(durations.sum()) - int((ends - starts)[children].sum())
            assert (got[name]["count"], got[name]["total"], got[name]["min"], got[name]["max"]) == (
                int(mine.sum()), int(durations.sum()), int(durations.min()), int(durations.max())), (name, low)
            assert got[name]["self"] == own, (name, low)
    assert origin == opened.page.evaluate("window.orchestrateTimeline.origin")
    assert_clean(opened, path)
