"""The operator command line: ``kassa``. Every command reads the ``KASSA_*`` settings and takes ``--json``.

One module per command group; what they share (settings, database, output) is in ``common``."""

from __future__ import annotations

import importlib
import os

import click

from kassa import logs
from kassa.settings import SettingError, Settings

# Which module holds each command. A command imports its own module only: the modules of all ten groups
# cost about 0.7 s of CPU to import and one group's about half of that, paid by every `kassa` a script,
# a cron job or the test suite (hundreds of them) starts. tests/ops/test_cli.py holds this to COMMANDS.
COMMAND_MODULES = {
    "serve": "serving",
    "worker": "serving",
    "db": "serving",
    "merchant": "merchants",
    "endpoint": "merchants",
    "group": "merchants",
    "acquirer": "acquirers",
    "rule": "risk_rules",
    "key": "keys",
    "order": "orders",
    "settle": "orders",
    "ledger": "orders",
    "balance": "balances",
    "recurring": "recurring",
    "chargeback": "chargebacks",
    "callbacks": "callbacks",
    "operator": "operators",
    "backup": "backups",
    "restore": "backups",
    "vault": "vault",
    "acquirer-sim": "acquirer_sim",
}


class _CommandsByModule(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMAND_MODULES:
            return None
        module = importlib.import_module(f"kassa.ops.cli.{COMMAND_MODULES[cmd_name]}")
        found: click.Command = next(command for command in module.COMMANDS if command.name == cmd_name)
        return found


@click.group(cls=_CommandsByModule)
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
