from __future__ import annotations

import ipaddress

import pytest

from cairn.ingest.netguard import parse_ip_host, refusal_reason


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("[::1]", "::1"),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"),
    ],
)
def test_numeric_hosts_are_normalised(host: str, expected: str) -> None:
    assert parse_ip_host(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host", ["example.com", "deadbeef", "1e100.net", "0x7f.example.com", "1.2.3.4.5", "cafe"]
)
def test_names_are_not_ips(host: str) -> None:
    assert parse_ip_host(host) is None


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("address", "private_ok"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("10.0.0.1", True),
        ("fd12::1", True),
        ("100.64.0.1", True),
        ("169.254.169.254", False),
        ("fe80::1", False),
        ("224.0.0.1", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("::ffff:169.254.169.254", False),
    ],
)
def test_allow_private_lifts_only_private_ranges(address: str, private_ok: bool) -> None:
    ip = ipaddress.ip_address(address)
    assert refusal_reason(ip) is not None
    assert (refusal_reason(ip, allow_private=True) is None) is private_ok
