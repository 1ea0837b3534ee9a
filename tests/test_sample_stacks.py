"""CPU samples with their call stacks on the whole-run timeline, in Chromium, against SQL over the stored es2gears
export: a sample's tooltip names the functions that called it, a picked sample gives its whole stack, and a
selected span lists its samples' heaviest stacks with the counts SQL gives over it."""
from __future__ import annotations

import sqlite3
from collections import Counter

import pytest
from browser import assert_clean, open_page
from test_run_events import sql_stacks

from orchestrator.report import write_report

pytestmark = pytest.mark.integration
TL = "window.orchestrateTimeline"


@pytest.fixture(scope="module")
def gears(export, tmp_path_factory):
    source = export("es2gears-opengl")
    return source, write_report(source, tmp_path_factory.mktemp("stacks") / "page.html")


def main_thread_samples(source) -> tuple[str, list[tuple[int, list[str]]]]:
    """The thread with the most samples (as the page labels it) and its samples' (start, stack)."""
    with sqlite3.connect(source) as conn:
        chains = sql_stacks(conn)
        gtid, = conn.execute("SELECT globalTid FROM COMPOSITE_EVENTS GROUP BY globalTid "
                             "ORDER BY count(*) DESC LIMIT 1").fetchone()
        name, = conn.execute("SELECT s.value FROM ThreadNames AS t JOIN StringIds AS s ON s.id = t.nameId "
                             "WHERE t.globalTid = ?", (gtid,)).fetchone()
        samples = [(start, chains.get(sample, ["[no stack]"])) for start, sample in conn.execute(
            "SELECT start, id FROM COMPOSITE_EVENTS WHERE globalTid = ? ORDER BY start", (gtid,))]
    return f"{name} ({gtid & 0xFFFFFF})", samples


def opened_at(browser, page_path):
    opened = open_page(browser, page_path)
    opened.page.wait_for_function(f"() => {TL}.ready && {TL}.detailLoaded")
    return opened


def test_a_selected_span_lists_its_samples_heaviest_stacks_as_sql_counts_them(gears, browser):
    source, page_path = gears
    thread, samples = main_thread_samples(source)
    opened = opened_at(browser, page_path)
    page = opened.page
    rows = [p for p in page.evaluate(f"{TL}.layout") if p["type"] == "row"]
    [row] = [i for i, p in enumerate(rows) if p["group"] == thread and p["kind"] == "sample"]
    lo, hi = samples[len(samples) // 4][0], samples[3 * len(samples) // 4][0]
    page.evaluate("([a, b, r]) => window.orchestrateTimeline.select(a, b, [r])", [lo, hi, row])
    shown = page.evaluate(f"{TL}.selection.stacks")
    counts = Counter(tuple(stack) for start, stack in samples if lo <= start < hi)
    total = sum(counts.values())
    assert len(shown) == min(8, len(counts)) and total > 100
    assert [s["count"] for s in shown] == sorted(counts.values(), reverse=True)[:len(shown)]
    for stack in shown:
        assert counts[tuple(stack["frames"])] == stack["count"], stack["frames"]
        assert stack["share"] == pytest.approx(stack["count"] / total)
    listed = page.locator(".tl-stacks li").all_text_contents()
    assert listed[0].startswith(f"{shown[0]['count']:,} samples") and " \u2190 ".join(shown[0]["frames"]) in listed[0]
    assert_clean(opened, page_path)


def test_a_samples_tooltip_and_details_give_its_stack(gears, browser):
    source, page_path = gears
    thread, samples = main_thread_samples(source)
    start, stack = max(samples[len(samples) // 2:], key=lambda s: len(s[1]))  # a deep one: its callers are shown
    opened = opened_at(browser, page_path)
    page = opened.page
    place = next(p for p in page.evaluate(f"{TL}.layout") if p["group"] == thread and p["kind"] == "sample")
    page.evaluate(f"{TL}.setWindow({start - 20_000}, {start + 20_000})")
    page.wait_for_function(f"() => {TL}.painted === {TL}.inputs")
    canvas = page.locator("#run-timeline canvas")
    y = place["y"] + place["h"] * 0.75
    page.evaluate("y => { const c = document.querySelector('#run-timeline canvas');"
                  " window.scrollBy(0, c.getBoundingClientRect().top + y - window.innerHeight / 2); }", y)
    box = canvas.bounding_box()
    left = page.evaluate(f"{TL}.labelWidth")
    view = page.evaluate(f"{TL}.view")
    x = left + (start - view[0]) / (view[1] - view[0]) * (box["width"] - left)
    page.mouse.move(box["x"] + x, box["y"] + y)
    tip = page.locator("#run-timeline .tl-tip")
    tip.wait_for(state="visible")
    lines = tip.text_content().splitlines()
    assert lines[0] == stack[0] and lines[3] == "called from:"
    callers = [line.strip() for line in lines[4:]]
    if len(stack) - 1 > 12:
        assert callers == stack[1:13] + [f"and {len(stack) - 13} more frames"]
    else:
        assert callers == stack[1:]
    page.mouse.click(box["x"] + x, box["y"] + y)
    details = page.locator("[data-tl-details]").text_content().splitlines()
    assert details[0].startswith(f"selected: {stack[0]} ({thread}")
    assert [line.strip() for line in details[2:]] == stack[1:]
    assert_clean(opened, page_path)


def test_the_flame_graph_of_a_thread_follows_the_selected_span_and_zooms_on_a_click(gears, browser):
    """The flame graph under the timeline: the thread with the most samples, over the selected span; each outermost
    function as many samples as SQL gives it there, each callee of the one clicked as many as SQL gives that path;
    a click on a function zooms to it (full width), a click on "all" zooms back out."""
    source, page_path = gears
    thread, samples = main_thread_samples(source)
    opened = opened_at(browser, page_path)
    page = opened.page
    lo, hi = samples[len(samples) // 5][0], samples[4 * len(samples) // 5][0]
    page.evaluate(f"([a, b]) => {TL}.select(a, b)", [lo, hi])
    page.wait_for_function(f"([a, b]) => {TL}.flame && {TL}.flame.window[0] === a && {TL}.flame.window[1] === b",
                           arg=[lo, hi])
    flame = page.evaluate(f"{TL}.flame")
    inside = [stack for start, stack in samples if lo <= start < hi]
    assert flame["thread"] == thread and flame["total"] == len(inside) and flame["focus"] is None
    roots = Counter(stack[-1] for stack in inside)
    drawn = {bar["name"]: bar["count"] for bar in flame["bars"] if bar["depth"] == 1}
    assert drawn and all(roots[name] == count for name, count in drawn.items())
    assert sum(drawn.values()) >= 0.99 * len(inside)  # all but bars under half a pixel
    assert sum(bar["w"] for bar in flame["bars"] if bar["depth"] == 1) <= flame["width"] + 1e-6

    child = max((bar for bar in flame["bars"] if bar["depth"] == 2), key=lambda bar: bar["count"])
    caller = next(bar["name"] for bar in flame["bars"]
                  if bar["depth"] == 1 and bar["x"] <= child["x"] < bar["x"] + bar["w"])
    canvas = page.locator("[data-tl-flame] canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    canvas.click(position={"x": child["x"] + child["w"] / 2, "y": 2 * 16 + 8})
    page.wait_for_function(f"() => {TL}.flame.focus === {child['name']!r}")
    zoomed = page.evaluate(f"{TL}.flame")
    path = [b for b in zoomed["bars"] if b["depth"] <= 2]
    assert [b["name"] for b in path] == ["all", caller, child["name"]]  # its callers above it, full width
    assert all(b["w"] == zoomed["width"] for b in path)
    under = Counter(stack[-3] for stack in inside if len(stack) >= 3 and stack[-1] == caller
                    and stack[-2] == child["name"])
    below = {b["name"]: b["count"] for b in zoomed["bars"] if b["depth"] == 3}
    assert below and all(under[name] == count for name, count in below.items())
    assert box["width"] == pytest.approx(zoomed["width"], abs=1)
    canvas.click(position={"x": 5, "y": 8})  # "all": zoomed back out
    page.wait_for_function(f"() => {TL}.flame.focus === null")
    # another thread picked: its samples, over the same span
    options = page.evaluate("Array.from(document.querySelectorAll('[data-tl-flame-thread] option')).map(o => o.value)")
    assert len(options) > 1
    page.locator("[data-tl-flame-thread]").select_option(options[-1])
    page.wait_for_function(f"(t) => {TL}.flame.thread !== t", arg=thread)
    assert_clean(opened, page_path)
