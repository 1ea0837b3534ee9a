"""Boards shared by every process: leases (holders and their queue), and each board's failures and quarantine.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("candidates", sa.Text, nullable=False),
        sa.Column("board", sa.String(255)),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("purpose", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("granted_at", sa.Float),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.Column("end_reason", sa.Text),
        sa.Column("capture", sa.Text),
        sa.UniqueConstraint("uid", name="uq_leases_uid"),
    )
    op.create_index("ix_leases_state", "leases", ["state", "board"])
    op.create_table(
        "board_health",
        sa.Column("board", sa.String(255), primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("quarantined_at", sa.Float),
        sa.Column("reason", sa.Text),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "board_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("board", sa.String(255), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("by", sa.String(255), nullable=False),
    )
    op.create_index("ix_board_events_board", "board_events", ["board", "at"])


def downgrade() -> None:
    op.drop_index("ix_board_events_board", table_name="board_events")
    op.drop_table("board_events")
    op.drop_table("board_health")
    op.drop_index("ix_leases_state", table_name="leases")
    op.drop_table("leases")
