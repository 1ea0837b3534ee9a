"""How fast a long run's report.html opens in Chromium, against a short run's page opened in the same run.

Grows the es2gears export in tests/data/nsys along the time axis (as bench/analysis_speed.py does) until it
holds --frames frames, writes both pages with `orchestrate report`, then opens each --rounds times in
headless Chromium (Debian's, through Playwright) and takes the navigation's load time (HTML parsed, SVG
laid out, script run). Prints the medians, their ratio and the page sizes; the long page is held to the
target: open in under 2 s.

    python bench/report_speed.py [--frames 50000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import gzip
import shutil
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
SOURCE_FRAMES, SOURCE_EVENTS = 2445, 141_885
TARGET_SECONDS = 2.0


def write_page(export: Path) -> tuple[Path, float]:
    page = export.with_suffix(".html")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(export), "-o", str(page)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"orchestrate report failed: {done.stderr[-500:]}")
    return page, time.perf_counter() - started


def open_times(browser, page: Path, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(page.as_uri(), wait_until="load")
        times.append(tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
        tab.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    chromium = chromium_path()
    if not chromium:
        raise SystemExit("no chromium on PATH: install it (scripts/install-system-deps.sh does)")
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as folder:
        small = Path(folder) / f"{SOURCE}.sqlite"
        with gzip.open(DATA / f"{SOURCE}.sqlite.gz", "rb") as packed, small.open("wb") as out:
            shutil.copyfileobj(packed, out)
        started = time.perf_counter()
        events = SOURCE_EVENTS * -(-args.frames // SOURCE_FRAMES)
        large, total, _ = build_export(SOURCE, events, Path(folder))
        print(f"long run: {total:,} events, built in {time.perf_counter() - started:.0f} s")
        pages = {}
        for name, export in (("short", small), ("long", large)):
            page, seconds = write_page(export)
            pages[name] = page
            print(f"  {name}: orchestrate report {seconds:.1f} s, page {page.stat().st_size / 2**20:.2f} MB")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            open_times(browser, pages["short"], 1)  # warm the browser's caches
            measured = {name: open_times(browser, page, args.rounds) for name, page in pages.items()}
            frames = browser.new_page()
            frames.goto(pages["long"].as_uri())
            drawn = frames.evaluate("document.querySelector('polyline.series').points.numberOfItems")
            shown = frames.evaluate("document.querySelector('[data-section=frames] .facts dd').textContent")
            browser.close()
    for name, times in measured.items():
        each = " ".join(f"{t:.3f}" for t in times)
        print(f"  {name} page opens in {each} s (median {statistics.median(times):.3f} s)")
    short, long_ = statistics.median(measured["short"]), statistics.median(measured["long"])
    ok = long_ < TARGET_SECONDS
    print(f"  long run ({shown}, {drawn} points drawn): median {long_:.3f} s = {long_ / short:.2f}x the short run's "
          f"{short:.3f} s; target < {TARGET_SECONDS:g} s -> {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
