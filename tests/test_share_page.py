"""One thread's CPU figure is the same number wherever the page shows it: the line under the share table (on a CPU:
running, and spinning in calls that wait for the GPU) and the CPU section's threads table, read in Chromium on the
stored es2gears export (context switches) and on the same export without its scheduling events (the time on a CPU
estimated from its OS runtime calls and CPU samples: held to what the context switches say)."""
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
    on_cpu = float(line.split("was on a CPU ", 1)[1].split(" %", 1)[0])
    assert on_cpu == pytest.approx(found.on_cpu_pct, abs=0.05)
    assert ("(context switches)" if scheduling else "(estimated from its OS runtime calls and CPU samples)") in line
    assert on_cpu == pytest.approx(section, abs=1.0)  # the same figure, a point at most apart
    assert running <= on_cpu + 0.05  # running, and maybe spinning in a GPU wait besides
    if scheduling:
        return
    notes = page.locator("[data-cpu-from]").all_inner_texts()
    assert notes == [f"{found.thread}: estimated from its OS runtime calls and CPU samples (outside blocking calls "
                     "it ran; inside, where sampled)."]
    # held to the truth: what the context switches of the same capture say, within 5 points
    truth = analyze_report(export("es2gears-opengl")).attribution
    assert truth is not None and truth.on_cpu_pct is not None
    assert on_cpu == pytest.approx(truth.on_cpu_pct, abs=5.0)
    # an estimate: said so, one step less sure, and the step that records them next
    assert summary.verdict is not None and summary.verdict.confidence != "high"
    step = page.locator("#next-steps li[data-rule=context_switches] code").inner_text()
    assert step.endswith("--cpuctxsw process-tree")


def test_the_frames_the_page_shows_tell_their_own_figures(export, browser, tmp_path):
    """Under the representative and the slowest frame's timelines: that frame's shares and longest calls, never the
    run's averages."""
    from orchestrator.report.units import format_ms
    source = export("es2gears-opengl")
    found = analyze_report(source).attribution
    assert found is not None
    page_path = write_report(source, tmp_path / "page.html")
    opened = open_page(browser, page_path)
    assert_clean(opened, page_path)
    told = opened.page.locator("[data-frame-story]").all_inner_texts()
    slowest = next(story for story in found.stories if "the slowest steady frame" in story.told)
    usual = next(story for story in found.stories if "the steady frame closest to the median" in story.told)
    assert len(told) == 2
    for text, story in zip(told, (usual, slowest)):
        assert text.startswith(f"On {found.thread}, this frame's {format_ms(story.ns)}: ")
        longest = story.calls[0]
        assert f"{longest.name} {format_ms(longest.ns)}" in text
        top = max(story.shares, key=lambda name: story.shares[name])
        assert f"{found.title(top)} {format_ms(story.shares[top])}" in text
    assert "of each" not in " ".join(told)  # no average of the run's frames
