"""The outcome codes merchants see in ``error-code`` for declines and acquirer errors: ISO 8583:1993 action
codes (CONTRACT §9, §15), whichever acquirer or dialect answered. A connector maps its acquirer's answer to
one of these; the texts are the ``error-message`` that goes with each."""

from __future__ import annotations

from enum import StrEnum


class ActionCode(StrEnum):
    DO_NOT_HONOUR = "100"
    EXPIRED_CARD = "101"
    INVALID_CARD_NUMBER = "111"
    INSUFFICIENT_FUNDS = "116"
    NOT_PERMITTED = "119"
    EXCEEDS_AMOUNT_LIMIT = "121"
    EXCEEDS_FREQUENCY_LIMIT = "123"
    LOST_CARD = "208"
    STOLEN_CARD = "209"
    ISSUER_INOPERATIVE = "907"
    SYSTEM_MALFUNCTION = "909"
    ISSUER_TIMED_OUT = "911"

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    ActionCode.DO_NOT_HONOUR: "Do not honour",
    ActionCode.EXPIRED_CARD: "Expired card",
    ActionCode.INVALID_CARD_NUMBER: "Invalid card number",
    ActionCode.INSUFFICIENT_FUNDS: "Not sufficient funds",
    ActionCode.NOT_PERMITTED: "Transaction not permitted to cardholder",
    ActionCode.EXCEEDS_AMOUNT_LIMIT: "Exceeds amount limit",
    ActionCode.EXCEEDS_FREQUENCY_LIMIT: "Exceeds frequency limit",
    ActionCode.LOST_CARD: "Pick up, lost card",
    ActionCode.STOLEN_CARD: "Pick up, stolen card",
    ActionCode.ISSUER_INOPERATIVE: "Issuer or switch inoperative",
    ActionCode.SYSTEM_MALFUNCTION: "System malfunction",
    ActionCode.ISSUER_TIMED_OUT: "Issuer timed out",
}
