#!/usr/bin/python
# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Documentation of the orchestrate.jetson.ci action (it runs on the controller: plugins/action/ci.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: ci
short_description: Measure a commit on the host, store it, and fail only on a clear regression
description:
  - Runs the app (or study) on the host, stores every run in the results database and compares each gated metric
    with the jobs before it on the same board kind, as C(orchestrate ci) does; the task fails on a clear regression
    or when the job could not measure everything.
  - In check mode, checks the options as the run would, then runs the board's preflight for each app it would
    run, and says whether a capture would run (C(changed)); nothing is captured.
version_added: 0.1.0
options:
  app:
    description: An app of the catalog. One of O(app) and O(study).
    type: str
  study:
    description: A study file on the controller.
    type: path
  set:
    description: With O(study), other values for a matrix variable, each C(NAME=V1,V2).
    type: list
    elements: str
    default: []
  repeat:
    description: Runs per cell (default the study's repeat; 3 for O(app)).
    type: int
  apps_dir:
    description: An extra folder of app specs on the controller.
    type: path
  baseline:
    description: Compare with a branch, C(last-good), or a run id or commit (default the CI system's default branch,
      else main).
    type: str
  max_repeat:
    description: Runs per cell at most, when the gate is not sure yet (default twice O(repeat)).
    type: int
  baseline_jobs:
    description: The newest valid jobs a baseline holds.
    type: int
    default: 10
  min_jobs:
    description: Baseline jobs needed to judge; fewer pass with "no baseline".
    type: int
    default: 5
  gate:
    description: Gate these metrics, each C(METRIC[:THRESHOLD]) (default every metric where lower or higher is
      better, at its own threshold).
    type: list
    elements: str
    default: []
  junit:
    description:
      - Write JUnit XML here (a test case per app x metric).
      - Each host's task writes its own file, so give each host its own path (C(junit-{{ inventory_hostname }}.xml)),
        and likewise O(json) and O(summary).
    type: path
  json:
    description: Write github-action-benchmark JSON here.
    type: path
  summary:
    description: Append the Markdown summary to this file.
    type: path
  site:
    description: After the job, bring the results dashboard in this folder up to date (as C(orchestrate results site)).
    type: path
  report_url:
    description:
      - With O(site), where run reports are, for reports kept on another machine (a template with C({run_id}),
        C({uid}), C({folder}), C({folder_name}), C({commit})); default each run folder's report.html.
    type: str
  days:
    description: With O(site), its front page shows what moved in the last this many days.
    type: int
    default: 14
  commit:
    description: The commit measured (default from CI variables, else git).
    type: str
  branch:
    description: The branch measured (default from CI variables, else git).
    type: str
extends_documentation_fragment:
  - orchestrate.jetson.options.run
  - orchestrate.jetson.options.ssh
author:
  - the orchestrate authors
"""

EXAMPLES = r"""
- name: Gate this commit's frame time on every Nano
  orchestrate.jetson.ci:
    app: gl2posenet
    gate: [steady_mean_ms:5%]
    db: "{{ lookup('env', 'RESULTS_DB') }}"
"""

RETURN = r"""
status:
  description: C(ok) (passed, or no baseline yet), C(failed) (a regression, or a run that measured nothing) or
    C(unreachable).
  returned: always
  type: str
outcome:
  description: The job's outcome as C(orchestrate ci) records it.
  returned: when the job ran
  type: str
regressions:
  description: Each regressed metric, C(NAME METRIC).
  returned: when the job ran
  type: list
  elements: str
unsure:
  description: Metrics the gate is not sure about yet.
  returned: when the job ran
  type: list
  elements: str
summary:
  description: The job's Markdown summary.
  returned: when the job ran
  type: str
folder:
  description: The folder of the job's runs on the controller.
  returned: when the job ran
  type: path
"""
