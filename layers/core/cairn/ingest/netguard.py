"""Which IP addresses a server-side fetch may connect to (SSRF guard).

Always refused: cloud metadata endpoints, link-local, multicast, unspecified/"this network",
reserved and broadcast addresses. Refused unless `allow_private`: loopback, private (RFC 1918,
fc00::/7), CGNAT (100.64.0.0/10) and every other non-global range. IPv6 forms that embed an IPv4
address (IPv4-mapped, IPv4-compatible, 6to4, NAT64 64:ff9b::/96) are judged by that IPv4 address.
"""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPAT = ipaddress.ip_network("::/96")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# Only these characters can make a numeric IPv4 host (decimal, octal, hex, shortened forms).
_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a literal IP host means, including inet_aton forms (2130706433, 0x7f.1, 0177.0.0.1)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    candidate = host.rstrip(".")
    if candidate and _NUMERIC_HOST.match(candidate) and any(c.isdigit() for c in candidate):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(candidate))
        except OSError:
            return None
    return None


def refusal_reason(address: IPAddress, *, allow_private: bool = False) -> str | None:
    """None when a connection to `address` is allowed, else a short reason."""
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(int(address))  # drop any %scope so comparisons work
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return refusal_reason(embedded, allow_private=allow_private)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:  # before the reserved check: ::1 lies in the reserved ::/8
        return None if allow_private else "a loopback address"
    always = _always_refused(address)
    if always is not None:
        return always
    if allow_private:
        return None
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return "a shared (CGNAT) address"
    if address.is_private or not address.is_global:
        return "a private address"
    return None


def _always_refused(address: IPAddress) -> str | None:
    if address.is_unspecified or (isinstance(address, ipaddress.IPv4Address) and address in _THIS_NETWORK):
        return "an unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _IPV4_COMPAT and int(address) > 1:
        # Deprecated IPv4-compatible form (::a.b.c.d); some stacks still route it to a.b.c.d.
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None
