"""jobs indexed by kind and due time, so that a /metrics scrape reads each kind's count and oldest due job
by index whatever the backlog of other kinds

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_kind_run_at", "jobs", ["kind", "run_at_ms"])


def downgrade() -> None:
    op.drop_index("ix_jobs_kind_run_at", table_name="jobs")
