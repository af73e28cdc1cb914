"""Dynamic client registration (RFC 7591) onto the user pool users sign in with.

A registration needs no credential (a client registers before it has a token), so it is checked
before anything is made: the redirect URIs against the policy (redirects.py), the grant and the
token endpoint authentication the client asks for, the caller's address against its hourly rate,
and the number of live clients against the cap. Then one app client is made for exactly those
URIs, recorded (registered.py), and described back. When the cap is reached, the places of clients
no token has come from since they registered `unused_after` ago are taken back first, so a burst
of registrations that never sign in (abandoned or hostile) does not shut registration for good.

A client asking for no token endpoint authentication (the MCP SDKs, Claude Code, Cursor, VS Code)
is public and signs in with PKCE; one asking for `client_secret_post` or `_basic` (claude.ai) is
given a secret, which is passed back once and never stored or logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cairn.auth.oauth.errors import InvalidMetadata, InvalidRedirect, TooManyRegistrations
from cairn.auth.oauth.redirects import RedirectPolicy
from cairn.auth.oauth.registered import RegisteredClient, RegisteredClients
from cairn.auth.oauth.throttle import CapLease, RegistrationThrottle
from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.text import check_shown
from cairn.ports.clock import Clock
from cairn.ports.oauth_clients import ClientRefused, ClientRequest, IssuedClient, OAuthClients

log = logging.getLogger("cairn.auth")

GRANTS = ["authorization_code", "refresh_token"]
PUBLIC = "none"
SECRET_METHODS = ("client_secret_basic", "client_secret_post")
AUTH_METHODS = (PUBLIC, *SECRET_METHODS)
_NAME_CHARS = re.compile(r"[^\w\s+=,.@-]")  # what Cognito takes in a ClientName
MAX_NAME = 200


class ClientMetadata(BaseModel):
    """What a client sends (RFC 7591 section 2); members Cairn does not use are ignored."""

    model_config = ConfigDict(extra="ignore")

    redirect_uris: list[str] = Field(min_length=1, max_length=100)
    client_name: str | None = Field(default=None, max_length=MAX_NAME)
    grant_types: list[str] | None = Field(default=None, max_length=20)
    response_types: list[str] | None = Field(default=None, max_length=20)
    token_endpoint_auth_method: str | None = Field(default=None, max_length=100)
    scope: str | None = Field(default=None, max_length=4000)

    @field_validator("client_name")
    @classmethod
    def _shown(cls, name: str | None) -> str | None:
        """Shown to operators (`cairn oauth-clients list`) and in the sign-in page: no control or
        bidirectional characters, which could forge a line of a listing or drive a terminal."""
        try:
            return None if name is None else check_shown("client_name", name)
        except InvalidInput as exc:
            raise ValueError(exc.message) from None


class ClientInformation(BaseModel):
    """The answer (RFC 7591 section 3.2.1)."""

    client_id: str
    client_id_issued_at: int
    client_secret: str | None = Field(default=None, repr=False)
    client_secret_expires_at: int | None = None
    client_name: str | None = None
    redirect_uris: list[str]
    grant_types: list[str]
    response_types: list[str]
    token_endpoint_auth_method: str
    scope: str


class ClientRegistration:
    def __init__(
        self,
        clients: OAuthClients,
        registered: RegisteredClients,
        policy: RedirectPolicy,
        throttle: RegistrationThrottle,
        clock: Clock,
        *,
        scopes: Sequence[str],
        max_clients: int = 500,
        lease: CapLease | None = None,
        unused_after: timedelta | None = timedelta(hours=24),
    ) -> None:
        """`lease`: taken while the cap is checked and the client made and recorded, so two
        registrations at once never both take the last place (default: one on the records).
        `unused_after`: how long a client may stay unused before a full cap takes its place (None:
        never)."""
        self.clients, self.registered, self.policy = clients, registered, policy
        self.throttle, self.clock = throttle, clock
        self.scopes, self.max_clients = list(scopes), max_clients
        self.unused_after = unused_after
        self.lease = lease or CapLease(registered.records, clock)

    def register(self, metadata: ClientMetadata, source: str) -> ClientInformation:
        """Make the client; a RegistrationRefused subclass (or Unavailable) says why not."""
        uris = self.policy.checked(metadata.redirect_uris)
        method = _auth_method(metadata.token_endpoint_auth_method)
        _check_flow(metadata.grant_types, metadata.response_types)
        self._throttle(source)
        confidential = method != PUBLIC
        name = _pool_name(metadata.client_name)
        with self.lease.held() if self.max_clients else nullcontext():
            self._check_cap()
            issued = self._create(ClientRequest(name, uris, self.scopes, confidential))
            now = self.clock.now()
            record = RegisteredClient(
                client_id=issued.client_id,
                client_name=metadata.client_name,
                redirect_uris=uris,
                scopes=self.scopes,
                confidential=confidential,
                created_at=now,
                use_tracked=True,
            )
            try:
                self.registered.add(record)
            except Exception:
                self._take_back(issued.client_id)  # not kept unrecorded: nobody could revoke it
                raise
        log.info("registered OAuth client %s for %d redirect URI(s)", issued.client_id, len(uris))
        return ClientInformation(
            client_id=issued.client_id,
            client_id_issued_at=int(now.timestamp()),
            client_secret=issued.client_secret,
            client_secret_expires_at=0 if issued.client_secret else None,
            client_name=metadata.client_name,
            redirect_uris=uris,
            grant_types=GRANTS,
            response_types=["code"],
            token_endpoint_auth_method=method,
            scope=" ".join(self.scopes),
        )

    def _throttle(self, source: str) -> None:
        wait = self.throttle.take(source)
        if wait is not None:
            raise TooManyRegistrations(
                f"too many client registrations from this address: try again in {wait} s", retry_after_s=wait
            )

    def _check_cap(self) -> None:
        if not self.max_clients or self.registered.active_count() < self.max_clients:
            return
        if self.unused_after is None or not self._take_back_unused():
            raise TooManyRegistrations(
                f"this server already holds {self.max_clients} registered clients, its limit: its "
                "operator can revoke unused ones",
                retry_after_s=3600,
            )

    def _take_back_unused(self) -> bool:
        """Revoke the clients unused since `unused_after` ago; whether a place is free now. Each is
        revoked on its record's version only while still unused (a token arriving meanwhile keeps
        it), then its app client deleted."""
        assert self.unused_after is not None
        for client in self.registered.never_used(self.clock.now() - self.unused_after):
            try:
                taken = self.registered.mark_revoked(client.client_id, unless_used=True)
            except Conflict:
                continue
            if taken.revoked_at is None:  # used meanwhile
                continue
            log.info("took back OAuth client %s: unused since it registered", client.client_id)
            self._take_back(client.client_id)
        return self.registered.active_count() < self.max_clients

    def _create(self, request: ClientRequest) -> IssuedClient:
        try:
            return self.clients.create(request)
        except ClientRefused as refused:
            if "callback" in refused.message.lower() or "redirect" in refused.message.lower():
                raise InvalidRedirect(refused.message) from None
            raise InvalidMetadata(refused.message) from None

    def _take_back(self, client_id: str) -> None:
        try:
            self.clients.delete(client_id)
        except Exception as exc:  # the recording's failure is the one to report
            log.warning("could not delete OAuth client %s's app client: %s", client_id, type(exc).__name__)

    def list(self) -> list[RegisteredClient]:
        """Every registered client, revoked ones included (for the operator)."""
        return self.registered.list()

    def revoke(self, client_id: str) -> RegisteredClient:
        """Delete the app client and mark its record revoked; NotFound for an unknown id."""
        client = self.registered.get(client_id)
        if client is None:
            return self.registered.mark_revoked(client_id)  # raises NotFound
        self.clients.delete(client_id)
        return self.registered.mark_revoked(client_id)


def _auth_method(asked: str | None) -> str:
    if asked is None:
        return PUBLIC  # RFC 7591's default is client_secret_basic; MCP clients that omit it are public
    if asked not in AUTH_METHODS:
        supported = ", ".join(AUTH_METHODS)
        raise InvalidMetadata(f"token_endpoint_auth_method is unsupported; use one of {supported}")
    return asked


def _check_flow(grants: list[str] | None, responses: list[str] | None) -> None:
    if grants is not None and ("authorization_code" not in grants or not set(grants) <= set(GRANTS)):
        raise InvalidMetadata(
            "this server registers clients for the authorization_code grant (with PKCE) and "
            "refresh_token, no other grant"
        )
    if responses is not None and set(responses) != {"code"}:
        raise InvalidMetadata('this server registers clients for the "code" response type alone')


def _pool_name(name: str | None) -> str:
    cleaned = " ".join(_NAME_CHARS.sub(" ", name or "").split())
    return f"mcp-dcr {cleaned}"[:128].strip() if cleaned else "mcp-dcr"
