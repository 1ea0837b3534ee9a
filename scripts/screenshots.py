"""The screenshots of the report page in the README and the docs, made as the tests see the page: the report of a
real capture (tests/data/nsys/es2gears-opengl, Mesa's gears demo under Xvfb), written by `orchestrate report` and
opened in the tests' headless Chromium (Debian's, through Playwright). Writes docs/images/*.png and
docs/images/screenshots.json, which carries the fingerprint of the templates they were made from: a test fails
when the templates change and the screenshots were not made again.

    python scripts/screenshots.py
"""
from __future__ import annotations

import gzip
import json
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from browser import chromium_path  # noqa: E402

from orchestrator.report import write_report  # noqa: E402
from orchestrator.report.render import templates_fingerprint  # noqa: E402

SOURCE = "tests/data/nsys/es2gears-opengl.sqlite.gz"
IMAGES = REPO / "docs" / "images"
MANIFEST = IMAGES / "screenshots.json"
READY = ("() => window.orchestrateTimeline && window.orchestrateTimeline.ready "
         "&& window.orchestrateTimeline.paints > 0 && window.orchestrateTimeline.detailLoaded")
SHOTS = {
    "report-top.png": "the top of the page: the run's facts, what to do next and the verdict",
    "whole-run-timeline.png": "the whole-run timeline, zoomed to a few frames, the render thread's OpenGL calls "
                              "pinned to the top, a span selected and its statistics per name below",
    "whole-run-timeline-dark.png": "the same in dark mode, as the reader's system asks",
    "flame-graph.png": "the render thread's CPU samples over the whole run as a flame graph, zoomed to "
                       "eglSwapBuffers",
}


def main() -> int:
    from playwright.sync_api import sync_playwright
    executable = chromium_path()
    if executable is None:
        print("screenshots.py: no Chromium (scripts/install-system-deps.sh installs it)", file=sys.stderr)
        return 1
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        export = Path(work) / "es2gears.sqlite"
        export.write_bytes(gzip.decompress((REPO / SOURCE).read_bytes()))
        page_path = write_report(export, Path(work) / "report.html")
        # the commands the page prints as a reader would see them run from the folder it is in, with orchestrate
        # on PATH (as the stored outputs' pages are compared: tests/same_outputs.py)
        text = page_path.read_text().replace(shlex.join([sys.executable, "-m", "orchestrator"]), "orchestrate")
        page_path.write_text(text.replace(str(Path(work).resolve()) + "/", "").replace(work + "/", ""))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            try:
                for scheme in ("light", "dark"):
                    page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
                    page.goto(page_path.as_uri())
                    page.wait_for_function(READY)
                    if scheme == "light":
                        page.screenshot(path=str(IMAGES / "report-top.png"))
                    arrange(page)
                    name = "whole-run-timeline.png" if scheme == "light" else "whole-run-timeline-dark.png"
                    page.locator("#run-timeline-section").screenshot(path=str(IMAGES / name))
                    if scheme == "light":
                        flame(page)
                        page.locator("[data-tl-flame]").screenshot(path=str(IMAGES / "flame-graph.png"))
                    page.close()
            finally:
                browser.close()
    MANIFEST.write_text(json.dumps({"templates": templates_fingerprint(), "source": SOURCE,
                                    "made_by": "python scripts/screenshots.py", "images": SHOTS}, indent=1) + "\n")
    print(f"{len(SHOTS)} screenshots in {IMAGES.relative_to(REPO)}")
    return 0


def arrange(page) -> None:  # noqa: ANN001 (a Playwright page)
    """The view the screenshots show: a few frames, the render thread's OpenGL calls pinned, a span selected."""
    layout = page.evaluate("window.orchestrateTimeline.layout")
    render = next(p["index"] for p in layout if p["type"] == "row" and p["kind"] == "opengl")
    origin = page.evaluate("window.orchestrateTimeline.origin")
    page.evaluate(f"window.orchestrateTimeline.setRows({{pins: [{render}]}})")
    page.evaluate(f"window.orchestrateTimeline.setWindow({origin} + 1.0e9, {origin} + 1.0045e9)")
    page.evaluate(f"window.orchestrateTimeline.select({origin} + 1.0012e9, {origin} + 1.0031e9)")
    page.evaluate("document.querySelector('#run-timeline-section').scrollIntoView()")
    page.wait_for_function("() => window.orchestrateTimeline.painted === window.orchestrateTimeline.inputs")


def flame(page) -> None:  # noqa: ANN001 (a Playwright page)
    """The flame graph of the render thread over the whole run, zoomed to eglSwapBuffers (a click on it)."""
    page.evaluate("window.orchestrateTimeline.select(window.orchestrateTimeline.origin, "
                  "window.orchestrateTimeline.origin + window.orchestrateTimeline.span)")
    page.wait_for_function("() => window.orchestrateTimeline.flame && window.orchestrateTimeline.flame.window[1] "
                           "=== window.orchestrateTimeline.origin + window.orchestrateTimeline.span")
    render = page.evaluate("Array.from(document.querySelectorAll('[data-tl-flame-thread] option'))"
                           ".find(o => o.textContent.startsWith('es2gears_x11')).value")
    page.locator("[data-tl-flame-thread]").select_option(render)
    page.wait_for_function("() => window.orchestrateTimeline.flame.thread.startsWith('es2gears_x11')")
    bar = page.evaluate("window.orchestrateTimeline.flame.bars.filter(b => b.name === 'eglSwapBuffers')"
                        ".sort((a, b) => b.count - a.count)[0]")
    canvas = page.locator("[data-tl-flame] canvas")
    canvas.scroll_into_view_if_needed()
    canvas.click(position={"x": bar["x"] + bar["w"] / 2, "y": bar["depth"] * 16 + 8})
    page.wait_for_function("() => window.orchestrateTimeline.flame.focus === 'eglSwapBuffers'")


if __name__ == "__main__":
    sys.exit(main())
