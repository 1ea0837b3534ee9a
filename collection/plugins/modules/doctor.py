#!/usr/bin/python
# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Documentation of the orchestrate.jetson.doctor action (it runs on the controller: plugins/action/doctor.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: doctor
short_description: Check a board for profiling, and return what it is as facts
description:
  - Connects to the host, deploys orchestrate's agent and runs its preflight as a sampled 10 s capture would need
    it, as C(orchestrate doctor) does; returns the board's facts as C(orchestrate_doctor) and fails when something
    would make a capture fail there (each finding with its fix).
  - Deploys orchestrate's agent to its work dir on the board and changes nothing else; runs the same in check mode.
version_added: 0.1.0
options: {}
extends_documentation_fragment:
  - orchestrate.jetson.options.ssh
author:
  - the orchestrate authors
"""

EXAMPLES = r"""
- name: What each board is, and what would fail there
  orchestrate.jetson.doctor:

- name: Only the boards that can capture
  ansible.builtin.group_by:
    key: "capture_{{ ansible_facts.orchestrate_doctor.status }}"
"""

RETURN = r"""
ansible_facts:
  description: C(orchestrate_doctor) with C(status) (C(ok), C(problems), C(unreachable)), C(address), C(board)
    (kind, model, chip, L4T, JetPack, power mode, nsys), C(findings) (C(level), C(what), C(why), C(fix)) and
    C(error).
  returned: when the board was checked
  type: dict
status:
  description: C(ok), C(failed) (a capture would fail) or C(unreachable).
  returned: always
  type: str
"""
