"""Opening an order: its card, the order, its first transaction, the CVV kept until authorization and
what comes next (the processing job, or for a hosted form the form's session and its deadline), in one
database transaction; the card a hosted form collects later; and what the worker given the processing job
is handed with it, so that it does not read back what was just written."""

from __future__ import annotations

import dataclasses

from sqlalchemy import Connection

from kassa.core import risk
from kassa.domain import cards
from kassa.domain.lifecycle import Stage
from kassa.domain.risk import Rule
from kassa.domain.transactions import rule
from kassa.storage import browser_sessions
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.jobs import JobKind
from kassa.storage.orders import AuthorizationWork, NewCard, NewOrder, Started
from kassa.storage.payouts import NewDestination
from kassa.storage.prepared import Record
from kassa.vault.keys import Vault, pan_context
from kassa.vault.tokens import SealedToken


def new_card(vault: Vault, merchant_id: int, pan: str, exp_month: int, exp_year: int, holder_name: str) -> NewCard:
    """The card as stored: the PAN encrypted, BIN and last four in clear for display."""
    return NewCard(
        pan_ciphertext=vault.encrypt(pan, pan_context(merchant_id)),
        pan_fingerprint=vault.fingerprint(pan),
        bin=cards.bin_of(pan),
        last_four=cards.last_four(pan),
        brand=(brand.value if (brand := cards.brand_of(pan)) else None),
        exp_month=exp_month,
        exp_year=exp_year,
        holder_name=holder_name,
    )


def open_order(conn: Connection, new: NewOrder) -> Started:
    """Opens the order ``new`` describes, or finds the one its ``client_orderid`` opened on the endpoint
    before (the unique constraint tells): then nothing is written. An order a risk rule filters ends
    at once (``Started.decided``), with no processing job."""
    rules = risk.rules_for(conn, new.merchant_id, new.endpoint_id)
    if not rules and conn.dialect.name == "postgresql" and new.card and new.cvv_ciphertext and not new.hosted:
        return order_store.insert_card_sale(conn, new, new.card)  # the same rows in one round trip
    started = insert_rows(conn, new)
    if not started.created:
        return started
    return screened_then_next(conn, new, started, rules)


def screened_then_next(conn: Connection, new: NewOrder, started: Started, rules: tuple[Rule, ...]) -> Started:
    """The order screened by ``rules``, then, unless one filtered it (``Started.decided``), its next step.
    A hosted form's card is not known yet: its order is screened when the card is collected
    (``collect_card``)."""
    if rules and not new.hosted:
        started = risk.screen(conn, rules, new, started)
    return started if started.decided else next_step(conn, new, started)


def insert_rows(conn: Connection, new: NewOrder) -> Started:
    """The order's card, the order, its first transaction and the CVV kept for it; or, written nothing,
    the order its ``client_orderid`` opened before (``created`` False)."""
    card_id = new.card_id
    if new.card is not None:
        card_id = order_store.insert_card(conn, new.card, new.merchant_id, new.now_ms)
    order_id = order_store.insert_order(conn, new, card_id)
    if order_id is None:
        return order_store.started_before(conn, new, card_id if new.card is not None else None)
    tx_id = order_store.insert_transaction(
        conn, order_id, new.tx_type, new.amount, new.currency, new.serial, new.now_ms
    )
    if new.cvv_ciphertext is not None:
        order_store.keep_cvv(conn, tx_id, new.cvv_ciphertext)
    return Started(order_id, new.endpoint_id, new.serial, new.request_fingerprint, True, tx_id, card_id=card_id)


def next_step(conn: Connection, new: NewOrder, started: Started) -> Started:
    """What follows an order's opening: its processing job, or a hosted form's session and deadline."""
    if new.form_ttl_ms is None:
        now, tx_id = new.now_ms, started.transaction_id
        job = job_queue.add(conn, JobKind.PROCESS, tx_id, run_at_ms=now, now_ms=now, lease=new.lease)
        return dataclasses.replace(started, job=job)
    deadline = new.now_ms + new.form_ttl_ms
    job_queue.add(conn, JobKind.SESSION_TIMEOUT, started.transaction_id, run_at_ms=deadline, now_ms=new.now_ms)
    return open_form(conn, new, started)


def open_form(conn: Connection, new: NewOrder, started: Started) -> Started:
    """The hosted form's session, behind ``new.form_token``."""
    assert new.form_token is not None and new.form_ttl_ms is not None, "a hosted form's order comes with its token"
    kind, token = SessionKind.FORM, new.form_token
    browser_sessions.open_session(
        conn, kind, started.order_id, started.transaction_id, new.now_ms, new.form_ttl_ms, token
    )
    return dataclasses.replace(started, form_token=token)


def collect_card(
    conn: Connection,
    session: Record,
    order: Record,
    transaction_id: int,
    card: NewCard,
    cvv_ciphertext: bytes | None,
    now_ms: int,
    checkout_ttl_ms: int,
    checkout: SealedToken,
    destination: NewDestination | None = None,
) -> bool:
    """The card a hosted form collected: stored with its CVV (kept until authorization), and with the card
    it pays to when the form collected that too (a transfer's), screened by the risk rules, processing
    queued unless one filtered it, and the checkout page's session opened behind ``checkout`` (it shows the
    outcome). False when the form's session expired or was used already (of two submissions, the
    single-use update lets one through)."""
    if session["expires_at_ms"] < now_ms or not browser_sessions.use_session(conn, session["token_digest"], now_ms):
        return False
    card_id = order_store.insert_card(conn, card, order["merchant_id"], now_ms)
    order_store.set_card(conn, order["id"], card_id)
    if cvv_ciphertext is not None:  # none for the card a payout pays to
        order_store.keep_cvv(conn, transaction_id, cvv_ciphertext)
    if destination is not None:
        payout_store.add_destination(conn, order["id"], destination)
    rules = risk.rules_for(conn, order["merchant_id"], order["endpoint_id"])
    sale = risk.collected_sale(order, card)
    if not (rules and risk.screen_sale(conn, rules, sale, order["id"], transaction_id, now_ms).filtered):
        job_queue.add(conn, JobKind.PROCESS, transaction_id, run_at_ms=now_ms, now_ms=now_ms)
    kind = SessionKind.CHECKOUT
    browser_sessions.open_session(conn, kind, order["id"], transaction_id, now_ms, checkout_ttl_ms, checkout)
    return True


def opened_work(new: NewOrder, started: Started, descriptor: str) -> AuthorizationWork | None:
    """What ``order_store.load_authorization`` would read for the transaction ``new`` just opened with the card it
    sent (on an endpoint with ``descriptor``), made from what was written; None when the order was not opened
    here with such a card (a rebill's stored card, a hosted form, a repeat) or its transaction keeps a
    destination as well."""
    card, card_id = new.card, started.card_id
    if card is None or card_id is None or not started.created or rule(new.tx_type).reads_destination(has_card=True):
        return None
    transaction = {
        "stage": Stage.PROCESSING.value,
        "serial_number": new.serial,
        "tx_type": new.tx_type.value,
        "amount": new.amount,
        "currency": new.currency,
        "three_ds_rules": started.three_ds_rules.value if started.three_ds_rules else None,
    }
    order = {
        "id": started.order_id,
        "merchant_id": new.merchant_id,
        "endpoint_id": new.endpoint_id,
        "card_ref_id": new.card_ref_id,
        "recurring_payment_id": new.recurring_payment_id,
        "recurrent_scenario": new.recurrent_scenario,
        "descriptor": descriptor,
    }
    stored = {
        "id": card_id,
        "brand": card.brand,
        "pan_ciphertext": card.pan_ciphertext,
        "exp_month": card.exp_month,
        "exp_year": card.exp_year,
        "holder_name": card.holder_name,
    }
    return AuthorizationWork(transaction, order, stored, new.cvv_ciphertext)
