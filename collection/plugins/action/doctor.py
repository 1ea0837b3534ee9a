# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""orchestrate.jetson.doctor: see its documentation (ansible-doc orchestrate.jetson.doctor)."""
from __future__ import annotations

from orchestrate_ansible.tasks import DoctorAction as ActionModule

__all__ = ["ActionModule"]
