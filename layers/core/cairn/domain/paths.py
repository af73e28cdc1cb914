"""Document path rules (Jeffs Brain STORAGE.md) and the memory namespaces that scopes map to."""

from __future__ import annotations

import posixpath
import re

from cairn.domain.errors import InvalidInput, InvalidPath
from cairn.domain.text import check_path_text, excerpt

MAX_PATH_LENGTH = 1024
MAX_PATH_BYTES = 1000
"""What fits in a record key with its prefix on every store (DynamoDB sort keys hold 1,024 bytes)."""

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


def glob_match(pattern: str, name: str) -> bool:
    """Shell-style match of a base name with Go `path.Match` semantics (`*`, `?`, `[...]`)."""
    return _compile_glob(pattern).fullmatch(name) is not None


_GLOB_CACHE: dict[str, re.Pattern[str]] = {}


def _compile_glob(pattern: str) -> re.Pattern[str]:
    cached = _GLOB_CACHE.get(pattern)
    if cached is not None:
        return cached
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
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
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    compiled = re.compile("".join(out), re.DOTALL)
    _GLOB_CACHE[pattern] = compiled
    return compiled
