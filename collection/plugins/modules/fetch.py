#!/usr/bin/python
# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Documentation of the orchestrate.jetson.fetch action (it runs on the controller: plugins/action/fetch.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: fetch
short_description: Re-attach to a host's run and pull what its board kept
description:
  - For a run whose controller went away (an interrupted play, a lost link), reconnects to the host, waits for a
    capture still running, then pulls the report the board kept (resuming a partial download), verifies its
    sha256, exports and analyzes it, as C(orchestrate fetch) does. Safe to run again.
  - C(changed) when the run folder changed stage (the report came back). In check mode, says whether a report is
    left to pull without connecting.
version_added: 0.1.0
options:
  run_dir:
    description: The host's run folder on the controller (the C(folder) its profile task returned).
    type: path
    required: true
  warehouse:
    description:
      - The folder the run's rows go to as Parquet once it is pulled (default orchestrate's, in the controller
        user's data folder); C(none) keeps no rows.
    type: path
extends_documentation_fragment:
  - orchestrate.jetson.options.ssh
author:
  - the orchestrate authors
"""

EXAMPLES = r"""
- name: Bring back what the boards kept
  orchestrate.jetson.fetch:
    run_dir: "{{ run.folder }}"
  when: run.folder is defined and run.status != 'ok'
"""

RETURN = r"""
status:
  description: C(ok), C(failed) or C(unreachable).
  returned: always
  type: str
folder:
  description: The run folder.
  returned: when the run folder was readable
  type: path
verdict:
  description: The analysis's verdict.
  returned: when the report was analyzed
  type: str
frame_ms:
  description: The median steady frame time, with the 10th-90th percentiles of the steady frames.
  returned: when the report was analyzed
  type: dict
metrics:
  description: Every figure of the run, as for orchestrate.jetson.profile.
  returned: when the report is here
  type: dict
flags:
  description: The run's validity flags.
  returned: when the run began
  type: list
  elements: dict
"""
