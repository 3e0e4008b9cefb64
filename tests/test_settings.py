"""Settings (kassa/settings.py): each declared once, checked when read, and documented in the README as
declared. A value a command cannot use stops it before it starts, naming the variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kassa.settings import SettingError, Settings, declarations
from tests.support.gateway import TEST_VAULT_KEY, Gateway, cli_run

README = Path(__file__).parent.parent / "README.md"


def refusal(**environ: str) -> str:
    with pytest.raises(SettingError) as refused:
        Settings.from_env(environ)
    return str(refused.value)


# --- defaults and accepted values -----------------------------------------------------------------------


def test_unset_variables_take_their_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.data_dir == Path("var")
    assert settings.database_url == "sqlite:///var/kassa.db"
    assert (settings.vault_key, settings.public_url) == (None, None)
    assert (settings.prefix, settings.host, settings.port, settings.workers) == ("/paynet", "127.0.0.1", 8080, 1)
    assert (settings.settlement_cutoff, settings.log_level, settings.sqlite_synchronous) == ("00:00", "INFO", "FULL")
    assert settings.sqlite_reads_in_place is True
    assert (settings.callback_backoff, settings.callback_max_attempts) == (1.435, 30)
    assert settings.authorization_ttl_seconds == 7 * 86400


def test_job_retries_are_settings_like_callback_retries() -> None:
    assert (Settings.from_env({}).job_max_attempts, Settings.from_env({}).job_retry_delay) == (5, 2.0)
    tuned = Settings.from_env({"KASSA_JOB_MAX_ATTEMPTS": "3", "KASSA_JOB_RETRY_DELAY": "0.25"})
    assert (tuned.job_max_attempts, tuned.job_retry_delay) == (3, 0.25)


def test_a_burst_defaults_to_two_seconds_of_its_rate() -> None:
    assert Settings.from_env({"KASSA_ADDRESS_RATE": "2.5"}).address_burst == 5
    assert Settings.from_env({"KASSA_MERCHANT_RATE": "0"}).merchant_burst == 1


def test_default_database_lives_in_the_data_dir() -> None:
    assert Settings.from_env({"KASSA_DATA_DIR": "/srv/kassa"}).database_url == "sqlite:////srv/kassa/kassa.db"


@pytest.mark.parametrize(
    ("variable", "value", "read_as"),
    [
        ("KASSA_SETTLEMENT_CUTOFF", "23:59", "23:59"),
        ("KASSA_SETTLEMENT_CUTOFF", "9:30", "09:30"),
        ("KASSA_LOG_LEVEL", "debug", "DEBUG"),
        ("KASSA_SQLITE_SYNCHRONOUS", "normal", "NORMAL"),
        ("KASSA_SQLITE_READS_IN_PLACE", "0", False),
        ("KASSA_SQLITE_READS_IN_PLACE", "no", False),
        ("KASSA_SQLITE_READS_IN_PLACE", "False", False),
        ("KASSA_SQLITE_READS_IN_PLACE", "yes", True),
        ("KASSA_SQLITE_READS_IN_PLACE", "true", True),
        ("KASSA_PREFIX", "/", ""),
        ("KASSA_PREFIX", "", ""),
        ("KASSA_PREFIX", "gateway/v1/", "/gateway/v1"),
        ("KASSA_WORKERS", "0", 0),  # an API-only process
        ("KASSA_ENDPOINT_CACHE_SECONDS", "0", 0.0),
        ("KASSA_SANDBOX_LATENCY_MS", "0", 0),
        ("KASSA_CALLBACK_BACKOFF", "1", 1.0),
        ("KASSA_PORT", "65535", 65535),
        ("KASSA_DATABASE_URL", "postgresql://kassa@db.internal/kassa", "postgresql://kassa@db.internal/kassa"),
        ("KASSA_PUBLIC_URL", "https://pay.example.com/gateway", "https://pay.example.com/gateway"),
        ("KASSA_PUBLIC_URL", "", None),
        ("KASSA_VAULT_KEY", TEST_VAULT_KEY, TEST_VAULT_KEY),
        ("KASSA_VAULT_KEY", "", None),
        ("KASSA_TRUSTED_PROXIES", "", ()),
        ("KASSA_TRUSTED_PROXIES", " 10.0.0.0/8, 2001:db8::1 ", ("10.0.0.0/8", "2001:db8::1/128")),
        ("KASSA_ADDRESS_RATE", "0", 0.0),
        ("KASSA_ADDRESS_BURST", "1", 1),
        ("KASSA_OPERATOR_HOSTS", "", ()),
        (
            "KASSA_OPERATOR_HOSTS",
            " Console.Ops.example., [fd00::7] ,10.0.0.5",
            ("console.ops.example", "fd00::7", "10.0.0.5"),
        ),
    ],
)
def test_accepted_values_are_read_in_their_usual_form(variable: str, value: str, read_as: object) -> None:
    field = next(name for name, declared in declarations() if declared.variable == variable)
    assert getattr(Settings.from_env({variable: value}), field) == read_as


# --- refusals -----------------------------------------------------------------------------------------------

_HOSTS_RULE = "must be host names or IP addresses separated by commas, without ports"


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("KASSA_SETTLEMENT_CUTOFF", "24:00", "must be a time of day HH:MM (00:00 to 23:59)"),
        ("KASSA_SETTLEMENT_CUTOFF", "12:60", "must be a time of day HH:MM (00:00 to 23:59)"),
        ("KASSA_SETTLEMENT_CUTOFF", "noon", "must be a time of day HH:MM (00:00 to 23:59)"),
        ("KASSA_PORT", "0", "must be a whole number from 1 to 65535"),
        ("KASSA_PORT", "65536", "must be a whole number from 1 to 65535"),
        ("KASSA_PORT", "http", "must be a whole number from 1 to 65535"),
        ("KASSA_WORKERS", "-1", "must be a whole number of at least 0"),
        ("KASSA_DB_THREADS", "0", "must be a whole number of at least 1"),
        ("KASSA_DB_THREADS", "2.5", "must be a whole number of at least 1"),
        ("KASSA_SANDBOX_LATENCY_MS", "-5", "must be a whole number of at least 0"),
        ("KASSA_JOB_MAX_ATTEMPTS", "0", "must be a whole number of at least 1"),
        ("KASSA_CALLBACK_MAX_ATTEMPTS", "0", "must be a whole number of at least 1"),
        ("KASSA_POLL_INTERVAL", "0", "must be a number above 0"),
        ("KASSA_POLL_INTERVAL", "nan", "must be a number above 0"),
        ("KASSA_SCHEDULER_INTERVAL", "inf", "must be a number above 0"),
        ("KASSA_JOB_RETRY_DELAY", "-1", "must be a number above 0"),
        ("KASSA_JOB_LEASE_SECONDS", "soon", "must be a number above 0"),
        ("KASSA_SESSION_TTL_SECONDS", "0", "must be a number above 0"),
        ("KASSA_ENDPOINT_CACHE_SECONDS", "-1", "must be a number of at least 0"),
        ("KASSA_CALLBACK_BACKOFF", "0.9", "must be a number of at least 1"),
        ("KASSA_LOG_LEVEL", "LOUD", "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("KASSA_SQLITE_SYNCHRONOUS", "SOMETIMES", "must be one of OFF, NORMAL, FULL, EXTRA"),
        ("KASSA_SQLITE_READS_IN_PLACE", "maybe", "must be 1 or 0 (or true/false, yes/no)"),
        ("KASSA_PREFIX", "/pay net", "must be a URL path such as /paynet"),
        ("KASSA_PREFIX", "/paynet?x=1", "must be a URL path such as /paynet"),
        ("KASSA_HOST", "", "must be a host name or IP address"),
        ("KASSA_DATA_DIR", "", "must be a directory path"),
        ("KASSA_PUBLIC_URL", "pay.example.com", "must be an absolute http:// or https:// URL"),
        ("KASSA_PUBLIC_URL", "ftp://pay.example.com", "must be an absolute http:// or https:// URL"),
        ("KASSA_PUBLIC_URL", "https://pay.example.com/?a=1", "must be an absolute http:// or https:// URL"),
        ("KASSA_TRUSTED_PROXIES", "10.0.0.0/33", "must be IP addresses or networks (CIDR) separated by commas"),
        ("KASSA_TRUSTED_PROXIES", "proxy.internal", "must be IP addresses or networks (CIDR) separated by commas"),
        ("KASSA_ADDRESS_RATE", "-1", "must be a number of at least 0"),
        ("KASSA_MERCHANT_BURST", "0", "must be a whole number of at least 1"),
        ("KASSA_HEADER_TIMEOUT", "0", "must be a number above 0"),
        ("KASSA_MAX_HEADER_BYTES", "100", "must be a whole number from 1024 to 1048576"),
        ("KASSA_OPERATOR_HOSTS", "console.ops.example:8081", _HOSTS_RULE),
        ("KASSA_OPERATOR_HOSTS", "*.ops.example", _HOSTS_RULE),
        ("KASSA_OPERATOR_HOSTS", "https://console.ops.example", _HOSTS_RULE),
        ("KASSA_PASSWORD_COST", "m=8192,t=1,p=1", "must be m=<KiB>,t=<passes>,p=<lanes>, m at least 7168"),
    ],
)
def test_unusable_value_is_refused_naming_the_variable_and_the_value(variable: str, value: str, problem: str) -> None:
    assert refusal(**{variable: value}).startswith(f"{variable}={value}: {problem}")


def test_refused_vault_key_is_never_shown() -> None:
    short_key = "c2VjcmV0LWJ1dC1zaG9ydA=="  # base64 of 16 bytes
    message = refusal(KASSA_VAULT_KEY=short_key)
    assert message == "KASSA_VAULT_KEY: must be the base64 of 32 bytes"
    assert refusal(KASSA_VAULT_KEY="not base64!") == message


def test_refused_vault_keys_are_never_shown() -> None:
    short_key = "c2VjcmV0LWJ1dC1zaG9ydA=="
    assert refusal(KASSA_VAULT_KEYS=f"2:{short_key},1:{TEST_VAULT_KEY}") == (
        "KASSA_VAULT_KEYS: key 2 must be the base64 of 32 bytes"
    )


def test_several_vault_keys_are_read_with_the_newest_primary_unless_one_is_named() -> None:
    keys = f"1:{TEST_VAULT_KEY},2:{TEST_VAULT_KEY}"
    newest = Settings.from_env({"KASSA_VAULT_KEYS": keys})
    named = Settings.from_env({"KASSA_VAULT_KEYS": keys, "KASSA_VAULT_PRIMARY": "1"})
    found = [settings.configured_keyring() for settings in (newest, named)]
    assert [keyring.primary for keyring in found if keyring is not None] == [2, 1]
    assert Settings.from_env({}).configured_keyring() is None  # the key file's, read when the vault is loaded


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://kassa:hunter2@db/kassa", "KASSA_DATABASE_URL=mysql://...: must be sqlite:///PATH or "),
        ("kassa:hunter2@db/kassa", "KASSA_DATABASE_URL: must be sqlite:///PATH or "),
        ("sqlite://hunter2@kassa.db", "KASSA_DATABASE_URL=sqlite://...: must be sqlite:///PATH or "),
        ("kassa:hunter2@db://kassa", "KASSA_DATABASE_URL: must be sqlite:///PATH or "),
    ],
)
def test_refused_database_url_shows_its_scheme_at_most(url: str, message: str) -> None:
    refused = refusal(KASSA_DATABASE_URL=url)
    assert refused.startswith(message)
    assert "hunter2" not in refused


# --- from outside: the commands -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("serve",), ("worker",), ("db", "upgrade"), ("merchant", "list")])
def test_command_with_an_unusable_setting_stops_at_start_with_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    gateway = Gateway(f"sqlite:///{tmp_path / 'kassa.db'}", tmp_path, extra_env={"KASSA_SETTLEMENT_CUTOFF": "24:00"})
    done = cli_run(gateway, *command)
    assert done.returncode == 1
    assert done.stderr == "Error: KASSA_SETTLEMENT_CUTOFF=24:00: must be a time of day HH:MM (00:00 to 23:59)\n"
    assert done.stdout == ""
    assert not (tmp_path / "kassa.db").exists()  # nothing ran: not even the migrations


def test_gateway_of_the_tests_has_usable_settings(tmp_path: Path) -> None:
    gateway = Gateway(f"sqlite:///{tmp_path / 'kassa.db'}", tmp_path)
    Settings.from_env(gateway.env)


# --- the README -------------------------------------------------------------------------------------------


def _readme_settings_table() -> list[tuple[str, ...]]:
    """The rows under ``| variable | default | meaning |``: each cell as written, trimmed."""
    lines = README.read_text().splitlines()
    start = lines.index("| variable | default | meaning |") + 2  # past the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]))
    return rows


def test_readme_lists_every_setting_as_declared() -> None:
    """Each row is exactly ``| `VARIABLE` | default as declared for the README | meaning |``, in declared
    order; on a mismatch the message is the table to paste."""
    declared = [(f"`{s.variable}`", s.shown_default, s.meaning) for _, s in declarations()]
    table = "\n".join(f"| {' | '.join(row)} |" for row in declared)
    assert _readme_settings_table() == declared, f"README.md's settings table should read:\n{table}"


def test_readme_default_literals_are_what_an_unset_variable_reads_as() -> None:
    """Where the README's default starts with a literal (`...`), an unset variable reads as that literal;
    the other defaults are prose (what happens when the variable is unset)."""
    unset = Settings.from_env({})
    for name, declared in declarations():
        literal = re.match(r"`([^`]*)`", declared.shown_default)
        if literal is not None:
            assert getattr(unset, name) == declared.parse(literal[1]), declared.variable
