#!/usr/bin/python
# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Documentation of the orchestrate.jetson.study action (it runs on the controller: plugins/action/study.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: study
short_description: Run an orchestrate study (a matrix of variants, with repeats and statistics) on the host
description:
  - Runs every cell of the study file's matrix O(repeat) times on the host over one connection, as
    C(orchestrate study) does, reusing runs an earlier folder of the same study has (unless O(fresh)).
  - The study folder goes into a folder per host in O(out) (C(runs/HOST/TIME-STUDY/)), as a fleet keeps them.
  - Returns per cell the median of its runs' steady frame times with its 95 % interval, the verdict and the validity
    flags; C(changed) when a run was captured.
  - In check mode, checks the options as the run would, then runs the board's preflight for each app it would
    run, and says whether a capture would run (C(changed)); nothing is captured.
version_added: 0.1.0
options:
  file:
    description: The study file (YAML) on the controller. Its C(target) is ignored; the task's host is the target.
    type: path
    required: true
  repeat:
    description: Runs per cell (default the study's C(repeat)).
    type: int
  fresh:
    description: Run every cell again, reusing nothing.
    type: bool
    default: false
  set:
    description: Other values for a matrix variable, each C(NAME=V1,V2).
    type: list
    elements: str
    default: []
  apps_dir:
    description: An extra folder of app specs on the controller.
    type: path
extends_documentation_fragment:
  - orchestrate.jetson.options.run
  - orchestrate.jetson.options.ssh
author:
  - the orchestrate authors
"""

EXAMPLES = r"""
- name: GPU delegate on and off, five runs each
  orchestrate.jetson.study:
    file: studies/posebench-delegate.yaml
    repeat: 5
  register: study
"""

RETURN = r"""
status:
  description: C(ok), C(failed) (a cell failed) or C(unreachable).
  returned: always
  type: str
reason:
  description: The one-line reason.
  returned: always
  type: str
folder:
  description: The study folder on the controller (C(study.json), C(study.html)).
  returned: when the study began
  type: path
cells:
  description: Per cell its C(label), C(status), C(frame_ms) (median, low, high of the 95 % interval, runs),
    C(verdict), C(flags) and C(report).
  returned: when the study began
  type: list
  elements: dict
board:
  description: The board's facts.
  returned: when the board was reached
  type: dict
"""
