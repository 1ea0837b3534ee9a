"""Frames can be reached: every frame number on the page is a link that fits the whole-run timeline to that frame,
search finds "frame N", a click on the frame chart's spike opens the spike's frame and a click on a bar of the
shares chart opens that bar's frame; a link's fragment (#frame=N) opens the page on it. In Chromium, on the stored
es2gears export."""
from __future__ import annotations

import pytest
from browser import assert_clean, open_page

from orchestrator.analysis import analyze_report
from orchestrator.report import write_report

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gears(export, tmp_path_factory):
    source = export("es2gears-opengl")
    return analyze_report(source), write_report(source, tmp_path_factory.mktemp("links") / "page.html")


def assert_shows(page, frames, index: int) -> None:
    """The timeline's view is that frame, a little padding aside."""
    start = frames.frame_starts_ns[index]
    length = frames.per_frame_ns[index]
    page.wait_for_function("""([start, end, length]) => { const v = window.orchestrateTimeline.view;
        return v && v[0] <= start && end <= v[1] && v[1] - v[0] <= 1.2 * length + 2; }""",
                           arg=[start, start + length, length], timeout=30_000)


def test_a_frame_number_a_bar_and_a_search_each_show_their_frame(gears, browser):
    summary, page_path = gears
    frames = summary.frames
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    page = opened.page
    page.wait_for_function("() => window.orchestrateTimeline.ready")
    # the slowest frame's caption names it: a link
    assert summary.attribution is not None
    slowest = next(story.index for story in summary.attribution.stories if "the slowest steady frame" in story.told)
    link = page.locator(f"[data-section=timeline] a[data-frame='{slowest}']").first
    link.click()
    assert_shows(page, frames, slowest)
    assert page.evaluate("location.hash") == f"#frame={slowest}"
    # a bar of the shares chart: its own frame
    bar = page.locator("svg[data-chart=frame-shares] rect[data-frame]").nth(7)
    bar_frame = int(bar.get_attribute("data-frame"))
    bar.click(force=True)
    assert_shows(page, frames, bar_frame)
    # the frame chart's highest spike, clicked where it is drawn: that frame, not a neighbour
    steady_first = frames.count - frames.steady.count
    spike = max(range(steady_first, frames.count), key=lambda i: frames.per_frame_ns[i])
    chart = page.locator("svg[data-chart=frame-series]")
    chart.scroll_into_view_if_needed()
    first_x, last_x, count = (float(v) for v in chart.get_attribute("data-index-axis").split(","))
    svg_x = first_x + (last_x - first_x) * spike / (count - 1)
    # the chart's own mapping to the screen (whatever fits its viewBox): where the spike is drawn
    screen = chart.evaluate("""(c, x) => { const p = c.createSVGPoint(); p.x = x; p.y = c.viewBox.baseVal.height / 2;
        const q = p.matrixTransform(c.getScreenCTM()); return [q.x, q.y]; }""", svg_x)
    page.mouse.click(*screen)
    assert_shows(page, frames, spike)
    # search: "frame N"
    page.evaluate("window.orchestrateTimeline.find('frame 100')")
    assert_shows(page, frames, 100)
    assert_clean(opened, page_path)


def test_a_link_to_a_frame_opens_the_page_on_it(gears, browser):
    summary, page_path = gears
    page = browser.new_page()
    try:
        page.goto(page_path.resolve().as_uri() + "#frame=321", wait_until="load")
        page.wait_for_function("() => window.orchestrateTimeline.ready")
        assert_shows(page, summary.frames, 321)
        page.evaluate("location.hash = '#frame=1200'")  # and a link followed on the page itself
        page.wait_for_function("() => location.hash === '#frame=1200'")
        assert_shows(page, summary.frames, 1200)
    finally:
        page.close()


def at_whole_run(browser, page_path):
    """The page opened, its timeline read and showing the whole run: the page and the view."""
    opened = open_page(browser, page_path)
    page = opened.page
    page.wait_for_function("() => window.orchestrateTimeline.ready && window.orchestrateTimeline.detailLoaded")
    page.evaluate("window.orchestrateTimeline.setWindow(window.orchestrateTimeline.origin, "
                  "window.orchestrateTimeline.origin + window.orchestrateTimeline.span)")
    page.wait_for_function("() => window.orchestrateTimeline.painted === window.orchestrateTimeline.inputs")
    return opened, page.evaluate("window.orchestrateTimeline.view")


def test_the_thread_state_row_is_the_scheduling_events(gears, export, browser):
    """A window selected over es2gears's state row: its on-CPU events' count and time are the thread's sched-in to
    sched-out spans SQL finds over that window, and every gap between two of them is an off-a-CPU event."""
    import sqlite3

    from share_sql import global_tid, on_cpu
    summary, page_path = gears
    opened = open_page(browser, page_path)
    page = opened.page
    page.wait_for_function("() => window.orchestrateTimeline.ready && window.orchestrateTimeline.detailLoaded")
    thread = summary.attribution.thread
    rows = [p for p in page.evaluate("window.orchestrateTimeline.layout") if p["type"] == "row"]
    [state] = [i for i, p in enumerate(rows) if p["group"] == thread and p["kind"] == "state"]
    lo = summary.frames.frame_starts_ns[1000]
    hi = lo + 50_000_000
    page.evaluate("([a, b, r]) => window.orchestrateTimeline.select(a, b, [r])", [lo, hi, state])
    stats = {s["name"]: s for s in page.evaluate("window.orchestrateTimeline.selection.stats")}
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        gtid = global_tid(conn, thread)
        first, last = conn.execute("SELECT min(start), max(start) FROM SCHED_EVENTS").fetchone()
        spans = sorted(on_cpu(conn, (gtid,), first, last))
    overlapping = [(a, b) for a, b in spans if a < hi and b > lo]
    assert (stats["on a CPU"]["count"], stats["on a CPU"]["total"]) == (len(overlapping),
                                                                         sum(b - a for a, b in overlapping))
    gaps = [(b, c) for (_, b), (c, _) in zip(spans, spans[1:]) if c > b and b < hi and c > lo]
    assert sum(s["count"] for name, s in stats.items() if name.startswith("off a CPU")) == len(gaps)
    assert any(name == "off a CPU in poll" for name in stats)  # es2gears waits for the X server in poll


def test_brief_gpu_work_is_shaded_as_much_as_it_covers_at_any_zoom(gears, export, browser):
    """llvmpipe's "GPU" row at whole-run zoom, named for the renderer on the CPU: each piece of work takes a pixel,
    yet the row is inked as much as the work covers the view (SQL's union of OPENGL_WORKLOAD over it), not drawn
    busy."""
    import sqlite3

    from share_sql import length
    summary, page_path = gears
    opened, (low, high) = at_whole_run(browser, page_path)
    page = opened.page
    [gpu] = [r for r in page.evaluate("window.orchestrateTimeline.rows") if r["kind"] == "opengl_gpu"]
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        work = [(max(int(a), low), min(int(b), high)) for a, b in conn.execute(
            'SELECT start, "end" FROM OPENGL_WORKLOAD WHERE "end" > ? AND start < ?', (low, high))]
    covered = length(work) / (high - low)
    assert covered < 0.05 and gpu["mode"] == "events"  # brief work: about 1 % of the run
    assert gpu["group"].startswith("llvmpipe (on the CPU) OpenGL context ")  # the renderer's work, not a GPU's
    assert gpu["inked"] == pytest.approx(covered, abs=0.005)


def test_dense_rows_are_shaded_as_much_as_their_calls_cover_at_whole_run_zoom(gears, export, browser):
    """At whole-run zoom the app thread's OS-runtime row is drawn from its levels (45,000 calls, too many to draw
    one by one), its OpenGL row call by call: each is inked as much as its calls cover the view (SQL's union of
    them), not drawn busy wherever a pixel holds one call."""
    import sqlite3

    from share_sql import global_tid, length
    summary, page_path = gears
    opened, (low, high) = at_whole_run(browser, page_path)
    page = opened.page
    thread = summary.attribution.thread
    drawn = {r["kind"]: r for r in page.evaluate("window.orchestrateTimeline.rows") if r["group"] == thread}
    tables = {"opengl": ("OPENGL_API", ""), "osrt": ("OSRT_API", "AND eventClass = 27")}
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        gtid = global_tid(conn, thread)
        for kind, (table, extra) in tables.items():
            calls = [(max(int(a), low), min(int(b), high)) for a, b in conn.execute(
                f'SELECT start, "end" FROM {table} WHERE globalTid = ? AND "end" > ? AND start < ? {extra}',
                (gtid, low, high))]
            assert drawn[kind]["mode"] == {"osrt": "level", "opengl": "events"}[kind]
            assert drawn[kind]["inked"] == pytest.approx(length(calls) / (high - low), abs=0.01), kind
    assert 0.05 < drawn["osrt"]["inked"] < 0.95  # neither empty nor busy: the test tells them apart
    assert_clean(opened, page_path)


def test_an_iteration_run_speaks_of_iterations_and_links_them(export, browser, tmp_path):
    """instant-ngp's training loop has no frames: its iterations (one cudaStreamSynchronize each) are what the page
    names wherever a frame run's names frames (the headings, the findings, the charts' tips, the warm-up rule, the
    stories, the timeline's help), each iteration number a link, and the search finds "iteration N"."""
    source = export("instantngp_rtx3070_2021.export2022_4")
    summary = analyze_report(source)
    assert summary.frames is not None and summary.frames.unit == "iteration"
    page_path = write_report(source, tmp_path / "ngp.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    page = opened.page
    page.wait_for_function("() => window.orchestrateTimeline.ready")
    said = page.evaluate("""() => { const body = document.body.cloneNode(true);
        body.querySelectorAll('script, style').forEach(e => e.remove()); return body.textContent; }""")
    assert "frame" not in said.lower()
    for words in ("The slowest steady iteration", "Each iteration's time by share", "iteration 0 is reported apart",
                  "iterations along the top", "fit the iteration, event or finding under the pointer"):
        assert words in said, words
    slowest = next(story.index for story in summary.attribution.stories if "the slowest steady iteration" in story.told)
    page.locator(f"[data-section=timeline] a[data-frame='{slowest}']").first.click()
    assert_shows(page, summary.frames, slowest)
    page.evaluate("window.orchestrateTimeline.find('iteration 100')")
    assert_shows(page, summary.frames, 100)
    assert page.locator("[data-tl-matches]").text_content().startswith("iteration 100: ")
    assert_clean(opened, page_path)
