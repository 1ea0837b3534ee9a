"""The orchestrate.jetson collection's tasks accept what their documentation says (ansible-doc reads it from the
installed collection), and each option is orchestrate's command-line option of the same name, with its default."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orchestrate_ansible.tasks import ARGUMENT_SPECS, ONE_OF, POSITIONAL, command_line

from orchestrator.cli.main import build_parser
from orchestrator.cli.play import parse_task

BIN = Path(sys.executable).parent
# orchestrate's options no task takes: the play chooses the host (inventory, pattern, vault, forks), Ansible asks for
# passwords, doctor's --json is the task's result, --debug-log a file of the command line's; --any picks a board of
# a pattern, which a task for its own host cannot
NOT_TASK_OPTIONS = {"help", "command", "debug_log", "inventory", "vault_password_file", "ask_vault_pass",
                    "ask_become_pass", "target", "limit", "forks", "any"}


def command_parser(task: str) -> argparse.ArgumentParser:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[task]


@pytest.fixture(scope="module")
def documented() -> dict:
    done = subprocess.run([str(BIN / "ansible-doc"), "-j", *(f"orchestrate.jetson.{t}" for t in ARGUMENT_SPECS)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_NOCOLOR="1"))
    assert done.returncode == 0, done.stderr
    return {name.rsplit(".", 1)[1]: value["doc"] for name, value in json.loads(done.stdout).items()}


@pytest.mark.parametrize("task", sorted(ARGUMENT_SPECS))
def test_the_documentation_says_what_the_task_accepts(documented, task):
    options = documented[task]["options"]
    spec = ARGUMENT_SPECS[task]
    assert set(options) == set(spec)
    for name, doc in options.items():
        wanted = {"type": spec[name]["type"], "required": spec[name].get("required", False),
                  "default": spec[name].get("default"), "elements": spec[name].get("elements")}
        assert {key: doc.get(key, False if key == "required" else None) for key in wanted} == wanted, name
        assert doc["description"], name


@pytest.mark.parametrize("task", sorted(ARGUMENT_SPECS))
def test_each_option_is_orchestrate_s_own_with_its_default(task):
    actions = {a.dest: a for a in command_parser(task)._actions}
    spec = ARGUMENT_SPECS[task]
    left_out = set(actions) - set(spec) - NOT_TASK_OPTIONS
    if task == "doctor":
        left_out.discard("json")
    assert not left_out, f"orchestrate {task} takes {sorted(left_out)}, which the task does not"
    for name, option in spec.items():
        action = actions[name]
        assert (not action.option_strings) == (POSITIONAL.get(task) == name), name
        if option["type"] == "bool":
            assert isinstance(action, argparse._StoreTrueAction) and option["default"] is False, name
            continue
        default = action.default
        assert (str(default) if isinstance(default, Path) else default) == option.get("default"), name
        assert getattr(action.type, "__name__", "str") in {
            "str": ("str",), "int": ("whole",), "float": ("seconds",), "list": ("str",),
            "path": ("Path", "existing_folder", "existing_file", "user_path", "str")}[option["type"]], name
        assert (action.nargs is None or action.nargs == "?") and \
            isinstance(action, argparse._AppendAction) == (option["type"] == "list"), name


def test_a_task_s_options_reach_orchestrate_as_its_command_line_gives_them():
    given = {"app_cmd": "-x 5", "duration": 2.5, "no_nsys": True, "retries": 0, "grace": 30.0, "nvpmodel": 0,
             "needs_display": False, "out": "runs", "known_hosts": "/k"}
    args = parse_task("profile", command_line("profile", given), "nano01")
    assert (args.app_cmd, args.duration, args.no_nsys, args.retries, args.grace, args.nvpmodel, args.needs_display,
            args.known_hosts, args.target) == ("-x 5", 2.5, True, 0, 30.0, 0, False, Path("/k"), "nano01")
    study = parse_task("study", command_line("study", {"file": "s.yaml", "set": ["a=1,2", "b=3"], "repeat": 2}), "x")
    assert (study.file, study.set, study.repeat) == (Path("s.yaml"), ["a=1,2", "b=3"], 2)
    assert ONE_OF == {"profile": ["app", "app_cmd"], "ci": ["app", "study"]}
