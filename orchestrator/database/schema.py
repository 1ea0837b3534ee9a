"""The results database's tables, as SQLAlchemy Core metadata; the migrations in ``migrations/`` build the
same schema version by version (a test holds the two equal).

- ``jobs``: one row per ``orchestrate ci`` job: commit, branch, target and what its gate decided.
- ``runs``: one row per run (a study's runs each have theirs, with the cell's label and variables), keyed by
  ``uid``; the board's kind and software fingerprints, validity, and where its folder was.
- ``metrics``: a run's figures, one row per name (``steady_mean_ms``, ``app.inference_mean_ms``, ...).
- ``leases``: who holds each board, and who waits for it in request order (``orchestrator.boards``).
- ``board_health``, ``board_events``: failures in a row, quarantine, and each board's history of them.
"""
from __future__ import annotations

from sqlalchemy import (
                        Boolean,
                        Column,
                        DateTime,
                        Float,
                        ForeignKey,
                        Index,
                        Integer,
                        MetaData,
                        String,
                        Table,
                        Text,
                        UniqueConstraint,
)

metadata = MetaData()

jobs = Table(
    "jobs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(64), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("git_commit", String(64)),
    Column("git_branch", String(255)),
    Column("base", String(255)),            # what the job compared with: a branch, a run, or "last-good"
    Column("target", String(255), nullable=False),
    Column("subject", String(255), nullable=False),   # the app's or the study's name
    Column("outcome", String(32)),          # pass, regression, failed, no-baseline (None while it runs)
    Column("url", Text),                    # the CI system's page of the job, when it says
    UniqueConstraint("uid", name="uq_jobs_uid"),
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(64), nullable=False),
    Column("run_id", String(255), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("target", String(255), nullable=False),
    Column("board_kind", String(255), nullable=False),
    Column("kind_fingerprint", String(32), nullable=False),
    Column("software_fingerprint", String(32), nullable=False),
    Column("app", String(255), nullable=False),
    Column("study", String(255)),
    Column("cell", String(1024), nullable=False),       # the cell's label ("" outside a study)
    Column("variables", Text, nullable=False),          # the cell's variables as sorted JSON ("{}" outside one)
    Column("git_commit", String(64)),
    Column("git_branch", String(255)),
    Column("job_id", Integer, ForeignKey("jobs.id", name="fk_runs_job_id", ondelete="SET NULL")),
    Column("status", String(32), nullable=False),
    Column("valid", Boolean, nullable=False),
    Column("flags", Text, nullable=False),              # the validity flags as JSON
    Column("folder", Text),
    UniqueConstraint("uid", name="uq_runs_uid"),
)
Index("ix_runs_series", runs.c.app, runs.c.kind_fingerprint, runs.c.started_at)
Index("ix_runs_study_series", runs.c.study, runs.c.kind_fingerprint, runs.c.started_at)
Index("ix_runs_branch", runs.c.git_branch, runs.c.started_at)
Index("ix_runs_job", runs.c.job_id)

metrics = Table(
    "metrics", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", name="fk_metrics_run_id", ondelete="CASCADE"),
           primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", String(32), nullable=False),
    Column("better", String(8)),            # "lower", "higher", or None when neither is better
)
Index("ix_metrics_name_run", metrics.c.name, metrics.c.run_id)

# The boards every process sharing the database obeys (``orchestrator.boards``); times are seconds since the epoch
# on the database's clock (PostgreSQL's, or the one machine's for SQLite), so hosts whose clocks differ agree.

leases = Table(
    "leases", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),   # the request's place in the queue
    Column("uid", String(64), nullable=False),
    Column("candidates", Text, nullable=False),     # the boards it would take, first choice first, as JSON
    Column("board", String(255)),                   # the board granted (None while it waits)
    Column("holder", String(255), nullable=False),  # who asked: user@host pid N
    Column("purpose", String(255), nullable=False),  # what for: "profile es2gears", "study codecs", "ci job 1a2b"
    Column("state", String(16), nullable=False),    # waiting, held, ended
    Column("requested_at", Float, nullable=False),
    Column("granted_at", Float),
    Column("heartbeat_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("end_reason", Text),
    Column("capture", Text),                        # the board's folder of the capture running under the lease
    UniqueConstraint("uid", name="uq_leases_uid"),
)
Index("ix_leases_state", leases.c.state, leases.c.board)

board_health = Table(
    "board_health", metadata,
    Column("board", String(255), primary_key=True),
    Column("failures", Integer, nullable=False),    # preflight or connection failures in a row
    Column("quarantined_at", Float),                # None while the board is in service
    Column("reason", Text),                         # the last failure's one line
    Column("updated_at", Float, nullable=False),
)

board_events = Table(
    "board_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("board", String(255), nullable=False),
    Column("at", Float, nullable=False),
    Column("kind", String(32), nullable=False),     # failure, quarantined, released, recovered, holder-gone
    Column("detail", Text, nullable=False),
    Column("by", String(255), nullable=False),      # the holder that saw it
)
Index("ix_board_events_board", board_events.c.board, board_events.c.at)
