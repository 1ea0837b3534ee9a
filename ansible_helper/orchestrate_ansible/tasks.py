# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public
# License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later
# version. It is distributed WITHOUT ANY WARRANTY; see the GNU General Public License (COPYING beside this package).
"""The orchestrate.jetson collection's action plugins: each runs on the controller (or the execution node) for one
``inventory_hostname``, with the connection values Ansible resolved for it, and calls orchestrate's library. The
board needs nothing Ansible would put there: playbooks run with ``gather_facts: false``, and a JetPack 4 board's
Python 3.6 runs orchestrate's own agent.

Each task's options are orchestrate's command-line options of the same names (``app_cmd`` is ``--app-cmd``), checked
by orchestrate as its command line checks them; ``ARGUMENT_SPECS`` is what the tasks accept, and their documentation
(``ansible-doc orchestrate.jetson.profile``) is held to it by orchestrate's tests.
"""
from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from .record import play_record

# loaded here, in the process that forks Ansible's workers (its strategy loads the action plugins to read their
# class): each worker finds orchestrate loaded instead of loading it for its host
from orchestrator.cli import play  # noqa: E402  isort: skip
from orchestrator.runs.preload import load_now  # noqa: E402  isort: skip

load_now()

Spec = dict[str, dict[str, Any]]

SSH: Spec = {
    "ssh_config": {"type": "path"},
    "known_hosts": {"type": "path"},
    "accept_new_host_key": {"type": "bool", "default": False},
}
RUN: Spec = {
    "out": {"type": "path", "default": "runs"},
    "no_nsys": {"type": "bool", "default": False},
    "grace": {"type": "float", "default": 30.0},
    "retries": {"type": "int", "default": 1},
    "wait_lock": {"type": "float", "default": 0.0},
    "keep_remote": {"type": "bool", "default": False},
    "warehouse": {"type": "path"},
    "heartbeat_timeout": {"type": "float", "default": 30.0},
    "lock_clocks": {"type": "bool", "default": False},
    "nvpmodel": {"type": "int"},
    "db": {"type": "str", "no_log": True},  # a PostgreSQL URL may hold its password
    "no_leases": {"type": "bool", "default": False},
    "quarantine_after": {"type": "int", "default": 3},
}
CAPTURE: Spec = {
    "duration": {"type": "float"},
    "delay": {"type": "float"},
    "trace": {"type": "str"},
    "sample": {"type": "str"},
    "cpuctxsw": {"type": "str"},
    "gpu_metrics": {"type": "str"},
}
SETS: Spec = {"set": {"type": "list", "elements": "str", "default": []}}

ARGUMENT_SPECS: dict[str, Spec] = {
    "profile": {"app": {"type": "str"}, "app_cmd": {"type": "str"},
                "needs_display": {"type": "bool", "default": False}, "apps_dir": {"type": "path"},
                **CAPTURE, **RUN, **SSH},
    "study": {"file": {"type": "path", "required": True}, "repeat": {"type": "int"},
              "fresh": {"type": "bool", "default": False}, **SETS, "apps_dir": {"type": "path"}, **RUN, **SSH},
    "ci": {"app": {"type": "str"}, "study": {"type": "path"}, **SETS, "repeat": {"type": "int"},
           "apps_dir": {"type": "path"}, "baseline": {"type": "str"}, "max_repeat": {"type": "int"},
           "baseline_jobs": {"type": "int", "default": 10}, "min_jobs": {"type": "int", "default": 5},
           "gate": {"type": "list", "elements": "str", "default": []}, "junit": {"type": "path"},
           "json": {"type": "path"}, "summary": {"type": "path"}, "commit": {"type": "str"},
           "branch": {"type": "str"}, "site": {"type": "path"}, "report_url": {"type": "str"},
           "days": {"type": "int", "default": 14}, **RUN, **SSH},
    "doctor": {**SSH},
    "fetch": {"run_dir": {"type": "path", "required": True}, "warehouse": {"type": "path"}, **SSH},
}
ONE_OF = {"profile": ["app", "app_cmd"], "ci": ["app", "study"]}
POSITIONAL = {"study": "file", "fetch": "run_dir"}


def command_line(task: str, args: dict[str, Any]) -> list[str]:
    """The task's options as orchestrate's command line: ``--name-with-dashes=VALUE`` (a value that begins with '-'
    stays a value), a flag when true, a list option once per value, a positional one last, after '--'."""
    words: list[str] = []
    positional: list[str] = []
    for name, spec in ARGUMENT_SPECS[task].items():
        value = args.get(name)
        if value is None or value is False or value == [] or value == spec.get("default"):
            continue
        if name == POSITIONAL.get(task):
            positional = ["--", str(value)]
            continue
        option = "--" + name.replace("_", "-")
        if value is True:
            words.append(option)
        elif isinstance(value, list):
            words += [f"{option}={item}" for item in value]
        else:
            words.append(f"{option}={value}")
    return words + positional


class OrchestrateAction(ActionBase):
    """One orchestrate command for the task's host; the result is orchestrate's, as Ansible reads results."""

    TASK = ""
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        spec = ARGUMENT_SPECS[self.TASK]
        if self._task.delegate_to:
            return {**result, "failed": True, "changed": False, "msg": f"orchestrate.jetson.{self.TASK} runs for its "
                    "own host: with delegate_to it would be given another host's connection; leave delegate_to out"}
        for name, option in spec.items():  # a list option given one text: one value ('frames=10,20'), not split on ','
            if option["type"] == "list" and isinstance(self._task.args.get(name), str):
                self._task.args[name] = [self._task.args[name]]
        one_of = ONE_OF.get(self.TASK)
        _, args = self.validate_argument_spec(
            argument_spec=spec, mutually_exclusive=[one_of] if one_of else [],
            required_one_of=[one_of] if one_of else [])
        target = str(task_vars.get("inventory_hostname"))
        record = play_record(self._connection, task_vars, self._templar)
        found = play.run_task(self.TASK, command_line(self.TASK, args), target, record,
                              check=bool(self._task.check_mode))
        return {**result, **self.shaped(found)}

    def shaped(self, found: dict[str, Any]) -> dict[str, Any]:
        """orchestrate's status as Ansible's: ``failed``, ``unreachable`` (the recap's) and ``msg``; its notes'
        warnings as the task's warnings."""
        status = found["status"]
        shaped = dict(found)
        shaped["changed"] = bool(found.get("changed"))
        shaped["failed"] = status == "failed"
        if status == "unreachable":
            shaped["unreachable"] = True
        if status == "skipped":  # a quarantined board: the recap counts it skipped, the reason said as a warning
            shaped["skipped"], shaped["skip_reason"] = True, found.get("reason")
            found.setdefault("notes", []).append({"level": "warning", "text": f"skipped: {found.get('reason')}"})
        shaped["msg"] = found.get("reason") or f"{self.TASK}: {status}"
        warnings = [note["text"] for note in found.get("notes", ()) if note.get("level") in ("warning", "error")]
        if warnings:
            shaped["warnings"] = warnings
        return shaped


class ProfileAction(OrchestrateAction):
    TASK = "profile"


class StudyAction(OrchestrateAction):
    TASK = "study"


class CiAction(OrchestrateAction):
    TASK = "ci"


class FetchAction(OrchestrateAction):
    TASK = "fetch"


class DoctorAction(OrchestrateAction):
    """The board's preflight as facts (``orchestrate_doctor``); it changes nothing, in --check or not."""

    TASK = "doctor"

    def shaped(self, found: dict[str, Any]) -> dict[str, Any]:
        shaped = super().shaped(found)
        if found.get("doctor") is not None:
            shaped["ansible_facts"] = {"orchestrate_doctor": found["doctor"]}
        return shaped
