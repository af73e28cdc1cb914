"""Web UI sessions (auth/ui_sessions.py) on every record store: the session token is stored only
as its digest and the credential never (the static token as a salted scrypt); a session acts as
its credential would now (a live key, the same static token and its tenant, twelve hours at
most); signing out ends it for every copy of the token; and each sign-in deletes sessions that
have ended, so they do not pile up. User pool (JWT) sessions: tests/unit/auth/test_ui_jwt_sessions.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.authenticate import OWNER, Authenticator
from cairn.auth.errors import AuthError
from cairn.auth.options import AuthOptions
from cairn.auth.principal import READ, SCOPES, Principal, Via
from cairn.auth.ui_sessions import LIFETIME, SESSIONS_PK, SWEEP, UiSessions
from cairn.ports.records import RecordStore
from tests.fakes.clock import FakeClock

START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
STATIC = "static-token-for-the-ui-0123456789"
OWNER_OF = {
    tenant: Principal(tenant, OWNER, frozenset(SCOPES), Via.static_token) for tenant in ("local", "acme")
}


def sessions(
    records: RecordStore, clock: FakeClock, static: str | None = STATIC, tenant: str = "local"
) -> UiSessions:
    keys = ApiKeyService(records, clock)
    return UiSessions(records, clock, Authenticator(AuthOptions(token=static, token_tenant=tenant), keys))


def acts_as(ui: UiSessions, token: str) -> Principal | None:
    try:
        return ui.principal(token)
    except AuthError:
        return None


def stored(records: RecordStore) -> list[str]:
    return [json.dumps(item.data) + item.sk for item in records.query(SESSIONS_PK, "").items]


def test_a_session_acts_as_the_static_token_and_stores_neither_token(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)

    token = ui.start(STATIC)

    assert len(token) == 43 and token != STATIC
    assert acts_as(ui, token) == OWNER_OF["local"]
    assert all(token not in row and STATIC not in row for row in stored(records))
    assert acts_as(ui, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert (
        acts_as(ui, "not a token") is None and acts_as(ui, "") is None and acts_as(ui, token + "\n") is None
    )
    with pytest.raises(AuthError):
        ui.start("not-the-static-token")


def test_signing_out_ends_the_session_for_every_copy_and_leaves_others(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)
    first, second = ui.start(STATIC), ui.start(STATIC)

    ui.end(first)
    ui.end(first)  # again: nothing left to end
    ui.end("malformed")

    assert acts_as(ui, first) is None and acts_as(ui, second) == OWNER_OF["local"]
    assert len(stored(records)) == 2  # the second session and its expiry record


def test_a_static_token_session_follows_the_servers_tenant_and_ends_with_its_token(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START)
    token = sessions(records, clock).start(STATIC)

    assert acts_as(sessions(records, clock, STATIC, tenant="acme"), token) == OWNER_OF["acme"]
    assert acts_as(sessions(records, clock), token) == OWNER_OF["local"]
    assert acts_as(sessions(records, clock, "another-static-token-9876543210"), token) is None
    assert acts_as(sessions(records, clock), token) is None  # ended: the token put back brings it not back
    again = sessions(records, clock).start(STATIC)
    assert acts_as(sessions(records, clock, None), again) is None  # no token at all ends it too
    assert acts_as(sessions(records, clock), again) is None


def test_a_key_session_follows_the_key_and_ends_when_it_is_revoked(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock, None)
    keys = ui.authenticator.keys
    made = keys.create(name="ui", tenant="acme", scopes=[READ], brains=["brn_a", "brn_b"])
    token = ui.start(made.plaintext)

    assert acts_as(ui, token) == keys.authenticate(made.plaintext)
    assert all(made.plaintext not in row for row in stored(records))
    keys.forget_brain("brn_a")  # a deleted brain leaves the key's list, and the session's
    held = acts_as(ui, token)
    assert held is not None and held.brains == frozenset({"brn_b"}) and held.via is Via.api_key

    keys.revoke(made.key.id)

    assert acts_as(ui, token) is None


def test_a_session_lasts_twelve_hours(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    ui = sessions(records, clock)
    token = ui.start(STATIC)

    clock.advance(LIFETIME.total_seconds() - 1)
    assert acts_as(ui, token) == OWNER_OF["local"]
    clock.advance(1)
    assert acts_as(ui, token) is None


def test_each_sign_in_deletes_sessions_that_have_ended(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)
    ended = [ui.start(STATIC) for _ in range(SWEEP + 5)]
    clock.advance(LIFETIME.total_seconds() + 1)

    first = ui.start(STATIC)  # deletes SWEEP of the ended ones
    assert len(stored(records)) == 2 * (5 + 1)
    ui.start(STATIC)  # and the rest

    assert len(stored(records)) == 2 * 2
    assert all(acts_as(ui, token) is None for token in ended) and acts_as(ui, first) == OWNER_OF["local"]
