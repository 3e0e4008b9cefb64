"""Merchants, endpoints and endpoint groups as the order rules see them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

# SHA-1 `control` signs with the key appended to known values: a short key falls to an offline guess from
# one signed request. 16 characters is the floor; the CLI's generated keys have 32 random hex digits.
MIN_CONTROL_KEY_LENGTH = 16


def control_key_problem(key: str) -> str | None:
    if len(key) < MIN_CONTROL_KEY_LENGTH:
        return f"must be at least {MIN_CONTROL_KEY_LENGTH} characters"
    if not key.isprintable() or key != key.strip():
        return "must be printable characters without leading or trailing spaces"
    return None


class Mode(StrEnum):
    SANDBOX = "sandbox"
    LIVE = "live"


Network = IPv4Network | IPv6Network


@dataclass(frozen=True, slots=True)
class Merchant:
    id: int
    login: str
    control_key: str
    classic: bool
    allowed_networks: tuple[Network, ...] = ()  # where its API requests may come from; () is anywhere

    def accepts_from(self, host: str | None) -> bool:
        """Whether an API request from ``host`` may proceed (an unreadable address may not, when the
        merchant named networks)."""
        if not self.allowed_networks:
            return True
        try:
            address = ip_address(host or "")
        except ValueError:
            return False
        if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # an IPv4 client on a dual-stack socket
        return any(address in network for network in self.allowed_networks)


def parse_network(text: str) -> Network:
    """A network as an operator writes it (``203.0.113.0/24``, ``2001:db8::/32``, or one address);
    a ``ValueError`` says what is wrong with it."""
    try:
        return ip_network(text.strip())
    except ValueError:
        pass
    try:
        meant = ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text} is not an IP address or network (CIDR)") from None
    raise ValueError(f"{text} has host bits set: did you mean {meant}?")


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

    def member(self, endpoint_id: int) -> Endpoint:
        """The endpoint ``endpoint_id`` as reached through this one: itself, or the group's member (an order
        opened through a group belongs to the member); itself when it is neither."""
        if self.id == endpoint_id:
            return self
        return next((e for e in self.members if e.id == endpoint_id), self)

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

    @property
    def signing_mode(self) -> Mode:
        """Whose RSA keys sign requests addressed here: live ones when the requests may move real money
        (a group's own row says sandbox, whatever its members)."""
        return Mode.LIVE if self.touches_live else Mode.SANDBOX

    def amount_limit_problem(self, amount: int) -> str | None:
        if self.min_amount is not None and amount < self.min_amount:
            return "amount is below the endpoint's minimum"
        if self.max_amount is not None and amount > self.max_amount:
            return "amount exceeds the endpoint's maximum"
        return None
