"""The sandbox acquirer and issuer of CONTRACT §9: the outcome is decided by the card's CVV2, or, for
operations without one, by the last three digits of the card number."""

from __future__ import annotations

import asyncio
import hashlib

from kassa.domain.lifecycle import Stage, TxType
from kassa.domain.threeds import ThreeDSPath
from kassa.engine.processor import AuthorizationRequest
from kassa.storage.orders import Outcome

# ISO 8583:1993 action codes the sandbox issuer answers with.
DECLINES: dict[str, str] = {
    "100": "Do not honour",
    "101": "Expired card",
    "116": "Not sufficient funds",
    "119": "Transaction not permitted to cardholder",
    "209": "Pick up, stolen card",
}
_DECLINE_TRIGGERS = frozenset({"101", "116", "119", "209"})
_APPROVE = frozenset({"123", "1234", "111"})
THREE_DS_PATHS: dict[str, ThreeDSPath] = {
    "321": ThreeDSPath.CHALLENGE,
    "322": ThreeDSPath.CHALLENGE_1,
    "323": ThreeDSPath.METHOD_FRICTIONLESS,
    "324": ThreeDSPath.METHOD_CHALLENGE,
    "325": ThreeDSPath.ATTEMPTED,
    "326": ThreeDSPath.REJECTED,
}
_CARDHOLDER_PRESENT = frozenset({TxType.SALE, TxType.PREAUTH, TxType.ACCOUNT_VERIFICATION})


# Transactions on an authorization that already exists: the sandbox acquirer always accepts them.
_FOLLOW_UPS = frozenset({TxType.CAPTURE, TxType.CANCEL, TxType.REVERSAL, TxType.VOID})


class SandboxProcessor:
    def __init__(self, latency_ms: int = 0) -> None:
        self._latency = latency_ms / 1000

    async def process(self, request: AuthorizationRequest) -> Outcome:
        if self._latency:
            await asyncio.sleep(self._latency)
        if request.tx_type in _FOLLOW_UPS:
            return _approved(processor_tx_id(request.order_id), request.serial)
        trigger, has_cvv = _trigger(request)
        return decide(trigger, has_cvv, request.order_id, request.serial)

    async def three_ds_path(self, request: AuthorizationRequest) -> ThreeDSPath | None:
        if not request.cardholder_present or request.tx_type not in _CARDHOLDER_PRESENT:
            return None
        if request.card is None or not request.card.cvv:
            return None
        return THREE_DS_PATHS.get(request.card.cvv)

    async def reconcile(self, request: AuthorizationRequest) -> Outcome:
        """The sandbox acquirer settles every ``unknown`` to approved once asked (the delay before it
        is asked is the reconciliation job's schedule)."""
        return _approved(processor_tx_id(request.order_id), request.serial)


def _trigger(request: AuthorizationRequest) -> tuple[str, bool]:
    card = request.card
    if card is not None and card.cvv:
        return card.cvv, True
    return (card.pan[-3:] if card else ""), False


def decide(trigger: str, has_cvv: bool, order_id: int, serial: str) -> Outcome:
    tx_id = processor_tx_id(order_id)
    # A 3-D Secure card reaches authorization only once its authentication allowed it.
    if trigger in _APPROVE or trigger in THREE_DS_PATHS or (not has_cvv and not _special(trigger)):
        return _approved(tx_id, serial)
    if trigger == "217":
        return Outcome(Stage.UNKNOWN, processor_tx_id=tx_id)
    if trigger == "555":
        return Outcome(Stage.FILTERED, "555", "Refused by fraud rules", processor_tx_id=tx_id)
    if trigger == "500":
        return Outcome(Stage.ERROR, "500", "Acquirer failure", processor_tx_id=tx_id)
    code = trigger if trigger in _DECLINE_TRIGGERS else "100"
    return _declined(code, DECLINES[code], tx_id)


def processor_tx_id(order_id: int) -> str:
    """The sandbox acquirer's transaction id (CONTRACT §9)."""
    return f"PNTEST-{order_id}"


def _special(trigger: str) -> bool:
    return trigger in THREE_DS_PATHS or trigger in _DECLINE_TRIGGERS or trigger in {"217", "555", "500"}


def _approved(tx_id: str, serial: str) -> Outcome:
    # Stable per transaction, so a retried authorization answers the same codes.
    digest = int(hashlib.sha256(serial.encode()).hexdigest(), 16)
    return Outcome(
        Stage.APPROVED,
        approval_code=f"{digest % 1_000_000:06d}",
        processor_rrn=f"{digest % 10**12:012d}",
        processor_tx_id=tx_id,
    )


def _declined(code: str, message: str, tx_id: str) -> Outcome:
    return Outcome(Stage.DECLINED, code, message, processor_tx_id=tx_id)
