"""What every command group of the CLI shares: the settings ``main`` read, the database, ``--json`` output."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from kassa.settings import Settings
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database, open_database

T = TypeVar("T")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def settings() -> Settings:
    """The settings ``main`` read, once, for this command."""
    found: Settings = click.get_current_context().obj
    return found


@contextmanager
def database() -> Iterator[Database]:
    db = open_database(settings().database_url, threads=1)
    try:
        yield db
    finally:
        db.close()


def write(unit: Callable[[Connection], T], taken: str = "that name or id is already taken") -> T:
    with database() as db:
        try:
            return db.write_sync(unit)
        except merchant_store.NotFound as missing:
            raise click.ClickException(str(missing)) from None
        except IntegrityError:
            raise click.ClickException(taken) from None


def emit(as_json: bool, data: Any, lines: Sequence[str]) -> None:
    if as_json:
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        for line in lines:
            click.echo(line)
