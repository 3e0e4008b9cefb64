"""Restoring a backup (``storage.backups``) as the configured SQLite database.

The backup is checked first (a SQLite file SQLite finds whole, with a schema revision this Kassa knows),
then copied beside the database under a temporary name, 0600, brought up to the current schema there,
and renamed into place: until that rename nothing at the database's name has changed. A database already
there is never deleted: with ``force`` its files are renamed aside (``kassa.db.before-restore-<UTC time>``
with its ``-wal``, so the pair still opens as one database), and never while another process has it open.

The vault key is not in a backup. ``unreadable`` tells whether the key configured for the restored
database opens what is sealed in it, so that a wrong key is named at restore time rather than by the
first request that needs a merchant's control key or a stored card.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag

from kassa.storage.backups import BackupError, Contents, examine, install
from kassa.storage.migrate import revisions, upgrade
from kassa.vault.keys import Vault, VaultError, control_key_context, pan_context

# A SQLite database's files: the database and those SQLite keeps beside it under its name.
_SUFFIXES = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Restored:
    path: Path
    backup: Contents  # as the backup held it
    revision: str  # the database's schema revision now
    aside: tuple[Path, ...]  # the files of the database that was there, under their new names


def restore(backup: Path, database: Path, *, force: bool) -> Restored:
    """Makes ``backup`` the database at ``database``; ``force`` moves a database already there aside."""
    held = _checked(backup)
    if _files(database) and not force:
        raise BackupError(f"a database is already at {database}: --force moves it aside (nothing is deleted)")
    if database.exists() and in_use(database):
        raise BackupError(f"{database} is open in another process (a running gateway?): stop it before restoring")
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=database.parent, prefix=f".{database.name}.", suffix=".restoring")
    staged = Path(name)
    try:
        with os.fdopen(fd, "wb") as copy, backup.open("rb") as original:
            shutil.copyfileobj(original, copy)
        revision = _upgraded(staged, held)
        aside = _move_aside(database)
        install(staged, database)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    return Restored(database, held, revision, aside)


def _files(database: Path) -> list[Path]:
    return [Path(f"{database}{suffix}") for suffix in _SUFFIXES if Path(f"{database}{suffix}").exists()]


def _checked(backup: Path) -> Contents:
    if backup.is_dir():
        raise BackupError(f"{backup} is a directory: name the backup file")
    if not backup.is_file():
        raise BackupError(f"no backup file at {backup}")
    held = examine(backup)
    if held.revision not in revisions():
        raise BackupError(
            f"{backup} has schema revision {held.revision}, which this Kassa does not know: "
            "restore it with the Kassa version that made it, or a newer one"
        )
    return held


def _upgraded(staged: Path, held: Contents) -> str:
    """Brings the staged copy's schema up to this Kassa's; returns its revision now."""
    try:
        upgrade(f"sqlite:///{staged}")
    except Exception as failure:
        reason = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
        raise BackupError(f"upgrading the backup's schema from revision {held.revision} failed: {reason}") from None
    return examine(staged).revision


def in_use(database: Path) -> bool:
    """Whether another process has ``database`` open. A connection to a database in WAL mode keeps a
    shared lock on it for as long as it is open, idle or not, so an exclusive lock tried without waiting
    is refused while any gateway, worker or command has it open."""
    conn = sqlite3.connect(database, isolation_level=None, timeout=0)
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as failure:
        return failure.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY  # an extended code's low byte
    except sqlite3.DatabaseError:  # not a database any more (why it is being replaced, perhaps): no one uses it
        return False
    finally:
        conn.close()
    return False


def _move_aside(database: Path) -> tuple[Path, ...]:
    """Renames the files of the database at ``database`` to one new name, with their suffixes kept. Found
    again here: closing the last connection (``in_use``'s) checkpoints the WAL and removes its file."""
    present = _files(database)
    if not present:
        return ()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in itertools.count():
        aside = database.with_name(f"{database.name}.before-restore-{stamp}{f'.{attempt}' if attempt else ''}")
        if not any(Path(f"{aside}{suffix}").exists() for suffix in _SUFFIXES):
            break
    moved = []
    for path in present:
        target = Path(f"{aside}{path.name.removeprefix(database.name)}")
        os.replace(path, target)
        moved.append(target)
    return tuple(moved)


def unreadable(database: Path, vault: Vault | None) -> list[str]:
    """What of the sealed data in ``database`` ``vault`` cannot open (a key other than the one it was
    sealed with; with no vault, all there is): one sample each of the merchants' control keys and the
    stored cards."""
    samples = (
        (
            "the merchants' control keys",
            "SELECT id, control_key_sealed FROM merchants WHERE control_key_sealed IS NOT NULL LIMIT 1",
            control_key_context,
        ),
        ("the stored cards", "SELECT merchant_id, pan_ciphertext FROM cards LIMIT 1", pan_context),
    )
    conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found = []
        for what, query, context in samples:
            row = conn.execute(query).fetchone()
            if row is not None and (vault is None or not _opens(vault, row[1], context(row[0]))):
                found.append(what)
        return found
    finally:
        conn.close()


def _opens(vault: Vault, sealed: bytes, context: str) -> bool:
    try:
        vault.decrypt(sealed, context)
    except (InvalidTag, VaultError):
        return False
    return True
