"""What each operator role may do (every role may do what the one below it may), and what costs a password
hash may be set to."""

from __future__ import annotations

import pytest

from kassa.domain.operators import Action, PasswordCost, Role


@pytest.mark.parametrize("action", list(Action))
def test_an_admin_may_do_every_action(action: Action) -> None:
    assert Role.ADMIN.may(action)


def test_support_redelivers_callbacks_but_changes_nothing_else() -> None:
    allowed = {a for a in Action if Role.SUPPORT.may(a)}
    assert allowed == {Action.REDELIVER, Action.SIGN_IN, Action.SIGN_OUT}


def test_a_viewer_may_only_sign_in_and_out() -> None:
    assert {a for a in Action if Role.VIEWER.may(a)} == {Action.SIGN_IN, Action.SIGN_OUT}


def test_every_action_has_its_own_audit_code() -> None:
    codes = [a.code for a in Action]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("text", ["m=65536,t=3,p=4", "m=7168,t=5,p=1", "m=19456,t=2,p=1", " m=2097152,t=1,p=4 "])
def test_a_password_cost_at_or_above_owasps_least_is_taken_as_written(text: str) -> None:
    assert str(PasswordCost.parse(text)) == text.strip()


@pytest.mark.parametrize(
    "text",
    [
        "m=7168,t=4,p=1",
        "m=4096,t=10,p=1",
        "m=19456,t=1,p=1",
        "m=65536,t=3,p=0",
        "m=65536,t=3,p=17",
        "m=65536,t=3",
        "t=3,m=65536,p=4",
        "m=65536, t=3, p=4",
        "",
        "65536,3,4",
    ],
)
def test_a_password_cost_below_owasps_least_or_not_so_written_is_refused_saying_what_it_must_be(text: str) -> None:
    with pytest.raises(ValueError, match="m at least 7168, m times t at least 35840"):
        PasswordCost.parse(text)
