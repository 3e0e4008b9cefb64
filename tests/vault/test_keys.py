"""Card data encryption at rest."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag

from kassa.vault.keyring import KeySource
from kassa.vault.keys import Vault, load_vault


def test_ciphertext_round_trips_and_never_contains_the_pan() -> None:
    vault = Vault(b"x" * 32)
    blob = vault.encrypt("4111111111111111", "pan/merchant/1")
    assert b"4111111111111111" not in blob
    assert vault.decrypt(blob, "pan/merchant/1") == "4111111111111111"


def test_ciphertext_moved_to_another_row_does_not_decrypt() -> None:
    vault = Vault(b"x" * 32)
    blob = vault.encrypt("123", "cvv/transaction/a")
    with pytest.raises(InvalidTag):
        vault.decrypt(blob, "cvv/transaction/b")


def test_same_pan_encrypts_differently_but_fingerprints_equal() -> None:
    vault = Vault(b"x" * 32)
    assert vault.encrypt("4111111111111111", "c") != vault.encrypt("4111111111111111", "c")
    assert vault.fingerprint("4111111111111111") == vault.fingerprint("4111111111111111")
    assert Vault(b"y" * 32).fingerprint("4111111111111111") != vault.fingerprint("4111111111111111")


def test_sandbox_key_file_is_generated_once_with_owner_only_permissions(tmp_path: Path) -> None:
    source = KeySource(None, "KASSA_VAULT_KEY", tmp_path / "var" / "vault.key", None)
    first = load_vault(source)
    assert stat.S_IMODE(source.key_file.stat().st_mode) == 0o600
    blob = first.encrypt("secret", "ctx")
    assert load_vault(source).decrypt(blob, "ctx") == "secret"
