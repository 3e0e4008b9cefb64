"""The vault: AES-256-GCM for card data and other secrets at rest, HMAC-SHA256 for card fingerprints.

Its keys are a keyring (``keyring.py``): versioned 32-byte master keys, one of them primary, from
``KASSA_VAULT_KEYS``, ``KASSA_VAULT_KEY`` (one key, version 1) or, for a sandbox, a 0600 key file
generated on first start (``key_file.py``). Sub-keys for encryption are derived from each master key with
HKDF, so one secret never serves two purposes. Every ciphertext names the key it was sealed under in its
header, so opening picks that key without trying others, and is bound to its purpose and row by
associated data, so a ciphertext copied into another row does not open.

Headers: format 1 is the byte 0x01, the nonce, the ciphertext; always key 1's: what Kassa wrote before keys
had versions, and what key 1 still writes, so a deployment that never rotates writes exactly what older
versions read. Format 2 is the byte 0x02, the key's version (one byte), the nonce, the ciphertext.
"""

from __future__ import annotations

import hashlib
import hmac

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kassa import randomness
from kassa.vault import key_file
from kassa.vault.keyring import Keyring, KeySource, derive, parse
from kassa.vault.keyring import VaultError as VaultError  # where callers have always imported it from

_FORMAT_1 = b"\x01"
_FORMAT_2 = b"\x02"
_NONCE_BYTES = 12


class MissingKey(VaultError):
    """A ciphertext sealed under a key this process does not have."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"a ciphertext is sealed under vault key {version}, which is not configured "
            "(retired before `kassa vault status` showed none left under it?)"
        )
        self.version = version


def header(version: int) -> bytes:
    """What a ciphertext sealed under key ``version`` starts with."""
    return _FORMAT_1 if version == 1 else _FORMAT_2 + bytes([version])


def key_version(blob: bytes) -> int | None:
    """The version of the key ``blob`` was sealed under (its first two bytes are enough); None when its
    header is no format the vault knows."""
    if blob[:1] == _FORMAT_1:
        return 1
    if blob[:1] == _FORMAT_2 and len(blob) > 1:
        return blob[1]
    return None


class Vault:
    def __init__(self, keys: Keyring | bytes) -> None:
        """``keys``: a keyring, or one 32-byte master key (key 1, as ``KASSA_VAULT_KEY`` gives it)."""
        keyring = keys if isinstance(keys, Keyring) else Keyring.single(keys)
        self._aeads = {version: AESGCM(derive(master, b"aead")) for version, master in keyring.keys.items()}
        self.primary = keyring.primary
        self._header, self._sealing = header(keyring.primary), self._aeads[keyring.primary]
        self._fingerprinting = hmac.new(keyring.fingerprint_key, digestmod=hashlib.sha256)

    @property
    def versions(self) -> tuple[int, ...]:
        """The versions of the keys this vault opens with, oldest first."""
        return tuple(sorted(self._aeads))

    def encrypt(self, plaintext: str, context: str) -> bytes:
        # Never repeated, across forks too; why not os.urandom for each: randomness.py.
        nonce = randomness.token_bytes(_NONCE_BYTES)
        return self._header + nonce + self._sealing.encrypt(nonce, plaintext.encode(), context.encode())

    def decrypt(self, blob: bytes, context: str) -> str:
        version = key_version(blob)
        if version is None:
            raise VaultError("unknown vault ciphertext format")
        aead = self._aeads.get(version)
        if aead is None:
            raise MissingKey(version)
        start = 1 if blob[:1] == _FORMAT_1 else 2
        nonce, body = blob[start : start + _NONCE_BYTES], blob[start + _NONCE_BYTES :]
        return aead.decrypt(nonce, body, context.encode()).decode()

    def reseal(self, blob: bytes, context: str) -> bytes:
        """``blob`` opened and sealed again under the primary key, bound to the same ``context``."""
        return self.encrypt(self.decrypt(blob, context), context)

    def fingerprint(self, value: str) -> str:
        """A keyed digest: equal inputs match, but a stolen database cannot brute-force PANs from it."""
        digest = self._fingerprinting.copy()  # the key's state, computed once: half the cost of hmac.new
        digest.update(value.encode())
        return digest.hexdigest()


def load_keyring(source: KeySource) -> Keyring:
    """The keyring of ``source``; raises ``VaultError`` naming the variable or file it came from."""
    where = source.variable if source.configured else str(source.key_file)
    text = source.configured or key_file.read(source.key_file)
    try:
        return Keyring.of(parse(text), source.primary)
    except VaultError as problem:
        raise VaultError(f"{where}: {problem}") from None


def load_vault(source: KeySource) -> Vault:
    return Vault(load_keyring(source))


def pan_context(merchant_id: int) -> str:
    return f"pan/merchant/{merchant_id}"


def destination_context(merchant_id: int) -> str:
    """A payout's bank account, e-wallet or phone, with the names that go with it."""
    return f"destination/merchant/{merchant_id}"


def cvv_context(serial: str) -> str:
    return f"cvv/transaction/{serial}"


def hosted_cvv_context(ticket_digest: str) -> str:
    """The CVV a Hosted Fields tokenization keeps until the sale that uses its token."""
    return f"cvv/hosted-fields/{ticket_digest}"


def control_key_context(merchant_id: int) -> str:
    return f"control-key/merchant/{merchant_id}"


def card_ref_unique_id(vault: Vault, merchant_id: int, pan_fingerprint: str) -> str:
    """create-card-ref v4's ``unq-card-ref-id``: the same for every reference of one card number at one
    merchant, computed from the card's keyed fingerprint, never the PAN. The merchant's id is inside the
    keyed digest, so two merchants get unrelated values for one card and cannot match their customers by
    it. 40 hex digits (160 bits)."""
    return vault.fingerprint(f"unq-card-ref/merchant/{merchant_id}/{pan_fingerprint}")[:40]
