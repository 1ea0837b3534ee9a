"""The words a next step starts with: `orchestrate` when the one on PATH is this program, else its full path, else
this Python with -m orchestrator; each runs from any folder."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from orchestrator.invocation import program


def installed(folder: Path) -> Path:
    script = folder / "bin" / "orchestrate"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_the_program_on_path_is_named_bare(tmp_path):
    script = installed(tmp_path)
    assert program(str(script), path=str(script.parent)) == "orchestrate"


def test_a_program_off_path_or_another_one_is_named_by_its_full_path(tmp_path, monkeypatch):
    script = installed(tmp_path / "venv")
    other = installed(tmp_path / "elsewhere")
    assert program(str(script), path="/nonexistent") == str(script)
    assert program(str(script), path=str(other.parent)) == str(script)  # PATH finds a different orchestrate
    monkeypatch.chdir(tmp_path)
    assert program("venv/bin/orchestrate", path="/nonexistent") == str(script)  # as typed: .venv/bin/orchestrate


def test_python_dash_m_is_said_again_with_this_python():
    assert program(str(Path("orchestrator") / "__main__.py")) == shlex.join([sys.executable, "-m", "orchestrator"])


def test_a_program_started_by_its_bare_name_was_found_on_path():
    assert program("orchestrate", path="/nonexistent") == "orchestrate"
