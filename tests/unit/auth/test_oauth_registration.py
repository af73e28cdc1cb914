"""Dynamic client registration as a service: what it makes (one app client for exactly the URIs
asked for), what it answers, what it refuses and counts, what it records, and what it never keeps."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from cairn.auth.oauth.errors import InvalidMetadata, InvalidRedirect, TooManyRegistrations
from cairn.auth.oauth.redirects import RedirectPolicy
from cairn.auth.oauth.registered import CLIENTS_PK, RegisteredClients
from cairn.auth.oauth.registration import ClientMetadata, ClientRegistration
from cairn.auth.oauth.throttle import CapLease, RegistrationThrottle
from cairn.domain.errors import NotFound, Unavailable
from cairn.ports.records import Item
from tests.fakes.clock import FakeClock
from tests.fakes.oauth_clients import MemoryOAuthClients
from tests.fakes.records import MemoryRecordStore

SCOPES = ["openid", "email", "cairn/documents:read", "cairn/documents:write", "cairn/brains:admin"]
LOOPBACK = "http://127.0.0.1:41234/callback"


class Service:
    def __init__(
        self,
        *,
        per_hour: int = 10,
        max_clients: int = 500,
        allowed: list[str] | None = None,
        unused_after: timedelta | None = timedelta(hours=24),
    ) -> None:
        self.records, self.clock, self.pool = MemoryRecordStore(), FakeClock(), MemoryOAuthClients()
        self.registered = RegisteredClients(self.records, self.clock)
        self.registration = ClientRegistration(
            self.pool,
            self.registered,
            RedirectPolicy(allowed or []),
            RegistrationThrottle(self.records, self.clock, per_hour),
            self.clock,
            scopes=SCOPES,
            max_clients=max_clients,
            unused_after=unused_after,
        )

    def register(self, source: str = "203.0.113.7", **metadata: Any) -> Any:
        body = {"redirect_uris": [LOOPBACK], **metadata}
        return self.registration.register(ClientMetadata.model_validate(body), source)


def test_a_public_client_gets_an_app_client_for_exactly_its_uris() -> None:
    service = Service()
    uris = ["http://127.0.0.1:33418/", "https://vscode.dev/redirect"]

    info = service.register(redirect_uris=uris, client_name="Visual Studio Code")

    made = service.pool.clients[info.client_id]
    assert list(made.redirect_uris) == uris and list(made.scopes) == SCOPES and not made.confidential
    assert made.name == "mcp-dcr Visual Studio Code"
    assert info.token_endpoint_auth_method == "none" and info.client_secret is None
    assert info.redirect_uris == uris and info.grant_types == ["authorization_code", "refresh_token"]
    assert info.response_types == ["code"] and info.scope == " ".join(SCOPES)
    assert service.registered.knows(info.client_id)


def test_a_client_asking_for_a_secret_gets_one_that_is_never_stored_or_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = Service()
    caplog.set_level(logging.DEBUG)

    info = service.register(
        redirect_uris=["https://claude.ai/api/mcp/auth_callback"],
        token_endpoint_auth_method="client_secret_post",
        grant_types=["authorization_code", "refresh_token"],
        client_name="claudeai",
    )

    assert info.client_secret and info.client_secret_expires_at == 0
    assert info.token_endpoint_auth_method == "client_secret_post"
    assert service.pool.clients[info.client_id].confidential
    stored = service.records.query(CLIENTS_PK, "").items
    assert len(stored) == 1 and info.client_secret not in repr(stored[0].data)
    assert info.client_secret not in caplog.text and info.client_id in caplog.text
    assert info.client_secret not in repr(info)


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"redirect_uris": ["https://evil.example/cb"]}, InvalidRedirect),
        ({"token_endpoint_auth_method": "private_key_jwt<script>"}, InvalidMetadata),
        ({"grant_types": ["client_credentials"]}, InvalidMetadata),
        ({"grant_types": ["authorization_code", "implicit", "password"]}, InvalidMetadata),
        ({"response_types": ["token"]}, InvalidMetadata),
        ({"response_types": ["code", "token"]}, InvalidMetadata),
    ],
)
def test_a_refused_registration_makes_nothing_and_counts_nothing(
    metadata: dict[str, Any], error: type[Exception]
) -> None:
    service = Service(per_hour=1)
    with pytest.raises(error) as refused:
        service.register(**metadata)
    assert "<script>" not in str(refused.value)  # what was sent is never echoed
    assert service.pool.clients == {} and service.registered.list() == []
    service.register()  # the one registration this hour is still there


def test_registrations_are_limited_per_address_per_hour() -> None:
    service = Service(per_hour=2)
    service.register()
    service.register()
    with pytest.raises(TooManyRegistrations) as refused:
        service.register()
    assert refused.value.status == 429 and 0 < (refused.value.retry_after_s or 0) <= 3600
    service.register(source="198.51.100.1")  # another address has its own count
    service.clock.advance(3600)
    service.register()  # a new hour
    assert len(service.pool.clients) == 4
    # The address is never stored, only a hash of it.
    assert "203.0.113.7" not in repr([i.data for i in service.records.query("oauthregister", "").items])
    assert "203.0.113.7" not in repr([i.sk for i in service.records.query("oauthregister", "").items])


def test_the_number_of_live_clients_is_capped() -> None:
    service = Service(max_clients=2)
    first = service.register()
    service.register()
    with pytest.raises(TooManyRegistrations, match="revoke"):
        service.register()
    service.registration.revoke(first.client_id)
    service.register()


def test_a_full_cap_takes_back_clients_nobody_signed_in_with() -> None:
    service = Service(max_clients=3)
    abandoned = service.register(client_name="abandoned").client_id
    used = service.register(client_name="used").client_id
    assert service.registered.knows(used)  # a token of it came in
    service.clock.advance(25 * 3600)
    young = service.register(client_name="young").client_id

    made = service.register(client_name="new").client_id  # the cap was full

    assert abandoned not in service.pool.clients and not service.registered.knows(abandoned)
    assert {used, young, made} == set(service.pool.clients)
    with pytest.raises(TooManyRegistrations):  # the young one has not had its day yet
        service.register()
    service.clock.advance(25 * 3600)
    service.register()  # now it has
    assert young not in service.pool.clients and used in service.pool.clients


def test_a_client_that_signs_in_while_being_taken_back_is_kept() -> None:
    service = Service(max_clients=1)
    client = service.register().client_id
    service.clock.advance(25 * 3600)
    listed = service.registered.never_used

    def then_signed_in(before: Any) -> Any:
        found = listed(before)
        service.registered.knows(client)  # its first token, between the listing and the revoke
        return found

    service.registered.never_used = then_signed_in  # type: ignore[method-assign,assignment]
    with pytest.raises(TooManyRegistrations):
        service.register()
    assert client in service.pool.clients and service.registered.knows(client)


def test_clients_registered_before_use_was_tracked_or_with_take_back_off_are_kept() -> None:
    service = Service(max_clients=1)
    old = service.register().client_id
    record = service.records.get(CLIENTS_PK, f"client#{old}")
    assert record is not None and record.data["use_tracked"] is True and record.data["first_used_at"] is None
    untracked = {k: v for k, v in record.data.items() if k != "use_tracked"}
    service.records.put(Item(CLIENTS_PK, record.sk, untracked))
    service.clock.advance(400 * 24 * 3600)
    with pytest.raises(TooManyRegistrations):
        service.register()

    off = Service(max_clients=1, unused_after=None)
    off.register()
    off.clock.advance(400 * 24 * 3600)
    with pytest.raises(TooManyRegistrations):
        off.register()


def test_the_first_token_is_stamped_once() -> None:
    service = Service()
    records, clock, now = service.records, service.clock, [0.0]
    registered = RegisteredClients(records, clock, cache_s=60, monotonic=lambda: now[0])
    client = service.register().client_id
    writes = 0
    put = records.put

    def counted(item: Item, expected_version: int | None = None) -> Item:
        nonlocal writes
        writes += 1
        return put(item, expected_version)

    records.put = counted  # type: ignore[method-assign]
    assert registered.knows(client)
    stamped = registered.get(client)
    assert stamped is not None and stamped.first_used_at is not None and writes == 1
    clock.advance(3600)
    now[0] = 61  # past the cache: read again, not written again
    assert registered.knows(client) and writes == 1
    assert registered.get(client).first_used_at == stamped.first_used_at  # type: ignore[union-attr]


def test_registrations_at_once_never_take_more_places_than_the_cap() -> None:
    service = Service(max_clients=3, per_hour=0)
    create = service.pool.create

    def slow(request: Any) -> Any:
        time.sleep(0.02)  # the pool's round trip, during which another registration checks the cap
        return create(request)

    service.pool.create = slow  # type: ignore[method-assign]
    outcomes: list[str] = []

    def one(n: int) -> None:
        try:
            service.register(source=f"2001:db8::{n}")
            outcomes.append("made")
        except TooManyRegistrations:
            outcomes.append("refused")

    threads = [threading.Thread(target=one, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["made"] * 3 + ["refused"] * 9
    assert len(service.pool.clients) == 3 == service.registered.active_count()
    lease = service.records.get("oauthregister", "cap-lease")
    assert lease is not None and lease.data["until"] == 0  # given back


def test_a_lease_left_by_a_process_that_died_lapses() -> None:
    service = Service(max_clients=3)
    until = service.clock.now().timestamp() + 60
    service.records.put(Item("oauthregister", "cap-lease", {"token": "gone", "until": until}), 0)
    waiting = CapLease(service.records, service.clock, wait_s=0.2)
    service.registration.lease = waiting
    with pytest.raises(Unavailable, match="other client registrations are in progress"):
        service.register()
    assert service.pool.clients == {}
    service.clock.advance(61)
    assert service.register().client_id in service.pool.clients


def test_an_ipv6_block_counts_as_one_address() -> None:
    service = Service(per_hour=2)
    service.register(source="2001:db8:1:2::1")
    service.register(source="2001:db8:1:2:ffff::9")
    with pytest.raises(TooManyRegistrations, match="too many client registrations from this address"):
        service.register(source="2001:db8:1:2:abcd::7")
    service.register(source="2001:db8:1:3::1")  # another /64
    service.register(source="::ffff:203.0.113.9")  # an IPv4 address written as IPv6 is itself
    service.register(source="203.0.113.9")
    with pytest.raises(TooManyRegistrations):
        service.register(source="203.0.113.9")


def test_the_pools_refusal_is_passed_on() -> None:
    service = Service()
    service.pool.refuse = "1 validation error detected: Value at 'callbackURLs' failed to satisfy constraint"
    with pytest.raises(InvalidRedirect, match=r"the user pool refused|callbackURLs"):
        service.register()


def test_a_client_that_could_not_be_recorded_is_taken_back() -> None:
    service = Service()

    def broken(item: Item, expected_version: int | None = None) -> Item:
        if item.pk == CLIENTS_PK:
            raise RuntimeError("the table is gone")
        return MemoryRecordStore.put(service.records, item, expected_version)

    service.records.put = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        service.register()
    assert service.pool.clients == {}


def test_revoking_deletes_the_app_client_and_keeps_the_record() -> None:
    service = Service()
    info = service.register(client_name="Claude Code (cairn)")

    revoked = service.registration.revoke(info.client_id)

    assert info.client_id not in service.pool.clients
    assert revoked.revoked_at is not None and revoked.client_name == "Claude Code (cairn)"
    assert not service.registered.knows(info.client_id)
    assert [c.client_id for c in service.registration.list()] == [info.client_id]
    assert service.registration.revoke(info.client_id).revoked_at == revoked.revoked_at  # idempotent
    with pytest.raises(NotFound):
        service.registration.revoke("nope")


def test_knows_is_cached_and_bounded() -> None:
    records, clock = MemoryRecordStore(), FakeClock()
    now = [0.0]
    registered = RegisteredClients(records, clock, cache_s=60, max_cached=2, monotonic=lambda: now[0])
    reads = 0
    get = records.get

    def counted(pk: str, sk: str) -> Item | None:
        nonlocal reads
        reads += 1
        return get(pk, sk)

    records.get = counted  # type: ignore[method-assign]
    assert not registered.knows("abc") and not registered.knows("abc")
    assert reads == 1
    now[0] = 61
    registered.knows("abc")
    assert reads == 2
    registered.knows("x")
    registered.knows("y")
    registered.knows("abc")  # pushed out by two others
    assert reads == 5
    assert not registered.knows("not a client id!")  # never read as a key


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (None, "mcp-dcr"),
        ("Claude Code (cairn)", "mcp-dcr Claude Code cairn"),
        ("<script>x</script>" * 10, None),
    ],
)
def test_the_app_clients_name_is_one_cognito_takes(name: str | None, expected: str | None) -> None:
    service = Service()
    info = service.register(client_name=name) if name is not None else service.register()
    made = service.pool.clients[info.client_id].name
    assert len(made) <= 128 and all(ch.isalnum() or ch in " +=,.@-_" for ch in made)
    if expected is not None:
        assert made == expected


@pytest.mark.parametrize("name", ["ok\x1b[31mRED\x1b[0m", "line\r\nforged", "a\u202eb", "bell\x07"])
def test_a_client_name_with_control_or_bidi_characters_is_refused(name: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="client_name must not contain"):
        ClientMetadata(redirect_uris=["http://127.0.0.1:5/cb"], client_name=name)
    assert ClientMetadata(redirect_uris=["http://127.0.0.1:5/cb"], client_name="Claude Desktop (Ingrid's)")
