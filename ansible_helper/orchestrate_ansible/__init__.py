# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ansible's own reading of inventories, for orchestrate (a program of its own: see inventory.py)."""
