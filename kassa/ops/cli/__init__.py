"""The operator command line: ``kassa``. Every command reads the ``KASSA_*`` settings and takes ``--json``.

One module per command group; what they share (settings, database, output) is in ``common``."""

from __future__ import annotations

import os

import click

from kassa import logs
from kassa.ops.cli import backups, balances, callbacks, keys, merchants, operators, orders, recurring, serving, vault
from kassa.settings import SettingError, Settings


@click.group()
@click.pass_context
def main(context: click.Context) -> None:
    """Operate a Kassa gateway."""
    # Whatever a command creates (the SQLite files, the vault key, their folder, anything a library
    # writes) is for the operator's account alone; the files that matter are also created with explicit
    # modes, for code that runs without this entry point.
    os.umask(0o077)
    try:
        context.obj = Settings.from_env()
    except SettingError as problem:  # one line naming the variable, before any command starts
        raise click.ClickException(str(problem)) from None
    logs.configure(context.obj.log_level)


for group in (serving, merchants, keys, orders, balances, recurring, callbacks, operators, backups, vault):
    for command in group.COMMANDS:
        main.add_command(command)
