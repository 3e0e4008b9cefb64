"""The sandbox card issuer's 3-D Secure decisions: which path an authentication takes (by the CVV2's
trigger), the one-time code of a challenge and its judgement, and the authentication values it issues."""

from __future__ import annotations

import base64
import secrets

from kassa.domain.threeds_protocol import ThreeDSPath
from kassa.sandbox.triggers import Trigger

_PATHS: dict[Trigger, ThreeDSPath] = {
    Trigger.CHALLENGE: ThreeDSPath.CHALLENGE,
    Trigger.CHALLENGE_1: ThreeDSPath.CHALLENGE_1,
    Trigger.METHOD_FRICTIONLESS: ThreeDSPath.METHOD_FRICTIONLESS,
    Trigger.METHOD_CHALLENGE: ThreeDSPath.METHOD_CHALLENGE,
    Trigger.ATTEMPTED: ThreeDSPath.ATTEMPTED,
    Trigger.REJECTED: ThreeDSPath.REJECTED,
}


def path_of(trigger: Trigger | None) -> ThreeDSPath | None:
    """How the issuer authenticates a card with this CVV2; None: not enrolled, authorize at once."""
    return None if trigger is None else _PATHS.get(trigger)


def challenge_code() -> str:
    """The one-time code the issuer sends the cardholder (the sandbox's ACS page shows it as a hint)."""
    return f"{secrets.randbelow(1_000_000):06d}"


def judge(entered: str, expected: str) -> str:
    """The challenge's transStatus: Y when the cardholder entered the code, N otherwise."""
    return "Y" if secrets.compare_digest(entered.strip(), expected) else "N"


def authenticated(trans_status: str, brand: str | None) -> dict[str, object]:
    """What the issuer returns for an authentication that succeeded (Y) or was attempted (A)."""
    return {"trans_status": trans_status, "eci": eci(trans_status, brand), "authentication_value": _cavv()}


def eci(trans_status: str, brand: str | None) -> str | None:
    """Electronic Commerce Indicator: Mastercard numbers its levels differently from the others."""
    mastercard = brand == "MASTERCARD"
    return {"Y": "02" if mastercard else "05", "A": "01" if mastercard else "06"}.get(trans_status)


def _cavv() -> str:
    """A CAVV/AAV: 20 bytes from the issuer, base64."""
    return base64.b64encode(secrets.token_bytes(20)).decode()
