"""Runtime settings, read once from the environment (``KASSA_*``).

Each setting is declared once, as a field of ``Settings``: its variable, default, parser (which checks
the value too) and meaning. ``Settings.from_env`` reads them all and refuses the first value it cannot
use, naming the variable; the README's settings table is checked against these declarations
(tests/test_settings.py). Fields are plain attributes: request paths read them.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from kassa import crashpoints
from kassa.domain.operators import PasswordCost
from kassa.vault.keyring import Keyring, KeySource, VaultError, master_key, parse

T = TypeVar("T")
Parser = Callable[[str], T]


class SettingError(ValueError):
    """A variable whose value cannot be used: the message names it and never shows a secret."""


# --- parsers: each returns the value or raises ValueError saying what the value must be ---------------------


def _ranged(convert: Callable[[str], T], rule: str, fits: Callable[[T], bool]) -> Parser[T]:
    """``convert``'s value of the text, refused with ``rule`` when it cannot convert or does not fit."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise ValueError(rule) from None
        if not fits(value):
            raise ValueError(rule)
        return value

    return parse


def integer(low: int, high: int | None = None) -> Parser[int]:
    rule = f"must be a whole number {f'from {low} to {high}' if high is not None else f'of at least {low}'}"
    return _ranged(int, rule, lambda value: low <= value and (high is None or value <= high))


def number(low: float, *, inclusive: bool) -> Parser[float]:
    """A finite decimal number above ``low`` (or from it, when ``inclusive``)."""
    rule = f"must be a number {'of at least' if inclusive else 'above'} {low:g}"
    return _ranged(float, rule, lambda value: math.isfinite(value) and (value >= low if inclusive else value > low))


def choice(*options: str) -> Parser[str]:
    """One of ``options``, in any case; returned as declared."""
    rule = f"must be one of {', '.join(options)}"

    def parse(text: str) -> str:
        if text.upper() not in options:
            raise ValueError(rule)
        return text.upper()

    return parse


_TRUE, _FALSE = frozenset({"1", "true", "yes"}), frozenset({"0", "false", "no"})


def boolean(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError("must be 1 or 0 (or true/false, yes/no)")


def optional(parse: Parser[T]) -> Parser[T | None]:
    """An empty value means unset, as it always has for the settings without a default."""
    return lambda text: parse(text) if text else None


def host_name(value: str) -> str:
    if not value or any(character.isspace() for character in value):
        raise ValueError("must be a host name or IP address")
    return value


def directory(value: str) -> Path:
    if not value.strip():
        raise ValueError("must be a directory path")
    return Path(value)


_TIME_OF_DAY = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def time_of_day(text: str) -> str:
    """``HH:MM``, zero-padded (``9:30`` is read as ``09:30``)."""
    found = _TIME_OF_DAY.fullmatch(text)
    if found is None:
        raise ValueError("must be a time of day HH:MM (00:00 to 23:59)")
    return f"{int(found[1]):02d}:{found[2]}"


_PATH = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")


def url_prefix(text: str) -> str:
    """A path prefix without its trailing slash; ``/`` (or nothing) is the root, stored as ``""``."""
    if _PATH.fullmatch(text) is None:
        raise ValueError("must be a URL path such as /paynet")
    stripped = "/" + text.strip("/")
    return "" if stripped == "/" else stripped


_DATABASE_SCHEMES = ("sqlite:///", "postgresql://", "postgres://", "postgresql+psycopg://")


def database_address(text: str) -> str:
    if not text.startswith(_DATABASE_SCHEMES) or text in _DATABASE_SCHEMES:
        raise ValueError("must be sqlite:///PATH or postgresql://USER@HOST/DATABASE")
    return text


def absolute_url(text: str) -> str:
    rule = "must be an absolute http:// or https:// URL, without query or fragment"
    try:
        parts = urlsplit(text)
    except ValueError:  # a malformed IPv6 host
        raise ValueError(rule) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(rule)
    return text


def networks(text: str) -> tuple[str, ...]:
    """Comma-separated IP addresses or networks (``10.0.0.0/8``, ``::1``), each in its canonical form."""
    found = []
    for part in filter(None, (item.strip() for item in text.split(","))):
        try:
            found.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError:
            raise ValueError("must be IP addresses or networks (CIDR) separated by commas") from None
    return tuple(found)


_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")


def host_literal(text: str) -> str | None:
    """``text`` as a host name or IP address in one form, to compare: lower case, without a final dot, an
    IPv6 address compressed and without brackets; None when it is neither."""
    lowered = text.lower()
    if lowered.startswith("[") and lowered.endswith("]"):
        try:
            return str(ipaddress.IPv6Address(lowered[1:-1]))
        except ValueError:
            return None
    try:
        return str(ipaddress.ip_address(lowered))
    except ValueError:
        pass
    name = lowered.removesuffix(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return None
    return name


def host_names(text: str) -> tuple[str, ...]:
    """Comma-separated host names or IP addresses (``console.ops.example``, ``10.0.0.5``, ``[fd00::7]``), each
    in ``host_literal``'s form."""
    found = []
    for part in filter(None, (item.strip() for item in text.split(","))):
        name = host_literal(part)
        if name is None:
            raise ValueError("must be host names or IP addresses separated by commas, without ports")
        found.append(name)
    return tuple(found)


def listen_address(text: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8081`` for IPv6)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or any(c.isspace() for c in host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("must be HOST:PORT, such as 127.0.0.1:8081")
    return host, int(port)


def base64_key(text: str) -> str:
    master_key(text)  # the vault's own rule, so the two cannot drift apart
    return text


def keyring_text(text: str) -> str:
    parse(text)  # the vault's own rule, as for one key
    return text


# --- how a refused value is shown -------------------------------------------------------------------------


def _as_is(value: str) -> str | None:
    return value if value.isprintable() else repr(value)


def _never(value: str) -> str | None:
    return None


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def _scheme_only(value: str) -> str | None:
    """A database URL may hold a password anywhere after its scheme (or in what only looks like one)."""
    scheme, separator, _ = value.partition("://")
    return f"{scheme}://..." if separator and _SCHEME.fullmatch(scheme) else None


# --- the declaration --------------------------------------------------------------------------------------

Default = str | Callable[[Mapping[str, Any]], str] | None


@dataclass(frozen=True, slots=True)
class Setting:
    variable: str
    default: Default  # text the parser reads when the variable is unset; None: the setting is None
    parse: Parser[Any]
    meaning: str
    shown_default: str  # the default as the README states it
    shown: Callable[[str], str | None]  # a refused value in the message; None: never shown

    def read(self, environ: Mapping[str, str], earlier: Mapping[str, Any]) -> Any:
        value = environ.get(self.variable)
        if value is None:
            if self.default is None:
                return None
            value = self.default if isinstance(self.default, str) else self.default(earlier)
        try:
            return self.parse(value)
        except ValueError as problem:
            shown = self.shown(value)
            named = self.variable if shown is None else f"{self.variable}={shown}"
            raise SettingError(f"{named}: {problem}") from None


def setting(
    variable: str,
    default: Default,
    parse: Parser[T],
    meaning: str,
    *,
    shown_default: str | None = None,
    shown: Callable[[str], str | None] = _as_is,
) -> T:
    """A field of ``Settings`` read from ``variable``; typed by what ``parse`` returns."""
    declared = Setting(variable, default, parse, meaning, shown_default or f"`{default}`", shown)
    return cast(T, field(metadata={"setting": declared}))


def _default_database(earlier: Mapping[str, Any]) -> str:
    return f"sqlite:///{earlier['data_dir'] / 'kassa.db'}"


_SECONDS = number(0, inclusive=False)


def _twice(rate: str) -> Callable[[Mapping[str, Any]], str]:
    """A burst's default: two seconds' worth of the rate declared before it."""
    return lambda earlier: str(max(1, math.ceil(2 * earlier[rate])))


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = setting(  # noqa: RUF009 (``setting`` returns a dataclass field, not a shared default)
        "KASSA_DATA_DIR", "var", directory, "where the default database and the sandbox vault key live"
    )
    database_url: str = setting(
        "KASSA_DATABASE_URL",
        _default_database,
        database_address,
        "SQLite file, or `postgresql://user@host/db` for several processes and machines",
        shown_default="`sqlite:///var/kassa.db` (in `KASSA_DATA_DIR`)",
        shown=_scheme_only,
    )
    vault_key: str | None = setting(
        "KASSA_VAULT_KEY",
        None,
        optional(base64_key),
        "base64 of 32 bytes; set it (the same on every machine) for PostgreSQL deployments",
        shown_default="generated into `var/vault.key` (0600)",
        shown=_never,
    )
    vault_keys: str | None = setting(
        "KASSA_VAULT_KEYS",
        None,
        optional(keyring_text),
        "instead of `KASSA_VAULT_KEY`, several keys for rotation: `2:BASE64,1:BASE64`, each a version and the "
        "base64 of 32 bytes, and `fingerprint:BASE64` once key 1 is retired (see `docs/operations.md`, *Rotating "
        "the vault key*)",
        shown_default="unset",
        shown=_never,
    )
    vault_primary: int | None = setting(
        "KASSA_VAULT_PRIMARY",
        None,
        optional(integer(1, 255)),
        "the version of the key that seals new data; every process must know a key before it is made primary",
        shown_default="the newest key",
    )
    prefix: str = setting("KASSA_PREFIX", "/paynet", url_prefix, "path prefix of the API (`/` allowed)")
    host: str = setting("KASSA_HOST", "127.0.0.1", host_name, "address `kassa serve` listens on (`--host`)")
    port: int = setting("KASSA_PORT", "8080", integer(1, 65535), "port `kassa serve` listens on (`--port`)")
    workers: int = setting(
        "KASSA_WORKERS",
        "1",
        integer(0),
        "job workers inside `kassa serve`; `0` makes an API-only process (jobs, callbacks and time-driven "
        "work then run in `kassa worker`)",
    )
    poll_interval: float = setting(
        "KASSA_POLL_INTERVAL",
        "0.2",
        _SECONDS,
        "seconds between queue claims while work is due and not taken; also how often SQLite's -wal file is"
        " checked for other processes' writes",
    )
    idle_claim_interval: float = setting(
        "KASSA_IDLE_CLAIM_INTERVAL",
        "5",
        _SECONDS,
        "the longest an idle worker or callback dispatcher goes without a claim: the net under a missed signal",
    )
    job_lease_seconds: float = setting(
        "KASSA_JOB_LEASE_SECONDS", "30", _SECONDS, "a job claimed by a worker that died runs again after this"
    )
    job_max_attempts: int = setting(
        "KASSA_JOB_MAX_ATTEMPTS",
        "5",
        integer(1),
        "attempts at a job that keeps failing (an exception, not a decline) before its transaction ends in `error` "
        "(`unknown`, reconciled, when a message of it may have reached an acquirer)",
    )
    job_retry_delay: float = setting(
        "KASSA_JOB_RETRY_DELAY",
        "2",
        _SECONDS,
        "seconds before a failed job's first retry; each further retry waits twice as long",
    )
    sqlite_synchronous: str = setting(
        "KASSA_SQLITE_SYNCHRONOUS",
        "FULL",
        choice("OFF", "NORMAL", "FULL", "EXTRA"),
        "SQLite durability; `NORMAL` survives process crashes but not power loss",
    )
    sqlite_reads_in_place: bool = setting(
        "KASSA_SQLITE_READS_IN_PLACE",
        "1",
        boolean,
        "`0` sends reads by key (status) to the reader threads instead of the event loop: for a database much "
        "larger than memory, where a disk read would stall every request",
    )
    db_threads: int = setting(
        "KASSA_DB_THREADS",
        "16",
        integer(1),
        "threads running database work beside the event loop; on PostgreSQL each process keeps up to twice "
        "this many connections (a pool for writes, one for reads by key): size `max_connections` for all "
        "processes",
    )
    sandbox_latency_ms: int = setting(
        "KASSA_SANDBOX_LATENCY_MS", "0", integer(0), "simulated acquirer latency, in milliseconds"
    )
    reconcile_delay_seconds: float = setting(
        "KASSA_RECONCILE_DELAY_SECONDS", "60", _SECONDS, "when an `unknown` outcome is asked again"
    )
    authorization_ttl_seconds: float = setting(
        "KASSA_AUTHORIZATION_TTL_SECONDS",
        "604800",
        _SECONDS,
        "an authorization never captured is cancelled after this",
        shown_default="`604800` (7 days)",
    )
    settlement_cutoff: str = setting("KASSA_SETTLEMENT_CUTOFF", "00:00", time_of_day, "daily settlement time, UTC")
    scheduler_interval: float = setting(
        "KASSA_SCHEDULER_INTERVAL", "10", _SECONDS, "seconds between checks for time-driven work"
    )
    recurring_retries: int = setting(
        "KASSA_RECURRING_RETRIES",
        "3",
        integer(0, 9),
        "more tries of a recurring payment's declined charge (see `docs/api.md`, recurring payments)",
    )
    recurring_retry_delay_seconds: float = setting(
        "KASSA_RECURRING_RETRY_DELAY_SECONDS",
        "86400",
        _SECONDS,
        "seconds between a recurring charge's try and its retry",
        shown_default="`86400` (a day)",
    )
    callback_timeout: float = setting(
        "KASSA_CALLBACK_TIMEOUT", "10", _SECONDS, "seconds a callback delivery may take (see `docs/callbacks.md`)"
    )
    callback_base_delay: float = setting(
        "KASSA_CALLBACK_BASE_DELAY", "15", _SECONDS, "seconds between a callback's first and second attempts"
    )
    callback_backoff: float = setting(
        "KASSA_CALLBACK_BACKOFF",
        "1.435",
        number(1, inclusive=True),
        "factor by which each further delay between callback attempts grows",
    )
    callback_max_attempts: int = setting(
        "KASSA_CALLBACK_MAX_ATTEMPTS", "30", integer(1), "attempts at a callback before it is marked failed"
    )
    callback_concurrency: int = setting(
        "KASSA_CALLBACK_CONCURRENCY",
        "256",
        integer(1),
        "callbacks a process sends at once, at most (see `docs/callbacks.md`, delivery policy)",
    )
    callback_per_host: int = setting(
        "KASSA_CALLBACK_PER_HOST",
        "16",
        integer(1),
        "callbacks in flight at once to one host and port, across the deployment",
    )
    callback_per_merchant: int = setting(
        "KASSA_CALLBACK_PER_MERCHANT",
        "32",
        integer(1),
        "callbacks of one merchant in flight at once, across the deployment",
    )
    session_ttl_seconds: float = setting(
        "KASSA_SESSION_TTL_SECONDS",
        "1800",
        _SECONDS,
        "lifetime of a hosted form and of a 3-D Secure browser session",
    )
    public_url: str | None = setting(
        "KASSA_PUBLIC_URL",
        None,
        optional(absolute_url),
        "the gateway's public address, for links customers follow",
        shown_default="the request's own address",
    )
    endpoint_cache_seconds: float = setting(
        "KASSA_ENDPOINT_CACHE_SECONDS",
        "2",
        number(0, inclusive=True),
        "how long endpoint settings and risk rules are cached per process",
    )
    address_rate: float = setting(
        "KASSA_ADDRESS_RATE",
        "200",
        number(0, inclusive=True),
        "requests a second one client address may make (API and pages; an IPv6 client's /64), after its burst; "
        "`0` turns the limit off; per process (see *Limits and timeouts* below)",
    )
    address_burst: int = setting(
        "KASSA_ADDRESS_BURST",
        _twice("address_rate"),
        integer(1),
        "requests one client address may make at once before `KASSA_ADDRESS_RATE` applies",
        shown_default="twice the rate",
    )
    merchant_rate: float = setting(
        "KASSA_MERCHANT_RATE",
        "0",
        number(0, inclusive=True),
        "API requests a second to one merchant's endpoints, after its burst, counted before the signature is "
        "checked (so anyone who knows an endpoint id can spend it: pair it with allowed networks); `0`: off",
    )
    merchant_burst: int = setting(
        "KASSA_MERCHANT_BURST",
        _twice("merchant_rate"),
        integer(1),
        "API requests to one merchant at once before `KASSA_MERCHANT_RATE` applies",
        shown_default="twice the rate",
    )
    overload_job_age: float = setting(
        "KASSA_OVERLOAD_JOB_AGE",
        "1",
        number(0, inclusive=True),
        "seconds the oldest due job may wait for a worker before the API refuses operations that open an order "
        "(HTTP 503, code 11, `Retry-After`), until that wait is below half of it; `0`: never (see "
        "`docs/operations.md`, *Overload*)",
    )
    overload_callback_age: float = setting(
        "KASSA_OVERLOAD_CALLBACK_AGE",
        "1",
        number(0, inclusive=True),
        "seconds the oldest due first attempt of a callback may wait for the dispatcher, its destination neither "
        "down nor at its limit in flight, before the API refuses operations that open an order as for "
        "`KASSA_OVERLOAD_JOB_AGE`; `0`: never (see `docs/operations.md`, *Overload*)",
    )
    trusted_proxies: tuple[str, ...] = setting(
        "KASSA_TRUSTED_PROXIES",
        "127.0.0.1,::1",
        networks,
        "comma-separated addresses or networks (CIDR) of reverse proxies whose `X-Forwarded-For`, "
        "`X-Forwarded-Proto` and `X-Forwarded-Host` are believed; empty: none",
    )
    oauth_window: int = setting(
        "KASSA_OAUTH_WINDOW",
        "300",
        integer(1, 3600),
        "seconds an OAuth `oauth_timestamp` may be off the gateway's clock, either way; nonces are kept as long",
    )
    header_timeout: float = setting(
        "KASSA_HEADER_TIMEOUT",
        "10",
        _SECONDS,
        "seconds a connection has to send a request's head (from the connection or the head's first byte); "
        "then it is closed",
    )
    body_timeout: float = setting(
        "KASSA_BODY_TIMEOUT",
        "30",
        _SECONDS,
        "seconds a request's body may take to arrive after its head; then the connection is closed",
    )
    max_header_bytes: int = setting(
        "KASSA_MAX_HEADER_BYTES",
        "16384",
        integer(1024, 1048576),
        "largest request head (request line and headers); a larger one is answered 431 and closed",
    )
    console: tuple[str, int] | None = setting(
        "KASSA_CONSOLE",
        "",
        optional(listen_address),
        "`HOST:PORT` of the operator console's own listener (never the API's); empty: no console, except "
        "`kassa serve --demo` (`make serve`), which opens it at `127.0.0.1:8081`",
        shown_default="empty",
    )
    ops: tuple[str, int] | None = setting(
        "KASSA_OPS",
        "",
        optional(listen_address),
        "`HOST:PORT` of the operations listener: `/metrics` (Prometheus), `/livez`, `/readyz` (never the API's); "
        "empty: none, except `kassa serve --demo` (`make serve`), which opens it at `127.0.0.1:8082`",
        shown_default="empty",
    )
    operator_hosts: tuple[str, ...] = setting(
        "KASSA_OPERATOR_HOSTS",
        "",
        host_names,
        "comma-separated host names (or addresses) the console and the operations listener answer to, besides "
        "their own address (and `localhost` on a loopback one); a request naming another `Host` is answered "
        "421 (see `docs/operations.md`). The API answers any",
        shown_default="empty",
    )
    shutdown_grace: float = setting(
        "KASSA_SHUTDOWN_GRACE",
        "30",
        _SECONDS,
        "seconds a stopping process (SIGTERM) gives requests and jobs in flight before it cuts them off and exits",
    )
    console_idle_minutes: float = setting(
        "KASSA_CONSOLE_IDLE_MINUTES", "30", _SECONDS, "minutes a console session lasts without a request"
    )
    console_session_hours: float = setting(
        "KASSA_CONSOLE_SESSION_HOURS", "12", _SECONDS, "hours a console session lasts at most, busy or not"
    )
    console_lockout_attempts: int = setting(
        "KASSA_CONSOLE_LOCKOUT_ATTEMPTS",
        "5",
        integer(1, 100),
        "failed console sign-ins in a row that lock the operator out (sign-ins running at once count from "
        "when they begin)",
    )
    console_lockout_minutes: float = setting(
        "KASSA_CONSOLE_LOCKOUT_MINUTES",
        "15",
        _SECONDS,
        "minutes a locked-out operator waits (or an admin unlocks them)",
    )
    console_address_attempts: int = setting(
        "KASSA_CONSOLE_ADDRESS_ATTEMPTS",
        "20",
        integer(1, 10000),
        "console sign-ins from one client address (an IPv6 client's /64) that may fail, whichever emails they "
        "name, before more are refused (429); for the whole deployment (see `docs/console.md`)",
    )
    console_address_minutes: float = setting(
        "KASSA_CONSOLE_ADDRESS_MINUTES",
        "15",
        _SECONDS,
        "minutes in which an address's allowance of failed console sign-ins refills, evenly (one more every "
        "minutes / attempts)",
    )
    password_cost: PasswordCost = setting(  # noqa: RUF009 (as data_dir)
        "KASSA_PASSWORD_COST",
        "m=65536,t=3,p=4",
        PasswordCost.parse,
        "Argon2id cost of operators' new password hashes (`m`: KiB of memory, `t`: passes, `p`: lanes), no "
        "less than OWASP's least (`m=7168,t=5,p=1`); a hash of another cost is redone at its next sign-in",
    )
    log_level: str = setting(
        "KASSA_LOG_LEVEL",
        "INFO",
        choice("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        "logs are JSON lines on stderr",
    )
    test_clock: bool = setting(
        "KASSA_TEST_CLOCK",
        "0",
        boolean,
        "tests only: `POST {prefix}/_test/clock` moves the clock forward; refuses live endpoints",
    )
    test_crash_point: str | None = setting(
        "KASSA_TEST_CRASH_POINT",
        "",
        optional(choice(*crashpoints.POINTS)),
        "tests only, with `KASSA_TEST_CLOCK=1`: the process kills itself (SIGKILL) when it reaches this point "
        "(`kassa/crashpoints.py`)",
        shown_default="none",
    )
    test_fail_point: str | None = setting(
        "KASSA_TEST_FAIL_POINT",
        "",
        optional(choice(*crashpoints.POINTS)),
        "tests only, with `KASSA_TEST_CLOCK=1`: each unit of work that reaches this point fails with an error "
        "(`kassa/crashpoints.py`)",
        shown_default="none",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Every setting from ``environ`` (the process's environment by default); raises ``SettingError``."""
        source = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, declared in declarations():
            values[name] = declared.read(source, values)
        settings = cls(**values)
        settings.configured_keyring()
        return settings

    @property
    def vault_key_file(self) -> Path:
        return self.data_dir / "vault.key"

    @property
    def vault_source(self) -> KeySource:
        """Where this process's vault keys come from (``vault.keys.load_vault``)."""
        variable = "KASSA_VAULT_KEYS" if self.vault_keys else "KASSA_VAULT_KEY"
        return KeySource(self.vault_keys or self.vault_key, variable, self.vault_key_file, self.vault_primary)

    def configured_keyring(self) -> Keyring | None:
        """The keyring the environment gives (None: the key file's, read when the vault is loaded), checked
        whole: a primary it lacks or a fingerprint key it cannot give stops every command here."""
        if self.vault_key and self.vault_keys:
            raise SettingError(
                "KASSA_VAULT_KEYS: set it or KASSA_VAULT_KEY, not both (KASSA_VAULT_KEY is key 1: write it as "
                "1:BASE64 among KASSA_VAULT_KEYS)"
            )
        source = self.vault_source
        if source.configured is None:
            return None
        try:
            return Keyring.of(parse(source.configured), source.primary)
        except VaultError as problem:
            raise SettingError(f"{source.variable}: {problem}") from None


def declarations() -> Iterator[tuple[str, Setting]]:
    """Each field of ``Settings`` with its declaration, in declared order."""
    for declared in fields(Settings):
        yield declared.name, declared.metadata["setting"]
