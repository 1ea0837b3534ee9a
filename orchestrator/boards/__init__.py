"""Boards shared by a team: a lease on each board for one run, study or CI job at a time across every process and
host sharing the results database, granted in request order; and the quarantine of boards that keep failing."""
