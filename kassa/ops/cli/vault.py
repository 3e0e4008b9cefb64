"""The vault's keys: ``kassa vault status|rotate|new-key|fingerprint-key``.

Rotation, step by step, for one process and for many: docs/operations.md, *Rotating the vault key*."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kassa.ops import vault_rotation
from kassa.ops.cli.common import database, emit, json_option, settings, vault
from kassa.ops.vault_rotation import Counts, Resealed
from kassa.vault import key_file
from kassa.vault.keyring import FINGERPRINT, MAX_VERSION, Keyring, VaultError
from kassa.vault.keys import Vault, load_keyring

T = TypeVar("T")


@click.group("vault")
def vault_group() -> None:
    """The vault's keys: what is sealed under each, resealing under the primary, new keys."""


@vault_group.command("status")
@json_option
def vault_status(as_json: bool) -> None:
    """Ciphertexts per key version and kind: a key with none left, and not primary, can be retired."""
    found = vault()
    with database() as db:
        counts = vault_rotation.status(db)
    totals = _totals(counts, found.versions)
    data = _status_data(counts, totals, found)
    emit(as_json, data, _status_lines(counts, totals, found.primary, found.versions, data["unknown_format"]))
    if data["missing"] or data["unknown_format"]:  # data no process here can open: an alarm, not a report
        raise SystemExit(1)


def _status_data(counts: Counts, totals: dict[int, int], found: Vault) -> dict[str, Any]:
    return {
        "primary": found.primary,
        "keys": list(found.versions),
        "kinds": {kind: {str(v): kinds.get(v, 0) for v in totals} for kind, kinds in counts.items()},
        "totals": {str(v): count for v, count in totals.items()},
        "unknown_format": sum(kinds.get(None, 0) for kinds in counts.values()),
        "retirable": [v for v in found.versions if v != found.primary and not totals[v]],
        "missing": [v for v, count in totals.items() if count and v not in found.versions],
    }


def _totals(counts: Counts, configured: tuple[int, ...]) -> dict[int, int]:
    """Ciphertexts per key version, for every configured key and every version found."""
    found = {version for kinds in counts.values() for version in kinds if version is not None}
    return {v: sum(kinds.get(v, 0) for kinds in counts.values()) for v in sorted(set(configured) | found)}


def _status_lines(
    counts: Counts, totals: dict[int, int], primary: int, configured: tuple[int, ...], unknown: int
) -> list[str]:
    lines = [f"{'kind':<20}" + "".join(f"{f'key {v}':>10}" for v in totals)]
    lines += [f"{kind:<20}" + "".join(f"{kinds.get(v, 0):>10}" for v in totals) for kind, kinds in counts.items()]
    for version, count in totals.items():
        if version not in configured:
            lines.append(f"key {version}: {_ciphertexts(count)} under it, and it is not configured: unreadable")
        elif version == primary:
            lines.append(f"key {version}: primary, seals everything new")
        elif count:
            lines.append(f"key {version}: {_ciphertexts(count)} left under it (`kassa vault rotate` reseals them)")
        else:
            lines.append(f"key {version}: nothing sealed under it: it can be retired")
    if unknown:
        lines.append(f"{_ciphertexts(unknown)} with a header of no known format: they cannot be opened")
    return lines


@vault_group.command("rotate")
@click.option("--batch", type=click.IntRange(1, 10_000), default=200, show_default=True, help="Rows a transaction.")
@click.option(
    "--pause", type=click.FloatRange(min=0), default=0, show_default=True, help="Seconds to wait between batches."
)
@json_option
def vault_rotate(batch: int, pause: float, as_json: bool) -> None:
    """Reseal under the primary key every ciphertext under an older one, in batches, while gateways serve."""
    found = vault()

    def told(result: Resealed) -> None:
        if not as_json:
            for line in _rotation_lines(result, found.primary):
                click.echo(line)

    with database() as db:
        done = vault_rotation.rotate(db, found, batch, pause, told)
        left = {v: n for v, n in _totals(vault_rotation.status(db), ()).items() if v != found.primary and n}
    data = {
        "primary": found.primary,
        "kinds": {r.kind: {"resealed": r.resealed, "changed": r.changed, "unreadable": r.unreadable} for r in done},
        "left": {str(v): n for v, n in left.items()},
    }
    problem = _rotation_problem(done, left)
    if as_json:
        emit(True, data, [])
    elif not problem:
        click.echo(f"every ciphertext is under key {found.primary}")
    if problem:
        if as_json:
            raise SystemExit(1)
        raise click.ClickException(problem)


def _rotation_lines(result: Resealed, primary: int) -> list[str]:
    changed = f", {result.changed} changed meanwhile (kept as written)" if result.changed else ""
    lines = [f"{result.kind}: {result.resealed} resealed under key {primary}{changed}"]
    return lines + [f"{result.kind} {line}" for line in result.unreadable]


def _rotation_problem(done: list[Resealed], left: dict[int, int]) -> str | None:
    unreadable = sum(len(result.unreadable) for result in done)
    if unreadable:
        return f"{_ciphertexts(unreadable)} could not be resealed (listed above; --json lists them too)"
    if left:
        return (
            f"{_ciphertexts(sum(left.values()))} under older keys again: a process seals under an older key "
            "(is every process's KASSA_VAULT_PRIMARY the same?); run it again once they agree"
        )
    return None


@vault_group.command("new-key")
@json_option
def vault_new_key(as_json: bool) -> None:
    """A new key, one version above the newest: written into the key file, or printed for KASSA_VAULT_KEYS."""
    source = settings().vault_source
    if source.configured is None:
        version = _or_fail(lambda: key_file.add_key(source.key_file))
        lines = [
            f"key {version} added to {source.key_file}",
            _when_primary(version, source.primary),
            "then `kassa vault rotate`, and `kassa vault status` before retiring a key",
        ]
        emit(as_json, {"version": version, "key_file": str(source.key_file)}, lines)
        return
    keyring = _keyring()
    version = max(keyring.keys) + 1
    if version > MAX_VERSION:
        raise click.ClickException(f"{source.variable}: holds key {MAX_VERSION}, the last version there can be")
    entry = f"{version}:{_b64(secrets.token_bytes(32))}"
    lines = [f"key {version}, a secret: add it to KASSA_VAULT_KEYS, where the other keys are kept", entry]
    if source.variable == "KASSA_VAULT_KEY":
        lines.append("KASSA_VAULT_KEY is key 1: it goes into KASSA_VAULT_KEYS too, as 1:BASE64, and is unset")
    lines.append(_when_primary(version, source.primary))
    emit(as_json, {"version": version, "entry": entry}, lines)


def _when_primary(version: int, primary: int | None) -> str:
    if primary is not None:
        return f"KASSA_VAULT_PRIMARY={primary} keeps key {primary} primary until it is changed, in every process"
    return f"each process seals under key {version} from its next start: every process must know it first"


@vault_group.command("fingerprint-key")
@json_option
def vault_fingerprint_key(as_json: bool) -> None:
    """Print the card fingerprint key, a secret: KASSA_VAULT_KEYS must hold it once key 1 is retired."""
    entry = f"{FINGERPRINT}:{_b64(_keyring().fingerprint_key)}"
    lines = ["the card fingerprint key, a secret (it opens nothing, but keeps card fingerprints once key 1 is gone):"]
    emit(as_json, {"entry": entry}, [*lines, entry])


def _keyring() -> Keyring:
    return _or_fail(lambda: load_keyring(settings().vault_source))


def _or_fail(step: Callable[[], T]) -> T:
    try:
        return step()
    except VaultError as problem:
        raise click.ClickException(str(problem)) from None


def _ciphertexts(count: int) -> str:
    return f"{count} ciphertext" if count == 1 else f"{count} ciphertexts"


def _b64(secret: bytes) -> str:
    return base64.b64encode(secret).decode()


COMMANDS = (vault_group,)
