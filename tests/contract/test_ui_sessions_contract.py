"""Web UI sessions (auth/ui_sessions.py) on every record store: the token is stored only as its
digest; a session acts as what signed it in for as long as that holds (a live key, the same static
token, an unexpired user pool token, twelve hours at most); signing out ends it for every copy of
the token; and each sign-in deletes sessions that have ended, so they do not pile up."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.auth.ui_sessions import LIFETIME, SESSIONS_PK, SWEEP, UiSessions
from cairn.ports.records import RecordStore
from tests.fakes.clock import FakeClock

START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
STATIC = "static-token-for-the-ui-0123456789"
OWNER = Principal("local", "owner", frozenset({READ, WRITE, ADMIN}), Via.static_token)


def sessions(records: RecordStore, clock: FakeClock, static: str | None = STATIC) -> UiSessions:
    return UiSessions(records, clock, ApiKeyService(records, clock), static)


def stored(records: RecordStore) -> list[str]:
    page = records.query(SESSIONS_PK, "")
    return [json.dumps(item.data) + item.sk for item in page.items]


def jwt_with_exp(exp: datetime) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'sub': 'u1', 'exp': int(exp.timestamp())})}.c2ln"


def test_a_session_acts_as_the_static_token_and_stores_neither_token(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)

    token = ui.start(STATIC, OWNER)

    assert len(token) == 43 and token != STATIC
    assert ui.principal(token) == OWNER
    assert all(token not in row and STATIC not in row for row in stored(records))
    assert ui.principal(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert ui.principal("not a token") is None and ui.principal("") is None


def test_signing_out_ends_the_session_for_every_copy_and_leaves_others(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)
    first, second = ui.start(STATIC, OWNER), ui.start(STATIC, OWNER)

    ui.end(first)
    ui.end(first)  # again: nothing left to end
    ui.end("malformed")

    assert ui.principal(first) is None and ui.principal(second) == OWNER
    assert len(stored(records)) == 2  # the second session and its expiry record


def test_another_static_token_configured_ends_the_sessions_of_the_old(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    token = sessions(records, clock).start(STATIC, OWNER)

    assert sessions(records, clock, "another-static-token-9876543210").principal(token) is None
    assert sessions(records, clock, None).principal(token) is None
    assert sessions(records, clock).principal(token) == OWNER


def test_a_key_session_follows_the_key_and_ends_when_it_is_revoked(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    keys = ApiKeyService(records, clock)
    made = keys.create(name="ui", tenant="acme", scopes=[READ], brains=["brn_a", "brn_b"])
    principal = keys.authenticate(made.plaintext)
    assert principal is not None
    ui = UiSessions(records, clock, keys, None)
    token = ui.start(made.plaintext, principal)

    assert ui.principal(token) == principal
    assert all(made.plaintext not in row for row in stored(records))
    keys.forget_brain("brn_a")  # a deleted brain leaves the key's list, and the session's
    held = ui.principal(token)
    assert held is not None and held.brains == frozenset({"brn_b"}) and held.via is Via.api_key

    keys.revoke(made.key.id)

    assert ui.principal(token) is None


def test_a_session_lasts_twelve_hours_or_until_its_user_pool_token_expires(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)
    user = Principal("acme", "u1", frozenset({READ}), Via.jwt)
    owner = ui.start(STATIC, OWNER)
    hour = ui.start(jwt_with_exp(START + timedelta(hours=1)), user)
    long = ui.start(jwt_with_exp(START + timedelta(days=3)), user)

    clock.advance(3599)
    assert ui.principal(hour) == user and ui.principal(owner) == OWNER
    clock.advance(1)
    assert ui.principal(hour) is None and ui.principal(long) == user
    clock.advance(LIFETIME.total_seconds() - 3600 - 1)
    assert ui.principal(owner) == OWNER and ui.principal(long) == user
    clock.advance(1)
    assert ui.principal(owner) is None and ui.principal(long) is None


def test_each_sign_in_deletes_sessions_that_have_ended(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    ui = sessions(records, clock)
    ended = [ui.start(STATIC, OWNER) for _ in range(SWEEP + 5)]
    clock.advance(LIFETIME.total_seconds() + 1)

    first = ui.start(STATIC, OWNER)  # deletes SWEEP of the ended ones
    assert len(stored(records)) == 2 * (5 + 1)
    ui.start(STATIC, OWNER)  # and the rest

    assert len(stored(records)) == 2 * 2
    assert all(ui.principal(token) is None for token in ended) and ui.principal(first) == OWNER
