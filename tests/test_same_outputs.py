"""`analyze --json`, `compare --json` and the pages of `report` and `compare`, on the stored exports and on run,
study and fleet folders written by earlier releases, equal the outputs stored in tests/data/outputs: a change of
the output is a change of behaviour, made on purpose, with the outputs written again in the same commit and the
change said in their SOURCES.md."""
from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest
from same_outputs import CASES, DATA, output, stored

from orchestrator.documents.summary import Summary

OLD_FOLDERS = ("written-before-typed-documents", "written-before-typed-messages", "written-before-one-record-type")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("same-outputs")
    for old in OLD_FOLDERS:
        shutil.copytree(DATA / old, work / old)
    return work


@pytest.mark.parametrize("case", [name for name, _ in CASES])
def test_output_is_as_before(case, folder):
    args = dict(CASES)[case]
    found, before = output(args, folder), stored(case)
    if found != before:
        as_lines = (json.dumps(v, indent=1, sort_keys=True).splitlines() if not isinstance(v, str)
                    else v.splitlines() for v in (before, found))
        diff = list(difflib.unified_diff(*as_lines, "before", "now", lineterm="", n=1))
        pytest.fail(f"{case} changed:\n" + "\n".join(diff[:60]))


def test_the_folders_are_not_changed_by_reading(folder):
    for old in OLD_FOLDERS:
        for path in (DATA / old).rglob("*.json"):
            assert (folder / old / path.relative_to(DATA / old)).read_bytes() == path.read_bytes(), path


@pytest.mark.parametrize("case", [name for name, _ in CASES if name.startswith("analyze-")])
def test_every_key_the_analysis_writes_is_a_declared_field_of_its_kind(case):
    """Read strictly (a key no section declares, or a value of another kind, is an error), each summary the
    stored exports give is its typed sections whole, and written again it is the same JSON."""
    written = stored(case)
    summary = Summary.from_wire({k: v for k, v in written.items() if k != Summary.VERSION_KEY}, strict=True)
    assert summary.as_json() == written
    assert summary.verdict is not None and summary.verdict.kind == written["verdict"]["kind"]
