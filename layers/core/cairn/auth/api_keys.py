"""API keys and opaque bearer tokens (the zengram BRAIN_API_KEY and Mnemosyne token models).

A key is `cairn_<key id>_<secret>`: the id finds its record, the secret is 256 random bits. Only
the SHA-256 of the whole key is stored (a slow hash buys nothing for a secret this long); the
plaintext is shown once, when the key is created. Each key names a tenant, scopes and, optionally,
an explicit list of the brains it may touch. Records: `apikeys` / `key#<id>` in the RecordStore.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel

from cairn.auth import access
from cairn.auth.principal import SCOPES, Principal, Via
from cairn.auth.revocable import revoke_record
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore

KEYS_PK = "apikeys"
PREFIX = "cairn_"
_KEY = re.compile(r"^cairn_(key_[0-9a-z]{26})_([A-Za-z0-9_-]{43})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,127}$")


class ApiKey(BaseModel):
    """A key's record: everything about it except the key itself."""

    id: str
    name: str
    tenant: str
    scopes: list[str]
    brains: list[str] | None = None
    key_sha256: str
    created_at: datetime
    revoked_at: datetime | None = None
    last4: str

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class CreatedKey(BaseModel):
    key: ApiKey
    plaintext: str  # shown once; never stored


class ApiKeyService:
    def __init__(
        self, records: RecordStore, clock: Clock, brains: Callable[[str], Brain | None] | None = None
    ) -> None:
        self.records = records
        self.clock = clock
        self.brains = brains
        """Finds a brain by id: which keys a caller may see depends on the brains they reach
        (access.may_manage_key); without it, on the brain lists alone (the CLI's system)."""
        self.revocations = 0
        """Keys revoked through this service: what keeps a revocation check (an open stream's)
        exact for this process between its periodic reads."""

    def create(
        self, *, name: str, tenant: str, scopes: Iterable[str], brains: Sequence[str] | None = None
    ) -> CreatedKey:
        if not _NAME.fullmatch(name):
            raise InvalidInput("a key name is 1..128 letters, digits, spaces or . _ @ : -")
        if not _NAME.fullmatch(tenant):
            raise InvalidInput("a tenant is 1..128 letters, digits, spaces or . _ @ : -")
        wanted = list(dict.fromkeys(scopes))
        if not wanted or any(s not in SCOPES for s in wanted):
            raise InvalidInput(f"scopes must be one or more of {', '.join(SCOPES)}")
        if brains is not None and any(not b for b in brains):
            raise InvalidInput("a brain list names brains by id; an empty list reads no brain at all")
        brains = access.key_grant(wanted, brains)
        key_id = new_id("key")
        plaintext = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(
            id=key_id,
            name=name,
            tenant=tenant,
            scopes=wanted,
            brains=list(dict.fromkeys(brains)) if brains is not None else None,
            key_sha256=_digest(plaintext),
            created_at=self.clock.now(),
            last4=plaintext[-4:],
        )
        self.records.put(Item(KEYS_PK, f"key#{key_id}", key.model_dump(mode="json")), expected_version=0)
        return CreatedKey(key=key, plaintext=plaintext)

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        keys: list[ApiKey] = []
        after: str | None = None
        while True:
            page = self.records.query(KEYS_PK, "key#", after=after)
            keys += [ApiKey.model_validate(i.data) for i in page.items]
            if page.next_after is None:
                break
            after = page.next_after
        return [
            k
            for k in keys
            if (tenant is None or k.tenant == tenant) and access.may_manage_key(k.brains, self.brains)
        ]

    def revoke(self, key_id: str, *, tenant: str | None = None) -> ApiKey:
        """Revoke a key (idempotent); NotFound for an unknown id, and, with `tenant`, for a key of
        another tenant (which is not told apart from one that does not exist)."""
        sk = f"key#{key_id}" if _looks_like_id(key_id) else None
        # only an id is ever quoted: what was given may be the key itself, pasted by mistake
        missing = (
            f"API key not found: {key_id}"
            if sk is not None
            else "API key not found: give the key's id (key_…, as `cairn keys list` shows it), not the key"
        )
        if tenant is not None and sk is not None:
            found = self.records.get(KEYS_PK, sk)
            held = ApiKey.model_validate(found.data) if found is not None else None
            if held is None or held.tenant != tenant or not access.may_manage_key(held.brains, self.brains):
                raise NotFound(missing)
        revoked = revoke_record(
            self.records,
            KEYS_PK,
            sk,
            ApiKey,
            self.clock,
            missing=missing,
            busy=f"API key {key_id} kept changing while being revoked",
        )
        self.revocations += 1
        return revoked

    def forget_brain(self, brain_id: str) -> int:
        """Take a deleted brain off every key's brain list; returns how many keys named it. A key
        left with an empty list reads nothing, as such a key always has."""
        changed = 0
        for key in self.list():
            if key.brains is None or brain_id not in key.brains:
                continue
            for _ in range(5):
                item = self.records.get(KEYS_PK, f"key#{key.id}")
                if item is None:
                    break
                held = ApiKey.model_validate(item.data)
                kept = [b for b in held.brains or [] if b != brain_id]
                try:
                    self.records.put(
                        Item(
                            KEYS_PK, item.sk, held.model_copy(update={"brains": kept}).model_dump(mode="json")
                        ),
                        expected_version=item.version,
                    )
                    changed += 1
                    break
                except Conflict:
                    continue
        return changed

    def revoked(self, subject: str) -> bool:
        """Whether `subject` is an API key's (`key:<id>`) that has been revoked (or is gone) since
        it was authenticated: what a request began with no longer holds for a stream it keeps open
        or a job it queued. Any other subject: False."""
        key_id = subject.removeprefix("key:")
        if key_id == subject or not _looks_like_id(key_id):  # no key's: every key has such an id
            return False
        item = self.records.get(KEYS_PK, f"key#{key_id}")
        return item is None or not ApiKey.model_validate(item.data).active

    def authenticate(self, presented: str) -> Principal | None:
        """The principal of a live key, or None (unknown, revoked, or not a Cairn key at all)."""
        match = _KEY.fullmatch(presented)
        key = self._live(match.group(1)) if match is not None else None
        if key is None or not hmac.compare_digest(key.key_sha256, _digest(presented)):
            return None
        return _principal(key)

    def principal_of(self, key_id: str) -> Principal | None:
        """The principal of the live key with this id, or None: what a web UI session that signed
        in with the key acts as (auth/ui_sessions.py), read again on each request."""
        key = self._live(key_id) if _looks_like_id(key_id) else None
        return _principal(key) if key is not None else None

    def _live(self, key_id: str) -> ApiKey | None:
        item = self.records.get(KEYS_PK, f"key#{key_id}")
        key = ApiKey.model_validate(item.data) if item is not None else None
        return key if key is not None and key.active else None


def _principal(key: ApiKey) -> Principal:
    brains = frozenset(key.brains) if key.brains is not None else None
    return Principal(key.tenant, f"key:{key.id}", frozenset(key.scopes), Via.api_key, brains)


def _digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def _looks_like_id(key_id: str) -> bool:
    return re.fullmatch(r"key_[0-9a-z]{26}", key_id) is not None
