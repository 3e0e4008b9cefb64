"""What each operator role may do in the console, and what their password hashes cost. Plain rules, no
HTTP: each role may do everything the one below it may, and every action names the least role that may
take it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Role(Enum):
    VIEWER = "viewer"  # reads everything (masked as everywhere)
    SUPPORT = "support"  # also redelivers callbacks
    # also changes merchants, endpoints, acquirer connections, keys, balances, settlement, orders and operators
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def may(self, action: Action) -> bool:
        return self.rank >= action.least.rank


_RANKS = {Role.VIEWER: 0, Role.SUPPORT: 1, Role.ADMIN: 2}


class Action(Enum):
    """The state-changing actions of the console, each written to the audit log under its value."""

    REDELIVER = ("callback.redeliver", Role.SUPPORT)
    CAPTURE = ("order.capture", Role.ADMIN)
    VOID = ("order.void", Role.ADMIN)
    RETURN = ("order.return", Role.ADMIN)
    MERCHANT_CREATE = ("merchant.create", Role.ADMIN)
    MERCHANT_UPDATE = ("merchant.update", Role.ADMIN)
    ENDPOINT_CREATE = ("endpoint.create", Role.ADMIN)
    ENDPOINT_UPDATE = ("endpoint.update", Role.ADMIN)
    ENDPOINT_CONNECTIONS = ("endpoint.connections", Role.ADMIN)
    ACQUIRER_CREATE = ("acquirer.create", Role.ADMIN)
    ACQUIRER_UPDATE = ("acquirer.update", Role.ADMIN)
    ACQUIRER_DISABLE = ("acquirer.disable", Role.ADMIN)
    ACQUIRER_ENABLE = ("acquirer.enable", Role.ADMIN)
    RULE_CREATE = ("rule.create", Role.ADMIN)
    RULE_CHANGE = ("rule.entries", Role.ADMIN)
    RULE_DISABLE = ("rule.disable", Role.ADMIN)
    RULE_ENABLE = ("rule.enable", Role.ADMIN)
    KEY_ADD = ("key.add", Role.ADMIN)
    KEY_REVOKE = ("key.revoke", Role.ADMIN)
    BALANCE_CREDIT = ("balance.credit", Role.ADMIN)
    BALANCE_DEBIT = ("balance.debit", Role.ADMIN)
    SETTLE = ("settlement.run", Role.ADMIN)
    RECURRING_CANCEL = ("recurring.cancel", Role.ADMIN)
    CHARGEBACK_CREATE = ("chargeback.create", Role.ADMIN)
    CHARGEBACK_IMPORT = ("chargeback.import", Role.ADMIN)
    CHARGEBACK_CLOSE = ("chargeback.close", Role.ADMIN)
    OPERATOR_CREATE = ("operator.create", Role.ADMIN)
    OPERATOR_DISABLE = ("operator.disable", Role.ADMIN)
    OPERATOR_RESET = ("operator.reset-password", Role.ADMIN)
    OPERATOR_UNLOCK = ("operator.unlock", Role.ADMIN)
    # The console's own, after failed sign-ins: no one locks an operator out by hand.
    OPERATOR_LOCK = ("operator.lock", Role.ADMIN)
    SIGN_IN = ("operator.sign-in", Role.VIEWER)
    SIGN_OUT = ("operator.sign-out", Role.VIEWER)

    def __init__(self, code: str, least: Role) -> None:
        self.code = code
        self.least = least


READ_AUDIT_LOG = Role.ADMIN  # the audit log names every operator's actions: admins read it


_COST = re.compile(r"m=(\d{1,9}),t=(\d{1,4}),p=(\d{1,2})")
_COST_RULE = "must be m=<KiB>,t=<passes>,p=<lanes>, m at least 7168, m times t at least 35840, p from 1 to 16"


@dataclass(frozen=True)
class PasswordCost:
    """What an Argon2id password hash costs, written as the hash itself writes it (``m=65536,t=3,p=4``):
    memory in KiB, passes over it, lanes. The default is RFC 9106's second recommendation; none is taken
    below OWASP's least (7 MiB, and 35 MiB-passes: m=7168,t=5 or m=19456,t=2), whatever the hardware."""

    memory_kib: int
    passes: int
    lanes: int

    @classmethod
    def parse(cls, text: str) -> PasswordCost:
        found = _COST.fullmatch(text.strip())
        if found is None:
            raise ValueError(_COST_RULE)
        cost = cls(*(int(group) for group in found.groups()))
        if cost.memory_kib < 7168 or cost.memory_kib * cost.passes < 35840 or not 1 <= cost.lanes <= 16:
            raise ValueError(_COST_RULE)
        return cost

    def __str__(self) -> str:
        return f"m={self.memory_kib},t={self.passes},p={self.lanes}"
