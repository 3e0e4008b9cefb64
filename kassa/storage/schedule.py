"""Periodic tasks shared by every worker process: whoever moves a due task's next run on, runs it."""

from __future__ import annotations

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.storage.tables import schedule


def claim_due(conn: Connection, task: str, now_ms: int, next_run_ms: int) -> bool:
    """True when ``task`` was due and this caller now owns this run. The first call only schedules it."""
    due_at = conn.execute(select(schedule.c.next_run_at_ms).where(schedule.c.task == task).with_for_update()).scalar()
    if due_at is None:
        # Two nodes starting at once may both find no row: the second insert does nothing.
        insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        conn.execute(insert(schedule).values(task=task, next_run_at_ms=next_run_ms).on_conflict_do_nothing())
        return False
    if now_ms < due_at:
        return False
    moved = conn.execute(
        update(schedule)
        .where(schedule.c.task == task, schedule.c.next_run_at_ms == due_at)
        .values(next_run_at_ms=next_run_ms)
    ).rowcount
    return moved == 1
