"""The documentation site as a reader in an air-gapped lab gets it: built by mkdocs (strict), opened from its folder
in headless Chromium with no server: no page asks for anything outside the folder (no web fonts, no script from a
CDN), every link between pages opens a page, search finds pages from files, and no code block runs off its page."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(REPO / ".venv/bin/mkdocs"), "build", "--strict", "--site-dir", str(folder)], cwd=REPO,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return folder


def test_every_page_opens_from_its_folder_with_no_request_leaving_it(site, browser):
    pages = sorted(p for p in site.glob("*.html") if p.name != "404.html")  # a server's page (absolute paths)
    assert len(pages) >= 20
    page = browser.new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(f"{m.text} ({m.location})") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    linked: set[str] = set()
    for path in pages:
        page.goto(path.as_uri(), wait_until="load")
        linked |= set(page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"))
        # no code block is cut: each wraps within its page (at 1440 px, the width they were cut at)
        cut = page.evaluate("Array.from(document.querySelectorAll('.md-content pre > code'))"
                            ".filter(c => c.scrollWidth > c.clientWidth + 1).length")
        assert cut == 0, path.name
    outside = [url for url in requests if not url.startswith("file://")]
    assert outside == [], outside
    assert errors == [], errors[:5]
    local = {url.split("#")[0] for url in linked if url.startswith("file://")}
    assert {Path(url[len("file://"):]).name for url in local} >= {p.name for p in pages}
    assert all(Path(url[len("file://"):]).is_file() for url in local), sorted(local)[:5]


def test_search_finds_pages_from_files(site, browser):
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((site / "reports.html").as_uri(), wait_until="load")
    page.keyboard.press("/")
    page.keyboard.type("overview strip")
    page.wait_for_function("() => document.querySelectorAll('.md-search-result__item').length > 0", timeout=20_000)
    found = page.evaluate("Array.from(document.querySelectorAll('.md-search-result__item a')).map(a => a.href)")
    assert any(url.split("#")[0].endswith("/reports.html") for url in found), found
    assert all(url.startswith("file://") for url in requests), requests
