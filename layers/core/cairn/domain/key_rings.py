"""The store's secret as a ring of keys: the current one, which keys every new mark, and the
previous ones a rotation kept, under which marks made before it still match until they are
re-keyed or expire (services/keyed_digests.py).

Each key has an id, a digest of a constant under the key (so it names the key without revealing
it, and is the same wherever the key is read). Kept as JSON,

    {"current": {"id": "<id>", "key": "<key>"}, "previous": [{"id": "<id>", "key": "<key>"}, ...]}

where `<key>` is the key's text as its adapter encodes it (hex in the data directory's key file,
the string itself in Secrets Manager). The value an earlier release kept, one key alone, is read as
a ring of that key: never rewritten until a rotation keeps it as a previous key."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from cairn.domain.errors import InvalidInput

MIN_KEY_BYTES = 32
MAX_PREVIOUS = 8
"""Previous keys a ring holds at most: each costs every check one more lookup."""
ROTATED_MEANWHILE = (
    "the store's secret was rotated meanwhile (another `cairn secret rotate`): no key dropped; "
    "see `cairn secret` again"
)


@dataclass(frozen=True)
class SecretKey:
    value: bytes = field(repr=False)

    @property
    def id(self) -> str:
        return key_id(self.value)


@dataclass(frozen=True)
class KeyRing:
    current: SecretKey
    previous: tuple[SecretKey, ...] = ()

    @property
    def keys(self) -> tuple[SecretKey, ...]:
        return (self.current, *self.previous)

    def rotated(self, new: SecretKey) -> KeyRing:
        """`new` current, the current one first among the previous keys (InvalidInput when the
        ring would hold more than MAX_PREVIOUS: drop the previous keys first)."""
        if new.id in {k.id for k in self.keys}:
            raise InvalidInput("the new key is already in the ring")
        if len(self.previous) >= MAX_PREVIOUS:
            raise InvalidInput(
                f"the store's secret already holds {MAX_PREVIOUS} previous keys: drop them first "
                "(`cairn secret drop-previous`)"
            )
        return KeyRing(new, (self.current, *self.previous))


def key_id(value: bytes) -> str:
    return hmac.new(value, b"cairn store secret key id", hashlib.sha256).hexdigest()[:16]


def parse_ring(text: str, decode: Callable[[str], bytes]) -> KeyRing:
    """The ring `text` holds (module docstring); a single key's text (an earlier release's format)
    is a ring of it. InvalidInput, quoting nothing of the text, when it is neither."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return KeyRing(_key(decode, text))  # as it is: the key is its bytes, whitespace and all
    try:
        held = json.loads(stripped)
    except ValueError:
        raise InvalidInput("not a key ring (not valid JSON)") from None
    if not isinstance(held, dict) or not isinstance(held.get("previous", []), list):
        raise InvalidInput("not a key ring (an object with current and previous keys)")
    current = _entry(decode, held.get("current"))
    previous = tuple(_entry(decode, entry) for entry in held.get("previous", []))
    ids = [k.id for k in (current, *previous)]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a key ring that holds one key twice")
    return KeyRing(current, previous)


def render_ring(ring: KeyRing, encode: Callable[[bytes], str]) -> str:
    def entry(key: SecretKey) -> dict[str, str]:
        return {"id": key.id, "key": encode(key.value)}

    return json.dumps({"current": entry(ring.current), "previous": [entry(k) for k in ring.previous]}) + "\n"


def _entry(decode: Callable[[str], bytes], entry: object) -> SecretKey:
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
        raise InvalidInput("not a key ring (each key an object with its id and key)")
    key = _key(decode, entry["key"])
    if entry.get("id") != key.id:
        raise InvalidInput("a key ring whose key does not match its id (damaged)")
    return key


def _key(decode: Callable[[str], bytes], text: str) -> SecretKey:
    try:
        value = decode(text)
    except ValueError:
        value = b""
    if len(value) < MIN_KEY_BYTES:
        raise InvalidInput(f"a key of fewer than {MIN_KEY_BYTES} bytes (or not in its encoding)")
    return SecretKey(value)
