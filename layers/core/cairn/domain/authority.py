"""The host a URL's authority names, read strictly: what the DNS-rebinding guard
(entrypoints/host_guard.py) and the web UI's origin check (entrypoints/ui/csrf.py) compare with
the names this server has, and what tells a loopback redirect (auth/oauth/redirects.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def named_host(host: str) -> str:
    """A bind address as a Host header names it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def authority_host(authority: str) -> str | None:
    """The host part of an authority (a `Host` header, an Origin's or a URL's), lowercased, IPv6 in
    brackets;
    None unless the authority is that host and at most a port (urlsplit reads the host of
    `[::1].evil.example` or `user@localhost` as loopback, which no browser does)."""
    try:
        parts = urlsplit(f"//{authority}")
        name = parts.hostname
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if not name:
        return None
    host = named_host(name.lower())
    rest = authority.lower().removeprefix(host)
    if rest == authority.lower() or rest.strip(":0123456789") or rest[:1] not in ("", ":"):
        return None
    return host
