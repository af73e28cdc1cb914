"""Web UI sessions kept by the server. The browser's cookie holds a random session token, never
the credential it signed in with, and signing out ends the session for every copy of the cookie.

A session is the record `ui-sessions` / `session#<SHA-256 of the token>` (the token itself is
never stored) holding what it stands for (auth/binding.py) and when it ends; beside it, in the
same transaction, `expiry#<end>#<digest>`, so each sign-in deletes a few sessions that have ended
by reading the oldest ends first (bounded work, no scan). On every request the Authenticator
decides again, under the server's configuration then, whether the credential the session signed
in with would still be accepted, and as whom: a revoked key, another static token, a user pool
token past its expiry or a JWT setting changed ends the session as it would refuse the header.
A session lasts twelve hours at most.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import Final

from pydantic import AwareDatetime, BaseModel, ValidationError

from cairn.auth.authenticate import Authenticator
from cairn.auth.binding import Binding
from cairn.auth.errors import UNAVAILABLE, AuthError
from cairn.auth.principal import Principal
from cairn.domain.errors import Conflict
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore

SESSIONS_PK: Final = "ui-sessions"
LIFETIME: Final = timedelta(hours=12)
"""How long a session lasts from its sign-in (a user pool token's own expiry comes first)."""
SWEEP: Final = 20
"""Ended sessions a sign-in deletes at most."""
ENDED: Final = "the session has ended: sign in again"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")


class UiSession(BaseModel):
    binding: Binding
    created_at: AwareDatetime
    expires_at: AwareDatetime


class UiSessions:
    def __init__(self, records: RecordStore, clock: Clock, authenticator: Authenticator) -> None:
        self.records, self.clock, self.authenticator = records, clock, authenticator

    def start(self, credential: str) -> str:
        """A new session for `credential` (AuthError when it is not accepted); its token."""
        return self.begin(self.authenticator.bind(credential)[1])

    def begin(self, binding: Binding) -> str:
        """A new session standing for `binding` (Authenticator.bind); its token."""
        now = self.clock.now()
        ends = now + LIFETIME
        exp = (binding.claims or {}).get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            with contextlib.suppress(OverflowError, OSError, ValueError):
                leeway = timedelta(seconds=self.authenticator.jwt_leeway_s)
                ends = min(ends, datetime.fromtimestamp(exp, UTC) + leeway)
        session = UiSession(binding=binding, created_at=now, expires_at=ends)
        token = secrets.token_urlsafe(32)
        digest = _digest(token)
        record = Item(SESSIONS_PK, _session_sk(digest), session.model_dump(mode="json"))
        index = Item(SESSIONS_PK, _expiry_sk(ends, digest), {"digest": digest})
        self.records.transact([Put(record, expected_version=0), Put(index, expected_version=0)])
        self._sweep(now)
        return token

    def principal(self, token: str) -> Principal:
        """The principal the session acts as now. AuthError when there is no such session, it
        ended or was signed out, or the credential it stands for would be refused now (with
        `auth_unavailable` when that cannot be told now: the issuer's keys out of reach)."""
        session = self._session(token)
        if session is None or self.clock.now() >= session.expires_at:
            raise AuthError(ENDED)
        try:
            return self.authenticator.recall(session.binding)
        except AuthError as exc:
            if exc.code != UNAVAILABLE:  # refused for good: a token changed back later brings nothing back
                self.end(token)
            raise

    def end(self, token: str) -> None:
        """Sign out: the session is deleted (idempotent; a malformed token names none)."""
        if _TOKEN.fullmatch(token) is None:
            return
        digest = _digest(token)
        session = _read(self.records.get(SESSIONS_PK, _session_sk(digest)))
        self._delete(digest, _stamp(session.expires_at) if session is not None else None)

    def _session(self, token: str) -> UiSession | None:
        if _TOKEN.fullmatch(token) is None:
            return None
        return _read(self.records.get(SESSIONS_PK, _session_sk(_digest(token))))

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


def _read(item: Item | None) -> UiSession | None:
    if item is None:
        return None
    try:
        return UiSession.model_validate(item.data)
    except ValidationError:  # a record this release cannot read (an earlier one's): no session
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp(moment: datetime) -> str:
    """A fixed-width UTC time, so the expiry records sort by time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _session_sk(digest: str) -> str:
    return f"session#{digest}"


def _expiry_sk(ends: datetime, digest: str) -> str:
    return f"expiry#{_stamp(ends)}#{digest}"
