"""idle consumers sleep until work is due or signalled: an index of the jobs' leases, and on PostgreSQL a
notification on the channel ``kassa_work`` whenever a job or callback is queued for any claim to take

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# NOTIFY goes out at commit, with the enqueueing transaction, and once per transaction however many rows
# it queued. Rows written leased (handed over within the process that wrote them) notify nobody: a job
# with no lease owner, a callback with a lane, is one any claim may take, now or once due.
_NOTIFY = """
CREATE FUNCTION kassa_work_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kassa_work', '');
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.execute("CREATE INDEX ix_jobs_leased ON jobs (lease_until_ms) WHERE lease_until_ms IS NOT NULL")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_NOTIFY)
        op.execute(
            "CREATE TRIGGER jobs_queued AFTER INSERT OR UPDATE ON jobs FOR EACH ROW"
            " WHEN (NEW.lease_owner IS NULL) EXECUTE FUNCTION kassa_work_queued()"
        )
        op.execute(
            "CREATE TRIGGER callbacks_queued AFTER INSERT OR UPDATE ON callbacks FOR EACH ROW"
            " WHEN (NEW.lane IS NOT NULL) EXECUTE FUNCTION kassa_work_queued()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER callbacks_queued ON callbacks")
        op.execute("DROP TRIGGER jobs_queued ON jobs")
        op.execute("DROP FUNCTION kassa_work_queued()")
    op.execute("DROP INDEX ix_jobs_leased")
