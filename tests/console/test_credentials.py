"""Operators' credentials: Argon2id hashes, one-time codes accepted once and only near their time, and
CSRF tokens bound to their session."""

from __future__ import annotations

import pyotp
import pytest
from argon2 import PasswordHasher

from kassa.console import credentials
from kassa.domain.operators import PasswordCost
from kassa.settings import Settings

NOW_S = 1_795_000_000
LEAST = PasswordCost.parse("m=7168,t=5,p=1")
DEFAULT = Settings.from_env({}).password_cost


def test_a_password_is_kept_as_an_argon2id_hash_that_verifies_it() -> None:
    stored = credentials.hash_password("correct horse battery", LEAST)
    assert stored.startswith("$argon2id$")
    assert credentials.password_matches(stored, "correct horse battery", LEAST)
    assert not credentials.password_matches(stored, "correct horse battery!", LEAST)


def test_a_short_password_is_refused() -> None:
    with pytest.raises(credentials.WeakPassword):
        credentials.hash_password("short", LEAST)


def test_no_operator_matches_no_password() -> None:
    assert not credentials.password_matches(None, "", LEAST)
    assert not credentials.password_matches(None, "anything at all", LEAST)


def test_a_code_of_this_step_or_a_neighbour_is_accepted_once() -> None:
    secret = credentials.new_totp_secret()
    totp = pyotp.TOTP(secret)
    step = NOW_S // 30
    assert credentials.totp_step(secret, totp.at(NOW_S), NOW_S, None) == step
    assert credentials.totp_step(secret, totp.at(NOW_S - 30), NOW_S, None) == step - 1
    assert credentials.totp_step(secret, totp.at(NOW_S + 30), NOW_S, None) == step + 1
    assert credentials.totp_step(secret, totp.at(NOW_S), NOW_S, step) is None  # seen once
    assert credentials.totp_step(secret, totp.at(NOW_S + 30), NOW_S, step) == step + 1


def test_a_code_two_steps_away_or_malformed_is_refused() -> None:
    secret = credentials.new_totp_secret()
    assert credentials.totp_step(secret, pyotp.TOTP(secret).at(NOW_S - 90), NOW_S, None) is None
    assert credentials.totp_step(secret, "12345", NOW_S, None) is None
    assert credentials.totp_step(secret, "abcdef", NOW_S, None) is None


def test_a_csrf_token_belongs_to_its_session() -> None:
    one, other = credentials.new_session_token(), credentials.new_session_token()
    assert credentials.csrf_matches(one, credentials.csrf_token(one))
    assert not credentials.csrf_matches(other, credentials.csrf_token(one))
    assert not credentials.csrf_matches(one, "")


def test_sessions_are_stored_by_hash_alone() -> None:
    token = credentials.new_session_token()
    assert token not in credentials.token_hash(token)
    assert len(credentials.token_hash(token)) == 64


def test_a_hash_made_at_another_cost_verifies_with_its_own_and_the_default_stays_rfc_9106s() -> None:
    cheaper = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash("correct horse battery")
    assert credentials.password_matches(cheaper, "correct horse battery", DEFAULT)
    assert not credentials.password_matches(cheaper, "correct horse battery!", DEFAULT)
    assert credentials.hash_password("correct horse battery", DEFAULT).split("$")[3] == "m=65536,t=3,p=4"


def test_a_hash_is_made_at_the_cost_set_and_redone_only_when_made_at_another() -> None:
    stored = credentials.hash_password("correct horse battery", LEAST)
    assert stored.split("$")[3] == "m=7168,t=5,p=1"
    assert credentials.rehashed(stored, "correct horse battery", LEAST) is None
    redone = credentials.rehashed(stored, "correct horse battery", DEFAULT)
    assert redone is not None and redone.split("$")[3] == "m=65536,t=3,p=4"
    assert credentials.password_matches(redone, "correct horse battery", DEFAULT)
