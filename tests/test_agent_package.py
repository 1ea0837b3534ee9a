"""The agent stays a stdlib-only program for Python 3.6+, and ships as a reproducible archive."""
import ast
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.targets.agent import build_agent_archive, shell_path

AGENT = Path(__file__).resolve().parent.parent / "remote_agent"


def test_agent_imports_only_the_standard_library_and_itself():
    for source in AGENT.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
                node.body = []  # what only a type checker reads never runs on the board
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top == "remote_agent" or top in sys.stdlib_module_names, f"{source.name} imports {name}"


def test_agent_source_needs_nothing_newer_than_python_3_6():
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent)) or shutil.which("vermin")
    if vermin is None:
        pytest.skip("vermin not installed (pip install -e .[test])")
    done = subprocess.run([vermin, "--no-tips", "--violations", "-t=3.6-", "--eval-annotations", str(AGENT)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_archive_is_reproducible_and_runs(tmp_path):
    first, second = build_agent_archive(), build_agent_archive()
    assert first == second
    archive = tmp_path / "agent.pyz"
    archive.write_bytes(first)
    done = subprocess.run([sys.executable, str(archive), "version"], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert answer["event"] == "result"
    assert answer["data"]["sha256"] == hashlib.sha256(first).hexdigest()


def test_agent_answers_failures_in_json_not_tracebacks(tmp_path):
    archive = tmp_path / "agent.pyz"
    archive.write_bytes(build_agent_archive())
    done = subprocess.run([sys.executable, str(archive), "remove"], input='{"paths": "/"}', capture_output=True,
                          text=True)
    answer = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 1
    assert answer["failed"] is True and answer["kind"] == "bad_request"
    assert answer["msg"] == "BadRequest: remove request: RemoveRequest.paths cannot be '/'"
    assert done.stderr == ""
    done = subprocess.run([sys.executable, str(archive), "remove"], input='{"paths": ["/x"], "root": "/y"}',
                          capture_output=True, text=True)
    answer = json.loads(done.stdout.splitlines()[-1])
    assert (answer["kind"], answer["msg"]) == ("error", "ValueError: refusing to remove /x: outside /y")
    assert "Traceback" in answer["trace"] and done.stderr == ""


def test_agent_refuses_to_remove_outside_its_work_dir(tmp_path):
    archive = tmp_path / "agent.pyz"
    archive.write_bytes(build_agent_archive())
    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    request = json.dumps({"paths": [str(victim)], "root": str(tmp_path / "work")})
    done = subprocess.run([sys.executable, str(archive), "remove"], input=request, capture_output=True, text=True)
    assert "refusing to remove" in json.loads(done.stdout)["msg"]
    assert victim.read_text() == "precious"


def test_shell_path_keeps_home_expandable():
    assert shell_path("~/.cache/orchestrate") == '"$HOME"/.cache/orchestrate'
    assert shell_path("/var/lib/my dir") == "'/var/lib/my dir'"


def test_the_host_decides_by_the_agents_kinds_never_by_its_words():
    """What the agent says of an early end or a watchdog step is for people; the host reads its kind."""
    from remote_agent.capture_machine import NSYS_STOPS
    # (documents/ reads the words of run.json files written before the kinds, once: they are its reading rules)
    host = "\n".join(path.read_text() for path in (AGENT.parent / "orchestrator").rglob("*.py")
                     if path.parent.name != "documents")
    words = [*NSYS_STOPS.values(), "the disk is nearly full", "no heartbeat from the host",
             "the host asked to end the capture"]
    assert [said for said in words if said in host] == []
