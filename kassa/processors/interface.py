"""The seam between the gateway and the acquirers: what the engine asks of a connector, typed per flow, and
what it gets back; and what it asks of the 3-D Secure side (``Authenticator``).

A connector (the sandbox acquirer, an ISO 8583 link) gets one request per transaction and answers an
``Outcome``. Each request names its flow by its type, so a connector's ``match`` over ``Request`` ends in
``assert_never`` and a new flow is handled everywhere before it type-checks. Requests carry what real
acquirers need besides the money: the original transaction's references for follow-ups (ISO 8583 field 90,
the authorization's approval code), the 3-D Secure result (field 48 ``EC``, ``CA``, ``DS``), who initiated the
payment (``MI``) and the endpoint's descriptor (field 43). The transaction's serial number is the idempotency
key a connector passes on, so a retried job never charges twice at the acquirer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from kassa.domain.destinations import BankAccount, CardNumber, EWallet, Phone
from kassa.domain.lifecycle import Stage
from kassa.domain.threeds_protocol import ChallengeIndicator, ThreeDSPath

if TYPE_CHECKING:
    from sqlalchemy import Connection


@dataclass(frozen=True, slots=True)
class Card:
    pan: str
    exp_month: int
    exp_year: int
    holder_name: str
    brand: str | None = None
    cvv: str | None = None  # only for the first authorization; absent for rebills and recurring charges


# Where a payout or a transfer's money goes: a card, or another destination.
Destination = Card | BankAccount | EWallet | Phone | CardNumber


class Initiator(StrEnum):
    """Who started a payment (ISO 8583 field 48 ``MI``): schemes treat merchant-initiated ones differently."""

    CARDHOLDER = "C"
    RECURRING = "R"  # a recurring payment's scheduled charge
    UNSCHEDULED = "U"  # a rebill on a stored card, made when the merchant decides


@dataclass(frozen=True, slots=True)
class ThreeDSResult:
    """What the cardholder's authentication gave, passed on with the authorization."""

    version: str
    trans_status: str
    eci: str | None
    cavv: str | None  # the authentication value (CAVV, AAV)
    ds_trans_id: str | None  # the directory server's transaction id, when a directory server took part


@dataclass(frozen=True, slots=True)
class Original:
    """The authorization a follow-up acts on, as the acquirer knows it (ISO 8583 field 90, and field 38 of a
    capture). STAN and transmission time are those of the message that carried it, when it went over ISO
    8583."""

    serial: str
    amount: int
    approval_code: str | None
    rrn: str | None
    stan: str | None = None
    transmitted_at: str | None = None  # field 7, MMDDhhmmss UTC


@dataclass(frozen=True, slots=True)
class Base:
    order_id: int
    serial: str
    amount: int  # minor units
    currency: str
    descriptor: str


@dataclass(frozen=True, slots=True)
class Authorize(Base):
    """A card payment: a sale (``capture``) or a preauth; a rebill's or recurring payment's charge too."""

    card: Card
    capture: bool
    initiator: Initiator
    three_ds: ThreeDSResult | None = None


@dataclass(frozen=True, slots=True)
class Verify(Base):
    """An account verification or a card's eligibility check: the card is checked, nothing is held."""

    card: Card
    initiator: Initiator
    three_ds: ThreeDSResult | None = None


@dataclass(frozen=True, slots=True)
class Capture(Base):
    """Takes ``amount`` of the preauth ``original`` held."""

    original: Original
    card: Card | None = None  # the order's card, without its CVV2 (ISO 8583 fields 2 and 14)


@dataclass(frozen=True, slots=True)
class Reverse(Base):
    """Ends the authorization ``original`` before settlement (a void, a cancel, an expiry): nothing is taken."""

    original: Original
    card: Card | None = None


@dataclass(frozen=True, slots=True)
class Refund(Base):
    """Gives back ``amount`` of what ``original`` took."""

    original: Original
    card: Card | None = None


@dataclass(frozen=True, slots=True)
class Credit(Base):
    """Pays ``amount`` to ``destination`` (a payout, a transfer from the merchant's balance); with
    ``check_only``, asks only whether it could (a payout check), and moves nothing."""

    destination: Destination
    check_only: bool = False


@dataclass(frozen=True, slots=True)
class Transfer(Base):
    """Moves ``amount`` from ``card`` to ``destination``: a charge of one card and a credit to the other."""

    card: Card
    destination: CardNumber
    initiator: Initiator
    three_ds: ThreeDSResult | None = None


Request = Authorize | Verify | Capture | Reverse | Refund | Credit | Transfer
# The requests whose cardholder an issuer may ask to authenticate first.
CardholderRequest = Authorize | Verify | Transfer


@dataclass(frozen=True, slots=True)
class Outcome:
    """The acquirer's answer for one transaction."""

    stage: Stage
    error_code: str | None = None
    error_message: str | None = None
    approval_code: str | None = None
    processor_rrn: str | None = None
    processor_tx_id: str | None = None
    recipient_name: str | None = None  # a payout check's: the receiver's name the scheme holds, masked
    # What the connector has still to write of the answer (an ISO 8583 message's row marked answered): written
    # in the transaction that records this outcome, one write fewer a sale. A crash before that commit leaves
    # the message as if no answer had come: reversed on restart (CONTRACT §15), never sent again as new.
    unrecorded: Callable[[Connection], None] | None = field(default=None, compare=False, repr=False)


class Processor(Protocol):
    """A connector to one acquirer."""

    async def process(self, request: Request, *, first: bool = False) -> Outcome:
        """Runs one transaction at the acquirer. ``first``: the caller knows nothing of it went out before
        (its job's first run), so a connector that records its messages need not look for earlier ones.
        The caller writes the outcome's ``unrecorded`` with it (``core.outcomes.record_for_job``)."""

    async def reconcile(self, request: Request) -> Outcome:
        """Asks the acquirer for the final outcome of a transaction that ended ``unknown``."""


class Processors(Protocol):
    """The connectors of a deployment, by the endpoint they serve (``processors.connectors``)."""

    async def serving(self, endpoint_id: int) -> Processor:
        """The connector an endpoint's transactions go to."""


class Authenticator(Protocol):
    """The 3-D Secure side: the card's issuer (its ACS), reached through a directory server."""

    async def path(
        self, request: CardholderRequest, challenge: ChallengeIndicator = ChallengeIndicator.NO_PREFERENCE
    ) -> ThreeDSPath | None:
        """How the card's issuer wants the cardholder authenticated, or None (it offers no authentication:
        authorize now). ``challenge`` is the gateway's ask (the AReq's ``threeDSRequestorChallengeInd``): an
        issuer that can authenticate the card challenges the cardholder when a challenge is mandated."""

    def ds_trans_id(self, version: str) -> str | None:
        """The id the directory server gives an authentication of protocol ``version`` as it passes it to
        the issuer: EMV 3-D Secure 2.x has one, 1.0.2 none."""

    def challenge_code(self) -> str:
        """The one-time code the issuer sends the cardholder for a challenge."""

    def judge(self, entered: str, expected: str) -> str:
        """The challenge's transStatus: Y when the cardholder entered the code, N otherwise."""

    def authenticated(self, trans_status: str, brand: str | None) -> dict[str, object]:
        """What the issuer returns for an authentication that succeeded (Y) or was attempted (A): the
        ``trans_status``, ``eci`` and ``authentication_value`` to store."""
