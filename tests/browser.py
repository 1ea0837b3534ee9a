"""Opening pages in a real headless Chromium (Debian's, driven by Playwright) and reading what it drew."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("ORCHESTRATE_TEST_ARTIFACTS", REPO / "test-artifacts"))

# per chart: the marks it says it drew, the marks in the DOM (rects of class mark, points of the series),
# and whether it takes room on the page
CHARTS_JS = """() => Array.from(document.querySelectorAll('svg.chart')).map(svg => {
  const line = svg.querySelector('polyline.series');
  const box = svg.getBoundingClientRect();
  const marks = Array.from(svg.querySelectorAll('.mark'));
  return {name: svg.dataset.chart, said: Number(svg.dataset.marks),
          drawn: marks.length + (line ? line.points.numberOfItems : 0),
          visible: marks.filter(m => { const b = m.getBBox(); return b.width > 0 && b.height > 0; }).length
                   + (line ? line.points.numberOfItems : 0),
          width: box.width, height: box.height,
          counts: marks.map(m => Number(m.dataset.count || 0)).reduce((a, b) => a + b, 0)};
})"""


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


class LazyChromium:
    """Starts Chromium (through Playwright) when the first page is asked for, once per test session; each test
    gets a context of its own (``for_test``), closed at its end."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self._playwright: Any = None
        self._browser: Any = None

    def new_context(self) -> Any:
        if self._browser is None:
            from playwright.sync_api import sync_playwright
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(executable_path=self.executable, args=["--no-sandbox"])
        return self._browser.new_context(viewport={"width": 1280, "height": 900})

    def close(self) -> None:
        if self._playwright is not None:
            self._browser.close()
            self._playwright.stop()


class TestPages:
    """One test's pages: a context of the session's Chromium, made on the first page."""

    def __init__(self, chromium: LazyChromium) -> None:
        self.chromium = chromium
        self._context: Any = None

    def new_page(self) -> Any:
        if self._context is None:
            self._context = self.chromium.new_context()
        return self._context.new_page()

    def close(self) -> None:
        if self._context is not None:
            self._context.close()


@dataclass
class OpenedPage:
    page: Any                        # playwright Page, still open
    console: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    load_ms: float = 0.0

    def charts(self) -> dict[str, dict]:
        return {c["name"]: c for c in self.page.evaluate(CHARTS_JS)}

    def table_values(self, key: str) -> list[list[str]]:
        """Every row of a table (after "show all"), as the raw data-v of its cells."""
        wrap = self.page.locator(f"table[data-table='{key}']").locator("xpath=..")
        button = wrap.locator("button.show-all")
        if button.count():
            button.click()
        return self.page.evaluate(
            "key => Array.from(document.querySelector(`table[data-table='${key}']`).tBodies[0].rows)"
            ".map(r => Array.from(r.cells).map(c => c.dataset.v))", key)

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def open_page(browser, path: Path) -> OpenedPage:
    page = browser.new_page()
    opened = OpenedPage(page)
    page.on("console", lambda m: opened.console.append(f"{m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: opened.console.append(f"pageerror: {e}"))
    page.on("request", lambda r: opened.requests.append(r.url))

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()
    page.on("dialog", on_dialog)
    page.goto(path.resolve().as_uri(), wait_until="load")
    opened.load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].duration")
    return opened


def assert_clean(opened: OpenedPage, path: Path) -> None:
    """No console error, no request beyond the file itself, no dialog, every chart drawn as it says."""
    assert opened.console == [], opened.console
    assert opened.requests == [path.resolve().as_uri()], opened.requests
    assert opened.dialogs == []
    for chart in opened.charts().values():
        assert chart["said"] > 0 and chart["drawn"] == chart["said"] == chart["visible"], chart
        assert chart["width"] > 100 and chart["height"] > 10, chart
