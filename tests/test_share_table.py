"""The shares are declared once (orchestrator/documents/shares.py): a copy of orchestrate given one more share in
its table, and no other edit, says it in summary.json, on the page, in a study's figures and in compare."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

NEW = ('    ShareKind("gpu_spin", "spinning in a GPU call", "spinning in a GPU call (or a software renderer)",\n'
       '              "gpu_spin", "spinning in a GPU call", "spins in its GPU calls", "#123456", "#654321"),\n')


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("one-more-share")
    for name in ("orchestrator", "remote_agent", "templates"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    table = root / "orchestrator" / "documents" / "shares.py"
    text = table.read_text()
    assert text.count("\n)\nSHARES = ") == 1
    table.write_text(text.replace("\n)\nSHARES = ", "\n" + NEW + ")\nSHARES = "))
    return root


def _run(copy: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=copy, env=dict(os.environ, PYTHONPATH=str(copy)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_one_more_share_in_the_table_is_said_everywhere(copy, export, tmp_path):
    es2gears, tflite = export("es2gears-opengl"), export("tflite-pose-xnnpack")
    summary = json.loads(_run(copy, "-m", "orchestrator", "analyze", str(es2gears), "--json"))
    shares = summary["attribution"]["shares"]
    assert list(shares)[-1] == "gpu_spin" and shares["gpu_spin"]["ns"] == 0  # no rule gives it time yet
    assert sum(share["ns"] for share in shares.values()) == summary["attribution"]["window_ns"]
    page = tmp_path / "page.html"
    _run(copy, "-m", "orchestrator", "report", str(es2gears), "-o", str(page))
    text = page.read_text()
    assert "--s-gpu_spin: #123456;" in text and ".key.share-gpu_spin" in text
    assert ".v-gpu_spin strong { color: #654321; }" in text  # its verdict's headline colour
    compared = json.loads(_run(copy, "-m", "orchestrator", "compare", str(es2gears), str(tflite), "--json"))
    metric = next(m for m in compared["metrics"] if m["key"] == "share_gpu_spin_ns")
    assert metric["label"] == "per frame: spinning in a GPU call (or a software renderer)"
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    figures = _run(copy, "-c", "import sys; from pathlib import Path; from orchestrator.figures.run_metrics import "
                               "run_metrics; print(run_metrics(Path(sys.argv[1]), None).values)", str(folder))
    assert "'share_gpu_spin_ms': 0.0" in figures  # a study's cells and the results database get it as a metric
