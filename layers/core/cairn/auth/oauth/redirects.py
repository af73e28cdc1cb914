"""Which redirect URIs a dynamically registered client may have (docs/SIGN_IN.md).

Allowed: loopback redirects (RFC 8252 7.3: `http` or `https` on 127.0.0.1, localhost or [::1], any
port and path), the callbacks of the hosted and native clients Cairn documents (claude.ai, Cursor,
VS Code), and what the operator lists: exact URIs, or prefixes written with a trailing `*`.
Never: a fragment, user info, a script-like scheme, more than MAX_URIS URIs or one longer than
MAX_URI_BYTES. A client gets exactly the URIs it registered, because Cognito matches them exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import SplitResult, unquote, urlsplit

from cairn.auth.oauth.errors import InvalidRedirect
from cairn.domain.authority import LOOPBACK_HOSTS, authority_host
from cairn.domain.text import excerpt, has_control

MAX_URIS = 10
MAX_URI_BYTES = 1024  # Cognito holds a callback URL of at most 1,024 characters
HOSTED: dict[str, str] = {
    "https://claude.ai/api/mcp/auth_callback": "claude.ai",
    "https://claude.com/api/mcp/auth_callback": "claude.ai",
    "cursor://anysphere.cursor-mcp/oauth/callback": "Cursor",
    "https://www.cursor.com/agents/mcp/oauth/callback": "Cursor",
    "https://vscode.dev/redirect": "VS Code",
    "https://insiders.vscode.dev/redirect": "VS Code",
}
"""The fixed callbacks of the clients docs/SIGN_IN.md covers (the MCP Inspector's are loopback)."""
NEVER = frozenset({"javascript", "data", "vbscript", "file", "about", "blob", "filesystem"})
HOW_TO_ALLOW = (
    "Cairn accepts loopback redirects (http://127.0.0.1, http://localhost or http://[::1] on any "
    "port), the callbacks of claude.ai, Cursor and VS Code, and the URIs its operator lists in "
    "CAIRN_OAUTH_ALLOWED_REDIRECTS (exact URIs, or prefixes ending in *)"
)


class RedirectPolicy:
    def __init__(self, allowed: Sequence[str] = ()) -> None:
        """`allowed`: the operator's entries; ValueError names one that could never be safe."""
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for entry in (e.strip() for e in allowed):
            if not entry:
                continue
            prefix = entry.endswith("*")
            uri = entry.rstrip("*")
            _check_operator_entry(entry, uri, prefix)
            if prefix:
                self.prefixes.append(uri)
            else:
                self.exact.add(uri)

    def checked(self, uris: Sequence[object]) -> list[str]:
        """The URIs, duplicates dropped, if every one is allowed; InvalidRedirect naming the first
        that is not."""
        kept: list[str] = []
        for uri in uris:
            reason = self.refusal(uri)
            if reason is not None:
                raise InvalidRedirect(reason)
            if isinstance(uri, str) and uri not in kept:
                kept.append(uri)
        if not kept:
            raise InvalidRedirect("redirect_uris must name at least one redirect URI")
        if len(kept) > MAX_URIS:
            raise InvalidRedirect(f"at most {MAX_URIS} redirect URIs may be registered, not {len(kept)}")
        return kept

    def refusal(self, uri: object) -> str | None:
        """Why `uri` may not be registered, or None when it may."""
        if not isinstance(uri, str) or not uri:
            return f"redirect URI {excerpt(uri)} is not a URI"
        if len(uri.encode()) > MAX_URI_BYTES:
            return f"redirect URI {excerpt(uri)} is longer than {MAX_URI_BYTES} bytes"
        parts = _parsed(uri)
        if parts is None:
            return f"redirect URI {excerpt(uri)} is not an absolute URI"
        if "#" in uri or "@" in parts.netloc:
            return f"redirect URI {excerpt(uri)} must not carry a fragment or user info"
        if parts.scheme in NEVER:
            return f"redirect URI {excerpt(uri)} uses the {parts.scheme}: scheme, which is never a callback"
        if _loopback(parts) or uri in HOSTED or uri in self.exact:
            return None
        if any(uri.startswith(prefix) for prefix in self.prefixes):
            if _steps_out(parts.path):
                return f"redirect URI {excerpt(uri)} must not hold dot segments or encoded slashes"
            return None
        return f"redirect URI {excerpt(uri)} is not allowed. {HOW_TO_ALLOW}."


def _parsed(uri: str) -> SplitResult | None:
    if has_control(uri) or any(ch.isspace() for ch in uri):
        return None
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        return None
    if not parts.scheme or not (parts.netloc or parts.path):
        return None
    return parts


def _steps_out(path: str) -> bool:
    """Whether a browser could take the path out of an allowed prefix: Cognito matches the callback
    as sent, and the browser then resolves `..` (raw or percent-encoded) and, in some, `%2f`/`%5c`."""
    decoded = unquote(path)
    segments = decoded.replace("\\", "/").split("/")
    return any(s in (".", "..") for s in segments) or "%2f" in path.lower() or "%5c" in path.lower()


def _loopback(parts: SplitResult) -> bool:
    """The whole authority read (domain/authority.py), not urlsplit's `hostname`, which reads the host
    of `http://[::1].evil.example/` as ::1 where a browser or another client's parser reads none."""
    return parts.scheme in ("http", "https") and authority_host(parts.netloc) in LOOPBACK_HOSTS


def _check_operator_entry(entry: str, uri: str, prefix: bool) -> None:
    parts = _parsed(uri)
    if parts is None or "#" in uri or "@" in parts.netloc or parts.scheme in NEVER:
        raise ValueError(f"CAIRN_OAUTH_ALLOWED_REDIRECTS: {entry!r} is not a redirect URI Cairn can allow")
    if parts.scheme == "http" and not _loopback(parts):
        raise ValueError(f"CAIRN_OAUTH_ALLOWED_REDIRECTS: {entry!r} is plain http off loopback; use https")
    if prefix and parts.scheme in ("http", "https") and not parts.path.startswith("/"):
        # `https://example.com*` would also let in https://example.com.attacker.net/...
        raise ValueError(
            f"CAIRN_OAUTH_ALLOWED_REDIRECTS: the prefix {entry!r} must reach into the path "
            "(`https://host/path/*`)"
        )
