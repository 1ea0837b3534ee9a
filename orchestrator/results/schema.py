"""The results database's tables, as SQLAlchemy Core metadata; the migrations in ``migrations/`` build the
same schema version by version (a test holds the two equal).

- ``jobs``: one row per ``orchestrate ci`` job: commit, branch, target and what its gate decided.
- ``runs``: one row per run (a study's runs each have theirs, with the cell's label and variables), keyed by
  ``uid``; the board's kind and software fingerprints, validity, and where its folder was.
- ``metrics``: a run's figures, one row per name (``steady_mean_ms``, ``app.inference_mean_ms``, ...).
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
