"""The first schema: jobs, runs and their metrics.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_branch", sa.String(255)),
        sa.Column("base", sa.String(255)),
        sa.Column("target", sa.String(255), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("outcome", sa.String(32)),
        sa.Column("url", sa.Text),
        sa.UniqueConstraint("uid", name="uq_jobs_uid"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(255), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("target", sa.String(255), nullable=False),
        sa.Column("board_kind", sa.String(255), nullable=False),
        sa.Column("kind_fingerprint", sa.String(32), nullable=False),
        sa.Column("software_fingerprint", sa.String(32), nullable=False),
        sa.Column("app", sa.String(255), nullable=False),
        sa.Column("study", sa.String(255)),
        sa.Column("cell", sa.String(1024), nullable=False),
        sa.Column("variables", sa.Text, nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_branch", sa.String(255)),
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id", name="fk_runs_job_id", ondelete="SET NULL")),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("valid", sa.Boolean, nullable=False),
        sa.Column("flags", sa.Text, nullable=False),
        sa.Column("folder", sa.Text),
        sa.UniqueConstraint("uid", name="uq_runs_uid"),
    )
    op.create_index("ix_runs_series", "runs", ["app", "kind_fingerprint", "started_at"])
    op.create_index("ix_runs_study_series", "runs", ["study", "kind_fingerprint", "started_at"])
    op.create_index("ix_runs_branch", "runs", ["git_branch", "started_at"])
    op.create_index("ix_runs_job", "runs", ["job_id"])
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", name="fk_metrics_run_id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("better", sa.String(8)),
    )
    op.create_index("ix_metrics_name_run", "metrics", ["name", "run_id"])


def downgrade() -> None:
    op.drop_table("metrics")
    op.drop_table("runs")
    op.drop_table("jobs")
