"""Document path rules (Jeffs Brain STORAGE.md) and the memory namespaces that scopes map to."""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re

from cairn.domain.errors import InvalidInput, InvalidPath
from cairn.domain.text import check_path_text, excerpt, is_blank

MAX_PATH_LENGTH = 1024
MAX_PATH_BYTES = 1000
"""What fits in a record key with its prefix on every store (DynamoDB sort keys hold 1,024 bytes)."""

OWNED_ROOT = "thoughts"
"""Where ThoughtMCP keeps its users' folders, one per user: what is written in one belongs to that
user, so only as a memory of theirs."""
_OWNED_KEY_CHARS = 24
_OWNED_FOLDER = re.compile(rf"{OWNED_ROOT}/u[0-9a-f]{{{_OWNED_KEY_CHARS}}}/")


def owned_folder(user_key: str) -> str:
    """A user's folder, named by the hex digest of their id (services/thoughtmcp/models.py)."""
    return f"{OWNED_ROOT}/u{user_key[:_OWNED_KEY_CHARS]}/"


def in_owned_folder(path: str) -> bool:
    return _OWNED_FOLDER.match(path) is not None


def others_folder_refusal(path: str) -> str:
    """Why a user's memory may not be moved (or written) into another user's folder."""
    return (
        f"{excerpt(path)} is another ThoughtMCP user's folder: a user's memory stays theirs (rename "
        "it within its own user's folder, or back into it)"
    )


def user_key(user_id: str) -> str:
    """What a ThoughtMCP user's folder is named by: a digest of their id, never the id itself."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def user_folder(user_id: str) -> str:
    """The folder of the ThoughtMCP user `user_id`."""
    return owned_folder(user_key(user_id))


def in_folder_of(path: str, user_id: str) -> bool:
    return path.startswith(user_folder(user_id))


def owned_folder_refusal(path: str) -> str:
    """Why a plain document may not be written (or renamed) into a user's folder."""
    return (
        f"{excerpt(path)} is in a ThoughtMCP user's folder: its memories are written through "
        "ThoughtMCP (remember, update_memory), not as plain documents"
    )


GLOBAL_PREFIX = "memory/global/"
PROJECT_PREFIX = "memory/project/"
AGENT_PREFIX = "memory/agent/"

SCOPE_PREFIXES: dict[str, str] = {
    "global": GLOBAL_PREFIX,
    "project": PROJECT_PREFIX,
    "agent": AGENT_PREFIX,
}


def validate_path(path: str) -> str:
    """Return `path` when it is a canonical relative POSIX path, else raise InvalidPath."""
    if not isinstance(path, str) or not path:
        raise InvalidPath("path must be a non-empty string")
    if len(path) > MAX_PATH_LENGTH:
        raise InvalidPath(f"path exceeds {MAX_PATH_LENGTH} characters")
    if "\x00" in path:
        raise InvalidPath("path must not contain a NUL byte")
    try:
        check_path_text(path)
    except InvalidInput as exc:
        raise InvalidPath(exc.message) from None
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise InvalidPath(f"path exceeds {MAX_PATH_BYTES} bytes in UTF-8")
    if "\\" in path:
        raise InvalidPath("path must not contain a backslash")
    if path.startswith("/"):
        raise InvalidPath("path must not start with a slash")
    if path.endswith("/"):
        raise InvalidPath("path must not end with a slash")
    segments = path.split("/")
    if any(seg == "" for seg in segments):
        raise InvalidPath("path must not contain empty segments")
    if any(seg in (".", "..") for seg in segments):
        raise InvalidPath("path must not contain '.' or '..' segments")
    if any(is_blank(seg) for seg in segments):
        raise InvalidPath("each segment of a path must show at least one visible character")
    if posixpath.normpath(path) != path:
        raise InvalidPath("path is not canonical")
    return path


def validate_dir(directory: str) -> str:
    """A listing directory: the empty string (brain root) or a valid path."""
    return "" if directory == "" else validate_path(directory)


def normalize_user_path(path: str) -> str:
    """Paths from MCP callers may carry the seed's leading slash (`/memory/global/x.md`)."""
    return validate_path(path.lstrip("/") if path.startswith("/") and path != "/" else path)


def is_generated(path: str) -> bool:
    """Files whose base name starts with `_` are generated and hidden from listings by default."""
    return posixpath.basename(path).startswith("_")


def scope_prefix(scope: str | None) -> str | None:
    """The path prefix a memory scope selects; None for `all` or no scope."""
    if scope in (None, "all"):
        return None
    return SCOPE_PREFIXES[scope]


def both_prefixes(scope: str | None, folder: str | None) -> str | None:
    """The paths that start with both prefixes, as one prefix: the longer when one holds the
    other, "" when neither is given (everything), None when no path can start with both."""
    first, second = scope or "", folder or ""
    if first.startswith(second):
        return first
    if second.startswith(first):
        return second
    return None


def glob_match(pattern: str, name: str) -> bool:
    """Shell-style match of a base name with Go `path.Match` semantics (`*`, `?`, `[...]`).

    Matched by the classic last-star backtracking, in O(len(pattern) x len(name)): a regular
    expression of several stars backtracks exponentially (`*a*a…*b` against `aaa…` took minutes).
    """
    tokens = _glob_tokens(pattern)
    p = n = 0
    star, mark = -1, 0  # the last star seen, and where in `name` it began to match
    while n < len(name):
        if p < len(tokens) and tokens[p] is None:
            star, mark, p = p, n, p + 1
        elif p < len(tokens) and _matches_one(tokens[p], name[n]):
            p, n = p + 1, n + 1
        elif star >= 0 and name[mark] != "/":  # let the last star take one more character
            mark += 1
            p, n = star + 1, mark
        else:
            return False
    return all(token is None for token in tokens[p:])


GlobToken = str | re.Pattern[str] | None
"""A literal character, a one-character class, or None for a star."""
_ANY_BUT_SLASH = re.compile("[^/]")


def _matches_one(token: GlobToken, ch: str) -> bool:
    return token == ch if isinstance(token, str) else token is not None and token.fullmatch(ch) is not None


@functools.lru_cache(maxsize=256)
def _glob_tokens(pattern: str) -> tuple[GlobToken, ...]:
    tokens: list[GlobToken] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if not tokens or tokens[-1] is not None:  # a run of stars is one star
                tokens.append(None)
        elif ch == "?":
            tokens.append(_ANY_BUT_SLASH)
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                raise InvalidPath(f"malformed glob pattern: {excerpt(pattern)}")
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            if not body:
                raise InvalidPath(f"malformed glob pattern: {excerpt(pattern)}")
            escaped = "".join("\\" + c if c in "\\]^[" else c for c in body)
            try:
                tokens.append(re.compile(f"[{'^' if negate else ''}{escaped}]", re.DOTALL))
            except re.error:  # a reversed range such as [z-a]
                raise InvalidPath(f"malformed glob pattern: {excerpt(pattern)}") from None
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            tokens.append(pattern[i])
        else:
            tokens.append(ch)
        i += 1
    return tuple(tokens)


def named_segment(name: str, slug: str, *, fallback: str, width: int, digest: bool = False) -> str:
    """`slug` (`name` cut to ASCII letters, digits and `._-`) as a folder of at most `width`
    characters: kept when it is all of a plain-ASCII name; a name the slug loses letters of
    (`Café` → `caf`, `田中` → none: `fallback`), or any when `digest`, gets a digest of the name
    after it, so two names never share the folder."""
    if digest or not slug or not name.isascii():
        return f"{slug[: width - 11] or fallback}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"
    return slug[:width]
