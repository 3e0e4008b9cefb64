"""What every command group of the CLI shares: the settings ``main`` read, the database, ``--json`` output."""

from __future__ import annotations

import datetime
import getpass
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from kassa.settings import Settings
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database
from kassa.storage.migrate import current_revision
from kassa.storage.sealing import open_store
from kassa.vault.keyring import VaultError
from kassa.vault.keys import Vault, load_vault

T = TypeVar("T")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def settings() -> Settings:
    """The settings ``main`` read, once, for this command."""
    found: Settings = click.get_current_context().obj
    return found


def vault() -> Vault:
    """The vault the gateway's processes use (KASSA_VAULT_KEYS, KASSA_VAULT_KEY, or the key file): control
    keys are sealed with it, so a CLI with another key creates merchants no server can read. Loaded once a
    command; a key file it cannot use is the command's one-line error."""
    meta = click.get_current_context().meta
    if "kassa.vault" not in meta:
        try:
            meta["kassa.vault"] = load_vault(settings().vault_source)
        except VaultError as problem:
            raise click.ClickException(str(problem)) from None
    found: Vault = meta["kassa.vault"]
    return found


_NO_SCHEMA = "the database has no Kassa tables yet: run `kassa db upgrade` first (`kassa serve` does it as it starts)"


@contextmanager
def database() -> Iterator[Database]:
    """The database, with whatever an older Kassa left in clear sealed first (``storage.sealing.open_store``)."""
    try:
        db = open_store(settings(), vault(), threads=1)
    except DBAPIError:
        if current_revision(settings().database_url) is None:  # a new database: the command's one-line error
            raise click.ClickException(_NO_SCHEMA) from None
        raise
    try:
        yield db
    finally:
        db.close()


def read(unit: Callable[[Connection], T]) -> T:
    """``unit`` run on the database; a ``NotFound`` it raises is the command's one-line error."""
    with database() as db:
        try:
            return db.read_sync(unit)
        except (merchant_store.NotFound, VaultError) as missing:  # a key retired too soon: one line too
            raise click.ClickException(str(missing)) from None


def write(unit: Callable[[Connection], T], taken: str = "that name or id is already taken") -> T:
    with database() as db:
        try:
            return db.write_sync(unit)
        except (merchant_store.NotFound, VaultError) as refused:
            raise click.ClickException(str(refused)) from None
        except IntegrityError:
            raise click.ClickException(taken) from None


def cli_actor() -> str:
    """Who the audit log names for a change made with the CLI: the OS user running it."""
    return f"cli:{getpass.getuser()}"


def iso_time(ms: int | None) -> str | None:
    """The CLI's one time format, UTC to the millisecond; None for a time not set (yet)."""
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


def emit(as_json: bool, data: Any, lines: Sequence[str]) -> None:
    if as_json:
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        for line in lines:
            click.echo(line)
