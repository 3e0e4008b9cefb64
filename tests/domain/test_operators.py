"""What each operator role may do: every role may do what the one below it may."""

from __future__ import annotations

import pytest

from kassa.domain.operators import Action, Role


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
