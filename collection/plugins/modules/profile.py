#!/usr/bin/python
# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Documentation of the orchestrate.jetson.profile action (it runs on the controller: plugins/action/profile.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: profile
short_description: Profile one app on the host with orchestrate (Nsight Systems) and bring its report back
description:
  - Connects to the host as the play resolved it, deploys orchestrate's agent, runs its preflight, captures the app
    under nsys (or without it, O(no_nsys)), pulls the report and the app's output verified by sha256, analyzes it and
    writes C(report.html) in a run folder on the controller, as C(orchestrate profile) does.
  - Returns the run's verdict, frame times and validity flags; C(changed) when a capture ran on the board.
  - In check mode, checks the options as the run would, then runs the board's preflight as the run would ask it,
    and says whether a capture would run (C(changed)); nothing is captured.
version_added: 0.1.0
options:
  app:
    description: An app of orchestrate's catalog (C(orchestrate apps) lists them). One of O(app) and O(app_cmd).
    type: str
  app_cmd:
    description: Profile this command line instead of a catalog app.
    type: str
  needs_display:
    description: The app opens a window (over its spec's, with O(app)).
    type: bool
    default: false
  apps_dir:
    description: An extra folder of app specs on the controller.
    type: path
  duration:
    description: Seconds to capture (default the app spec's).
    type: float
  delay:
    description: Seconds to wait before capturing (default the app spec's).
    type: float
  trace:
    description: nsys traces, comma-separated (default the app spec's).
    type: str
  sample:
    description: nsys CPU sampling, C(cpu), C(none), C(process-tree) or C(system-wide).
    type: str
  cpuctxsw:
    description: nsys context-switch trace, C(process-tree), C(system-wide) or C(none).
    type: str
  gpu_metrics:
    description: Sample the GPU's hardware metrics with this nsys metric set (C(default) for nsys's choice).
    type: str
extends_documentation_fragment:
  - orchestrate.jetson.options.run
  - orchestrate.jetson.options.ssh
author:
  - the orchestrate authors
"""

EXAMPLES = r"""
- name: Profile the gears demo on every board, each board as soon as it is free
  hosts: jetson
  gather_facts: false
  strategy: free
  tasks:
    - name: Capture 10 s of es2gears
      orchestrate.jetson.profile:
        app: es2gears
        duration: 10
      register: run

    - name: Say where the page is
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }}: {{ run.verdict }}, {{ run.frame_ms.median }} ms a frame, {{ run.report }}"
"""

RETURN = r"""
status:
  description: C(ok), C(failed) or C(unreachable).
  returned: always
  type: str
reason:
  description: The one-line reason a run did not end well (with what to do).
  returned: always
  type: str
exit_code:
  description: The exit code C(orchestrate profile) would have ended with.
  returned: always
  type: int
folder:
  description: The run folder on the controller (C(run.json), C(summary.json), C(report.html)).
  returned: when the run began
  type: path
report:
  description: The run's page.
  returned: when the run began
  type: path
verdict:
  description: What bounds the frame time (the analysis's verdict).
  returned: when the report was analyzed
  type: str
frame_ms:
  description: The median steady frame time, with the 10th-90th percentiles of the steady frames (C(low), C(high)).
  returned: when the report was analyzed
  type: dict
first_frame_ms:
  description: The first frame's time.
  returned: when the report was analyzed
  type: float
energy_mj:
  description: The median energy per steady frame, from the board's power rails.
  returned: when the board has power rails
  type: float
flags:
  description: The run's validity flags (what makes its figures doubtful), each with C(code), C(what) and C(fix).
  returned: when the run began
  type: list
  elements: dict
board:
  description: The board's facts (kind, model, chip, L4T, JetPack, power mode, nsys) and fingerprints.
  returned: when the board was reached
  type: dict
cells:
  description: The run as a fleet records it (one cell).
  returned: when the run began
  type: list
  elements: dict
metrics:
  description: Every figure of the run as the results database and the gate name it (C(steady_mean_ms),
    C(first_frame_ms), C(app.inference_mean_ms) from the app's output...); a run without nsys has the app's only.
  returned: when the report came back
  type: dict
notes:
  description: What the run noted on the way (C(level), C(text)); warnings are the task's warnings too.
  returned: always
  type: list
  elements: dict
"""
