"""Merchants' RSA public keys for OAuth RSA-SHA256 (CONTRACT §4, §14): ``kassa key add|list|revoke``.

Server processes use a key added here from the next request that needs it, and refuse a key revoked here
from the next request on (``kassa.keyring``)."""

from __future__ import annotations

from typing import IO, Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain.merchants import Mode
from kassa.ops.cli.common import emit, iso_time, json_option, read, write
from kassa.signing.rsa_keys import MIN_BITS, KeyProblem, PublicKey, read_public_key
from kassa.storage import merchant_keys
from kassa.storage import merchants as merchant_store
from kassa.storage.merchant_keys import StoredKey


@click.group()
def key() -> None:
    """Merchants' RSA public keys (OAuth RSA-SHA256), per mode; several may be active for rotation."""


def _key_dict(k: StoredKey) -> dict[str, Any]:
    return {
        "id": k.id,
        "merchant": k.merchant,
        "mode": k.mode.value,
        "fingerprint": k.fingerprint,
        "bits": k.bits,
        "created_at": iso_time(k.created_at_ms),
        "revoked_at": iso_time(k.revoked_at_ms),
    }


def _key_line(k: StoredKey) -> str:
    state = "active" if k.revoked_at_ms is None else f"revoked {iso_time(k.revoked_at_ms)}"
    return f"{k.id}\t{k.merchant}\t{k.mode.value}\tRSA {k.bits}\tSHA256:{k.fingerprint}\t{state}"


@key.command("add")
@click.option("--merchant", "login", required=True, help="The merchant's login (its oauth_consumer_key).")
@click.option("--mode", type=click.Choice([m.value for m in Mode]), required=True, help="The endpoints it signs for.")
@click.option(
    "--pem",
    type=click.File("rb"),
    required=True,
    help=f"The public key: BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY PEM, RSA of {MIN_BITS} bits or more, "
    "exponent 65537 or more, no other merchant's ('-': stdin).",
)
@json_option
def key_add(login: str, mode: str, pem: IO[bytes], as_json: bool) -> None:
    """Register a merchant's RSA public key."""
    public = _public_key(pem)

    def add(conn: Connection) -> StoredKey:
        return merchant_keys.register(conn, merchant_store.merchant_id(conn, login), Mode(mode), public, now_ms())

    try:
        added = write(add, f"{login} has this key already (SHA256:{public.fingerprint}); a revoked key stays revoked")
    except merchant_keys.KeyOfAnotherMerchant as refused:
        raise click.ClickException(str(refused)) from None
    lines = [f"key {added.id} added for {login} ({mode}): RSA {added.bits} bits, SHA256:{added.fingerprint}"]
    emit(as_json, _key_dict(added), lines)


def _public_key(pem: IO[bytes]) -> PublicKey:
    try:
        return read_public_key(pem.read().decode("ascii"))
    except UnicodeDecodeError:
        raise click.BadParameter("must be a PEM text file", param_hint="--pem") from None
    except KeyProblem as problem:
        raise click.BadParameter(str(problem), param_hint="--pem") from None


@key.command("list")
@click.option("--merchant", "login", default=None, help="Only this merchant's keys.")
@json_option
def key_list(login: str | None, as_json: bool) -> None:
    """List keys, revoked ones too."""
    found = read(lambda conn: merchant_keys.listing(conn, login))
    emit(as_json, [_key_dict(k) for k in found], [_key_line(k) for k in found])


@key.command("revoke")
@click.argument("key_id", type=int)
@json_option
def key_revoke(key_id: int, as_json: bool) -> None:
    """Revoke a key: no request signed with it is accepted from the next one on, in any server process."""
    revoked = write(lambda conn: merchant_keys.revoke(conn, key_id, now_ms()))
    emit(as_json, _key_dict(revoked), [f"key {revoked.id} of {revoked.merchant} revoked"])


COMMANDS = (key,)
