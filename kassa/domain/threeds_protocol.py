"""3-D Secure as a protocol: the issuer's authentication paths, the steps of an authentication, and the
browser-borne messages (EMV 3DS 2.2 CReq/CRes and Method data, 3DS 1.0.2 PaReq/PaRes) in their wire
encodings. The issuer's own decisions (codes, authentication values) are the sandbox issuer's."""

from __future__ import annotations

import base64
import binascii
import json
from enum import StrEnum
from typing import Any

VERSION_2 = "2.2.0"
VERSION_1 = "1.0.2"


class ThreeDSPath(StrEnum):
    """How the issuer authenticates a card (the sandbox issuer picks it by CVV2, CONTRACT §9)."""

    CHALLENGE = "challenge"  # 2.x challenge
    CHALLENGE_1 = "challenge-1.0.2"  # PaReq/PaRes
    METHOD_FRICTIONLESS = "method-frictionless"
    METHOD_CHALLENGE = "method-challenge"
    ATTEMPTED = "attempted"  # transStatus A
    REJECTED = "rejected"  # transStatus R

    @property
    def version(self) -> str:
        return VERSION_1 if self is ThreeDSPath.CHALLENGE_1 else VERSION_2

    @property
    def has_method(self) -> bool:
        return self in (ThreeDSPath.METHOD_FRICTIONLESS, ThreeDSPath.METHOD_CHALLENGE)


class ChallengeIndicator(StrEnum):
    """What the gateway, as 3-D Secure requestor, asks of the issuer about a challenge (EMV 3DS AReq
    ``threeDSRequestorChallengeInd``; the codes the schemes use)."""

    NO_PREFERENCE = "01"
    MANDATED = "04"  # a challenge is required: a risk rule's amount (docs/risk.md)


class Step(StrEnum):
    """Where an authentication stands: waiting for the Method step, for the challenge's answer, or done."""

    METHOD = "method"
    CHALLENGE = "challenge"
    DONE = "done"


class MessageError(ValueError):
    pass


def encode(message: dict[str, Any]) -> str:
    """base64url without padding, as EMV 3DS sends CReq, CRes and Method data through the browser."""
    return base64.urlsafe_b64encode(json.dumps(message, separators=(",", ":")).encode()).decode().rstrip("=")


def decode(text: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        message = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise MessageError("is not a base64url-encoded JSON message") from None
    if not isinstance(message, dict):
        raise MessageError("is not a JSON object")
    return message


def creq(server_trans_id: str, acs_trans_id: str) -> str:
    return encode(
        {
            "threeDSServerTransID": server_trans_id,
            "acsTransID": acs_trans_id,
            "messageType": "CReq",
            "messageVersion": VERSION_2,
            "challengeWindowSize": "05",
        }
    )


def cres(server_trans_id: str, acs_trans_id: str, trans_status: str) -> str:
    return encode(
        {
            "threeDSServerTransID": server_trans_id,
            "acsTransID": acs_trans_id,
            "messageType": "CRes",
            "messageVersion": VERSION_2,
            "transStatus": trans_status,
        }
    )


def method_data(server_trans_id: str, notification_url: str) -> str:
    return encode({"threeDSServerTransID": server_trans_id, "threeDSMethodNotificationURL": notification_url})


def pareq(xid: str, amount: str, currency: str) -> str:
    return encode({"messageType": "PaReq", "version": VERSION_1, "xid": xid, "amount": amount, "currency": currency})


def pares(xid: str, trans_status: str) -> str:
    return encode({"messageType": "PaRes", "version": VERSION_1, "xid": xid, "status": trans_status})
