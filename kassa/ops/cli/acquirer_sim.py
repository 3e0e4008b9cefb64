"""The acquirer host of CONTRACT §15 as a process: ``kassa acquirer-sim`` (docs/acquirers.md)."""

from __future__ import annotations

import asyncio
import signal
import ssl

import click

from kassa.sandbox.acquirer_host import AcquirerHost


def _late_cards(context: click.Context, option: click.Parameter, values: tuple[str, ...]) -> dict[str, float]:
    late = {}
    for value in values:
        card, _, seconds = value.partition("=")
        try:
            late[card] = float(seconds)
        except ValueError:
            raise click.BadParameter("give it as CARD_NUMBER=SECONDS", context, option) from None
    return late


@click.command("acquirer-sim")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8583, show_default=True, help="0: any free port.")
@click.option("--late", multiple=True, metavar="PAN=SECONDS", callback=_late_cards, help="Answer this card late.")
@click.option("--silent", multiple=True, metavar="PAN", help="Never answer this card's messages.")
@click.option("--no-echo", is_flag=True, help="Leave echoes (0800 301) unanswered.")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Certificate chain (PEM): TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="The certificate's private key (PEM).")
def acquirer_sim(
    host: str,
    port: int,
    late: dict[str, float],
    silent: tuple[str, ...],
    no_echo: bool,
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """Run an acquirer host speaking the reference ISO 8583 dialect, deciding as the sandbox does (by the
    CVV2, else the card's last three digits), until interrupted. Prints the port it listens on."""
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    tls = None
    if tls_cert and tls_key:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(tls_cert, tls_key)
    simulator = AcquirerHost(late=late, silent=silent, answer_echoes=not no_echo, tls=tls)
    asyncio.run(_run(simulator, host, port))


async def _run(simulator: AcquirerHost, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await simulator.start(host, port)
    try:
        click.echo(f"acquirer host listening on {host}:{simulator.port}")
        await stop.wait()
    finally:
        await simulator.close()


COMMANDS = (acquirer_sim,)
