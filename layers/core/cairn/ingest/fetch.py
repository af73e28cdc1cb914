"""Fetch a URL for ingest without letting callers reach private networks (SSRF).

Every hop (the first URL and each redirect) is checked: the scheme must be http(s) and every
address the host resolves to must pass `netguard.refusal_reason`. The connection then goes to the
checked address itself — the URL's host is swapped for the IP, the `Host` header and TLS SNI keep
the name, so certificates are still verified against the name — which defeats DNS rebinding
between the check and the connect. `allow_private` permits loopback/private ranges (tests, closed
networks); cloud metadata and link-local addresses stay refused even then.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from cairn.domain.errors import FetchFailed, FetchRefused, PayloadTooLarge
from cairn.ingest.netguard import IPAddress, parse_ip_host, refusal_reason
from cairn.ingest.sizes import format_size

__all__ = ["Fetched", "Resolver", "SafeFetcher", "redact_url"]

Resolver = Callable[[str, int], list[str]]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_PATH_IN_MESSAGES = 120


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    """The requested URL without any user:password part."""
    final_url: str
    """The URL after redirects, without any user:password part."""
    status: int
    content_type: str | None
    body: bytes


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def redact_url(url: httpx.URL | str) -> str:
    """scheme://host[:port]/path for messages: no credentials, no query string or fragment."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "<invalid URL>"
    path = parsed.path
    if len(path) > _MAX_PATH_IN_MESSAGES:
        path = path[:_MAX_PATH_IN_MESSAGES] + "…"
    netloc = parsed.netloc.decode("ascii", "replace")
    return f"{parsed.scheme}://{netloc}{path}" + ("?…" if parsed.query else "")


class SafeFetcher:
    def __init__(
        self,
        max_bytes: int,
        timeout_s: float,
        max_redirects: int = 5,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.max_redirects = max_redirects
        self.allow_private = allow_private
        self._resolve = resolver or system_resolver
        self._transport = transport

    def fetch(self, url: str) -> Fetched:
        deadline = time.monotonic() + self.timeout_s
        requested = current = _parse(url)
        with httpx.Client(
            transport=self._transport, follow_redirects=False, trust_env=False, timeout=self.timeout_s
        ) as client:
            for _hop in range(self.max_redirects + 1):
                address = self._checked_address(current)
                response = self._send(client, current, address, deadline)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        current = _redirect_target(current, location)
                        continue
                    if not 200 <= response.status_code < 300:
                        raise FetchFailed(f"{redact_url(current)} returned HTTP {response.status_code}")
                    body = self._read_body(response, current, deadline)
                finally:
                    response.close()
                return Fetched(
                    url=str(requested.copy_with(userinfo=b"")),
                    final_url=str(current.copy_with(userinfo=b"")),
                    status=response.status_code,
                    content_type=response.headers.get("content-type"),
                    body=body,
                )
        raise FetchFailed(f"too many redirects (more than {self.max_redirects}) fetching {redact_url(url)}")

    def _checked_address(self, url: httpx.URL) -> IPAddress:
        """The address to connect to; raises FetchRefused if any address of the host is not allowed."""
        host = url.raw_host.decode("ascii")
        literal = parse_ip_host(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            addresses = self._resolve_host(host, url.port or (443 if url.scheme == "https" else 80))
        for address in addresses:
            reason = refusal_reason(address, allow_private=self.allow_private)
            if reason is not None:
                raise FetchRefused(f"refusing to fetch {redact_url(url)}: the host resolves to {reason}")
        return addresses[0]

    def _resolve_host(self, host: str, port: int) -> list[IPAddress]:
        try:
            resolved = self._resolve(host, port)
            addresses = [ipaddress.ip_address(a) for a in resolved]
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchFailed(f"could not resolve host {host}") from exc
        if not addresses:
            raise FetchFailed(f"could not resolve host {host}")
        return addresses

    def _send(
        self, client: httpx.Client, url: httpx.URL, address: IPAddress, deadline: float
    ) -> httpx.Response:
        remaining = _remaining(deadline, url)
        extensions: dict[str, str] = {}
        if url.scheme == "https" and parse_ip_host(url.raw_host.decode("ascii")) is None:
            extensions["sni_hostname"] = url.raw_host.decode("ascii")
        request = client.build_request(
            "GET",
            url.copy_with(host=str(address)),
            headers={
                "Host": url.netloc.decode("ascii"),
                "Accept-Encoding": "identity",
                "Connection": "close",  # never reuse a connection verified for another host
                "User-Agent": "cairn-ingest/0.1",
            },
            timeout=httpx.Timeout(remaining),
            extensions=extensions,
        )
        try:
            return client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise FetchFailed(f"fetching {redact_url(url)} timed out") from exc
        except httpx.HTTPError as exc:
            raise FetchFailed(f"fetching {redact_url(url)} failed ({type(exc).__name__})") from exc

    def _read_body(self, response: httpx.Response, url: httpx.URL, deadline: float) -> bytes:
        too_large = PayloadTooLarge(
            f"response body of {redact_url(url)} exceeds {format_size(self.max_bytes)}"
        )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_bytes:
                    raise too_large
                chunks.append(chunk)
                _remaining(deadline, url)
        except httpx.TimeoutException as exc:
            raise FetchFailed(f"fetching {redact_url(url)} timed out") from exc
        except httpx.HTTPError as exc:
            raise FetchFailed(f"reading {redact_url(url)} failed ({type(exc).__name__})") from exc
        return b"".join(chunks)


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise FetchRefused("not a valid URL") from exc
    _check_scheme(parsed)
    return parsed


def _check_scheme(url: httpx.URL) -> None:
    if url.scheme not in ("http", "https"):
        raise FetchRefused(f"only http and https URLs can be fetched, not {url.scheme or 'a relative URL'}")
    if not url.raw_host:
        raise FetchRefused("URL has no host")


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    try:
        target = current.join(location)
    except httpx.InvalidURL as exc:
        raise FetchFailed(f"{redact_url(current)} redirected to an invalid URL") from exc
    try:
        _check_scheme(target)
    except FetchRefused as exc:
        raise FetchRefused(f"refusing the redirect from {redact_url(current)}: {exc.message}") from exc
    return target


def _remaining(deadline: float, url: httpx.URL) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise FetchFailed(f"fetching {redact_url(url)} timed out")
    return remaining
