"""Where an HTTP model adapter sends its requests: the URL, the server as errors name it (scheme,
host and port, never a path or query that might carry a key), and its timeouts."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class Endpoint:
    url: str
    server: str
    timeout: httpx.Timeout
    secrets: tuple[str, ...] = ()
    """A user and password in the URL in each form a server may echo (httpx sends them as Basic
    credentials): withheld from errors as the API key is."""


def endpoint(base_url: str, path: str, timeout_s: float) -> Endpoint:
    """`base_url` up to the API version plus `path`; `timeout_s` bounds each wait for bytes, and
    connecting at most 10 s of it."""
    url = base_url.rstrip("/") + path
    parsed = httpx.URL(url)
    server = f"{parsed.scheme}://{parsed.host}" + (f":{parsed.port}" if parsed.port else "")
    return Endpoint(url, server, httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)), _userinfo(parsed))


def _userinfo(url: httpx.URL) -> tuple[str, ...]:
    if not url.userinfo:
        return ()
    pair = f"{url.username}:{url.password}"
    forms = (
        url.userinfo.decode("ascii", "replace"),
        pair,
        base64.b64encode(pair.encode()).decode(),
        url.password,
    )
    return tuple(f for f in dict.fromkeys(forms) if len(f) >= 4)
