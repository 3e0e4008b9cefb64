"""Merchants, endpoints and endpoint groups as the order rules see them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    SANDBOX = "sandbox"
    LIVE = "live"


@dataclass(frozen=True, slots=True)
class Merchant:
    id: int
    login: str
    control_key: str
    classic: bool


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An endpoint, or an endpoint group (``members`` non-empty, no currency of its own)."""

    id: int
    merchant: Merchant
    is_group: bool
    currency: str | None
    mode: Mode
    classic: bool
    descriptor: str
    min_amount: int | None
    max_amount: int | None
    multi_capture: bool
    enabled: bool
    members: tuple[Endpoint, ...] = ()
    replay_window_seconds: int = 0  # 0: off; groups have none of their own

    @property
    def speaks_classic(self) -> bool:
        return self.classic or self.merchant.classic

    def member_ids(self) -> tuple[int, ...]:
        return tuple(m.id for m in self.members) if self.is_group else (self.id,)

    def for_currency(self, currency: str) -> Endpoint | None:
        """The endpoint that serves ``currency``: itself, or for a group the enabled member that does."""
        candidates = self.members if self.is_group else (self,)
        return next((e for e in candidates if e.currency == currency and e.enabled), None)

    @property
    def replay_window_ms(self) -> int:
        """The replay window of a request addressed here: a group call may reach any member's orders, so
        it takes the longest of theirs."""
        return 1000 * max(e.replay_window_seconds for e in (self, *self.members))

    @property
    def touches_live(self) -> bool:
        """Live itself, or a group with a live member: its requests may move real money."""
        return any(e.mode is Mode.LIVE for e in (self, *self.members))

    def amount_limit_problem(self, amount: int) -> str | None:
        if self.min_amount is not None and amount < self.min_amount:
            return "amount is below the endpoint's minimum"
        if self.max_amount is not None and amount > self.max_amount:
            return "amount exceeds the endpoint's maximum"
        return None
