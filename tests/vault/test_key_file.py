"""The sandbox's key file: a new key is added beside the old, the fingerprint key written out, and key 1's
line can then be deleted."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from kassa.vault import key_file
from kassa.vault.keyring import KeySource, VaultError
from kassa.vault.keys import Vault, load_keyring

PAN = "4111111111111111"


def source(path: Path) -> KeySource:
    return KeySource(None, "KASSA_VAULT_KEY", path, None)


def test_a_new_key_is_added_as_primary_beside_the_old_with_the_fingerprint_key_written_out(tmp_path: Path) -> None:
    path = tmp_path / "vault.key"
    before = Vault(load_keyring(source(path)))
    old_key = path.read_text().strip()
    sealed = before.encrypt(PAN, "ctx")
    assert key_file.add_key(path) == 2
    lines = path.read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == ["fingerprint", "2", "1"]
    assert lines[2] == f"1:{old_key}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    after = Vault(load_keyring(source(path)))
    assert (after.primary, after.versions, after.decrypt(sealed, "ctx")) == (2, (1, 2), PAN)
    assert after.fingerprint(PAN) == before.fingerprint(PAN)


def test_key_1_deleted_from_the_file_keeps_the_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "vault.key"
    before = Vault(load_keyring(source(path)))
    key_file.add_key(path)
    sealed = Vault(load_keyring(source(path))).encrypt(PAN, "ctx")
    path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("1:")))
    retired = Vault(load_keyring(source(path)))
    assert (retired.versions, retired.decrypt(sealed, "ctx")) == ((2,), PAN)
    assert retired.fingerprint(PAN) == before.fingerprint(PAN)


def test_a_key_file_it_cannot_use_is_named_never_shown(tmp_path: Path) -> None:
    path = tmp_path / "vault.key"
    secret = base64.b64encode(b"x" * 16).decode()
    path.write_text(f"2:{secret}\n")
    with pytest.raises(VaultError) as refused:
        load_keyring(source(path))
    assert str(refused.value) == f"{path}: key 2 must be the base64 of 32 bytes"
    assert secret not in str(refused.value)
