"""The clients: ``Kassa`` (sync) and ``AsyncKassa`` (asyncio), both on httpx. Every operation is a method
taking its fields as keywords and returning its typed answer, or raising a ``KassaError``. Request building,
answer reading and the retry rule are shared (``_core``); the two classes only send and sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Required, TypedDict, TypeVar, Unpack

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa

from kassa_client import _core
from kassa_client import params as p
from kassa_client._core import Config, Format
from kassa_client.errors import FinalStatusTimeout
from kassa_client.models import (
    Answer,
    AsyncResponse,
    CardInfo,
    CardRef,
    EphemeralTicket,
    FormRedirect,
    RecurringPayment,
    Status,
)
from kassa_client.operations import OPERATIONS
from kassa_client.signing import Signer, load_private_key

A = TypeVar("A", bound=Answer)
PrivateKey = rsa.RSAPrivateKey | str | bytes | Path


class Options(TypedDict, total=False):
    """The keyword arguments of ``Kassa`` and ``AsyncKassa`` beside ``base_url`` and ``http_client``."""

    endpoint_id: Required[int | str]
    login: Required[str]
    control_key: Required[str]
    private_key: PrivateKey | None  # for v4 (RSA-SHA256) operations: PEM text, bytes, a path or a loaded key
    format: Format  # "json" (default) or "classic"
    group: bool  # endpoint_id names an endpoint group
    timeout: float  # seconds, per request (default 30)
    max_retries: int  # default 2, for retryable requests only
    backoff: float  # seconds before the first retry (default 0.5)
    clock: Callable[[], float]  # the source of oauth_timestamp (default time.time)


class _Base:
    """Configuration shared by both clients; the private key is parsed once, here."""

    def __init__(self, base_url: str, **options: Unpack[Options]) -> None:
        given = options.get("private_key")
        key = given if given is None or isinstance(given, rsa.RSAPrivateKey) else load_private_key(given)
        signer = Signer(options["login"], options["control_key"], key, options.get("clock", time.time))
        self.config = Config(
            base_url,
            options["endpoint_id"],
            options["login"],
            options["control_key"],
            signer,
            options.get("format", "json"),
            options.get("group", False),
            options.get("max_retries", 2),
            options.get("backoff", 0.5),
        )
        self.timeout = options.get("timeout", 30.0)


def _poll_delays(timeout: float) -> Iterator[float]:
    """When ``wait_for_final`` asks again: 50 ms, then half as long again each time, at most 2 s, until
    ``timeout`` has passed."""
    deadline, delay = time.monotonic() + timeout, 0.05
    while (left := deadline - time.monotonic()) > 0:
        yield min(delay, left)
        delay = min(delay * 1.5, 2.0)


def _expect(answer: Answer, kind: type[A]) -> A:
    if not isinstance(answer, kind):  # a row of the table names another type: a bug of this client
        raise TypeError(f"expected {kind.__name__}, got {type(answer).__name__}")
    return answer


def _timed_out(last: Status) -> FinalStatusTimeout:
    error = FinalStatusTimeout(
        f"order {last.paynet_order_id} is still {last.status} ({last.order_stage})", raw=last.raw
    )
    error.last = last
    return error


class Kassa(_Base):
    """A synchronous client for one merchant's endpoint (or endpoint group, ``group=True``).

    ``base_url`` is the gateway's address with its prefix (``https://gate.example/paynet``);
    ``private_key`` (PEM text, bytes, a path or a loaded key) is needed for v4 operations only."""

    def __init__(self, base_url: str, *, http_client: httpx.Client | None = None, **options: Unpack[Options]) -> None:
        super().__init__(base_url, **options)
        self._owns_client = http_client is None
        self.http = http_client or httpx.Client(timeout=self.timeout)

    def close(self) -> None:
        if self._owns_client:
            self.http.close()

    def __enter__(self) -> Kassa:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, operation: str, fields: Mapping[str, Any]) -> Answer:
        """Any operation of the table by name (``"sale"``, ``"return"``...), with retries where safe."""
        op = OPERATIONS[operation]
        attempt = 0
        while True:
            prepared = _core.prepare(op, self.config, fields)
            outcome: httpx.Response | Exception
            try:
                outcome = self.http.post(
                    prepared.url, content=prepared.body, headers=prepared.headers, timeout=self.timeout
                )
            except httpx.TransportError as error:
                outcome = error
            delay = _core.retry_delay(prepared, self.config, attempt, outcome)
            if delay is None:
                if isinstance(outcome, Exception):
                    raise outcome
                return _core.read(op, outcome)
            time.sleep(delay)
            attempt += 1

    def _call(self, operation: str, fields: Mapping[str, Any], kind: type[A]) -> A:
        return _expect(self.request(operation, fields), kind)

    def wait_for_final(
        self, orderid: str, *, timeout: float = 30.0, by_request_sn: str = "", v4: bool = False
    ) -> Status:
        """Polls status until the order (or the request ``by_request_sn``) is final; raises
        ``FinalStatusTimeout`` (with ``.last``) when it is not within ``timeout`` seconds."""
        ask = self.status_v4 if v4 else self.status
        fields: dict[str, Any] = {"orderid": orderid, **({"by_request_sn": by_request_sn} if by_request_sn else {})}
        last = ask(**fields)
        for delay in _poll_delays(timeout):
            if last.is_final:
                return last
            time.sleep(delay)
            last = ask(**fields)
        if last.is_final:
            return last
        raise _timed_out(last)

    def sale(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Sale: authorization and capture in one step (control-signed)."""
        return self._call("sale", fields, AsyncResponse)

    def preauth(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Preauth: reserve funds for a later capture or void."""
        return self._call("preauth", fields, AsyncResponse)

    def capture(self, **fields: Unpack[p.FollowUpFields]) -> AsyncResponse:
        """Capture a preauth, fully (no amount) or partially."""
        return self._call("capture", fields, AsyncResponse)

    def refund(self, **fields: Unpack[p.FollowUpFields]) -> AsyncResponse:
        """The ``return`` operation: cancel a preauth, or reverse a sale or capture, fully or partially."""
        return self._call("return", fields, AsyncResponse)

    def void(self, **fields: Unpack[p.OrderFields]) -> AsyncResponse:
        """Void an approved sale or capture not yet settled."""
        return self._call("void", fields, AsyncResponse)

    def status(self, **fields: Unpack[p.StatusFields]) -> Status:
        """The status of an order (``orderid`` or ``client_orderid``), or of one request (``by_request_sn``)."""
        return self._call("status", fields, Status)

    def account_verification(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Zero-amount authorization of a card."""
        return self._call("account_verification", fields, AsyncResponse)

    def sync_account_verification(self, **fields: Unpack[p.SaleFields]) -> Status:
        """Account verification answered with its outcome and a card reference."""
        return self._call("sync_account_verification", fields, Status)

    def sale_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Sale on the gateway's hosted page: send the customer to ``redirect_url``."""
        return self._call("sale_form", fields, FormRedirect)

    def preauth_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Preauth on the hosted page."""
        return self._call("preauth_form", fields, FormRedirect)

    def payment_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """The universal hosted payment form."""
        return self._call("payment_form", fields, FormRedirect)

    def payout_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Payout on the hosted page."""
        return self._call("payout_form", fields, FormRedirect)

    def account_verification_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Account verification on the hosted page."""
        return self._call("account_verification_form", fields, FormRedirect)

    def transfer_form(self, **fields: Unpack[p.TransferFormFields]) -> FormRedirect:
        """Card-to-card transfer on the hosted page."""
        return self._call("transfer_form", fields, FormRedirect)

    def upload_method_url_result(self, **fields: Unpack[p.MethodResultFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure: the 3DS Method's result."""
        return self._call("upload_method_url_result", fields, AsyncResponse)

    def upload_cres_result(self, **fields: Unpack[p.CresFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure 2.x: the challenge's CRes."""
        return self._call("upload_cres_result", fields, AsyncResponse)

    def upload_pares_result(self, **fields: Unpack[p.ParesFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure 1.0.2: the PaRes."""
        return self._call("upload_pares_result", fields, AsyncResponse)

    def create_card_ref(self, **fields: Unpack[p.OrderFields]) -> CardRef:
        """A card reference from an approved order (v2)."""
        return self._call("create_card_ref", fields, CardRef)

    def get_card_info(self, **fields: Unpack[p.CardInfoFields]) -> CardInfo:
        """The stored card of a reference (BIN and last four at most)."""
        return self._call("get_card_info", fields, CardInfo)

    def make_rebill(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """Charge a stored card without the cardholder."""
        return self._call("make_rebill", fields, AsyncResponse)

    def make_rebill_sale(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """make-rebill under its other name."""
        return self._call("make_rebill_sale", fields, AsyncResponse)

    def make_rebill_preauth(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """A preauth on a stored card, for a later capture or void."""
        return self._call("make_rebill_preauth", fields, AsyncResponse)

    def transfer_by_ref(self, **fields: Unpack[p.TransferByRefFields]) -> AsyncResponse:
        """Transfer between two stored cards, or from the balance to one (v2)."""
        return self._call("transfer_by_ref", fields, AsyncResponse)

    def bank_wire_transfer(self, **fields: Unpack[p.BankWireFields]) -> AsyncResponse:
        """A payout to a bank account by number and BIC."""
        return self._call("bank_wire_transfer", fields, AsyncResponse)

    def payout(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """Payout to a card, bank account, e-wallet or phone (OAuth HMAC-SHA1)."""
        return self._call("payout", fields, AsyncResponse)

    def pan_eligibility_send(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can send funds (OAuth HMAC-SHA1)."""
        return self._call("pan_eligibility_send", fields, AsyncResponse)

    def pan_eligibility_receive(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can receive funds."""
        return self._call("pan_eligibility_receive", fields, AsyncResponse)

    def pan_eligibility_both(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can send and receive funds."""
        return self._call("pan_eligibility_both", fields, AsyncResponse)

    def status_v4(self, **fields: Unpack[p.StatusFields]) -> Status:
        """Status signed with RSA-SHA256."""
        return self._call("status_v4", fields, Status)

    def create_card_ref_v4(self, **fields: Unpack[p.OrderFields]) -> CardRef:
        """A card reference (v4), with ``unq_card_ref_id`` and ``recurring_payment_id``."""
        return self._call("create_card_ref_v4", fields, CardRef)

    def create_ephemeral_ticket(self, **fields: Unpack[p.Common]) -> EphemeralTicket:
        """A Hosted Fields ticket (empty body)."""
        return self._call("create_ephemeral_ticket", fields, EphemeralTicket)

    def sale_v4(self, **fields: Unpack[p.SaleV4Fields]) -> AsyncResponse:
        """Sale signed as v4, with a Hosted Fields token or the card fields."""
        return self._call("sale_v4", fields, AsyncResponse)

    def create_recurring_payment(self, **fields: Unpack[p.RecurringFields]) -> RecurringPayment:
        """A recurring payment on a card reference or card."""
        return self._call("create_recurring_payment", fields, RecurringPayment)

    def process_recurring_payments(self, **fields: Unpack[p.ProcessRecurringFields]) -> AsyncResponse:
        """Charge a recurring payment's card now."""
        return self._call("process_recurring_payments", fields, AsyncResponse)

    def payout_v4(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """One-step payout signed as v4."""
        return self._call("payout_v4", fields, AsyncResponse)

    def payout_by_ref(self, **fields: Unpack[p.PayoutByRefFields]) -> AsyncResponse:
        """Payout to the card of a card reference."""
        return self._call("payout_by_ref", fields, AsyncResponse)

    def payout_check(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """Validate a payout's destination and register it (then ``payout_pay``)."""
        return self._call("payout_check", fields, AsyncResponse)

    def payout_pay(self, **fields: Unpack[p.OrderFields]) -> AsyncResponse:
        """Execute a payout that ``payout_check`` registered."""
        return self._call("payout_pay", fields, AsyncResponse)

    def transfer(self, **fields: Unpack[p.TransferFields]) -> AsyncResponse:
        """Transfer from a card or the deposit to a card (v4)."""
        return self._call("transfer", fields, AsyncResponse)

    def transfer_by_ref_v4(self, **fields: Unpack[p.TransferByRefV4Fields]) -> AsyncResponse:
        """Transfer from the deposit to a card (v4)."""
        return self._call("transfer_by_ref_v4", fields, AsyncResponse)

    def transfer_form_v4(self, **fields: Unpack[p.TransferFormFields]) -> FormRedirect:
        """Card-to-card transfer on the hosted page (v4)."""
        return self._call("transfer_form_v4", fields, FormRedirect)


class AsyncKassa(_Base):
    """The asyncio twin of ``Kassa``: the same methods, awaited."""

    def __init__(
        self, base_url: str, *, http_client: httpx.AsyncClient | None = None, **options: Unpack[Options]
    ) -> None:
        super().__init__(base_url, **options)
        self._owns_client = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=self.timeout)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncKassa:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def request(self, operation: str, fields: Mapping[str, Any]) -> Answer:
        """Any operation of the table by name, with retries where safe."""
        op = OPERATIONS[operation]
        attempt = 0
        while True:
            prepared = _core.prepare(op, self.config, fields)
            outcome: httpx.Response | Exception
            try:
                outcome = await self.http.post(
                    prepared.url, content=prepared.body, headers=prepared.headers, timeout=self.timeout
                )
            except httpx.TransportError as error:
                outcome = error
            delay = _core.retry_delay(prepared, self.config, attempt, outcome)
            if delay is None:
                if isinstance(outcome, Exception):
                    raise outcome
                return _core.read(op, outcome)
            await asyncio.sleep(delay)
            attempt += 1

    async def _call(self, operation: str, fields: Mapping[str, Any], kind: type[A]) -> A:
        return _expect(await self.request(operation, fields), kind)

    async def wait_for_final(
        self, orderid: str, *, timeout: float = 30.0, by_request_sn: str = "", v4: bool = False
    ) -> Status:
        """As ``Kassa.wait_for_final``."""
        ask = self.status_v4 if v4 else self.status
        fields: dict[str, Any] = {"orderid": orderid, **({"by_request_sn": by_request_sn} if by_request_sn else {})}
        last = await ask(**fields)
        for delay in _poll_delays(timeout):
            if last.is_final:
                return last
            await asyncio.sleep(delay)
            last = await ask(**fields)
        if last.is_final:
            return last
        raise _timed_out(last)

    async def sale(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Sale: authorization and capture in one step (control-signed)."""
        return await self._call("sale", fields, AsyncResponse)

    async def preauth(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Preauth: reserve funds for a later capture or void."""
        return await self._call("preauth", fields, AsyncResponse)

    async def capture(self, **fields: Unpack[p.FollowUpFields]) -> AsyncResponse:
        """Capture a preauth, fully (no amount) or partially."""
        return await self._call("capture", fields, AsyncResponse)

    async def refund(self, **fields: Unpack[p.FollowUpFields]) -> AsyncResponse:
        """The ``return`` operation: cancel a preauth, or reverse a sale or capture, fully or partially."""
        return await self._call("return", fields, AsyncResponse)

    async def void(self, **fields: Unpack[p.OrderFields]) -> AsyncResponse:
        """Void an approved sale or capture not yet settled."""
        return await self._call("void", fields, AsyncResponse)

    async def status(self, **fields: Unpack[p.StatusFields]) -> Status:
        """The status of an order (``orderid`` or ``client_orderid``), or of one request (``by_request_sn``)."""
        return await self._call("status", fields, Status)

    async def account_verification(self, **fields: Unpack[p.SaleFields]) -> AsyncResponse:
        """Zero-amount authorization of a card."""
        return await self._call("account_verification", fields, AsyncResponse)

    async def sync_account_verification(self, **fields: Unpack[p.SaleFields]) -> Status:
        """Account verification answered with its outcome and a card reference."""
        return await self._call("sync_account_verification", fields, Status)

    async def sale_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Sale on the gateway's hosted page: send the customer to ``redirect_url``."""
        return await self._call("sale_form", fields, FormRedirect)

    async def preauth_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Preauth on the hosted page."""
        return await self._call("preauth_form", fields, FormRedirect)

    async def payment_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """The universal hosted payment form."""
        return await self._call("payment_form", fields, FormRedirect)

    async def payout_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Payout on the hosted page."""
        return await self._call("payout_form", fields, FormRedirect)

    async def account_verification_form(self, **fields: Unpack[p.FormFields]) -> FormRedirect:
        """Account verification on the hosted page."""
        return await self._call("account_verification_form", fields, FormRedirect)

    async def transfer_form(self, **fields: Unpack[p.TransferFormFields]) -> FormRedirect:
        """Card-to-card transfer on the hosted page."""
        return await self._call("transfer_form", fields, FormRedirect)

    async def upload_method_url_result(self, **fields: Unpack[p.MethodResultFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure: the 3DS Method's result."""
        return await self._call("upload_method_url_result", fields, AsyncResponse)

    async def upload_cres_result(self, **fields: Unpack[p.CresFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure 2.x: the challenge's CRes."""
        return await self._call("upload_cres_result", fields, AsyncResponse)

    async def upload_pares_result(self, **fields: Unpack[p.ParesFields]) -> AsyncResponse:
        """Merchant-hosted 3-D Secure 1.0.2: the PaRes."""
        return await self._call("upload_pares_result", fields, AsyncResponse)

    async def create_card_ref(self, **fields: Unpack[p.OrderFields]) -> CardRef:
        """A card reference from an approved order (v2)."""
        return await self._call("create_card_ref", fields, CardRef)

    async def get_card_info(self, **fields: Unpack[p.CardInfoFields]) -> CardInfo:
        """The stored card of a reference (BIN and last four at most)."""
        return await self._call("get_card_info", fields, CardInfo)

    async def make_rebill(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """Charge a stored card without the cardholder."""
        return await self._call("make_rebill", fields, AsyncResponse)

    async def make_rebill_sale(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """make-rebill under its other name."""
        return await self._call("make_rebill_sale", fields, AsyncResponse)

    async def make_rebill_preauth(self, **fields: Unpack[p.RebillFields]) -> AsyncResponse:
        """A preauth on a stored card, for a later capture or void."""
        return await self._call("make_rebill_preauth", fields, AsyncResponse)

    async def transfer_by_ref(self, **fields: Unpack[p.TransferByRefFields]) -> AsyncResponse:
        """Transfer between two stored cards, or from the balance to one (v2)."""
        return await self._call("transfer_by_ref", fields, AsyncResponse)

    async def bank_wire_transfer(self, **fields: Unpack[p.BankWireFields]) -> AsyncResponse:
        """A payout to a bank account by number and BIC."""
        return await self._call("bank_wire_transfer", fields, AsyncResponse)

    async def payout(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """Payout to a card, bank account, e-wallet or phone (OAuth HMAC-SHA1)."""
        return await self._call("payout", fields, AsyncResponse)

    async def pan_eligibility_send(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can send funds (OAuth HMAC-SHA1)."""
        return await self._call("pan_eligibility_send", fields, AsyncResponse)

    async def pan_eligibility_receive(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can receive funds."""
        return await self._call("pan_eligibility_receive", fields, AsyncResponse)

    async def pan_eligibility_both(self, **fields: Unpack[p.PanEligibilityFields]) -> AsyncResponse:
        """Whether a card can send and receive funds."""
        return await self._call("pan_eligibility_both", fields, AsyncResponse)

    async def status_v4(self, **fields: Unpack[p.StatusFields]) -> Status:
        """Status signed with RSA-SHA256."""
        return await self._call("status_v4", fields, Status)

    async def create_card_ref_v4(self, **fields: Unpack[p.OrderFields]) -> CardRef:
        """A card reference (v4), with ``unq_card_ref_id`` and ``recurring_payment_id``."""
        return await self._call("create_card_ref_v4", fields, CardRef)

    async def create_ephemeral_ticket(self, **fields: Unpack[p.Common]) -> EphemeralTicket:
        """A Hosted Fields ticket (empty body)."""
        return await self._call("create_ephemeral_ticket", fields, EphemeralTicket)

    async def sale_v4(self, **fields: Unpack[p.SaleV4Fields]) -> AsyncResponse:
        """Sale signed as v4, with a Hosted Fields token or the card fields."""
        return await self._call("sale_v4", fields, AsyncResponse)

    async def create_recurring_payment(self, **fields: Unpack[p.RecurringFields]) -> RecurringPayment:
        """A recurring payment on a card reference or card."""
        return await self._call("create_recurring_payment", fields, RecurringPayment)

    async def process_recurring_payments(self, **fields: Unpack[p.ProcessRecurringFields]) -> AsyncResponse:
        """Charge a recurring payment's card now."""
        return await self._call("process_recurring_payments", fields, AsyncResponse)

    async def payout_v4(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """One-step payout signed as v4."""
        return await self._call("payout_v4", fields, AsyncResponse)

    async def payout_by_ref(self, **fields: Unpack[p.PayoutByRefFields]) -> AsyncResponse:
        """Payout to the card of a card reference."""
        return await self._call("payout_by_ref", fields, AsyncResponse)

    async def payout_check(self, **fields: Unpack[p.PayoutFields]) -> AsyncResponse:
        """Validate a payout's destination and register it (then ``payout_pay``)."""
        return await self._call("payout_check", fields, AsyncResponse)

    async def payout_pay(self, **fields: Unpack[p.OrderFields]) -> AsyncResponse:
        """Execute a payout that ``payout_check`` registered."""
        return await self._call("payout_pay", fields, AsyncResponse)

    async def transfer(self, **fields: Unpack[p.TransferFields]) -> AsyncResponse:
        """Transfer from a card or the deposit to a card (v4)."""
        return await self._call("transfer", fields, AsyncResponse)

    async def transfer_by_ref_v4(self, **fields: Unpack[p.TransferByRefV4Fields]) -> AsyncResponse:
        """Transfer from the deposit to a card (v4)."""
        return await self._call("transfer_by_ref_v4", fields, AsyncResponse)

    async def transfer_form_v4(self, **fields: Unpack[p.TransferFormFields]) -> FormRedirect:
        """Card-to-card transfer on the hosted page (v4)."""
        return await self._call("transfer_form_v4", fields, FormRedirect)
