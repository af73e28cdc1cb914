"""Web UI sessions kept by the server. The browser's cookie holds a random session token, never
the credential it signed in with, and signing out ends the session for every copy of the cookie.

A session is the record `ui-sessions` / `session#<SHA-256 of the token>` (the token itself is
never stored) holding the principal it acts as and when it ends; beside it, in the same
transaction, `expiry#<end>#<digest>`, so each sign-in deletes a few sessions that have ended by
reading the oldest ends first (bounded work, no scan). What a session stands for is checked again
on every request:
- one started with an API key acts as that key: the key's record is read again, so revoking the key
  ends its sessions, and a brain taken off the key's list is off the session's too;
- one started with the static token ends when the server's token changes (its digest is kept);
- one started with a user pool's token ends when that token expires, as the token would have.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import Final

from pydantic import BaseModel, ValidationError

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.principal import Principal, Via
from cairn.domain.errors import Conflict
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore

SESSIONS_PK: Final = "ui-sessions"
LIFETIME: Final = timedelta(hours=12)
"""How long a session lasts from its sign-in (a user pool token's own expiry comes first)."""
SWEEP: Final = 20
"""Ended sessions a sign-in deletes at most."""
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


class UiSession(BaseModel):
    tenant: str
    subject: str
    scopes: list[str]
    via: Via
    brains: list[str] | None = None
    key_id: str | None = None
    """The API key it acts as (read again on each request)."""
    token_sha256: str | None = None
    """The static token's digest when it began: another token configured since ends it."""
    created_at: datetime
    expires_at: datetime


class UiSessions:
    def __init__(
        self, records: RecordStore, clock: Clock, keys: ApiKeyService, static_token: str | None
    ) -> None:
        self.records, self.clock, self.keys = records, clock, keys
        self._static = _digest(static_token) if static_token else None

    def start(self, credential: str, principal: Principal) -> str:
        """A new session for the principal `credential` was just authenticated as; its token."""
        now = self.clock.now()
        ends = now + LIFETIME
        if principal.via is Via.jwt:
            expiry = jwt_expiry(credential)
            ends = min(ends, expiry) if expiry is not None else ends
        session = UiSession(
            tenant=principal.tenant,
            subject=principal.subject,
            scopes=sorted(principal.scopes),
            via=principal.via,
            brains=sorted(principal.brains) if principal.brains is not None else None,
            key_id=principal.subject.removeprefix("key:") if principal.via is Via.api_key else None,
            token_sha256=_digest(credential) if principal.via is Via.static_token else None,
            created_at=now,
            expires_at=ends,
        )
        token = secrets.token_urlsafe(32)
        digest = _digest(token)
        record = Item(SESSIONS_PK, _session_sk(digest), session.model_dump(mode="json"))
        index = Item(SESSIONS_PK, _expiry_sk(ends, digest), {"digest": digest})
        self.records.transact([Put(record, expected_version=0), Put(index, expected_version=0)])
        self._sweep(now)
        return token

    def principal(self, token: str) -> Principal | None:
        """The principal the session acts as now, or None: no such session, ended, signed out, or
        what it stands for no longer holds."""
        session = self._session(token)
        if session is None or self.clock.now() >= session.expires_at:
            return None
        if session.via is Via.api_key:
            return self.keys.principal_of(session.key_id) if session.key_id else None
        if session.via is Via.static_token:
            held, now_configured = session.token_sha256 or "", self._static or ""
            same = bool(now_configured) and hmac.compare_digest(held, now_configured)
            return self._principal(session) if same else None
        return self._principal(session)

    def end(self, token: str) -> None:
        """Sign out: the session is deleted (idempotent; a malformed token names none)."""
        if _TOKEN.match(token) is None:
            return
        digest = _digest(token)
        item = self.records.get(SESSIONS_PK, _session_sk(digest))
        if item is not None:
            self._delete(digest, _ends(item))

    def _session(self, token: str) -> UiSession | None:
        if _TOKEN.match(token) is None:
            return None
        item = self.records.get(SESSIONS_PK, _session_sk(_digest(token)))
        return _read(item)

    @staticmethod
    def _principal(session: UiSession) -> Principal:
        brains = frozenset(session.brains) if session.brains is not None else None
        return Principal(session.tenant, session.subject, frozenset(session.scopes), session.via, brains)

    def _sweep(self, now: datetime) -> None:
        page = self.records.query(SESSIONS_PK, "expiry#", limit=SWEEP)
        for item in page.items:
            ends, _, digest = item.sk.removeprefix("expiry#").rpartition("#")
            if ends >= _stamp(now):
                break
            self._delete(digest, ends)

    def _delete(self, digest: str, ends: str | None) -> None:
        ops = [Delete(SESSIONS_PK, _session_sk(digest))]
        if ends is not None:
            ops.append(Delete(SESSIONS_PK, f"expiry#{ends}#{digest}"))
        with contextlib.suppress(Conflict):  # another request ended it meanwhile
            self.records.transact(ops)


def jwt_expiry(token: str) -> datetime | None:
    """The `exp` of a JWT the authenticator has verified; None when it carries none."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims.get("exp") if isinstance(claims, dict) else None
        return datetime.fromtimestamp(exp, UTC) if isinstance(exp, int | float) else None
    except (IndexError, ValueError, binascii.Error, OverflowError, OSError):
        return None


def _read(item: Item | None) -> UiSession | None:
    if item is None:
        return None
    try:
        return UiSession.model_validate(item.data)
    except ValidationError:  # a record this release cannot read: no session
        return None


def _ends(item: Item) -> str | None:
    session = _read(item)
    return _stamp(session.expires_at) if session is not None else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp(moment: datetime) -> str:
    """A fixed-width UTC time, so the expiry records sort by time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _session_sk(digest: str) -> str:
    return f"session#{digest}"


def _expiry_sk(ends: datetime, digest: str) -> str:
    return f"expiry#{_stamp(ends)}#{digest}"
