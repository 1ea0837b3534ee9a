"""A run folder and a fleet folder written before host and agent exchanged typed messages
(tests/data/written-before-typed-messages, see its SOURCES.md) still open: their documents read typed, written again
they are what they were, and `report`, `compare` and `results import` work on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA, run_cli

from orchestrator.documents.fleet import read_fleet, write_fleet
from orchestrator.documents.run import RUN_FILE, read_run, write_run
from orchestrator.fleet.page import fleet_page
from orchestrator.targets.facts import board_fingerprint, board_kind

WRITTEN_BEFORE = DATA / "written-before-typed-messages"
RUN = "20261205T183609Z-local-es2gears"
FLEET = "20261205T183620Z-fleet-es2gears"
FLEET_RUN = "20261205T183620Z-local-es2gears"
# its summary.json's figures: 4027 frames, steady mean 699791.47 ns, first frame 22537555 ns, verdict display_wait
STEADY_MEAN_NS = 699791.4737888199


@pytest.fixture
def old(tmp_path: Path) -> Path:
    for name in (RUN, FLEET):
        shutil.copytree(WRITTEN_BEFORE / name, tmp_path / name)
    return tmp_path


def test_its_run_reads_typed_with_the_fingerprints_it_was_stored_with(old):
    run = read_run(old / RUN)
    assert (run.status, run.stage, run.app_name) == ("ok", "pulled", "es2gears")
    assert run.facts is not None and run.facts.nsys.version == "2022.4.2.1" and run.facts.system.cpu_count == 2
    assert board_kind(run.facts) == "not a Jetson: x86_64, Debian GNU/Linux 12 (bookworm)"
    assert board_fingerprint(run.facts) == run.board_fingerprint  # the typed facts digest as the plain ones did
    capture = run.capture
    assert capture is not None and capture.nsys_exit in (0, 143) and capture.watchdog == []
    assert capture.settings is None  # the board of then did not echo its settings
    assert run.keep_remote is False and run.heartbeat_timeout_s == 30 and run.power_modes == (None, None)


@pytest.mark.parametrize("folder", [RUN, f"{FLEET}/{FLEET_RUN}"])
def test_each_run_written_again_is_what_it_was(old, folder):
    before = json.loads((old / folder / RUN_FILE).read_text())
    write_run(old / folder, read_run(old / folder))
    assert json.loads((old / folder / RUN_FILE).read_text()) == before


def test_its_fleet_reads_typed_draws_its_page_and_written_again_is_what_it_was(old):
    before = json.loads((old / FLEET / "fleet.json").read_text())
    fleet = read_fleet(old / FLEET)
    [board] = fleet.boards
    assert (board.target, board.status, board.folder) == ("local", "ok", FLEET_RUN)
    assert board.board.kind == "not a Jetson: x86_64, Debian GNU/Linux 12 (bookworm)"
    assert board.board.fingerprint == read_run(old / FLEET / FLEET_RUN).board_fingerprint
    [cell] = board.cells
    assert cell.frame_ms is not None
    assert (cell.label, cell.verdict, cell.frame_ms.median) == ("es2gears", "display_wait", 0.551)
    page = fleet_page(fleet)
    assert [(row.target, row.status, row.kind) for row in page.recap] == [
        ("local", "ok", "not a Jetson: x86_64, Debian GNU/Linux 12 (bookworm)")]
    assert page.groups[0].rows[0][1][0].text == "0.551 ms"
    write_fleet(old / FLEET, fleet)
    assert json.loads((old / FLEET / "fleet.json").read_text()) == before


@pytest.mark.integration
def test_report_compare_and_results_import_open_it(old, tmp_path):
    run_dir = old / RUN
    done = run_cli("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert "<title>es2gears on local" in (run_dir / "report.html").read_text()
    done = run_cli("compare", str(run_dir), str(old / FLEET / FLEET_RUN), "--label", "a", "--label", "b", "--json")
    assert done.returncode == 0, done.stderr
    values = {m["key"]: m["values"] for m in json.loads(done.stdout)["metrics"]}
    assert values["steady_mean_ns"][0] == pytest.approx(STEADY_MEAN_NS)
    db = str(tmp_path / "results.db")
    done = run_cli("results", "import", str(run_dir), "--db", db, "--commit", "abc", "--branch", "main")
    assert done.returncode == 0 and "1 run stored" in done.stdout, done.stderr
    stored = json.loads(run_cli("results", "list", "--db", db, "--json").stdout)
    assert [(r["run_id"], r["app"], r["status"]) for r in stored] == [(RUN, "es2gears", "ok")]
    assert stored[0]["metrics"]["steady_mean_ms"] == pytest.approx(STEADY_MEAN_NS / 1e6)


def test_a_capture_of_before_gets_its_kinds_from_its_words():
    from orchestrator.documents.run import RunDocument
    run = RunDocument.from_json({"capture": {
        "ended_early": {"reason": "the disk is nearly full (40 MB free in /w)", "after_s": 3.0},
        "watchdog": [{"reason": "nsys hung after writing the report", "signal": "SIGTERM", "target": "nsys"},
                     {"reason": "nsys daemon outlived the capture", "signal": "SIGTERM", "target": "nsys daemon"}]}})
    assert run.capture is not None and run.capture.ended_early is not None
    assert run.capture.ended_early.kind == "disk_low"
    assert [step.kind for step in run.capture.watchdog] == ["hung_after_report", "outlived"]
