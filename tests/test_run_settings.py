"""A run's settings (RunSettings) reach the board from every command that accepts them: the board echoes the
capture settings it read into the capture's result (run.json's ``capture.settings``), and --keep-remote leaves
the board's copy of each run where it was. Real runs on the local target, without nsys, through the real CLI."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli, write_inventory

from orchestrator.cli.main import build_parser
from orchestrator.cli.options import run_settings
from orchestrator.errors import UsageError
from orchestrator.inventory.catalog import AppSpec
from orchestrator.runs.run_settings import RunSettings, capture_settings

APP = REPO / "tests" / "apps" / "inference_lines.py"
GIVEN = ["--grace", "7", "--retries", "2", "--heartbeat-timeout", "41", "--wait-lock", "3", "--keep-remote"]
SETTINGS = RunSettings(grace_s=7, retries=2, heartbeat_timeout_s=41, wait_lock_s=3, keep_remote=True)
# what the board reads of them (keep-remote is the host's to honour: it removes the board's copy, or not)
ON_BOARD = {"grace_s": 7.0, "retries": 2, "heartbeat_timeout_s": 41.0, "wait_lock_s": 3.0, "lock_clocks": None}
COMMANDS = {
    "profile": ["profile", "--target", "here", "--app", "infer"],
    "study": ["study", "STUDY", "--target", "here", "--repeat", "1"],
    "fleet --app": ["fleet", "--app", "infer", "--limit", "here"],
    "fleet --study": ["fleet", "--study", "STUDY", "--limit", "here", "--repeat", "1"],
    "ci": ["ci", "--app", "infer", "--target", "here", "--repeat", "1", "--db", "DB"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_capture_command_reads_every_run_setting(command):
    args = build_parser().parse_args([*COMMANDS[command], *GIVEN, "--lock-clocks", "--nvpmodel", "2"])
    assert run_settings(args) == RunSettings(**{**vars(SETTINGS), "lock_clocks": True, "nvpmodel": 2})
    with pytest.raises(UsageError, match="--nvpmodel goes with --lock-clocks"):
        run_settings(build_parser().parse_args([*COMMANDS[command], "--nvpmodel", "2"]))


def test_the_board_gets_the_capture_settings_of_the_run_and_of_its_app():
    app = AppSpec(name="a", command=("a",), duration_s=5, delay_s=1.5)
    board = capture_settings(RunSettings(grace_s=9, retries=0, heartbeat_timeout_s=12, wait_lock_s=4,
                                         lock_clocks=True, nvpmodel=3), app)
    assert board.to_wire() == {"delay_s": 1.5, "duration_s": 5.0, "grace_s": 9.0, "heartbeat_s": 1.0,
                               "heartbeat_timeout_s": 12.0, "wait_lock_s": 4.0, "retries": 0,
                               "lock_clocks": {"nvpmodel": 3, "v": 1}, "v": 1}
    assert capture_settings(RunSettings(), app).lock_clocks is None


@pytest.mark.integration
@pytest.mark.machine
def test_each_commands_settings_reach_the_board_and_keep_remote_keeps_its_copy(tmp_path):
    work = tmp_path / "work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"here": {
        "ansible_connection": "local", "orchestrate_work_dir": str(work), "orchestrate_python": sys.executable}})
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "infer.yaml").write_text(yaml.safe_dump({
        "name": "infer", "parser": "tftrt-bench", "duration_s": 30,
        "command": [sys.executable, str(APP), "--frames", "3", "--work", "10", "--sleep-ms", "1"]}))
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"study": "s", "app": "infer", "matrix": {"frames": [3]},
                                     "args": ["--frames", "{frames}"]}))
    common = ["--inventory", str(inventory), "--apps-dir", str(apps), "--no-nsys", *GIVEN]
    for command, argv in COMMANDS.items():
        out = tmp_path / command.replace(" ", "").replace("--", "-")
        argv = [str(study) if word == "STUDY" else str(tmp_path / "results.db") if word == "DB" else word
                for word in argv]
        done = run_cli(*argv, *common, "--out", str(out), timeout=300)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        records = [json.loads(path.read_text()) for path in out.rglob("run.json")]
        assert len(records) == 1, command
        record = records[0]
        said = {key: record["capture"]["settings"][key] for key in ON_BOARD}
        assert said == ON_BOARD, command
        assert record["request"]["keep_remote"] is True and record["remote_removed"] is False, command
        assert Path(record["remote"]["run_dir"]).is_dir(), f"{command}: the board's copy was removed"
        if command.startswith("fleet"):
            assert record["fleet"]["target"] == "here", command


def test_a_display_asked_for_is_given_whatever_names_the_app(tmp_path):
    """--needs-display with a catalog app, and a study's needs_display and workdir over its app's spec."""
    from orchestrator.inventory.catalog import chosen_app, load_catalog
    from orchestrator.study.spec import cell_app, cells, load_study
    catalog = load_catalog(None)
    assert not catalog["trtexec"].needs_display
    assert chosen_app(catalog, "trtexec", None, True).needs_display is True
    assert chosen_app(catalog, "trtexec", None).needs_display is False
    study = tmp_path / "s.yaml"
    study.write_text(yaml.safe_dump({"study": "s", "app": "trtexec", "needs_display": True, "workdir": "/models",
                                     "matrix": {"batch": [1]}}))
    spec = load_study(study)
    app = cell_app(spec, cells(spec)[0], catalog)
    assert (app.needs_display, app.workdir) == (True, "/models")
