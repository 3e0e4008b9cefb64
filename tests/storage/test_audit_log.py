"""The audit log only grows: the database itself refuses to change or delete an entry, or to empty the log
(SQLite has no TRUNCATE: its DELETE without WHERE is refused as any DELETE is)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from kassa.storage import audit_log
from kassa.storage.database import Database


def test_entries_are_read_newest_first_and_filtered(db: Database) -> None:
    for n, actor in enumerate(["a@ops.example", "b@ops.example", "a@ops.example"]):
        db.write_sync(lambda conn, n=n, actor=actor: audit_log.append(conn, audit_log.Entry(actor, f"x.{n}"), n))
    rows = db.read_sync(lambda conn: audit_log.entries(conn, actor="A@ops.example"))
    assert [r["action"] for r in rows] == ["x.2", "x.0"]
    older = db.read_sync(lambda conn: audit_log.entries(conn, before_id=rows[0]["id"], limit=1))
    assert [r["action"] for r in older] == ["x.1"]


@pytest.mark.parametrize("statement", ["UPDATE audit_log SET actor = 'someone else'", "DELETE FROM audit_log"])
def test_an_entry_cannot_be_changed_or_deleted(db: Database, statement: str) -> None:
    db.write_sync(lambda conn: audit_log.append(conn, audit_log.Entry("a@ops.example", "x.y"), 1))
    with pytest.raises(DBAPIError, match="append-only"):
        db.write_sync(lambda conn: conn.execute(text(statement)))
    assert [r["actor"] for r in db.read_sync(audit_log.entries)] == ["a@ops.example"]


@pytest.mark.backends("postgresql")
def test_the_log_cannot_be_truncated(db: Database) -> None:
    db.write_sync(lambda conn: audit_log.append(conn, audit_log.Entry("a@ops.example", "x.y"), 1))
    with pytest.raises(DBAPIError, match="append-only"):
        db.write_sync(lambda conn: conn.execute(text("TRUNCATE audit_log")))
    assert [r["actor"] for r in db.read_sync(audit_log.entries)] == ["a@ops.example"]
