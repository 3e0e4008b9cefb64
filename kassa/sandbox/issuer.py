"""The sandbox card issuer's 3-D Secure decisions: which path an authentication takes (by the CVV2's
trigger), the one-time code of a challenge and its judgement, and the authentication values it issues; and
the directory server between gateway and issuer, which gives each 2.x authentication its transaction id."""

from __future__ import annotations

import base64
import secrets
import uuid

from kassa.domain.threeds_protocol import VERSION_1, ChallengeIndicator, ThreeDSPath
from kassa.processors.interface import CardholderRequest
from kassa.sandbox.triggers import Trigger, trigger_of

_PATHS: dict[Trigger, ThreeDSPath] = {
    Trigger.CHALLENGE: ThreeDSPath.CHALLENGE,
    Trigger.CHALLENGE_1: ThreeDSPath.CHALLENGE_1,
    Trigger.METHOD_FRICTIONLESS: ThreeDSPath.METHOD_FRICTIONLESS,
    Trigger.METHOD_CHALLENGE: ThreeDSPath.METHOD_CHALLENGE,
    Trigger.ATTEMPTED: ThreeDSPath.ATTEMPTED,
    Trigger.REJECTED: ThreeDSPath.REJECTED,
}


class SandboxIssuer:
    """The simulated issuers' ACS behind the gateway's 3-D Secure server, and the directory server that
    reaches them (``processors.interface.Authenticator``)."""

    async def path(
        self, request: CardholderRequest, challenge: ChallengeIndicator = ChallengeIndicator.NO_PREFERENCE
    ) -> ThreeDSPath | None:
        """By the card's CVV2 (CONTRACT §9); a card sent without one is not authenticated."""
        cvv = request.card.cvv
        if not cvv:
            return None
        trigger = trigger_of(cvv)
        if challenge is ChallengeIndicator.MANDATED:
            return mandated_path_of(trigger)
        return path_of(trigger)

    def ds_trans_id(self, version: str) -> str | None:
        """A new UUID, as EMV 3-D Secure 2.x directory servers give each authentication (``dsTransID``); a
        1.0.2 authentication has no directory server transaction id."""
        return None if version == VERSION_1 else str(uuid.uuid4())

    def challenge_code(self) -> str:
        """The sandbox's ACS page shows it as a hint."""
        return f"{secrets.randbelow(1_000_000):06d}"

    def judge(self, entered: str, expected: str) -> str:
        return "Y" if secrets.compare_digest(entered.strip(), expected) else "N"

    def authenticated(self, trans_status: str, brand: str | None) -> dict[str, object]:
        return {"trans_status": trans_status, "eci": eci(trans_status, brand), "authentication_value": _cavv()}


def path_of(trigger: Trigger | None) -> ThreeDSPath | None:
    """How the issuer authenticates a card with this CVV2; None: not enrolled, authorize at once."""
    return None if trigger is None else _PATHS.get(trigger)


def mandated_path_of(trigger: Trigger | None) -> ThreeDSPath | None:
    """How the issuer authenticates a card with this CVV2 when a challenge is mandated: every card it would
    let through unauthenticated, or frictionless, is challenged; 111 stays the card whose issuer offers no
    3-D Secure at all; an attempt (325) or a rejection (326) stays what it is."""
    if trigger is Trigger.APPROVE_WITHOUT_3DS:
        return None
    found = path_of(trigger)
    if found is None:
        return ThreeDSPath.CHALLENGE
    return ThreeDSPath.METHOD_CHALLENGE if found is ThreeDSPath.METHOD_FRICTIONLESS else found


def eci(trans_status: str, brand: str | None) -> str | None:
    """Electronic Commerce Indicator: Mastercard numbers its levels differently from the others."""
    mastercard = brand == "MASTERCARD"
    return {"Y": "02" if mastercard else "05", "A": "01" if mastercard else "06"}.get(trans_status)


def _cavv() -> str:
    """A CAVV/AAV: 20 bytes from the issuer, base64."""
    return base64.b64encode(secrets.token_bytes(20)).decode()
