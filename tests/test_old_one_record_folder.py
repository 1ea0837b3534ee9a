"""A run, a study and a fleet folder written before the one record type (tests/data/written-before-one-record-type,
see its SOURCES.md): each document reads with its figures, and written again is what it was."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA

from orchestrator.documents.fleet import read_fleet, write_fleet
from orchestrator.documents.run import read_run, write_run
from orchestrator.documents.study import read_study, write_study
from orchestrator.documents.summary import read_summary, write_summary

WRITTEN_BEFORE = DATA / "written-before-one-record-type"
RUN = "20261206T143333Z-local-es2gears"
STUDY = "20261206T143350Z-posebench-delegate"
FLEET = "20261206T143407Z-fleet-es2gears"


@pytest.fixture
def old(tmp_path: Path) -> Path:
    shutil.copytree(WRITTEN_BEFORE, tmp_path / "old")
    return tmp_path / "old"


def test_its_documents_read_with_their_figures(old):
    run = read_run(old / RUN)
    assert (run.run_id, run.status, run.stage, run.app_name, run.target.name) == (RUN, "ok", "pulled", "es2gears",
                                                                                 "local")
    assert run.facts is not None and run.facts.nsys.version == "2022.4.2.1"
    summary = read_summary(old / RUN)
    assert summary is not None and summary.verdict_kind == "display_wait"
    attribution = summary.attribution
    assert attribution is not None and attribution.largest == "display"
    study = read_study(old / STUDY)
    assert [cell.variables for cell in study.cells] == [
        {"delegate": "xnnpack", "threads": 1, "frames": 20}, {"delegate": "none", "threads": 1, "frames": 20}]
    fleet = read_fleet(old / FLEET)
    assert [(board.target, board.status) for board in fleet.boards] == [("local", "ok")]


def test_each_document_written_again_is_what_it_was_byte_for_byte(old):
    """The release before wrote them with the same layout: written again, each file is the same bytes (a whole
    number stays one, no key comes or goes)."""
    runs = sorted({*(p.parent for p in old.rglob("run.json"))})
    assert len(runs) == 4
    for folder in runs:
        for name, read, write in (("run.json", read_run, write_run), ("summary.json", read_summary, write_summary)):
            before = (folder / name).read_bytes()
            write(folder, read(folder))  # type: ignore[operator]
            assert (folder / name).read_bytes() == before, folder / name
    for name, read_doc, write_doc in (("study.json", read_study, write_study), ("fleet.json", read_fleet,
                                                                                write_fleet)):
        folder = old / (STUDY if name == "study.json" else FLEET)
        before = (folder / name).read_bytes()
        write_doc(folder, read_doc(folder))  # type: ignore[operator]
        assert (folder / name).read_bytes() == before, folder / name


def test_an_item_of_the_wrong_kind_is_read_as_missing_and_written_back_as_it_was(old):
    folder = old / RUN
    found = json.loads((folder / "run.json").read_text())
    found["phases"]["edited"] = "by hand"
    found["preflight"] = [*(found.get("preflight") or []), "a note"]
    (folder / "run.json").write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")
    run = read_run(folder)
    assert "edited" not in run.phases and all(not isinstance(f, str) for f in run.preflight or [])
    write_run(folder, run)
    assert json.loads((folder / "run.json").read_text()) == found
