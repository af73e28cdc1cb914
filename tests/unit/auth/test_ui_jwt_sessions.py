"""Web UI sessions started with a user pool's token (auth/ui_sessions.py, auth/binding.py): the
session keeps the verified claims and the signing key's id, never the token, and on each request
is answered as the same token in an `Authorization` header would be under the server's settings
then: a signing key the issuer dropped, another tenant claim, or no issuer at all ends it, and it
lasts as long as the token (with the verifier's leeway)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.authenticate import Authenticator
from cairn.auth.binding import Binding
from cairn.auth.errors import AuthError
from cairn.auth.ui_sessions import SESSIONS_PK, UiSessions
from cairn.bootstrap.options import auth_options
from cairn.config import Settings
from cairn.ports.records import Item, RecordStore
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore
from tests.unit.auth.fakes import FakeIssuer
from tests.unit.auth.tokens import AUDIENCE, ISSUER, SigningKey, claims, jwks


def authenticator(records: RecordStore, issuer: FakeIssuer | None, **settings: Any) -> Authenticator:
    """The server's authenticator as its settings make it (a restart with other settings: a new one)."""
    jwt = {"jwt_issuer": ISSUER, "jwt_audience": [AUDIENCE]} if issuer is not None else {"token": "t" * 32}
    configured = Settings(data_dir="/nonexistent-cairn", **{**jwt, **settings})  # type: ignore[arg-type]
    http = httpx.Client(transport=httpx.MockTransport(issuer.handle)) if issuer is not None else None
    return Authenticator(auth_options(configured), ApiKeyService(records, FakeClock()), http=http)


def wall_clock() -> FakeClock:
    return FakeClock(start=datetime.fromtimestamp(time.time(), UTC), tick=timedelta(0))


def user_token(key: SigningKey, **overrides: Any) -> str:
    return key.sign(claims(now=time.time(), **overrides))


def refused(auth: Authenticator, ui: UiSessions, session: str, token: str) -> bool:
    """Whether the session and the same token in a header are both refused."""
    outcomes = []
    for attempt in (lambda: ui.principal(session), lambda: auth.authenticate(f"Bearer {token}")):
        try:
            attempt()
            outcomes.append(False)
        except AuthError:
            outcomes.append(True)
    assert outcomes[0] == outcomes[1], outcomes
    return outcomes[0]


def test_a_session_acts_as_the_token_and_keeps_no_token(rsa1: SigningKey) -> None:
    records, issuer = MemoryRecordStore(), FakeIssuer(jwks(rsa1))
    auth = authenticator(records, issuer)
    ui = UiSessions(records, wall_clock(), auth)
    token = user_token(rsa1)

    session = ui.start(token)

    assert ui.principal(session) == auth.authenticate(f"Bearer {token}")
    rows = [json.dumps(item.data) for item in records.query(SESSIONS_PK, "").items]
    assert rows and all(token not in row and token.split(".")[2] not in row for row in rows)


def test_a_sign_in_looks_at_the_token_once(rsa1: SigningKey, monkeypatch: pytest.MonkeyPatch) -> None:
    """The principal and the session's binding come from one verification: no second look that
    could answer otherwise (the issuer's keys changing between them)."""
    auth = authenticator(MemoryRecordStore(), FakeIssuer(jwks(rsa1)))
    token = user_token(rsa1)
    verifier = auth._jwt
    looks = []
    real = verifier.verify
    monkeypatch.setattr(verifier, "verify", lambda t: looks.append(t) or real(t))

    principal, binding = auth.bind(token)

    assert looks == [token]
    assert principal == auth.authenticate(f"Bearer {token}") and binding.via == "jwt"
    assert auth.recall(binding) == principal


def test_a_signing_key_the_issuer_dropped_ends_the_session(rsa1: SigningKey, rsa2: SigningKey) -> None:
    records = MemoryRecordStore()
    token = user_token(rsa1)
    session = UiSessions(records, wall_clock(), authenticator(records, FakeIssuer(jwks(rsa1)))).start(token)

    rotated = authenticator(records, FakeIssuer(jwks(rsa2)))  # the issuer now signs with rsa2 only

    assert refused(rotated, UiSessions(records, wall_clock(), rotated), session, token)


@pytest.mark.parametrize(
    "settings",
    [
        {"jwt_tenant_claim": "org"},
        {"jwt_audience": ["https://another.example.test/mcp"]},
        {"no_issuer": True},
    ],
)
def test_settings_that_would_refuse_the_token_end_the_session(
    rsa1: SigningKey, settings: dict[str, Any]
) -> None:
    records, issuer = MemoryRecordStore(), FakeIssuer(jwks(rsa1))
    token = user_token(rsa1)
    session = UiSessions(records, wall_clock(), authenticator(records, issuer)).start(token)

    later = (
        authenticator(records, None)
        if settings.pop("no_issuer", False)
        else authenticator(records, issuer, **settings)
    )

    assert refused(later, UiSessions(records, wall_clock(), later), session, token)


def test_the_session_lasts_as_long_as_the_token_with_the_verifiers_leeway(rsa1: SigningKey) -> None:
    records, now = MemoryRecordStore(), time.time()
    clock = FakeClock(start=datetime.fromtimestamp(now, UTC), tick=timedelta(0))
    ui = UiSessions(records, clock, authenticator(records, FakeIssuer(jwks(rsa1))))
    session = ui.start(user_token(rsa1, exp=int(now) + 300))
    late = ui.start(user_token(rsa1, iat=int(now) - 400, exp=int(now) - 30))  # taken in the leeway

    assert ui.principal(late).subject == "user-1"
    clock.advance(int(now) + 300 + 59 - now)
    assert ui.principal(session).subject == "user-1"
    clock.advance(1)
    with pytest.raises(AuthError):
        ui.principal(session)
    with pytest.raises(AuthError):
        ui.principal(late)


def test_a_key_replaced_under_the_same_kid_ends_the_session(rsa1: SigningKey, rsa2: SigningKey) -> None:
    records = MemoryRecordStore()
    token = user_token(rsa1)
    session = UiSessions(records, wall_clock(), authenticator(records, FakeIssuer(jwks(rsa1)))).start(token)
    impostor = SigningKey(rsa1.kid, rsa1.alg, rsa2.private)  # the issuer swapped the key, kept the kid

    swapped = authenticator(records, FakeIssuer(jwks(impostor)))

    assert refused(swapped, UiSessions(records, wall_clock(), swapped), session, token)


def test_claims_past_what_a_float_or_the_json_parser_takes_are_refused_not_raised(rsa1: SigningKey) -> None:
    auth = authenticator(MemoryRecordStore(), FakeIssuer(jwks(rsa1)))
    huge = rsa1.sign(claims(now=time.time(), exp=10**400))
    nested = "[" * 100_000 + "]" * 100_000
    payload = json.dumps(claims(now=time.time())).replace('"scope": ', f'"scope": {nested}, "x": ', 1)
    deep = jwt.api_jws.encode(payload.encode(), rsa1.private, algorithm="RS256", headers={"kid": rsa1.kid})

    for token in (huge, deep):
        with pytest.raises(AuthError):
            auth.authenticate(f"Bearer {token}")


def test_a_session_record_this_release_cannot_read_is_no_session(rsa1: SigningKey) -> None:
    records = MemoryRecordStore()
    ui = UiSessions(records, wall_clock(), authenticator(records, FakeIssuer(jwks(rsa1))))
    session = ui.start(user_token(rsa1))
    (item,) = records.query(SESSIONS_PK, "session#").items
    naive = {**item.data, "expires_at": "2999-01-01T00:00:00"}  # no time zone: hand-edited
    records.put(Item(item.pk, item.sk, naive))
    with pytest.raises(AuthError):
        ui.principal(session)
    no_exp = {k: v for k, v in item.data["binding"]["claims"].items() if k != "exp"}
    records.put(Item(item.pk, item.sk, {**item.data, "binding": {**item.data["binding"], "claims": no_exp}}))
    with pytest.raises(AuthError):
        ui.principal(session)


PERSONAL = {
    "email": "ada@example.test",
    "name": "Ada Lovelace",
    "phone_number": "+44 20 7946 0000",
    "custom:department": "analytical-engines",
}


class ReadClaims(dict[str, Any]):
    """Claims that record every name read from them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return super().__contains__(name)


# Tokens and settings that make the checks and the mapping read each kind of claim.
VARIANTS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {"nbf": 0, "libs": ["brn_a"]}),
    ({"jwt_user_groups": True}, {"username": "ada", "cognito:groups": ["documents:read"], "scp": "x"}),
    ({"jwt_user_groups": True}, {"cognito:username": "ada", "cognito:groups": ["documents:read"]}),
    ({"jwt_audience": ["client-7"]}, {"aud": None, "token_use": "access", "client_id": "client-7"}),
    (
        {"jwt_tenant_claim": "org", "jwt_scope_prefix": "cairn/"},
        {"org": "globex", "scope": "cairn/brains:admin"},
    ),
]


@pytest.mark.parametrize(("settings", "extra"), VARIANTS)
def test_a_session_keeps_only_the_claims_it_reads_again_and_acts_as_the_token(
    rsa1: SigningKey, settings: dict[str, Any], extra: dict[str, Any]
) -> None:
    records = MemoryRecordStore()
    auth = authenticator(records, FakeIssuer(jwks(rsa1)), **settings)
    ui = UiSessions(records, wall_clock(), auth)
    token = user_token(rsa1, **PERSONAL, **extra)

    session = ui.start(token)

    assert ui.principal(session) == auth.authenticate(f"Bearer {token}")
    stored = json.dumps([item.data for item in records.query(SESSIONS_PK, "").items])
    assert not [value for value in PERSONAL.values() if value in stored]
    # Every claim the checks and the mapping read of the whole token is one the session kept.
    (item,) = records.query(SESSIONS_PK, "session#").items
    binding = Binding.model_validate(item.data["binding"])
    whole = ReadClaims(jwt.decode(token, options={"verify_signature": False}))
    assert auth.recall(binding.model_copy(update={"claims": whole})) == ui.principal(session)
    present = {name for name in whole.read if dict.__contains__(whole, name)}
    assert "sub" in present and present <= set(binding.claims or {}) <= whole.read


def test_a_session_begun_under_another_tenant_claim_ends_rather_than_take_the_default_tenant(
    rsa1: SigningKey,
) -> None:
    records, issuer = MemoryRecordStore(), FakeIssuer(jwks(rsa1))
    token = user_token(rsa1, org="globex")
    session = UiSessions(records, wall_clock(), authenticator(records, issuer)).start(token)

    later = authenticator(records, issuer, jwt_tenant_claim="org", jwt_default_tenant="fallback")

    assert later.authenticate(f"Bearer {token}").tenant == "globex"
    with pytest.raises(AuthError, match="another claim"):
        UiSessions(records, wall_clock(), later).principal(session)


def test_a_session_of_an_earlier_release_with_every_claim_still_acts_as_its_token(rsa1: SigningKey) -> None:
    records = MemoryRecordStore()
    auth = authenticator(records, FakeIssuer(jwks(rsa1)))
    ui = UiSessions(records, wall_clock(), auth)
    token = user_token(rsa1, **PERSONAL)
    session = ui.start(token)
    (item,) = records.query(SESSIONS_PK, "session#").items
    every = jwt.decode(token, options={"verify_signature": False})
    earlier = {**item.data["binding"], "claims": every}
    del earlier["tenant_claim"]
    records.put(Item(item.pk, item.sk, {**item.data, "binding": earlier}))

    assert ui.principal(session) == auth.authenticate(f"Bearer {token}")


def test_a_session_refused_once_stays_ended_when_the_settings_change_back() -> None:
    """A token rotated to cut off a stolen cookie, then put back (an old service file), does not
    bring the session back: the refusal ended it."""
    records = MemoryRecordStore()
    session = UiSessions(records, wall_clock(), authenticator(records, None)).start("t" * 32)
    rotated = authenticator(records, None, token="u" * 32)
    with pytest.raises(AuthError):
        UiSessions(records, wall_clock(), rotated).principal(session)
    back = UiSessions(records, wall_clock(), authenticator(records, None))
    with pytest.raises(AuthError):
        back.principal(session)
    assert [i.sk for i in records.query(SESSIONS_PK, "").items] == []  # nothing of it kept
