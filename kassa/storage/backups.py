"""Backups of a SQLite database: a consistent copy taken while the gateway serves, kept only once verified.

The copy is made with SQLite's online backup API (``sqlite3.Connection.backup``), ``_STEP_PAGES`` pages a
step with no sleep between steps. The source connection holds one read transaction over the whole copy,
for two reasons. In WAL mode a reader never blocks the gateway's writer: commits go on into the WAL and
only checkpoints wait until the copy ends, so the copy is consistent without stopping anything. And
without it each step reads the database as it is at that step, so SQLite starts the copy over after
every commit of another connection: measured here on a 4 MB file with another connection committing
between steps, 2,016 steps instead of 17, finished only because those commits stopped after 2,000. A busy
gateway would never let such a copy finish.

A backup is one self-contained file (rollback-journal mode, no ``-wal`` beside it), written under a
temporary name in the target's directory, 0600, checked (``PRAGMA integrity_check``, the schema
revision and the order count read back and compared with the source's snapshot), flushed to disk and
only then renamed to its name. A failed or interrupted backup leaves nothing under that name.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import make_url

# 256 KiB a step with 4 KiB pages. In WAL mode a step blocks no writer, so the size matters little for
# the gateway; between steps Python runs the progress callback, which is where Ctrl-C stops a long copy.
_STEP_PAGES = 64


class BackupError(Exception):
    """A backup that cannot be taken or a file that is not a Kassa backup: the message is one line
    for the operator, naming the file."""


@dataclass(frozen=True, slots=True)
class Contents:
    """What a Kassa database holds, in the terms a backup report uses."""

    revision: str
    orders: int


@dataclass(frozen=True, slots=True)
class Backup:
    path: Path
    size: int
    pages: int
    contents: Contents
    seconds: float


def database_file(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` database URL; None for PostgreSQL (or an in-memory database)."""
    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    return Path(database) if database and database != ":memory:" else None


def take(database: Path, target: Path, *, replace: bool = False) -> Backup:
    """Backs ``database`` up into ``target`` while it may be in use; ``replace`` lets a verified new
    backup take the place of an existing file."""
    started = time.monotonic()
    _check_target(database, target, replace=replace)
    if not database.is_file():
        raise BackupError(f"no database at {database} (KASSA_DATABASE_URL): nothing to back up")
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as failure:
        raise BackupError(f"cannot write in {target.parent}: {failure.strerror}") from None
    os.close(fd)
    temporary = Path(name)
    try:
        pages, snapshot = _copy(database, temporary)
        copied = examine(temporary)
        if copied != snapshot:
            raise BackupError(f"the copy of {database} does not hold what it was copied from: {copied} != {snapshot}")
        install(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return Backup(target, target.stat().st_size, pages, copied, time.monotonic() - started)


def _check_target(database: Path, target: Path, *, replace: bool) -> None:
    if target.is_dir():
        raise BackupError(f"{target} is a directory: name the backup file, such as {target / 'kassa-backup.db'}")
    if not target.parent.is_dir():
        raise BackupError(f"no directory {target.parent} to write {target.name} in")
    resolved = target.resolve()
    if resolved in {Path(f"{database.resolve()}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")}:
        raise BackupError(f"{target} is the database itself: name another file")
    if target.exists() and not replace:
        raise BackupError(f"{target} exists: name a new file, or --force to replace it once the new backup is verified")


def _copy(database: Path, temporary: Path) -> tuple[int, Contents]:
    """Copies one snapshot of ``database`` into the empty file ``temporary``; returns the pages copied
    and what the snapshot held."""
    pages = 0

    def progress(_status: int, _remaining: int, total: int) -> None:
        nonlocal pages
        pages = total

    source = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=10)
    copy = sqlite3.connect(temporary, isolation_level=None)
    try:
        source.execute("BEGIN")
        snapshot = _contents(source, database)  # its first read fixes the snapshot the copy is made of
        source.backup(copy, pages=_STEP_PAGES, progress=progress)
        # The copy's header says WAL, as its source's did; a backup is one file that stands alone.
        copy.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as failure:
        raise BackupError(f"backup of {database} failed: {failure}") from None
    finally:
        copy.close()
        source.close()
    return pages, snapshot


def examine(path: Path) -> Contents:
    """What the Kassa database file at ``path`` holds, read without changing it; raises ``BackupError``
    when it is not a Kassa database or SQLite finds it damaged."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as failure:
        raise BackupError(f"{path} cannot be opened: {failure}") from None
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise BackupError(f"{path} is damaged: {' '.join(problems[0].split())}")  # a problem may span lines
        return _contents(conn, path)
    except sqlite3.DatabaseError as failure:
        damage = failure.sqlite_errorcode & 0xFF == sqlite3.SQLITE_CORRUPT  # an extended code's low byte
        raise BackupError(f"{path} {'is damaged' if damage else 'is not a Kassa backup'}: {failure}") from None
    finally:
        conn.close()


def _contents(conn: sqlite3.Connection, path: Path) -> Contents:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    if not {"alembic_version", "orders"} <= tables:
        raise BackupError(f"{path} is not a Kassa database: it has no schema revision (alembic_version) or orders")
    revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    if revision is None:
        raise BackupError(f"{path} is not a Kassa database: its schema revision is empty")
    (orders,) = conn.execute("SELECT count(*) FROM orders").fetchone()
    return Contents(str(revision[0]), int(orders))


def install(temporary: Path, path: Path) -> None:
    """Gives the finished file ``temporary`` its name ``path`` in one step, durably: the file's data
    reaches the disk before the rename, and the rename before this returns."""
    with temporary.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
