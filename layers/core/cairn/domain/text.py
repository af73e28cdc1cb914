"""Rules for the short texts callers name things with (titles, tags, paths), and the excerpt of a
caller's input that an error message may quote."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from cairn.domain.errors import InvalidInput
from cairn.domain.scrub import scrub

EXCERPT_CHARS = 64
SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a UTF-16 pair: a text holding one unpaired cannot be encoded, stored or sent on."""

# Explicit bidirectional embeddings, overrides and isolates, and the implicit marks: in a path they
# make one name display as another ("Trojan Source").
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """`value` quoted for an error message: at most `limit` characters, marked when cut; a credential
    in it is scrubbed before it is cut, so no part of one is quoted."""
    text = value if isinstance(value, str) else repr(value)
    size = len(text)
    text = scrub(text[: 4 * limit])  # past that, cut away whatever it holds
    if size <= limit and len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({size} characters)"


def has_control(value: str) -> bool:
    """Whether `value` holds a C0/C1 control character (NUL, newline, escape, DEL, …)."""
    return any(unicodedata.category(ch) == "Cc" for ch in value)


_SHOWS_NOTHING = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols drawn as empty space: the Hangul fillers and the blank Braille pattern."""


def is_blank(value: str) -> bool:
    """Whether `value` shows nothing: only whitespace, control characters, invisible format
    characters (zero-width spaces and joiners, byte-order marks), combining marks with nothing to
    combine with, and the letters drawn as empty space. Such a text embeds close to any short
    question, so stored as a memory it would answer them all."""
    return all(
        ch.isspace() or ch in _SHOWS_NOTHING or unicodedata.category(ch) in ("Cc", "Cf", "Mn", "Me")
        for ch in value
    )


def check_label(what: str, value: str) -> str:
    """A title or tag: shown in listings as a name is (`check_shown`)."""
    return check_shown(what, value)


def check_shown(what: str, value: str) -> str:
    """A text shown to people as a name (a path, a brain's name): no control characters and no
    bidirectional controls, which could make it display as another or forge a line of a list."""
    if has_control(value):
        raise InvalidInput(f"{what} must not contain control characters")
    if any(ch in BIDI_CONTROLS for ch in value):
        raise InvalidInput(f"{what} must not contain bidirectional control characters")
    return value


def check_path_text(value: str) -> str:
    """A store path: no control characters and no bidirectional controls."""
    return check_shown("path", value)


def tag_words(tags: Sequence[str]) -> str:
    """What the keyword leg of a search matches of a chunk's tags, as it matches its title: each
    tag's text after its namespace (`kw:stress` → `stress`, the labels ThoughtMCP's memories carry),
    space-separated. On the four relevance fixtures, matching tags raised canonical recall@10 on
    questions asked by category ("What incidents have we had?" of notes tagged `incidents`),
    docs/RELEVANCE.md."""
    return " ".join(word for word in (tag.partition(":")[2] or tag for tag in tags) if word.strip())


QUERY_CHARS = 4096
"""What a search reads of its query. memory_search refuses a longer one; the surfaces whose tools
take a query of any length read its first QUERY_CHARS characters: the embedder reads only the
first few hundred words, and each further word costs the keyword leg, the highlights and the
answer's scoring time while it can hardly change what ranks first."""
_LAST_SPACE = re.compile(r"\s+\S*\Z")


def query_read(query: str) -> str:
    """The part of `query` a search reads: all of it up to QUERY_CHARS characters, else its first
    QUERY_CHARS cut after the last whole word (a query with no space in them is cut there)."""
    if len(query) <= QUERY_CHARS:
        return query
    head = query[:QUERY_CHARS]
    if query[QUERY_CHARS].isspace():
        return head
    tail = _LAST_SPACE.search(head)
    return head[: tail.start()] if tail is not None and tail.start() > 0 else head


MAX_ACTOR_ID = 256


def check_actor_id(value: str | None) -> str | None:
    """Who said a conversation's messages (a session's or an extraction's `actor_id`): 1..256
    characters, shown as a name (its facts' folder, the erasure that names it), so no control or
    bidirectional characters. None: no actor named."""
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ACTOR_ID:
        raise InvalidInput(f"actor_id must be 1..{MAX_ACTOR_ID} characters")
    return check_shown("actor_id", value)


SECRET_RUN = 8
"""Characters of a secret in a row that make a text a quote of it (a key's first eight are often
its kind's prefix, `sk-proj-`, which a masked echo keeps)."""


def holds_secret(text: str, secrets: Sequence[str | None]) -> bool:
    """Whether `text` quotes any SECRET_RUN characters in a row of one of `secrets`, in any case: a
    server that echoes a key whole, lower-cased, or masked in its middle."""
    folded = text.casefold()
    for secret in secrets:
        key = (secret or "").casefold()
        runs = {key[i : i + SECRET_RUN] for i in range(max(0, len(key) - SECRET_RUN + 1))} or {key}
        if key and any(run in folded for run in runs):
            return True
    return False


def checked_credential(value: str, what: str) -> str:
    """A token or API key as sent in a header: surrounding whitespace dropped (a key read from a
    file keeps its newline), then printable ASCII only. Else ValueError naming `what`, never the
    value: an HTTP client refusing the header would quote it whole in its error."""
    secret = value.strip()
    if not secret or any(not "!" <= ch <= "~" for ch in secret):
        raise ValueError(f"{what} must be printable ASCII with no spaces or line breaks inside")
    return secret
