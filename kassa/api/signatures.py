"""Checks a request's signature against the scheme its operation row names (CONTRACT §4): the
``control`` formula once the fields are validated (``verify``), OAuth 1.0a before (``check_oauth``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from sqlalchemy import Connection
from starlette.types import Scope

from kassa.api.errors import ApiError, Code
from kassa.clock import now_ms
from kassa.core.followups import OrderSignature
from kassa.domain.merchants import Endpoint, Mode
from kassa.domain.money import Currency
from kassa.keyring import Keys
from kassa.runtime import Services
from kassa.signing import oauth
from kassa.signing.control import ControlFormula, control_matches
from kassa.storage import merchant_keys, oauth_nonces
from kassa.web.addresses import addressed

if TYPE_CHECKING:  # the operation table imports the handlers, which refuse with ``mismatch``
    from kassa.api.operations import Operation

T = TypeVar("T")


def verify(
    op: Operation, endpoint: Endpoint, path_id: str, form: dict[str, str], values: dict[str, Any]
) -> OrderSignature | None:
    """Refuses a request whose signature does not match; None when it does (an OAuth row's signature
    was checked before its fields: only a ``login`` field remains to own the endpoint). A capture or
    return without amount and currency may instead be signed as the original gateway's PHP client signs
    it, with the order's amount and currency: the check that remains, once the order is known, is
    returned."""
    merchant = endpoint.merchant
    if "login" in values and values["login"] != merchant.login:
        raise ApiError(Code.ENDPOINT, f"login does not own endpoint {path_id}")
    if not isinstance(op.signing, ControlFormula):
        return None
    signed = signed_values(path_id, form, values)
    if control_matches(op.signing, signed, merchant.control_key, values["control"]):
        return None
    if op.order_amount_signing and "amount" not in values and "currency" not in values:
        return partial(_signs_order, op.signing, signed, merchant.control_key, values["control"])
    raise mismatch(op)


def replay_digest(op: Operation, path_id: str, form: dict[str, str], values: dict[str, Any]) -> str:
    """What a request and its replays share: the values its control signs, and the control. Unsigned
    fields, their order and spelling do not count (a replay may add or change them at will); the control
    does, so that a request whose control is still to be checked never reaches another's answer."""
    assert isinstance(op.signing, ControlFormula)
    signed = op.signing.message(signed_values(path_id, form, values))
    return hashlib.sha256(f"{signed}\n{values['control'].lower()}".encode()).hexdigest()


def mismatch(op: Operation) -> ApiError:
    """The one refusal of a control that does not match, however it was found out."""
    assert isinstance(op.signing, ControlFormula)
    return ApiError(Code.SIGNATURE, "control does not match: " + op.signing.describe())


def _signs_order(
    formula: ControlFormula, signed: dict[str, str], key: str, given: str, amount: int, currency: str
) -> bool:
    return control_matches(formula, {**signed, "amount": str(amount), "currency": currency}, key, given)


# The amounts formulas sign in minor units: a bank wire's VAT as well as the amount.
_SIGNED_IN_MINOR_UNITS = ("amount", "vat-amount")


def signed_values(path_id: str, form: dict[str, str], values: dict[str, Any]) -> dict[str, str]:
    """The texts a formula concatenates: the fields as sent, but amounts in minor units."""
    signed = dict(form)
    signed["endpoint"] = path_id
    for name in _SIGNED_IN_MINOR_UNITS:
        if name in values:
            signed[name] = str(values[name])
    cur = values.get("currency")
    if isinstance(cur, Currency):
        signed["currency"] = cur.code
    return signed


# --- OAuth 1.0a -------------------------------------------------------------------------------------------


async def check_oauth(
    op: Operation,
    endpoint: Endpoint,
    path_id: str,
    services: Services,
    scope: Scope,
    headers: Mapping[str, str],
    body: Sequence[tuple[str, str]],
) -> NonceSpend:
    """CONTRACT §4: the signature method the row names, the endpoint's merchant as consumer key (else code
    3, as a wrong login), the timestamp within the window (code 10), the signature (code 2); what is left
    is the nonce, to spend with the operation's first write (``spend_with``) or alone (``spend``).
    ``body``: the body's pairs as received. Refusals are 401 with ``WWW-Authenticate`` but the login's,
    which is code 3's everywhere."""
    scheme, host = addressed(scope, headers)
    url = oauth.base_url(scheme, host, _raw_path(scope))
    try:
        request = oauth.read_request(url, headers.get("authorization"), body)
    except oauth.Unsigned as unsigned:
        raise _refused(services, Code.SIGNATURE, str(unsigned)) from None
    if request.method != str(op.signing):
        raise _refused(services, Code.SIGNATURE, f"oauth_signature_method must be {op.signing} for this operation")
    if request.consumer_key != endpoint.merchant.login:
        raise ApiError(Code.ENDPOINT, f"oauth_consumer_key does not own endpoint {path_id}")
    window = services.settings.oauth_window
    if not oauth.within_window(request.timestamp, now := now_ms(), window):
        message = f"oauth_timestamp is more than {window} s off the gateway's clock ({now // 1000})"
        raise _refused(services, Code.REPLAY, message)
    key_id = await _verified(services, endpoint, request, url)
    merchant_id, mode = endpoint.merchant.id, endpoint.signing_mode
    return NonceSpend(merchant_id, mode, request.timestamp, request.nonce, key_id)


async def _verified(services: Services, endpoint: Endpoint, request: oauth.SignedRequest, url: str) -> int | None:
    """Refuses a signature that does not verify; the id of the RSA key that verifies it (None: HMAC)."""
    merchant = endpoint.merchant
    if request.method == oauth.HMAC_SHA1:
        if oauth.hmac_sha1_matches(request, merchant.control_key):
            return None
        raise _refused(services, Code.SIGNATURE, f"oauth_signature does not match ({request.method}, {url})")
    key_id = await _rsa_key(services, endpoint, request)
    if key_id is None:
        message = f"oauth_signature does not match a {endpoint.signing_mode} key of {merchant.login} ({url})"
        raise _refused(services, Code.SIGNATURE, message)
    return key_id


@dataclass(frozen=True, slots=True)
class NonceSpend:
    """The nonce of a request whose OAuth signature verified, still to record; ``key_id``: the RSA key
    that verified it (None: HMAC), which must not have been revoked since this process cached it."""

    merchant_id: int
    mode: Mode
    timestamp_s: int
    nonce: str
    key_id: int | None

    @property
    def row(self) -> oauth_nonces.Spend:
        return (self.merchant_id, self.timestamp_s, self.nonce, self.key_id)

    def record(self, conn: Connection) -> bool:
        """One statement: whether the nonce was new and is now recorded (False: a replay, or revoked key)."""
        return oauth_nonces.record(conn, *self.row)


class Refused:
    """What a unit that spends a nonce answers for a replay or a revoked key: it wrote nothing and raised
    nothing (SQLite's group commit reruns a whole batch when a unit raises)."""


_REFUSED = Refused()


async def spend(services: Services, nonce: NonceSpend) -> None:
    """Records the nonce of a request that writes nothing, with those of other such requests."""
    if not await services.nonces.spend(nonce.row):
        raise await _nonce_refusal(services, nonce)


def spent_then(nonce: NonceSpend, change: Callable[[Connection], T], conn: Connection) -> T | Refused:
    """A unit: records the nonce, then runs ``change`` in the same transaction; for a nonce not recorded,
    runs nothing (``accepted`` then raises the refusal, outside the unit)."""
    return change(conn) if nonce.record(conn) else _REFUSED


async def accepted(services: Services, nonce: NonceSpend, done: T | Refused) -> T:
    """What ``spent_then`` answered, or the refusal of its nonce."""
    if isinstance(done, Refused):
        raise await _nonce_refusal(services, nonce)
    return done


async def _nonce_refusal(services: Services, nonce: NonceSpend) -> ApiError:
    """A nonce not recorded was seen, or the key that verified has been revoked since this process cached
    it; a read by key tells those two apart, on the refusal's path only."""
    key_id = nonce.key_id
    if key_id is not None and await services.db.read_point(partial(merchant_keys.is_revoked, key_id=key_id)):
        services.keys.forget(nonce.merchant_id, nonce.mode)
        return _refused(services, Code.SIGNATURE, "oauth_signature was made with a revoked key")
    return _refused(services, Code.REPLAY, "oauth_nonce was used already with this oauth_timestamp")


def idempotent_content(op: Operation, body: bytes, pairs: Sequence[tuple[str, str]]) -> bytes:
    """What a repeat with the same Idempotency-Key must repeat: the body, but an OAuth row's without its
    ``oauth_*`` fields, which change with every signing (a retry signs again: its first nonce is spent)."""
    if isinstance(op.signing, ControlFormula):
        return body
    return urlencode([(name, value) for name, value in pairs if not name.startswith(oauth.PREFIX)]).encode()


async def _rsa_key(services: Services, endpoint: Endpoint, request: oauth.SignedRequest) -> int | None:
    """The id of the merchant's key (for the endpoint's mode) that verifies the request: among those this
    process holds, else among those the database holds now."""
    merchant_id, mode = endpoint.merchant.id, endpoint.signing_mode
    cached = services.keys.cached(merchant_id, mode)
    if cached is not None and (found := _verifying(cached, request)) is not None:
        return found
    return _verifying(await services.keys.reload(merchant_id, mode), request)


def _verifying(keys: Keys, request: oauth.SignedRequest) -> int | None:
    return next((key_id for key_id, key in keys if oauth.rsa_sha256_matches(request, key)), None)


def _refused(services: Services, code: Code, message: str) -> ApiError:
    challenge = f'OAuth realm="{_realm(services)}"'
    return ApiError(code, message, http_status=401, headers={"WWW-Authenticate": challenge})


def _realm(services: Services) -> str:
    """The gateway's public address when the operator set one (KASSA_PUBLIC_URL), else its name: never
    the request's own Host, which would put the client's text in the header."""
    public = services.settings.public_url
    return public.rstrip("/") + services.settings.prefix if public else "kassa"


def _raw_path(scope: Scope) -> str:
    """The path exactly as sent (``//`` and percent-escapes kept), which the client signed; the
    dispatcher matches operations on the decoded path with doubled slashes collapsed."""
    raw: bytes | None = scope.get("raw_path")
    return scope["path"] if raw is None else raw.decode("ascii", errors="replace")
