"""Backups: ``kassa backup`` and ``kassa restore`` of a SQLite database (``storage.backups``,
``storage.restores``). PostgreSQL has its own tools for both: docs/operations.md, *Backups and restore*."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from kassa.ops.cli.common import emit, json_option, settings
from kassa.settings import Settings
from kassa.storage import restores
from kassa.storage.backups import BackupError, database_file, take
from kassa.vault.keys import VaultError, load_vault

_POSTGRESQL = (
    "kassa {command} is for SQLite; on PostgreSQL use pg_dump and pg_restore, or a base backup with WAL "
    "archiving (docs/operations.md, Backups and restore)"
)


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists, once the new backup is verified.")
@json_option
def backup(file: Path, force: bool, as_json: bool) -> None:
    """Copy the SQLite database into FILE while the gateway serves: one consistent snapshot, checked
    before it takes FILE's name, mode 0600. The vault key is not in it: keep the key apart."""
    database = _database("backup")
    try:
        made = take(database, file, replace=force)
    except (BackupError, OSError) as problem:
        raise click.ClickException(_one_line(problem)) from None
    data = {
        "file": str(made.path),
        "bytes": made.size,
        "pages": made.pages,
        "schema_revision": made.contents.revision,
        "orders": made.contents.orders,
        "integrity": "ok",
        "seconds": round(made.seconds, 3),
    }
    line = (
        f"backup {made.path}: {made.size} bytes, schema revision {made.contents.revision}, "
        f"{made.contents.orders} orders, integrity ok, {made.seconds:.2f} s"
    )
    emit(as_json, data, [line])
    data_dir = settings().data_dir.resolve()
    if data_dir in made.path.resolve().parents:
        click.echo(f"note: {made.path} is in the data directory, beside the vault key: copy it elsewhere", err=True)


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Move a database already there aside (it is kept, not deleted).")
@json_option
def restore(file: Path, force: bool, as_json: bool) -> None:
    """Make the backup FILE the configured SQLite database, its schema brought up to this version's.
    The vault key is not restored: the gateway needs the key the backup's data was sealed with."""
    database = _database("restore")
    # The command's own line says from which schema revision to which; Alembic's would only repeat it.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        done = restores.restore(file, database, force=force)
        key_problem = _vault_problem(settings(), database)
    except (BackupError, OSError) as problem:
        raise click.ClickException(_one_line(problem)) from None
    data = {
        "database": str(done.path),
        "backup_revision": done.backup.revision,
        "schema_revision": done.revision,
        "orders": done.backup.orders,
        "moved_aside": [str(path) for path in done.aside],
        "vault_key": "unusable" if key_problem else "ok",
    }
    upgraded = f", upgraded to {done.revision}" if done.revision != done.backup.revision else ""
    lines = [
        f"restored {file} to {done.path}: {done.backup.orders} orders, schema revision {done.backup.revision}{upgraded}"
    ]
    lines += [f"the database that was there is kept as {path}" for path in done.aside[:1]]
    emit(as_json, data, lines)
    if key_problem:
        raise click.ClickException(key_problem)


def _database(command: str) -> Path:
    found = database_file(settings().database_url)
    if found is None:
        raise click.ClickException(_POSTGRESQL.format(command=command))
    return found


def _vault_problem(configured: Settings, database: Path) -> str | None:
    """Why the vault key the gateway would use cannot serve the restored database, in one line; None if
    it can. A missing key file is not generated here: a new key opens nothing the backup holds."""
    key_file = configured.vault_key_file
    where = f"KASSA_VAULT_KEYS or KASSA_VAULT_KEY, or the key file {key_file}"
    source = configured.vault_source
    configured_key = source.configured is not None or key_file.exists()
    try:
        locked = restores.unreadable(database, load_vault(source) if configured_key else None)
    except VaultError:
        return f"restored, but the vault key file {key_file} does not hold a usable key (one entry a line)"
    if not locked:
        return None
    sealed = " or ".join(locked)
    if not configured_key:
        return (
            f"restored, but no vault key is configured to decrypt {sealed}: set the key they were sealed with ({where})"
        )
    return (
        f"restored, but the configured vault key cannot decrypt {sealed}: "
        f"configure the key the backup was sealed with ({where}) before starting the gateway"
    )


def _one_line(problem: Exception) -> str:
    if isinstance(problem, OSError) and problem.strerror:
        return f"{problem.filename}: {problem.strerror}" if problem.filename else problem.strerror
    return str(problem)


COMMANDS = (backup, restore)
