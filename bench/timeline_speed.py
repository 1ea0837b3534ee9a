"""How fast report.html's whole-run timeline paints and repaints in Chromium, on exports of 1.32 M and 3 M timeline
events, against the short es2gears export's page opened in the same run.

Grows the es2gears export in tests/data/nsys along the time axis (as bench/analysis_speed.py does) to each
size, its copies' times jittered by a few microseconds (copies alone compress far better than a real run),
plus any real capture's run folder given with --run. Writes each page with `orchestrate report`, then per
page and round opens it in headless Chromium (Debian's, through Playwright) and takes the time from
navigation to the timeline's first paint; then 40 inputs (INPUTS): Ctrl+wheel zooms at the pointer (8 steps in,
8 out), pans (6 drags, 6 A/D keys), searches (a name's matches highlighted and counted in view, "gl" among them:
most of the run's events), span selections (each name's statistics, two of them over the whole run), each timed
from the input to the end of its repaint. Prints medians, the worst
repaint, the page's size per million events, and the targets: first paint within 1 s, each repaint within
100 ms.

    python bench/timeline_speed.py [--events 1320000 3000000] [--rounds 3] [--run RUN_FOLDER ...]
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from analysis_speed import DATA, build_export  # noqa: E402
from browser import chromium_path  # noqa: E402

SOURCE = "es2gears-opengl"
SOURCE_EVENTS = 141_885     # rows of the export's event tables, what build_export counts
TIMELINE_EVENTS = 64_613    # of them, the events the timeline draws (calls, ranges, samples, GPU work)
JITTERED = ("OPENGL_API", "OSRT_API", "OPENGL_WORKLOAD", "COMPOSITE_EVENTS")
FIRST_PAINT_S, REPAINT_MS = 1.0, 100.0
READY = "() => window.orchestrateTimeline && window.orchestrateTimeline.paints > 0"

# one input, timed in the page from its dispatch to the end of the repaint it causes: a Ctrl+wheel (zoom), a
# drag, a key, a search (the box's query, its matches highlighted and counted in view) or a selection (a span's
# statistics per name: "whole" selects the whole run, every row)
TIMED_INPUT = """async ([kind, x, y, amount]) => {
  const t = window.orchestrateTimeline, canvas = document.querySelector('#run-timeline canvas');
  const box = canvas.getBoundingClientRect(), before = t.paints, began = performance.now();
  const at = {clientX: box.left + x, clientY: box.top + y, bubbles: true};
  if (kind === 'wheel') {
    canvas.dispatchEvent(new WheelEvent('wheel', {...at, deltaY: amount, ctrlKey: true, cancelable: true}));
  } else if (kind === 'key') {
    canvas.dispatchEvent(new KeyboardEvent('keydown', {key: amount, bubbles: true}));
  } else if (kind === 'search') {
    t.find(amount);
  } else if (kind === 'select') {
    const [low, high] = amount === 'whole' ? [t.origin, t.origin + t.span] : t.view;
    t.select(low + (high - low) * 0.2, high - (high - low) * 0.2);
  } else {
    canvas.dispatchEvent(new MouseEvent('mousedown', at));
    canvas.dispatchEvent(new MouseEvent('mousemove', {...at, clientX: at.clientX - amount}));
    window.dispatchEvent(new MouseEvent('mouseup', at));
  }
  while (t.paints === before) { await new Promise(r => requestAnimationFrame(r)); }
  return performance.now() - began;
}"""
# the 40 inputs: zoom in, search, select, drag and keys there, zoom out, search and select the whole run
INPUTS = ([("wheel", 700, 40, -240)] * 8 + [("search", 0, 0, q) for q in ("gl", "pthread_cond", "swap", "")]
          + [("select", 0, 0, "view")] * 2 + [("drag", 700, 40, 120)] * 6 + [("key", 0, 0, "d")] * 3
          + [("key", 0, 0, "a")] * 3 + [("wheel", 900, 40, 240)] * 8 + [("search", 0, 0, q) for q in ("gl", "poll")]
          + [("select", 0, 0, "whole")] * 2 + [("search", 0, 0, "")] * 2)


def roughen(export: Path, first_copy_rows: dict[str, int]) -> None:
    """Jitter the copies' times by up to 4 us (starts) and 1 us more (ends), by rowid: copies of one capture
    repeat themselves, which zlib would squeeze far more than a real run's events."""
    conn = sqlite3.connect(export)
    for table, rows in first_copy_rows.items():
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        shift = "((rowid * 2654435761) % 4093)"
        ends = f', "end" = "end" + {shift} + ((rowid * 40503) % 997)' if "end" in columns else ""
        conn.execute(f"UPDATE {table} SET start = start + {shift}{ends} WHERE rowid > ?", (rows,))
    conn.commit()
    conn.close()


def table_rows(export: Path, tables: tuple[str, ...]) -> dict[str, int]:
    conn = sqlite3.connect(export)
    try:
        return {t: conn.execute(f"SELECT max(rowid) FROM {t}").fetchone()[0] for t in tables}
    finally:
        conn.close()


def write_page(source: Path, page: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(source), "-o", str(page)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"orchestrate report failed: {done.stderr[-500:]}")
    return time.perf_counter() - started


def timeline_page(page: Path) -> Path:
    """The page that holds the timeline: the report, or the page of its own beside it (a very large run)."""
    aside = page.with_name(f"{page.stem}.timeline.html")
    return aside if aside.is_file() else page


def measure(browser, page: Path) -> tuple[float, list[tuple[str, float]], dict]:
    """Seconds from navigation to the first paint, each input's repaint in ms, and the timeline's counts."""
    tab = browser.new_page(viewport={"width": 1600, "height": 1000})
    tab.goto(timeline_page(page).as_uri(), wait_until="load")
    tab.wait_for_function(READY, timeout=60_000)
    first = tab.evaluate("window.orchestrateTimeline.firstPaintMs") / 1000
    counts = tab.evaluate("({rows: window.orchestrateTimeline.rows.length, shapes: window.orchestrateTimeline.shapes, "
                          "events: Number(document.getElementById('run-timeline').dataset.events)})")
    repaints = []
    tab.wait_for_function("() => window.orchestrateTimeline.detailLoaded", timeout=60_000)
    for kind, x, y, amount in INPUTS:
        repaints.append((kind, tab.evaluate(TIMED_INPUT, [kind, x, y, amount])))
    counts["shapes_max"] = tab.evaluate("window.orchestrateTimeline.shapes")
    tab.close()
    return first, repaints, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="*", default=[1_320_000, 3_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--run", type=Path, nargs="*", default=[], help="run folders (or exports) to measure too")
    args = parser.parse_args()
    chromium = chromium_path()
    if not chromium:
        raise SystemExit("no chromium on PATH: install it (scripts/install-system-deps.sh does)")
    from playwright.sync_api import sync_playwright
    ok = True
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as folder:
        small = Path(folder) / f"{SOURCE}.sqlite"
        with gzip.open(DATA / f"{SOURCE}.sqlite.gz", "rb") as packed, small.open("wb") as out:
            shutil.copyfileobj(packed, out)
        sources: dict[str, Path] = {"short (baseline)": small}
        for events in args.events:
            grown = Path(folder) / f"x{events}"
            grown.mkdir()
            copies = -(-events // TIMELINE_EVENTS)
            path, _, _ = build_export(SOURCE, copies * SOURCE_EVENTS, grown)
            roughen(path, table_rows(small, JITTERED))
            sources[f"{copies * TIMELINE_EVENTS / 1e6:.2f} M events"] = path
        for run in args.run:
            sources[run.name] = run
        pages: dict[str, Path] = {}
        for name, source in sources.items():
            page = Path(folder) / f"{len(pages)}.html"
            seconds = write_page(source, page)
            pages[name] = page
            aside = " (the timeline on a page of its own)" if timeline_page(page) != page else ""
            print(f"{name}: orchestrate report {seconds:.1f} s, page {page.stat().st_size / 2**20:.1f} MB{aside}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            measure(browser, pages["short (baseline)"])  # warm the browser's caches
            baseline = None
            for name, page in pages.items():
                rounds = [measure(browser, page) for _ in range(args.rounds)]
                first = statistics.median(r[0] for r in rounds)
                repaints = [ms for r in rounds for _, ms in r[1]]
                worst = {kind: max(ms for r in rounds for k, ms in r[1] if k == kind) for kind, _ in rounds[0][1]}
                counts = rounds[0][2]
                baseline = baseline or first
                size = sum(p.stat().st_size for p in {page, timeline_page(page)}) / 2**20
                events = counts["events"]
                per_million = size / max(events / 1e6, 1e-9)
                page_ok = first <= FIRST_PAINT_S and max(repaints) <= REPAINT_MS
                ok = ok and page_ok
                median = statistics.median(repaints)
                each_worst = ", ".join(f"{kind} {ms:.0f}" for kind, ms in worst.items())
                print(f"  {name}: {events:,} events in {counts['rows']} rows; first paint {first:.3f} s "
                      f"({first / baseline:.2f}x the short page's); repaint median {median:.1f} ms, "
                      f"worst {max(repaints):.1f} ms over {len(repaints)} inputs ({each_worst}); "
                      f"{counts['shapes']:,} shapes at full "
                      f"zoom, {size:.1f} MB page ({per_million:.1f} MB per million events) -> "
                      f"{'ok' if page_ok else 'MISSED'}")
            browser.close()
    print(f"targets: first paint within {FIRST_PAINT_S:g} s, each repaint within {REPAINT_MS:g} ms -> "
          f"{'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
