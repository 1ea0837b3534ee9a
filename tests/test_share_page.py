"""One thread's CPU figure is the same number wherever the page shows it: the share table's running share, the line
under it, and the CPU section's threads table, read in Chromium on the stored es2gears export (context switches)
and on the same export without its scheduling events (the time on a CPU estimated from CPU samples)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from browser import assert_clean, open_page

from orchestrator.analysis import analyze_report
from orchestrator.report import write_report

pytestmark = pytest.mark.integration

THREADS_ROWS = """() => {
  const table = document.querySelector('[data-table=threads]');
  const heads = Array.from(table.querySelectorAll('thead th')).map(th => th.textContent.trim());
  return Array.from(table.querySelectorAll('tbody tr')).map(tr => {
    const cells = Array.from(tr.querySelectorAll('td')).map(td => td.textContent.trim());
    return Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
  });
}"""


def without_scheduling_events(source: Path, folder: Path) -> Path:
    """The export as a capture without --cpuctxsw writes it: no SCHED_EVENTS (and its summary's CPU from samples)."""
    target = folder / "es2gears-no-sched.sqlite"
    shutil.copy(source, target)
    with sqlite3.connect(target) as conn:
        conn.execute("DROP TABLE SCHED_EVENTS")
    return target


@pytest.mark.parametrize("scheduling", [True, False], ids=["context-switches", "samples-only"])
def test_the_share_table_and_the_cpu_section_agree(scheduling, export, browser, tmp_path):
    source = export("es2gears-opengl")
    if not scheduling:
        source = without_scheduling_events(source, tmp_path)
    summary = analyze_report(source)
    found = summary.attribution
    assert found is not None and found.sources.context_switches is scheduling
    page_path = write_report(source, tmp_path / "page.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    page = opened.page
    running = float(page.locator("table.shares tr[data-share=cpu] td").nth(1).inner_text().rstrip(" %"))
    tid = found.thread.rsplit("(", 1)[1].rstrip(")")
    [row] = [r for r in page.evaluate(THREADS_ROWS) if r["tid"] == tid]
    section = float(row["CPU %"].rstrip(" %"))
    line = page.locator("[data-on-cpu]").inner_text()
    assert f"was on a CPU {found.on_cpu_pct:.1f} % of this time" in line
    assert ("context switches" if scheduling else "estimated from its CPU samples") in line
    assert running == pytest.approx(section, abs=1.0)
    assert found.on_cpu_pct == pytest.approx(section, abs=1.0)
    if not scheduling:  # an estimate: said so, one step less sure, and the step that records them next
        assert summary.verdict is not None and summary.verdict.confidence != "high"
        step = page.locator("#next-steps li[data-rule=context_switches] code").inner_text()
        assert step.endswith("--cpuctxsw process-tree")
