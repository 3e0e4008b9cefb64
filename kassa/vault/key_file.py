"""The sandbox's key file (``var/vault.key``, 0600), used when no key is configured in the environment.

Created on first start with one bare key (key 1). ``kassa vault new-key`` rewrites it as a keyring, one
entry a line (``keyring.render``): the new key, the keys before it, and the fingerprint key written out,
so that key 1 can later be retired by deleting its line. Every write replaces the file whole (a new file
renamed over the old), so a process starting meanwhile reads the old keyring or the new, never half.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from kassa.vault.keyring import MAX_VERSION, Entries, VaultError, fingerprint_key, parse, render


def read(key_file: Path) -> str:
    """The file's text, the file created with a new key 1 first when there is none."""
    if not key_file.exists():
        _create(key_file, base64.b64encode(secrets.token_bytes(32)).decode())
    return key_file.read_text()


def entries(key_file: Path) -> Entries:
    try:
        return parse(read(key_file))
    except VaultError as problem:
        raise VaultError(f"{key_file}: {problem}") from None


def add_key(key_file: Path) -> int:
    """Writes a new key into the file, one version above the newest; returns its version."""
    found = entries(key_file)
    version = max(found.keys) + 1
    if version > MAX_VERSION:
        raise VaultError(f"{key_file}: holds key {MAX_VERSION}, the last version there can be")
    pinned = fingerprint_key(found)  # before key 1 can be deleted from the file
    _replace(key_file, render(Entries({**found.keys, version: secrets.token_bytes(32)}, pinned)))
    return version


def _create(key_file: Path, text: str) -> None:
    key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of this deployment created it first
        return
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _replace(key_file: Path, text: str) -> None:
    fresh = key_file.with_name(f".{key_file.name}.{secrets.token_hex(4)}")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(fresh, key_file)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise
