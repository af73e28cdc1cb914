from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from typing import ClassVar

import httpx
import pytest

from cairn.domain.errors import FetchFailed, FetchRefused, PayloadTooLarge
from cairn.ingest.fetch import SafeFetcher, redact_url

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"

Handler = Callable[[httpx.Request], httpx.Response]


class FakeDns:
    def __init__(self, records: dict[str, list[str]]) -> None:
        self.records = records
        self.queries: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.queries.append((host, port))
        if host not in self.records:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.records[host]


class Recorder:
    """A MockTransport handler that records requests and answers from a route table."""

    def __init__(self, routes: dict[str, Handler] | None = None) -> None:
        self.routes = routes or {}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = self.routes.get(f"{request.headers['host']}{request.url.path}")
        if route is None:
            return httpx.Response(200, text="ok", headers={"content-type": "text/plain"})
        return route(request)


def fetcher(
    recorder: Recorder,
    dns: dict[str, list[str]] | None = None,
    *,
    max_bytes: int = 1000,
    allow_private: bool = False,
    max_redirects: int = 5,
) -> SafeFetcher:
    return SafeFetcher(
        max_bytes=max_bytes,
        timeout_s=5.0,
        max_redirects=max_redirects,
        allow_private=allow_private,
        resolver=FakeDns(dns or {}),
        transport=httpx.MockTransport(recorder),
    )


def redirect(location: str, status: int = 302) -> Handler:
    return lambda request: httpx.Response(status, headers={"location": location})


class TestAllowedFetch:
    def test_connects_to_the_checked_ip_with_the_original_host(self) -> None:
        # Given a public host
        recorder = Recorder(
            {
                "example.com/page": lambda r: httpx.Response(
                    200, content=b"<p>hi</p>", headers={"content-type": "text/html"}
                )
            }
        )
        # When it is fetched
        result = fetcher(recorder, {"example.com": [PUBLIC_V4]}).fetch("http://example.com/page?q=1")
        # Then the connection goes to the resolved IP and the Host header keeps the name
        request = recorder.requests[0]
        assert request.url.host == PUBLIC_V4
        assert request.url.query == b"q=1"
        assert request.headers["host"] == "example.com"
        assert result.body == b"<p>hi</p>"
        assert result.status == 200
        assert result.content_type == "text/html"
        assert result.url == result.final_url == "http://example.com/page?q=1"

    def test_https_keeps_the_name_for_sni_and_certificate_checks(self) -> None:
        recorder = Recorder()
        fetcher(recorder, {"example.com": [PUBLIC_V6]}).fetch("https://example.com:8443/x")
        request = recorder.requests[0]
        assert request.url.host == PUBLIC_V6
        assert request.url.port == 8443
        assert request.headers["host"] == "example.com:8443"
        assert request.extensions["sni_hostname"] == "example.com"

    def test_resolver_gets_the_default_port(self) -> None:
        dns = FakeDns({"example.com": [PUBLIC_V4]})
        SafeFetcher(100, 5.0, resolver=dns, transport=httpx.MockTransport(Recorder())).fetch(
            "https://example.com/"
        )
        assert dns.queries == [("example.com", 443)]

    def test_userinfo_is_dropped_from_the_result(self) -> None:
        result = fetcher(Recorder(), {"example.com": [PUBLIC_V4]}).fetch("http://u:pw@example.com/a")
        assert result.url == "http://example.com/a"


BAD_ADDRESSES = [
    "127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1", "169.254.169.254",
    "224.0.0.1", "239.255.255.250", "0.0.0.0", "0.1.2.3", "100.64.0.1", "100.100.100.200", "192.0.0.192",
    "255.255.255.255", "240.0.0.1", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
    "ff02::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
    "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a9fe:a9fe::1",
]  # fmt: skip


class TestRefusedAddresses:
    @pytest.mark.parametrize("address", BAD_ADDRESSES)
    def test_hosts_resolving_to_non_public_addresses_are_refused(self, address: str) -> None:
        recorder = Recorder()
        with pytest.raises(FetchRefused, match=re.escape("refusing to fetch http://evil.example/")):
            fetcher(recorder, {"evil.example": [address]}).fetch("http://evil.example/")
        assert recorder.requests == []

    def test_one_bad_address_among_good_ones_is_enough_to_refuse(self) -> None:
        recorder = Recorder()
        with pytest.raises(FetchRefused):
            fetcher(recorder, {"mixed.example": [PUBLIC_V4, "10.0.0.1"]}).fetch("http://mixed.example/")
        assert recorder.requests == []

    @pytest.mark.parametrize(
        "url",
        [
            "http://127.0.0.1/",
            "http://[::1]:8080/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0251.0376.0251.0376/",
            "http://0/",
        ],
    )
    def test_literal_and_numeric_ip_hosts_are_refused_without_dns(self, url: str) -> None:
        recorder = Recorder()
        f = fetcher(recorder)
        with pytest.raises(FetchRefused):
            f.fetch(url)
        assert recorder.requests == []

    @pytest.mark.parametrize(
        "url",
        ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "javascript:alert(1)", "/rel"],
    )
    def test_only_http_and_https(self, url: str) -> None:
        with pytest.raises(FetchRefused):
            fetcher(Recorder(), {"example.com": [PUBLIC_V4]}).fetch(url)

    def test_messages_carry_no_credentials_or_query(self) -> None:
        with pytest.raises(FetchRefused) as caught:
            fetcher(Recorder(), {"x.example": ["10.0.0.1"]}).fetch(
                "http://admin:s3cret@x.example/p?token=abc"
            )
        assert "s3cret" not in caught.value.message
        assert "token" not in caught.value.message
        assert "x.example/p" in caught.value.message

    def test_unresolvable_host_fails(self) -> None:
        with pytest.raises(FetchFailed, match="could not resolve"):
            fetcher(Recorder()).fetch("http://nowhere.example/")


class TestAllowPrivate:
    def test_loopback_and_private_are_allowed(self) -> None:
        recorder = Recorder()
        f = fetcher(recorder, {"dev.local": ["192.168.1.10"]}, allow_private=True)
        assert f.fetch("http://127.0.0.1:8080/").status == 200
        assert f.fetch("http://[::1]/").status == 200
        assert f.fetch("http://dev.local/").status == 200
        assert recorder.requests[2].url.host == "192.168.1.10"

    @pytest.mark.parametrize(
        "url", ["http://169.254.169.254/", "http://[fd00:ec2::254]/", "http://100.100.100.200/"]
    )
    def test_metadata_endpoints_stay_refused(self, url: str) -> None:
        with pytest.raises(FetchRefused, match="metadata"):
            fetcher(Recorder(), allow_private=True).fetch(url)

    def test_link_local_stays_refused(self) -> None:
        with pytest.raises(FetchRefused, match="link-local"):
            fetcher(Recorder(), {"ecs.local": ["169.254.170.9"]}, allow_private=True).fetch(
                "http://ecs.local/"
            )


class TestRedirects:
    DNS: ClassVar[dict[str, list[str]]] = {
        "public.example": [PUBLIC_V4],
        "other.example": ["151.101.1.69"],
        "internal.example": ["10.0.0.5"],
    }

    def test_redirect_to_a_private_host_is_refused_at_the_redirect(self) -> None:
        recorder = Recorder({"public.example/start": redirect("http://internal.example/admin")})
        with pytest.raises(FetchRefused, match=re.escape("internal.example")):
            fetcher(recorder, self.DNS).fetch("http://public.example/start")
        assert len(recorder.requests) == 1

    def test_redirect_to_a_literal_metadata_ip_is_refused(self) -> None:
        recorder = Recorder({"public.example/start": redirect("http://169.254.169.254/latest/", 307)})
        with pytest.raises(FetchRefused, match="metadata"):
            fetcher(recorder, self.DNS, allow_private=True).fetch("http://public.example/start")
        assert len(recorder.requests) == 1

    def test_redirect_to_another_scheme_is_refused(self) -> None:
        recorder = Recorder({"public.example/start": redirect("file:///etc/passwd", 301)})
        with pytest.raises(FetchRefused, match="redirect"):
            fetcher(recorder, self.DNS).fetch("http://public.example/start")

    def test_relative_redirects_resolve_against_the_current_url(self) -> None:
        recorder = Recorder(
            {
                "public.example/a/b": redirect("c?x=1"),
                "public.example/a/c": redirect("//other.example/d", 308),
                "other.example/d": redirect("/final", 303),
            }
        )
        result = fetcher(recorder, self.DNS).fetch("http://public.example/a/b")
        assert result.final_url == "http://other.example/final"
        assert [r.url.host for r in recorder.requests] == [
            PUBLIC_V4,
            PUBLIC_V4,
            "151.101.1.69",
            "151.101.1.69",
        ]
        assert recorder.requests[1].url.query == b"x=1"

    def test_too_many_redirects(self) -> None:
        recorder = Recorder({"public.example/loop": redirect("/loop")})
        with pytest.raises(FetchFailed, match="too many redirects"):
            fetcher(recorder, self.DNS, max_redirects=3).fetch("http://public.example/loop")
        assert len(recorder.requests) == 4

    def test_redirect_without_location_is_a_failure(self) -> None:
        recorder = Recorder({"public.example/x": lambda r: httpx.Response(302)})
        with pytest.raises(FetchFailed, match="302"):
            fetcher(recorder, self.DNS).fetch("http://public.example/x")


class TestResponses:
    DNS: ClassVar[dict[str, list[str]]] = {"example.com": [PUBLIC_V4]}

    def test_body_at_the_limit_is_accepted(self) -> None:
        recorder = Recorder({"example.com/f": lambda r: httpx.Response(200, content=b"a" * 1000)})
        assert len(fetcher(recorder, self.DNS, max_bytes=1000).fetch("http://example.com/f").body) == 1000

    def test_body_over_the_limit_is_refused(self) -> None:
        recorder = Recorder({"example.com/f": lambda r: httpx.Response(200, content=b"a" * 1001)})
        with pytest.raises(PayloadTooLarge, match="exceeds 1000 bytes"):
            fetcher(recorder, self.DNS, max_bytes=1000).fetch("http://example.com/f")

    def test_endless_stream_is_cut_off(self) -> None:
        def endless() -> Iterator[bytes]:
            while True:
                yield b"x" * 256

        recorder = Recorder({"example.com/f": lambda r: httpx.Response(200, content=endless())})
        with pytest.raises(PayloadTooLarge):
            fetcher(recorder, self.DNS, max_bytes=5000).fetch("http://example.com/f")

    def test_declared_length_over_the_limit_is_refused_before_reading(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"content-length": "999999"}, content=iter([b"tiny"]))

        with pytest.raises(PayloadTooLarge):
            fetcher(Recorder({"example.com/f": handler}), self.DNS).fetch("http://example.com/f")

    @pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.PoolTimeout])
    def test_timeouts_fail_with_timed_out(self, error: type[httpx.TimeoutException]) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            raise error("slow", request=request)

        with pytest.raises(FetchFailed, match="timed out"):
            fetcher(Recorder({"example.com/slow": handler}), self.DNS).fetch("http://example.com/slow?k=v")

    def test_timeout_while_streaming_the_body(self) -> None:
        def stalls() -> Iterator[bytes]:
            yield b"partial"
            raise httpx.ReadTimeout("stalled")

        recorder = Recorder({"example.com/f": lambda r: httpx.Response(200, content=stalls())})
        with pytest.raises(FetchFailed, match="timed out"):
            fetcher(recorder, self.DNS).fetch("http://example.com/f")

    def test_connection_errors_fail(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("refused", request=request)

        with pytest.raises(FetchFailed, match="ConnectError"):
            fetcher(Recorder({"example.com/x": handler}), self.DNS).fetch("http://example.com/x")

    @pytest.mark.parametrize("status", [404, 500, 204 + 100])
    def test_non_2xx_fails_with_the_status(self, status: int) -> None:
        recorder = Recorder({"example.com/x": lambda r: httpx.Response(status)})
        with pytest.raises(FetchFailed, match=str(status)):
            fetcher(recorder, self.DNS).fetch("http://example.com/x")


def test_redact_url_strips_credentials_query_and_fragment() -> None:
    assert redact_url("https://u:p@h.example:8443/a/b?secret=1#frag") == "https://h.example:8443/a/b?…"
    assert redact_url("http://h.example/") == "http://h.example/"
