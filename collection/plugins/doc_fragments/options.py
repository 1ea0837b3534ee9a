# Copyright (C) 2026 the orchestrate authors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The options more than one orchestrate.jetson task shares, documented once."""
from __future__ import annotations


class ModuleDocFragment:
    SSH = r"""
options:
  ssh_config:
    description: The ssh config file orchestrate's connections read (default C(~/.ssh/config)).
    type: path
  known_hosts:
    description: The known_hosts file host keys are checked against (default C(~/.ssh/known_hosts)).
    type: path
  accept_new_host_key:
    description: Record an unknown host key in known_hosts instead of refusing the board (never a changed one).
    type: bool
    default: false
notes:
  - Runs on the controller (or the execution node) for each host, with the connection values Ansible resolved for
    it (C(ansible_host), C(ansible_port), C(ansible_user), the key, C(ansible_ssh_common_args) with its ProxyJump,
    C(ansible_become) and sudo's password, C(-u), C(--private-key), C(-K)...); the board needs nothing Ansible would
    put there, so plays run with C(gather_facts) false. What orchestrate cannot honour (a login password, a
    become method other than sudo) fails the task in one line.
  - A board that cannot be reached or logged in to is reported unreachable, as Ansible reports hosts.
requirements:
  - orchestrate and orchestrate-ansible (Python packages) on the controller or in the execution environment
"""

    RUN = r"""
options:
  out:
    description: The folder run (or study) folders go into, on the controller.
    type: path
    default: runs
  no_nsys:
    description: Run the app as a benchmark, without nsys (its output parser's figures, the board's samples).
    type: bool
    default: false
  grace:
    description: Seconds past delay + duration before the board's watchdog stops nsys and the app.
    type: float
    default: 30.0
  retries:
    description: Captures to try again when nsys stalls while writing its report.
    type: int
    default: 1
  wait_lock:
    description: Seconds to wait for another run on the board to end before each run (0 fails at once).
    type: float
    default: 0.0
  keep_remote:
    description: Leave the runs' files on the board.
    type: bool
    default: false
  warehouse:
    description:
      - The folder every run's rows go to as Parquet, for C(orchestrate results query) and C(results site) (default
        orchestrate's, in the controller user's data folder); C(none) keeps no rows.
    type: path
  heartbeat_timeout:
    description: The board ends the capture on its own after this many seconds without hearing from the
      controller, and keeps the report for the fetch task.
    type: float
    default: 30.0
  lock_clocks:
    description: Run jetson_clocks for the capture; the board's own clocks are restored after it however it ends.
    type: bool
    default: false
  nvpmodel:
    description: With O(lock_clocks), this nvpmodel power mode for the capture, the board's own after it.
    type: int
  db:
    description:
      - The results database (a SQLite path or a PostgreSQL URL; default orchestrate's). Its leases hold each board
        for one run, study or CI job at a time across every play, process and machine sharing it; a task waits its
        turn in request order.
    type: str
  no_leases:
    description: Take no lease (a lone board nobody shares; the board's capture lock still holds).
    type: bool
    default: false
  quarantine_after:
    description:
      - Quarantine a board after this many failures in a row of its connection or preflight. A quarantined board's
        task is skipped, with the reason, until C(orchestrate boards release).
    type: int
    default: 3
"""
