"""Operators' credentials: Argon2id password hashes, time-based one-time codes (RFC 6238), session
tokens and the CSRF token each session's forms carry. No storage and no HTTP here."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets

import pyotp
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from kassa.domain.operators import PasswordCost

MIN_PASSWORD = 12
TOTP_STEP_S = 30


@functools.cache
def _hasher(cost: PasswordCost) -> PasswordHasher:
    return PasswordHasher(time_cost=cost.passes, memory_cost=cost.memory_kib, parallelism=cost.lanes)


@functools.cache
def _decoy(cost: PasswordCost) -> str:
    """A hash to verify against when the email names no operator, so that a wrong email takes as long as
    a wrong password and sign-in does not tell which emails exist. Made when first needed: at import it
    cost every command and server start 155 ms."""
    return _hasher(cost).hash(secrets.token_urlsafe(16))


class WeakPassword(ValueError):
    """A password refused; the message says why and may be shown."""


def hash_password(password: str, cost: PasswordCost) -> str:
    if len(password) < MIN_PASSWORD:
        raise WeakPassword(f"a password must have at least {MIN_PASSWORD} characters")
    return _hasher(cost).hash(password)


def password_matches(stored_hash: str | None, password: str, cost: PasswordCost) -> bool:
    """Constant work whether or not ``stored_hash`` exists (None: no such operator): a hash is checked
    with the cost it was made with, a missing one against a decoy of ``cost``, that of new hashes."""
    try:
        return _hasher(cost).verify(stored_hash or _decoy(cost), password) and stored_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def rehashed(stored_hash: str, password: str, cost: PasswordCost) -> str | None:
    """A new hash of the right ``password`` when ``stored_hash`` was made at another cost (the setting
    changed since), None when it is current."""
    hasher = _hasher(cost)
    return hasher.hash(password) if hasher.check_needs_rehash(stored_hash) else None


def new_password() -> str:
    """A password the CLI hands out: 128 bits, typed or pasted once and then changed by nobody."""
    return secrets.token_urlsafe(16)


def new_totp_secret() -> str:
    return pyotp.random_base32()


def totp_uri(secret: str, email: str) -> str:
    """What an authenticator app reads (as text or a QR code) to add the account."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name="Kassa console")


def totp_step(secret: str, code: str, now_s: int, last_step: int | None) -> int | None:
    """The 30-second step ``code`` belongs to (this one or either neighbour, for clock drift), when it is
    right and later than ``last_step``, the step of the last code accepted: a code seen once is refused."""
    code = code.strip().replace(" ", "")
    if len(code) != 6 or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret)
    step = now_s // TOTP_STEP_S
    for candidate in (step - 1, step, step + 1):
        if hmac.compare_digest(totp.at(candidate * TOTP_STEP_S), code) and (last_step is None or candidate > last_step):
            return candidate
    return None


def totp_now(secret: str, now_s: int) -> str:
    return pyotp.TOTP(secret).at(now_s)


def new_session_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token(session_token: str) -> str:
    """Derived from the session's own secret token (an HttpOnly cookie no page script can read): nothing
    more to store, and a form from another session does not pass."""
    return hmac.new(session_token.encode(), b"kassa-console-csrf", hashlib.sha256).hexdigest()


def csrf_matches(session_token: str, given: str) -> bool:
    return hmac.compare_digest(csrf_token(session_token), given)
