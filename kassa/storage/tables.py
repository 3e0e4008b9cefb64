"""Table definitions (SQLAlchemy Core). Times are integer epoch milliseconds; money is integer minor units."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL wants BIGINT for int64 ids.
Id = BigInteger().with_variant(Integer(), "sqlite")

merchants = Table(
    "merchants",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("login", String(64), nullable=False, unique=True),
    # The key that signs and checks ``control``, under the vault (``control-key/merchant/{id}``): the
    # gateway needs the key itself, so it is encrypted, not hashed. ``control_key`` holds a key in clear
    # only from before migration 0009, until the next start seals it (``storage/sealing.py``).
    Column("control_key_sealed", LargeBinary),
    Column("control_key", String(128)),
    Column("classic", Boolean, nullable=False, default=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("allowed_networks", Text),  # comma-separated CIDR; NULL: requests from anywhere
    sqlite_autoincrement=True,
)

# Endpoints and endpoint groups share one number space, so they share one table (`kind`).
endpoints = Table(
    "endpoints",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("currency", String(3)),
    Column("mode", String(16), nullable=False, default="sandbox"),
    Column("classic", Boolean, nullable=False, default=False),
    Column("descriptor", String(64), nullable=False, default=""),
    Column("min_amount", BigInteger),
    Column("max_amount", BigInteger),
    Column("multi_capture", Boolean, nullable=False, default=False),
    Column("enabled", Boolean, nullable=False, default=True),
    Column("created_at_ms", BigInteger, nullable=False),
    # Seconds within which a follow-up repeating an earlier one's signed values gets its answer (0: off).
    Column("replay_window_seconds", Integer, nullable=False, default=0, server_default="0"),
    # The action codes that send a first authorization on to the route's next connection, as
    # ``domain.routing.parse_cascade`` reads them; NULL for CONTRACT §16's default.
    Column("cascade_codes", String(64)),
    sqlite_autoincrement=True,
)

group_members = Table(
    "group_members",
    metadata,
    Column("group_id", ForeignKey("endpoints.id"), primary_key=True),
    Column("endpoint_id", ForeignKey("endpoints.id"), primary_key=True),
)

# What endpoints' payments are sent to (CONTRACT §15, ``domain/acquirers.py``): the built-in sandbox (a row
# named ``sandbox``, migration 0022), or an ISO 8583 link, whose settings columns a sandbox row leaves NULL.
# ``secret_sealed`` is an optional secret of the link (a TLS client private key, a MAC key), sealed by the
# vault (``acquirer-secret/connection/{id}``) and never shown back. Connections are disabled, never deleted.
acquirer_connections = Table(
    "acquirer_connections",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),  # sandbox, iso8583
    Column("host", String(253)),
    Column("port", Integer),
    Column("tls", Boolean),
    Column("acquiring_institution_id", String(11)),  # field 32
    Column("terminal_id", String(8)),  # field 41
    Column("card_acceptor_id", String(15)),  # field 42
    Column("mcc", String(4)),  # field 18
    Column("response_timeout_ms", Integer),
    Column("sockets", Integer),  # per process
    Column("dialect", String(32)),
    Column("secret_sealed", LargeBinary),
    Column("enabled", Boolean, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# An endpoint's route: its connections in the order payments try them (§16), position 1 first, each with the
# conditions it takes payments on, written as operators write them (``domain.routing``; NULL: any payment).
endpoint_connections = Table(
    "endpoint_connections",
    metadata,
    Column("endpoint_id", ForeignKey("endpoints.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("connection_id", ForeignKey("acquirer_connections.id"), nullable=False),
    Column("conditions", String(2000)),  # NULL: none
    UniqueConstraint("endpoint_id", "connection_id", name="uq_endpoint_connections_connection"),
    Index("ix_endpoint_connections_connection", "connection_id"),  # which endpoints use a connection
)

cards = Table(
    "cards",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("pan_ciphertext", LargeBinary, nullable=False),
    Column("pan_fingerprint", String(64), nullable=False),
    Column("bin", String(6), nullable=False),
    Column("last_four", String(4), nullable=False),
    Column("brand", String(16)),
    Column("exp_month", Integer, nullable=False),
    Column("exp_year", Integer, nullable=False),
    Column("holder_name", String(128), nullable=False, default=""),
    Column("created_at_ms", BigInteger, nullable=False),
    Index("ix_cards_fingerprint", "merchant_id", "pan_fingerprint"),
    Index("ix_cards_last_four", "last_four"),  # the console's search by last four
    sqlite_autoincrement=True,
)

orders = Table(
    "orders",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("endpoint_id", ForeignKey("endpoints.id"), nullable=False),
    Column("client_orderid", String(128), nullable=False),
    Column("tx_type", String(32), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("card_id", ForeignKey("cards.id")),
    # The card reference a rebill charged (no cardholder present). No foreign key: card_refs refers to
    # orders already, and a cycle of keys would complicate every migration.
    Column("card_ref_id", BigInteger),
    # The recurring payment whose charge this order is (``recurring_charges`` names the try).
    Column("recurring_payment_id", BigInteger),
    # A rebill's merchant-initiated scenario (REGULAR, IRREGULAR), sent to the acquirer as the MIT indicator.
    Column("recurrent_scenario", String(16)),
    # A rebill's lower amounts to try after a decline, in minor units, highest first ("800,500"): each try
    # sets the order's and its transaction's amount (``domain.rebills``, ``core.rebills.next_try``).
    Column("enumerate_amounts", String(256)),
    Column("email", String(254), nullable=False, default=""),
    Column("order_desc", Text, nullable=False, default=""),
    Column("customer", Text, nullable=False, default="{}"),
    Column("redirect_url", Text),
    Column("server_callback_url", Text),
    Column("notify_url", Text),
    Column("merchant_data", Text),
    Column("request_fingerprint", String(64), nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    # The endpoint's mode when the order was made, never changed after: the ledger and balance its money
    # moves on. Sandbox and live money meet nowhere, even when an endpoint later changes its mode. Every
    # insert names it (from the endpoint's row); the default is for the rows of before migration 0016.
    Column("mode", String(16), nullable=False, server_default="sandbox"),
    UniqueConstraint("endpoint_id", "client_orderid", name="uq_orders_endpoint_client_orderid"),
    Index("ix_orders_merchant_created", "merchant_id", "created_at_ms"),
    # The console's searches across merchants: by client_orderid, by card, by date.
    Index("ix_orders_client_orderid", "client_orderid"),
    Index("ix_orders_card", "card_id"),
    Index("ix_orders_created", "created_at_ms"),
    sqlite_autoincrement=True,
)

# A stored card's reference (CONTRACT §13), made from an approved order, one per order; the merchant's
# alone. Rebills charge the card it names.
card_refs = Table(
    "card_refs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("card_id", ForeignKey("cards.id"), nullable=False),
    Column("order_id", ForeignKey("orders.id"), nullable=False, unique=True),
    Column("created_at_ms", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# Recurring payments (CONTRACT §13): a stored card charged on a schedule (create-recurring-payment), or
# without one, the tokenised card a create-card-ref v4 answers with (``origin_card_ref_id``). The id is the
# ``recurring-payment-id``. ``charges_made`` is the number of the last regular charge, ``next_charge_at_ms``
# when the next is due (NULL: none is).
recurring_payments = Table(
    "recurring_payments",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("endpoint_id", ForeignKey("endpoints.id"), nullable=False),
    Column("client_orderid", String(128)),  # NULL for a create-card-ref v4's
    Column("card_id", ForeignKey("cards.id"), nullable=False),
    Column("card_ref_id", BigInteger),  # the reference it charges, when made on one
    Column("origin_card_ref_id", BigInteger, unique=True),  # the reference a create-card-ref v4 made it for
    Column("amount", BigInteger),
    Column("currency", String(3)),
    Column("order_desc", Text, nullable=False, default=""),
    Column("email", String(254), nullable=False, default=""),
    Column("server_callback_url", Text),
    Column("notify_url", Text),
    Column("merchant_data", Text),
    Column("request_fingerprint", String(64)),
    Column("period", String(8)),
    Column("interval", Integer),
    Column("start_date", String(10)),
    Column("finish_date", String(10)),
    Column("max_count", Integer),
    Column("status", String(16), nullable=False),
    Column("charges_made", Integer, nullable=False, default=0),
    Column("charges_approved", Integer, nullable=False, default=0),
    Column("charges_declined", Integer, nullable=False, default=0),  # every try of the charge failed
    Column("next_charge_at_ms", BigInteger),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    UniqueConstraint("endpoint_id", "client_orderid", name="uq_recurring_payments_endpoint_client_orderid"),
    Index("ix_recurring_payments_due", "next_charge_at_ms"),
    Index("ix_recurring_payments_merchant", "merchant_id", "id"),
    sqlite_autoincrement=True,
)

# Each try of each charge of a recurring payment: the unique key (payment, charge number, try number) is
# claimed in the same database transaction that opens the try's order, so no charge is ever made twice,
# by two processes or after a crash. ``order_id`` is NULL when the try's client_orderid was taken.
recurring_charges = Table(
    "recurring_charges",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("recurring_payment_id", ForeignKey("recurring_payments.id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("try_number", Integer, nullable=False),  # 0: the charge's first try
    Column("order_id", ForeignKey("orders.id")),
    Column("due_at_ms", BigInteger, nullable=False),
    Column("state", String(16), nullable=False),
    Column("retry_at_ms", BigInteger),  # with state retry_due: when the next try is due
    Column("created_at_ms", BigInteger, nullable=False),
    UniqueConstraint("recurring_payment_id", "number", "try_number", name="uq_recurring_charges_try"),
    Index("ix_recurring_charges_state", "state", "retry_at_ms"),
    sqlite_autoincrement=True,
)

transactions = Table(
    "transactions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("order_id", ForeignKey("orders.id"), nullable=False),
    Column("serial_number", String(36), nullable=False, unique=True),
    Column("tx_type", String(32), nullable=False),
    Column("stage", String(32), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("error_code", String(16)),
    Column("error_message", Text),
    Column("approval_code", String(16)),
    Column("processor_rrn", String(32)),
    Column("processor_tx_id", String(64)),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    Column("settled_at_ms", BigInteger),
    # A first authorization above a 3-D Secure rule's amount (``risk_three_ds`` names the rules): enforce,
    # the issuer is asked for a challenge and the payment is filtered when it offers no authentication;
    # dry-run, it is only counted then (migration 0030).
    Column("three_ds_rules", String(16)),
    Index("ix_transactions_order", "order_id", "id"),
    # Transactions by stage and type in id order: settlement's unsettled money and the open authorizations
    # that may expire, read in batches by id.
    Index("ix_transactions_expiry", "stage", "tx_type", "id"),
    # An acquirer's reference, as its chargeback reports name an order (migration 0026).
    Index("ix_transactions_processor_rrn", "processor_rrn"),
    sqlite_autoincrement=True,
)

# Secrets that must outlive the request only until authorization ends (the CVV), encrypted by the vault.
transient_secrets = Table(
    "transient_secrets",
    metadata,
    Column("transaction_id", ForeignKey("transactions.id"), primary_key=True),
    Column("cvv_ciphertext", LargeBinary, nullable=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("run_at_ms", BigInteger, nullable=False),
    Column("lease_owner", String(64)),
    Column("lease_until_ms", BigInteger),
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at_ms", BigInteger, nullable=False),
    Index("ix_jobs_run_at", "run_at_ms"),
    Index("ix_jobs_kind_run_at", "kind", "run_at_ms"),  # the queue figures of a scrape, per kind
    # Leased rows only: when the next lease runs out, for an idle worker's sleep (migration 0021).
    Index(
        "ix_jobs_leased",
        "lease_until_ms",
        sqlite_where=text("lease_until_ms IS NOT NULL"),
        postgresql_where=text("lease_until_ms IS NOT NULL"),
    ),
    sqlite_autoincrement=True,
)

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("account", String(16), nullable=False),
    # Sandbox and live money are two ledgers: an entry's mode is its order's (sandbox for an operator's
    # adjustment), and a posting never mixes them. The default is for the rows of before migration 0016.
    Column("mode", String(16), nullable=False, server_default="sandbox"),
    Column("amount", BigInteger, nullable=False),  # signed minor units
    Column("order_id", ForeignKey("orders.id")),  # none for an operator's adjustment
    Column("transaction_id", ForeignKey("transactions.id")),  # none for settlement
    Column("adjustment_id", ForeignKey("balance_adjustments.id", name="fk_ledger_entries_adjustment")),
    Column("posting", String(36), nullable=False),  # the entries of one posting share it and sum to zero
    Column("created_at_ms", BigInteger, nullable=False),
    Index("ix_ledger_order", "order_id", "account"),
    Index("ix_ledger_merchant", "merchant_id", "currency", "account"),
    sqlite_autoincrement=True,
)

# A merchant's balance per currency and mode: the sums of its ledger's ``settled`` (available) and
# ``reserved`` accounts in that mode, kept by every posting on them. Payouts of one merchant, currency and
# mode serialize on its row; a live payout can only ever take from the live row.
balances = Table(
    "balances",
    metadata,
    Column("merchant_id", ForeignKey("merchants.id"), primary_key=True),
    Column("currency", String(3), primary_key=True),
    Column("mode", String(16), primary_key=True),
    Column("available", BigInteger, nullable=False),
    Column("reserved", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
)

# An operator's credit (positive) or debit of a sandbox balance, with the reason given.
balance_adjustments = Table(
    "balance_adjustments",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# Where a payout goes when it is not a card (a card destination is the order's card): the destination's
# fields under the vault, as JSON, and its number masked for display. ``recipient_name`` is the masked
# name the sandbox's name check found for a phone payout.
payout_destinations = Table(
    "payout_destinations",
    metadata,
    Column("order_id", ForeignKey("orders.id"), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("details_ciphertext", LargeBinary, nullable=False),
    Column("masked", String(64), nullable=False),
    Column("recipient_name", String(128)),
)

# Answers to requests carrying an Idempotency-Key, replayed byte for byte within 24 hours.
idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("merchant_id", ForeignKey("merchants.id"), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("request_hash", String(64), nullable=False),
    Column("status_code", Integer),  # none while the first request is still running
    Column("content_type", String(64)),
    Column("body", LargeBinary),
    Column("created_at_ms", BigInteger, nullable=False),
)

# Periodic tasks shared by every worker process: a node runs a task after moving its next run on.
schedule = Table(
    "schedule",
    metadata,
    Column("task", String(32), primary_key=True),
    Column("next_run_at_ms", BigInteger, nullable=False),
)

# The callback outbox: written in the same transaction as the status change it reports.
callbacks = Table(
    "callbacks",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("order_id", ForeignKey("orders.id"), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("kind", String(16), nullable=False),  # server_callback or notify
    Column("url", Text, nullable=False),
    Column("fields", Text, nullable=False),  # JSON of the query fields, control added at delivery
    Column("state", String(16), nullable=False),  # pending, delivered, failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at_ms", BigInteger, nullable=False),
    Column("lease_owner", String(64)),
    Column("lease_until_ms", BigInteger),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("delivered_at_ms", BigInteger),
    # What the delivery limits count in flight (leased) callbacks by: ``domain.callbacks.destination`` of
    # the URL, and the order's merchant (set on every row since migration 0007).
    Column("destination", String(255), nullable=False, server_default=text("''")),
    Column("merchant_id", ForeignKey("merchants.id")),
    # Set while the callback may be claimed (pending, not leased, no earlier one of its order to its URL
    # pending): 0 for a first attempt, 1 for a retry. A claim reads its destination's next rows by
    # ``ix_callbacks_queue``, which holds these rows only (migration 0018).
    Column("lane", SmallInteger),
    Index("ix_callbacks_due", "state", "next_attempt_at_ms"),
    Index("ix_callbacks_order", "order_id", "url", "id"),
    # Leased rows only (since migration 0018): what the limits count, and all a lease changes.
    Index(
        "ix_callbacks_destination_lease",
        "destination",
        "lease_until_ms",
        sqlite_where=text("lease_until_ms IS NOT NULL"),
        postgresql_where=text("lease_until_ms IS NOT NULL"),
    ),
    Index(
        "ix_callbacks_merchant_lease",
        "merchant_id",
        "lease_until_ms",
        sqlite_where=text("lease_until_ms IS NOT NULL"),
        postgresql_where=text("lease_until_ms IS NOT NULL"),
    ),
    Index(
        "ix_callbacks_queue",
        "destination",
        "lane",
        "next_attempt_at_ms",
        "id",
        sqlite_where=text("lane IS NOT NULL"),
        postgresql_where=text("lane IS NOT NULL"),
    ),
    # Leased rows only: a claim finds the leases that ran out without reading the queue.
    Index(
        "ix_callbacks_leased",
        "lease_until_ms",
        sqlite_where=text("lease_until_ms IS NOT NULL"),
        postgresql_where=text("lease_until_ms IS NOT NULL"),
    ),
    sqlite_autoincrement=True,
)

# The head of each destination's callback queue, kept in the same transaction as the callbacks: when its
# next first attempt and its next retry may go out (NULL: none waits), and its outage (``domain.callbacks.
# Outage``). A claim walks the destinations due by these two columns instead of ranking every due callback.
callback_destinations = Table(
    "callback_destinations",
    metadata,
    Column("destination", String(255), primary_key=True),
    Column("first_at_ms", BigInteger),
    Column("retry_at_ms", BigInteger),
    Column("failures", Integer, nullable=False),
    Column("failed_at_ms", BigInteger, nullable=False),
    Column("probe_at_ms", BigInteger, nullable=False),
    Index("ix_callback_destinations_first", "first_at_ms", "destination"),
    Index("ix_callback_destinations_retry", "retry_at_ms", "destination"),
)

callback_attempts = Table(
    "callback_attempts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("callback_id", ForeignKey("callbacks.id"), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("url", Text, nullable=False),
    Column("http_status", Integer),
    Column("error", Text),
    Column("latency_ms", Integer, nullable=False),
    Column("response_excerpt", Text),  # the start of the answer's body, printable text only (migration 0015)
    Index("ix_callback_attempts_callback", "callback_id", "id"),
    sqlite_autoincrement=True,
)

# Browser sessions: a hosted form (single use) or the checkout page that drives 3-D Secure.
browser_sessions = Table(
    "browser_sessions",
    metadata,
    # The token a page's URL carries is stored only as its SHA-256 (the key) and sealed under the vault
    # (``vault/tokens.py``). ``token`` holds a token in clear only from before migration 0009, until the
    # next start seals it (``storage/sealing.py``).
    Column("token_digest", String(64), primary_key=True),
    Column("token_sealed", LargeBinary),
    Column("token", String(64)),
    Column("kind", String(16), nullable=False),  # form or checkout
    Column("order_id", ForeignKey("orders.id"), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Column("used_at_ms", BigInteger),
    Column("created_at_ms", BigInteger, nullable=False),
    Index("ix_browser_sessions_transaction", "transaction_id", "kind"),
)

# Hosted Fields (CONTRACT §18): an ephemeral ticket the merchant's server asked for, and once the payer's
# card was tokenized with it, the token and the card it stands for. Ticket and token are kept as their
# SHA-256 only. The card is sealed as an order's card is (the PAN under the merchant's context, the CVV
# under the ticket's) and cleared when a sale uses the token or the ticket expires; the row itself goes a
# day after expiry (``storage/hosted_fields.prune``), so that a late use can still be told "expired".
hosted_fields_tickets = Table(
    "hosted_fields_tickets",
    metadata,
    Column("ticket_digest", String(64), primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("endpoint_id", BigInteger, nullable=False),  # as addressed: an endpoint or a group
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Column("spent_at_ms", BigInteger),  # tokenized, or the card number refused (code 4004)
    Column("token_digest", String(64), unique=True),
    Column("pan_ciphertext", LargeBinary),
    Column("pan_fingerprint", String(64)),
    Column("bin", String(8)),
    Column("last_four", String(4)),
    Column("brand", String(16)),
    Column("exp_month", Integer),
    Column("exp_year", Integer),
    Column("cvv_ciphertext", LargeBinary),
    Column("used_at_ms", BigInteger),  # a sale used the token
    Column("order_id", ForeignKey("orders.id")),
    Index("ix_hosted_fields_tickets_expiry", "expires_at_ms"),
)

# The EMV 3-D Secure (or 1.0.2) authentication of a transaction, kept for operators.
three_ds = Table(
    "three_ds",
    metadata,
    Column("transaction_id", ForeignKey("transactions.id"), primary_key=True),
    Column("version", String(8), nullable=False),  # 2.2.0 or 1.0.2
    Column("path", String(32), nullable=False),  # the issuer's path: method-frictionless, challenge, ...
    Column("step", String(16), nullable=False),  # method, challenge, done
    Column("server_trans_id", String(36), nullable=False, unique=True),
    Column("acs_trans_id", String(36), nullable=False, unique=True),
    Column("ds_trans_id", String(36)),  # the directory server's (2.x); 1.0.2 has no directory server id
    Column("comp_ind", String(1)),
    Column("trans_status", String(1)),
    Column("eci", String(2)),
    Column("authentication_value", String(64)),
    Column("challenge_code", String(8)),
    Column("method_notified", Boolean, nullable=False, default=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
)

# Merchants' RSA public keys for OAuth RSA-SHA256 (CONTRACT §4), per mode (sandbox, live); several may be
# active at once for rotation. A revoked key keeps its row, and its fingerprint may not be registered again
# for the merchant in either mode: a key once revoked is assumed compromised, and sandbox and live keys
# stay separate.
merchant_keys = Table(
    "merchant_keys",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("public_key_pem", Text, nullable=False),  # SubjectPublicKeyInfo, whatever form was registered
    Column("fingerprint", String(64), nullable=False),  # SHA-256 of the SPKI DER, lower-case hex
    Column("bits", Integer, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("revoked_at_ms", BigInteger),
    UniqueConstraint("merchant_id", "fingerprint", name="uq_merchant_keys_fingerprint"),
    Index("ix_merchant_keys_merchant_mode", "merchant_id", "mode"),
    sqlite_autoincrement=True,
)

# OAuth nonces seen (RFC 5849 §3.3): a (merchant, oauth_timestamp, oauth_nonce) is accepted once. Rows whose
# timestamp is older than the window are pruned (``engine/scheduler.py``): such a request is refused for its
# timestamp before its nonce is looked at.
oauth_nonces = Table(
    "oauth_nonces",
    metadata,
    Column("merchant_id", ForeignKey("merchants.id"), primary_key=True),
    Column("timestamp_s", BigInteger, primary_key=True),
    Column("nonce", String(128), primary_key=True),
    Index("ix_oauth_nonces_timestamp", "timestamp_s"),
)

# The people who run the gateway, for the operator console (never merchants: their credentials open
# nothing here). Passwords are Argon2id hashes; the TOTP secret is sealed by the vault
# (``totp/operator/{id}``) since the console must read it back to check a code.
operators = Table(
    "operators",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("email", String(254), nullable=False, unique=True),  # lower case
    Column("role", String(16), nullable=False),  # viewer, support, admin
    Column("password_hash", Text, nullable=False),
    Column("totp_sealed", LargeBinary),
    Column("totp_last_step", BigInteger),  # the 30-second step of the last code accepted: each code works once
    Column("failed_signins", Integer, nullable=False, default=0),
    Column("locked_until_ms", BigInteger),
    Column("disabled_at_ms", BigInteger),
    Column("created_at_ms", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# Signed-in console sessions. The cookie holds a random token; only its SHA-256 is stored, so a copy of
# the database signs no one in.
operator_sessions = Table(
    "operator_sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("operator_id", ForeignKey("operators.id"), nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("last_seen_at_ms", BigInteger, nullable=False),
    Index("ix_operator_sessions_operator", "operator_id"),
)

# What each client address (an IPv6 client's /64) may still try at the console's sign-in, shared by every
# process: a GCRA (kassa/ratelimit.py), whose theoretical arrival time ``tat_ms`` is the moment the address's
# allowance is whole again. ``noted_until_ms``: until when the refusals of its latest run of them are in the
# audit log already. A row whose times have passed is the same as none, and is deleted.
sign_in_addresses = Table(
    "sign_in_addresses",
    metadata,
    Column("address", String(64), primary_key=True),
    Column("tat_ms", BigInteger, nullable=False),
    Column("noted_until_ms", BigInteger),
    Index("ix_sign_in_addresses_tat", "tat_ms"),
)

# Every state-changing action of an operator (console or CLI), and every refused attempt at one. Triggers
# (migration 0014) refuse UPDATE and DELETE: the log only grows.
audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at_ms", BigInteger, nullable=False),
    Column("actor", String(254), nullable=False),  # the operator's email, or cli:{os user}
    Column("action", String(64), nullable=False),
    Column("target", String(128), nullable=False, default=""),
    Column("outcome", String(16), nullable=False),  # done, refused
    Column("before", Text),  # JSON
    Column("after", Text),  # JSON
    Column("address", String(64), nullable=False, default=""),
    Index("ix_audit_log_actor", "actor", "id"),
    Index("ix_audit_log_action", "action", "id"),
    sqlite_autoincrement=True,
)

# The financial messages sent to acquirers over ISO 8583, each recorded before it goes out (its id is its
# RRN, field 37), and how it ended: sent, answered, unanswered (being reversed or repeated), reversed,
# unsent (no socket was signed on), or abandoned (unanswered 24 hours). ``storage/acquirer_messages.py``.
acquirer_messages = Table(
    "acquirer_messages",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("connection_id", ForeignKey("acquirer_connections.id"), nullable=False),
    Column("mti", String(4), nullable=False),
    Column("processing_code", String(6), nullable=False),
    Column("stan", String(6), nullable=False),
    Column("sent_at_ms", BigInteger, nullable=False),  # fields 7, 12 and 13 are this moment
    Column("state", String(16), nullable=False),
    Column("response_code", String(2)),
    Column("approval_code", String(6)),  # field 38 of an approving answer
    # The transaction's amount when the message went out: each amount a rebill tries (``enumerate_amounts``)
    # is a try of its own. None on the rows of before migration 0031.
    Column("amount", BigInteger),
    Column("repeats", Integer, nullable=False),  # reversals or advice repetitions sent
    Column("updated_at_ms", BigInteger, nullable=False),
    Index("ix_acquirer_messages_transaction", "transaction_id", "id"),
    Index("ix_acquirer_messages_state", "state", "connection_id"),
    sqlite_autoincrement=True,
)

# Each connection's STAN sequence: a process reserves a block of numbers at a time.
acquirer_stans = Table(
    "acquirer_stans",
    metadata,
    Column("connection_id", ForeignKey("acquirer_connections.id"), primary_key=True),
    Column("next", BigInteger, nullable=False),
)

# Each gateway process's view of each ISO 8583 link it opened (``domain/link_status.py``), rewritten every
# few seconds by the process (``engine/link_reports.py``) and deleted when it stops; a row not rewritten
# for ``STALE_MS`` is a process that died, and readers leave it out. ``process`` names the process
# (``runtime.process_identity``: its machine, pid and a random part). ``storage/link_states.py``.
acquirer_link_states = Table(
    "acquirer_link_states",
    metadata,
    Column("connection_id", ForeignKey("acquirer_connections.id"), primary_key=True),
    Column("process", String(255), primary_key=True),
    Column("sockets", Integer, nullable=False),  # configured
    Column("signed_on", Integer, nullable=False),
    Column("in_flight", Integer, nullable=False),
    Column("last_error", String(300)),  # which socket and why, never a message's content
    Column("last_error_at_ms", BigInteger),
    Column("updated_at_ms", BigInteger, nullable=False),
)

# The disputes behind chargebacks (CONTRACT §16): each names the ``chargeback`` transaction it made on its
# order, the scheme's reason code and the day the acquirer reported it. ``dedup_key`` (order, reason, day,
# amount) makes a line imported twice one dispute. A dispute won credits its amount back to the merchant's
# balance once, as the adjustment it names. ``storage/chargebacks.py``.
chargebacks = Table(
    "chargebacks",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("order_id", ForeignKey("orders.id"), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False, unique=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason_code", String(8), nullable=False),
    Column("disputed_on", String(10), nullable=False),  # YYYY-MM-DD, as the acquirer reported it
    Column("dedup_key", String(128), nullable=False, unique=True),
    Column("state", String(8), nullable=False),  # open, won, lost
    Column("opened_by", String(254), nullable=False),  # cli:{os user}, or an operator's email
    Column("created_at_ms", BigInteger, nullable=False),
    Column("closed_by", String(254)),
    Column("closed_at_ms", BigInteger),
    Column("adjustment_id", ForeignKey("balance_adjustments.id")),  # a won dispute's credit
    Index("ix_chargebacks_state", "state", "disputed_on", "id"),
    sqlite_autoincrement=True,
)

# Risk rules (docs/risk.md): block lists, velocity limits and 3-D Secure amounts screening an endpoint's or
# a merchant's first authorizations as their orders are opened. A rule is disabled, never deleted: orders
# name it.
risk_rules = Table(
    "risk_rules",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),  # domain.risk.Kind
    Column("mode", String(16), nullable=False),  # enforce, dry-run
    Column("merchant_id", ForeignKey("merchants.id")),  # the scope: one of these two
    Column("endpoint_id", ForeignKey("endpoints.id")),
    Column("entries", Text, nullable=False, default="[]"),  # a block list's, JSON
    Column("per", String(16)),  # a limit's: card, email, ip
    Column("limit_value", BigInteger),  # sales (count), minor units (sum, or the amount of three-ds-above)
    Column("window_ms", BigInteger),
    Column("currency", String(3)),  # a sum's, a three-ds-above's
    Column("note", String(200), nullable=False, default=""),
    Column("created_by", String(254), nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("disabled_at_ms", BigInteger),
    sqlite_autoincrement=True,
)

# A velocity limit's sales per key (a digest of the card's fingerprint, the e-mail or the IP address) and
# bucket (a twelfth of the window): a sale reads its key's buckets of the window by this primary key.
risk_velocity = Table(
    "risk_velocity",
    metadata,
    Column("rule_id", ForeignKey("risk_rules.id"), primary_key=True),
    Column("key", BigInteger, primary_key=True),  # the first 64 bits of a digest (storage.risk.key_digest)
    Column("bucket_ms", BigInteger, primary_key=True),
    Column("count", BigInteger, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Index("ix_risk_velocity_age", "rule_id", "bucket_ms"),  # the scheduler's pruning of buckets out of the window
    sqlite_with_rowid=False,  # a key's buckets read from the primary key's B-tree, not through it to the table
)

# The orders a rule filtered, or in dry-run would have: which rule filtered an order, a rule's counts.
risk_hits = Table(
    "risk_hits",
    metadata,
    Column("rule_id", ForeignKey("risk_rules.id"), primary_key=True),
    Column("order_id", ForeignKey("orders.id"), primary_key=True),
    Column("dry_run", Boolean, nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Index("ix_risk_hits_rule_time", "rule_id", "at_ms"),
    Index("ix_risk_hits_order", "order_id"),
)

# The 3-D Secure rules whose amount a first authorization is above, marked as its order is opened: the
# worker reads them when the card's issuer offers no authentication (``transactions.three_ds_rules``).
risk_three_ds = Table(
    "risk_three_ds",
    metadata,
    Column("transaction_id", ForeignKey("transactions.id"), primary_key=True),
    Column("rule_id", ForeignKey("risk_rules.id"), primary_key=True),
)
