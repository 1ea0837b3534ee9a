"""Finding one's way on the whole-run timeline as Perfetto UI and the Nsight Systems GUI taught it, in a real headless
Chromium, on a real export: the overview strip's window is the view, rows pinned and folded and the view itself
survive a reload through the page's address, a link opens on its window, keys work from anywhere on the page, a
call's self time is its time less the calls inside it on its thread (held against SQL), tooltips follow a zoom, and
the page reads dark when the reader's system asks."""
from __future__ import annotations

import re

import pytest
from browser import assert_clean, open_page
from test_run_timeline_page import READY, after_paint, opened_timeline
from test_timeline_viewer import UNIT_NS, self_time_sql, sql, view, zoomed_canvas

from orchestrator.report import write_report
from orchestrator.report.charts import name_colour

pytestmark = pytest.mark.integration
TL = "window.orchestrateTimeline"


@pytest.fixture(scope="module")
def es2gears(export, tmp_path_factory):
    source = export("es2gears-opengl")
    return source, write_report(source, tmp_path_factory.mktemp("navigation") / "es2gears.html")


def overview_window(opened) -> tuple[float, float, float]:
    """The overview's window as drawn, its pixels read back as times on the report's clock, and one pixel's ns."""
    o = opened.page.evaluate(f"{TL}.overview")
    per_px = (o["end"] - o["start"]) / o["width"]
    return o["start"] + (o["x0"] - o["left"]) * per_px, o["start"] + (o["x1"] - o["left"]) * per_px, per_px


def test_the_overview_window_is_the_view_after_zooms_and_pans_and_a_drag_on_it_moves_the_view(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    canvas = opened.page.locator("#run-timeline canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x, y = box["x"] + 190 + (box["width"] - 190) * 0.6, box["y"] + 40
    after_paint(opened, lambda: opened.page.mouse.move(x, y))
    start, end, per_px = overview_window(opened)
    assert (start, end) == pytest.approx(tuple(view(opened)), abs=per_px)  # the whole run: the whole strip
    opened.page.keyboard.down("Control")
    for delta in (-400, -300, -500, 200):
        after_paint(opened, lambda delta=delta: opened.page.mouse.wheel(0, delta))
        start, end, per_px = overview_window(opened)
        shown = view(opened)
        assert start == pytest.approx(shown[0], abs=per_px) and end == pytest.approx(
            max(shown[1], shown[0] + 2 * per_px), abs=per_px)  # at least two pixels wide, to be seen
    opened.page.keyboard.up("Control")
    after_paint(opened, lambda: opened.page.keyboard.press("d"))
    start, end, per_px = overview_window(opened)
    shown = view(opened)
    assert start == pytest.approx(shown[0], abs=per_px)
    assert shown[1] - shown[0] < (end - start) + 2 * per_px

    strip, drawn = opened.page.locator("[data-tl-overview]").bounding_box(), opened.page.evaluate(f"{TL}.overview")
    at = strip["x"] + drawn["left"] + ((start + end) / 2 - drawn["start"]) / per_px  # the window's middle
    before = view(opened)

    def drag() -> None:
        opened.page.mouse.move(at, strip["y"] + 10)
        opened.page.mouse.down()
        opened.page.mouse.move(at + 100, strip["y"] + 10, steps=4)
        opened.page.mouse.up()
    after = after_paint(opened, drag)["view"]
    assert after[1] - after[0] == pytest.approx(before[1] - before[0], rel=1e-9)  # moved, not zoomed
    assert after[0] - before[0] == pytest.approx(100 * per_px, rel=0.02)
    start, end, per_px = overview_window(opened)
    assert start == pytest.approx(after[0], abs=per_px)
    assert_clean(opened, page)


def label_click(opened, place: dict) -> None:
    canvas = opened.page.locator("#run-timeline canvas").bounding_box()
    opened.page.mouse.click(canvas["x"] + 60, canvas["y"] + place["y"] + min(place["h"], 14) / 2)


def test_a_pinned_and_a_folded_row_and_the_view_survive_a_reload_through_the_pages_address(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    opened.page.locator("#run-timeline canvas").scroll_into_view_if_needed()
    layout = opened.page.evaluate(f"{TL}.layout")
    rows = [p for p in layout if p["type"] == "row"]
    target = next(p for p in rows if p["kind"] == "opengl")  # the render thread's OpenGL calls
    after_paint(opened, lambda: label_click(opened, target))
    layout = opened.page.evaluate(f"{TL}.layout")
    pinned = [p for p in layout if p["pinned"]]
    assert [(p["index"], p["kind"]) for p in pinned] == [(target["index"], "opengl")]
    assert [p["type"] for p in layout[:3]] == ["frames", "process", "row"]  # the pinned rows first, under a header
    heads = [p for p in layout if p["type"] == "process" and p["process"] >= 0]
    other = next(p for p in heads if p["group"].startswith("timeout"))  # a process of no interest: folded
    after_paint(opened, lambda: label_click(opened, other))
    folded = next(p for p in opened.page.evaluate(f"{TL}.layout")
                  if p["type"] == "process" and p["group"] == other["group"])
    assert folded["folded"]
    after_paint(opened, lambda: opened.page.locator("[data-tl-kind=sample]").click())  # every CPU samples row hidden
    origin = opened.page.evaluate(f"{TL}.origin")
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({origin} + 1.2e9, {origin} + 1.25e9)"))
    opened.page.wait_for_function("() => location.hash.includes('window=')")
    link = opened.page.evaluate("location.hash")
    assert f"pin={target['index']}" in link and f"fold={other['process']}" in link and "hide=sample" in link
    assert not any(p["kind"] == "sample" for p in opened.page.evaluate(f"{TL}.layout"))
    shown, before = view(opened), opened.page.evaluate(f"{TL}.layout")

    opened.page.reload()
    opened.page.wait_for_function(READY)
    assert opened.page.evaluate("location.hash") == link
    assert view(opened) == pytest.approx(shown, abs=1)
    assert opened.page.evaluate(f"{TL}.layout") == before  # the same rows, pinned and folded, in the same places
    assert not any(p["type"] == "row" and p["process"] == other["process"] and not p["pinned"] for p in before)
    assert sum(p["type"] == "row" and p["process"] == other["process"] for p in rows) > 0  # it had rows
    assert opened.console == [] and set(opened.requests) == {page.resolve().as_uri()}

    # unpinned and unfolded again by the same clicks; the address follows
    after_paint(opened, lambda: label_click(opened, next(p for p in before if p["pinned"])))
    after_paint(opened, lambda: label_click(opened, next(p for p in opened.page.evaluate(f"{TL}.layout")
                                                         if p["type"] == "process" and p["group"] == other["group"])))
    opened.page.wait_for_function("() => !location.hash.includes('pin=') && !location.hash.includes('fold=')")
    assert not any(p["pinned"] or p["folded"] for p in opened.page.evaluate(f"{TL}.layout"))
    assert "hide=sample" in opened.page.evaluate("location.hash")


def test_a_link_with_a_window_and_a_selection_opens_on_them(es2gears, browser):
    source, page = es2gears
    first = opened_timeline(browser, page)
    origin = first.page.evaluate(f"{TL}.origin")
    low, high = origin + 700_000_000, origin + 712_500_000
    render = next(p["index"] for p in first.page.evaluate(f"{TL}.layout") if p["kind"] == "opengl")
    fragment = first.page.evaluate("(l) => orchestrateTimelineTools.fragmentOf(l)",
                                   {"window": [low, high], "selection": [low + 1_000_000, low + 3_000_000],
                                    "frame": None, "search": "glClear", "selectionRows": [render]})
    assert fragment.endswith(f"&rows={render}")
    opened = browser.new_page()
    requests: list[str] = []
    opened.on("request", lambda r: requests.append(r.url))
    opened.goto(page.resolve().as_uri() + fragment)
    opened.wait_for_function(READY)
    assert opened.evaluate(f"{TL}.view") == pytest.approx([low, high], abs=1)
    selection = opened.evaluate(f"{TL}.selection")
    assert (selection["start"], selection["end"], selection["rows"]) == (low + 1_000_000, low + 3_000_000, [render])
    assert {e["kind"] for e in selection["stats"]} == {"opengl"}  # over the render thread's OpenGL calls alone
    clears = sql(source, 'SELECT count(*) FROM OPENGL_API AS t JOIN StringIds AS s ON s.id = t.nameId '
                         'WHERE s.value = ? AND t."end" > ? AND t.start < ?', "glClear", low + 1_000_000,
                 low + 3_000_000)
    assert {(e["kind"], e["name"]): e["count"] for e in selection["stats"]}[("opengl", "glClear")] == clears[0][0]
    assert opened.evaluate(f"{TL}.search.query") == "glClear"
    opened.wait_for_function(f"() => !{TL}.addressPending()")
    assert opened.evaluate("location.hash") == fragment  # opening a link rewrites nothing
    assert requests == [page.resolve().as_uri()]


def test_keys_work_from_anywhere_on_the_page_outside_text_fields(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    opened.page.evaluate("window.scrollTo(0, 0)")
    opened.page.locator("h1").click()  # the focus on the page's body, the timeline far below
    assert opened.page.evaluate("document.activeElement === document.body")
    opened.page.keyboard.press("?")
    opened.page.wait_for_function(f"() => {TL}.helpOpen")
    assert opened.page.locator(".tl-help").is_visible()
    assert opened.page.locator(".tl-help").bounding_box()["y"] < 900  # in the window, not below it
    opened.page.keyboard.press("Escape")
    opened.page.wait_for_function(f"() => !{TL}.helpOpen")
    opened.page.locator("h1").click()
    before, inputs = view(opened), opened.page.evaluate(f"{TL}.inputs")
    opened.page.keyboard.press("w")  # the rows are not on screen: W is the page's (a zoom asks a paint at once)
    assert opened.page.evaluate(f"{TL}.inputs") == inputs and view(opened) == before
    opened.page.keyboard.press("/")
    assert opened.page.evaluate("document.activeElement.matches('[data-tl-search]')")
    opened.page.keyboard.type("?w")  # typed into the search box: a search, no help, no zoom
    opened.page.wait_for_function(f"() => {TL}.search && {TL}.search.query === '?w' && {TL}.painted === {TL}.inputs")
    assert opened.page.evaluate(f"{TL}.helpOpen") is False and view(opened) == before
    opened.page.locator("[data-tl-search]").fill("")
    opened.page.locator("#run-timeline canvas").scroll_into_view_if_needed()
    opened.page.locator(".tl-legend").click(position={"x": 2, "y": 2})  # off the canvas, the rows on screen
    zoomed = after_paint(opened, lambda: opened.page.keyboard.press("w"))["view"]
    assert zoomed[1] - zoomed[0] == pytest.approx((before[1] - before[0]) * 0.8, rel=1e-3)
    assert opened.page.evaluate("document.activeElement === document.querySelector('#run-timeline canvas')")
    assert_clean(opened, page)


def test_self_time_of_egl_swap_buffers_is_its_time_less_the_calls_inside_it_on_its_thread(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin = opened.page.evaluate(f"{TL}.origin")
    for low, high in [(origin + 1_000_000_000, origin + 1_080_000_000), (origin, origin + 3_500_000_000)]:
        opened.page.evaluate(f"{TL}.select({low}, {high})")
        stats = {(e["kind"], e["name"]): e for e in opened.page.evaluate(f"{TL}.selection.stats")}
        swap = stats[("opengl", "eglSwapBuffers")]
        durations = sql(source, 'SELECT sum(t."end" - t.start) FROM OPENGL_API AS t JOIN StringIds AS s '
                                'ON s.id = t.nameId WHERE s.value = ? AND t."end" > ? AND t.start < ?',
                        "eglSwapBuffers", low, high)[0][0]
        own = self_time_sql(source, "OPENGL_API", "eglSwapBuffers", low, high)
        assert swap["total"] == durations
        assert swap["self"] == own and own < 0.9 * durations  # the OS calls inside it are its children
    # a selected call says its own self time the same way
    rows = [p for p in opened.page.evaluate(f"{TL}.layout") if p["type"] == "row" and p["kind"] == "opengl"]
    opened.page.evaluate(f"{TL}.find('eglSwapBuffers')")
    opened.page.evaluate(f"{TL}.step(1)")
    picked = opened.page.evaluate(f"{TL}.selected")
    assert picked["row"] in {p["index"] for p in rows}
    details = opened.page.locator("[data-tl-details]").text_content()
    one = self_time_sql(source, "OPENGL_API", "eglSwapBuffers", picked["start"], picked["start"] + 1)
    assert "self time (less what nests in it on its thread)" in details
    number, unit = re.search(r"on its thread\): ([0-9.]+) (s|ms|µs|ns)", details).groups()
    assert float(number) * UNIT_NS[unit] == pytest.approx(one, rel=5e-3)


def test_the_tooltip_follows_a_zoom_and_names_what_is_under_the_pointer_then(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    _, box = zoomed_canvas(opened, 1.0, 1.02)
    row = next(p for p in opened.page.evaluate(f"{TL}.layout") if p["type"] == "row" and p["kind"] == "osrt"
               and p["group"].startswith("llvmpipe"))
    x, y = box["x"] + 190 + (box["width"] - 190) * 0.5, box["y"] + row["y"] + 5
    after_paint(opened, lambda: opened.page.mouse.move(x, y))
    for _ in range(6):
        tip = opened.page.evaluate(f"{TL}.tip")
        shown = view(opened)
        at = shown[0] + (x - box["x"] - 190) / (box["width"] - 190) * (shown[1] - shown[0])
        assert tip is not None and tip.split("\n")[1].startswith(row["group"].split(" ·")[0])
        start, length = re.search(r"start ([0-9.]+) s, ([0-9.]+ (?:s|ms|µs|ns))", tip).groups()
        number, unit = length.split()
        begin = float(start) * 1e9
        end = begin + float(number) * UNIT_NS[unit]
        slop = 3 * (shown[1] - shown[0]) / (box["width"] - 190)  # the nearest within 3 pixels when none covers it
        slop += (end - begin) * 0.01  # the duration as the tip rounds it
        assert begin - slop <= at <= end + slop, (tip, at)
        assert opened.page.locator("#run-timeline .tl-tip").text_content() == tip
        after_paint(opened, lambda: opened.page.keyboard.press("w"))  # zoom in at the pointer: it stays put
    assert_clean(opened, page)


def test_rows_with_nothing_in_view_are_hidden_on_asking_and_kinds_fold_from_the_legend(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    origin = opened.page.evaluate(f"{TL}.origin")
    all_rows = [p for p in opened.page.evaluate(f"{TL}.layout") if p["type"] == "row"]
    after_paint(opened, lambda: opened.page.evaluate(f"{TL}.setWindow({origin} + 2.0e9, {origin} + 2.0002e9)"))
    after_paint(opened, lambda: opened.page.locator("[data-tl-empty]").check())
    shown = opened.page.evaluate(f"{TL}.rows")
    assert 0 < len(shown) < len(all_rows)
    assert all(r["visible"] > 0 for r in shown)  # every row left has an event in view
    low, high = origin + 2_000_000_000, origin + 2_000_200_000
    osrt_threads = {tid for (tid,) in sql(source, 'SELECT DISTINCT globalTid FROM OSRT_API WHERE eventClass = 27 '
                                                  'AND "end" > ? AND start < ?', low, high)}
    assert sum(r["kind"] == "osrt" for r in shown) == len(osrt_threads)
    opened.page.wait_for_function("() => location.hash.includes('empty=hide')")
    after_paint(opened, lambda: opened.page.locator("[data-tl-kind=osrt]").click())
    assert not any(r["kind"] == "osrt" for r in opened.page.evaluate(f"{TL}.rows"))
    assert opened.page.locator("[data-tl-kind=osrt]").get_attribute("aria-pressed") == "false"
    opened.page.wait_for_function("() => location.hash.includes('hide=osrt')")
    assert_clean(opened, page)


def test_dark_mode_follows_the_readers_system_and_names_keep_one_colour_in_python_and_the_script(es2gears, browser):
    source, page = es2gears
    dark = browser.new_page()
    dark.emulate_media(color_scheme="dark")
    dark.goto(page.resolve().as_uri())
    dark.wait_for_function(READY)
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = map(int, re.findall(r"\d+", background)[:3])
    assert red + green + blue < 120  # a dark page
    label = dark.evaluate("""() => { const c = document.querySelector('#run-timeline canvas');
        const r = window.devicePixelRatio || 1, d = c.getContext('2d').getImageData(3 * r, 60 * r, 1, 1).data;
        return [d[0], d[1], d[2]]; }""")
    assert sum(label) < 240, label  # the canvas's labels read the page's colours (light: over 700)
    for element in ("nav", "#run-timeline .tl-tip"):  # white text on them in both schemes: dark behind it
        back = dark.evaluate(f"getComputedStyle(document.querySelector('{element}')).backgroundColor")
        assert sum(map(int, re.findall(r"\d+", back)[:3])) < 120, (element, back)
    names = ["eglSwapBuffers", "glDrawArrays", "poll", "ioctl", "sigsuspend", "frame 12 · µs", "[swrast_dri.so]"]
    assert dark.evaluate("ns => ns.map(n => orchestrateTimelineTools.colourOf(n))", names) == [
        name_colour(n) for n in names]
    light = open_page(browser, page)
    light.page.wait_for_function(READY)
    assert light.page.evaluate("getComputedStyle(document.body).backgroundColor") != background
    frame_bars = light.page.evaluate("""() => Array.from(
        document.querySelectorAll('svg[data-chart=frame-timeline] rect.ev')).slice(0, 40)
        .map(r => [r.querySelector('title').textContent.split(' (')[0], getComputedStyle(r).fill])""")
    assert frame_bars
    probe = light.page.evaluate("""(pairs) => pairs.map(p => { const e = document.createElement('div');
        e.style.color = p; document.body.appendChild(e); const c = getComputedStyle(e).color; e.remove();
        return c; })""",
                                [name_colour(name) for name, _ in frame_bars])
    assert [fill for _, fill in frame_bars] == probe  # the frame's chart colours a call by its name, as its legend says


def test_a_jump_to_a_section_lands_its_heading_below_the_sticky_bar(es2gears, browser):
    source, page = es2gears
    opened = opened_timeline(browser, page)
    for section in ("run-timeline-section", "timeline"):
        opened.page.locator(f"nav a[href='#{section}']").click()
        opened.page.wait_for_function(f"() => location.hash === '#{section}'")
        heading = opened.page.locator(f"#{section} h2").bounding_box()
        bar = opened.page.locator("nav").bounding_box()
        assert heading["y"] >= bar["y"] + bar["height"], (section, heading, bar)
    assert_clean(opened, page)
