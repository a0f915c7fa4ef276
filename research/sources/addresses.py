"""Which hosts and network addresses the fetcher may connect to.

Everything here is pure and synchronous: it classifies a host name or an IP
address and explains a refusal in a sentence. ``safe_fetch`` applies these
rules after DNS resolution, before any socket is opened.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

import idna

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Addresses of cloud instance-metadata services. They are refused even for
# allow-listed hosts: no research task needs credentials of the machine.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, DigitalOcean
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    }
)

METADATA_HOSTNAMES: frozenset[str] = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)

# Suffixes that never name a public web site: they resolve through local or
# split-horizon DNS, if at all.
_PRIVATE_SUFFIXES = (
    ".localhost",
    ".local",
    ".internal",
    ".intranet",
    ".lan",
    ".home.arpa",
    ".corp",
)

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Ordered so that the most specific explanation wins (broadcast before the
# reserved 240/4 block, for instance).
_FORBIDDEN_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("255.255.255.255/32"), "the broadcast address"),
    (_V4("0.0.0.0/8"), "an unspecified ('this network') address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V4("10.0.0.0/8"), "a private (RFC 1918) address"),
    (_V4("172.16.0.0/12"), "a private (RFC 1918) address"),
    (_V4("192.168.0.0/16"), "a private (RFC 1918) address"),
    (_V4("100.64.0.0/10"), "a carrier-grade NAT (RFC 6598) address"),
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V4("192.0.0.0/24"), "an IETF protocol-assignment address"),
    (_V4("192.0.2.0/24"), "a documentation address"),
    (_V4("198.51.100.0/24"), "a documentation address"),
    (_V4("203.0.113.0/24"), "a documentation address"),
    (_V4("192.88.99.0/24"), "a 6to4 relay anycast address"),
    (_V4("198.18.0.0/15"), "a benchmarking address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),
)

_FORBIDDEN_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "the unspecified IPv6 address"),
    (_V6("::1/128"), "the IPv6 loopback address"),
    (_V6("64:ff9b:1::/48"), "a local-use NAT64 address"),
    (_V6("100::/64"), "an IPv6 discard-only address"),
    # Teredo hides the real IPv4 endpoint behind an XOR; refusing the whole
    # prefix is simpler than trusting the decoding.
    (_V6("2001::/32"), "a Teredo tunnel address"),
    (_V6("2001::/23"), "an IETF protocol-assignment address"),
    (_V6("2001:db8::/32"), "a documentation address"),
    (_V6("fc00::/7"), "an IPv6 unique local address"),
    (_V6("fe80::/10"), "an IPv6 link-local address"),
    (_V6("fec0::/10"), "an IPv6 site-local address"),
    (_V6("ff00::/8"), "a multicast address"),
)

# Prefixes that carry an IPv4 address inside an IPv6 one; the embedded
# address is checked with the IPv4 rules.
_NAT64 = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")
_V4_COMPATIBLE = _V6("::/96")


def forbidden_address_reason(ip: IPAddress) -> str | None:
    """Say why ``ip`` is not a public destination, or return None when it is.

    The answer covers IPv4, IPv6 and IPv6 forms that embed an IPv4 address
    (mapped, compatible, NAT64 and 6to4), so ``::ffff:127.0.0.1`` is refused
    as loopback just like ``127.0.0.1``.
    """
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return "an IPv6 address with a zone index"
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = forbidden_address_reason(embedded)
            return f"{inner} wrapped in IPv6" if inner else None
        for network, reason in _FORBIDDEN_V6:
            if ip in network:
                return reason
    else:
        for network, reason in _FORBIDDEN_V4:
            if ip in network:
                return reason
    # Last line of defence: anything the standard library does not consider
    # globally routable is refused even if the tables above missed it.
    if not ip.is_global:
        return "an address that is not publicly routable"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _SIX_TO_FOUR:
        return ip.sixtofour
    if ip in _V4_COMPATIBLE and int(ip) > 1:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_metadata_address(ip: IPAddress) -> bool:
    """True for cloud instance-metadata endpoints, including IPv6-wrapped forms."""
    if ip in METADATA_ADDRESSES:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        return embedded is not None and embedded in METADATA_ADDRESSES
    return False


class InvalidHostError(ValueError):
    """The host part of a URL cannot be interpreted as a name or an address."""


def normalize_host(host: str) -> str:
    """Lower-case, IDNA-encode and strip a trailing dot from a URL host.

    UTS #46 mapping folds look-alike spellings (full-width digits, circled
    letters) to their plain forms first, so ``ⓛⓞⓒⓐⓛⓗⓞⓢⓣ`` is checked as
    ``localhost``.
    """
    host = host.strip().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1].lower()
    if not host:
        raise InvalidHostError("The URL has no host name.")
    if ":" in host:
        return host.lower()
    if host.isascii():
        return host.lower()
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError as exc:
        raise InvalidHostError(
            f"The host name {host!r} is not a valid internationalised name."
        ) from exc


def parse_ip_host(host: str) -> IPAddress | None:
    """Interpret a normalised host as an IP literal, or return None for a DNS name.

    IPv4 is parsed the way browsers and ``inet_aton`` do, so ``2130706433``,
    ``0x7f.1`` and ``0177.0.0.1`` all mean ``127.0.0.1``. A host whose last
    label looks numeric but is not a valid address is rejected rather than
    sent to DNS, because resolvers disagree on such names.
    """
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise InvalidHostError(f"{host!r} is not a valid IPv6 address.") from exc
    labels = host.split(".")
    if not _looks_numeric(labels[-1]):
        return None
    if len(labels) > 4:
        raise InvalidHostError(f"{host!r} looks like an IPv4 address but has too many parts.")
    try:
        numbers = [_parse_ipv4_part(label) for label in labels]
    except ValueError as exc:
        raise InvalidHostError(
            f"{host!r} looks like an IPv4 address but is not a valid one."
        ) from exc
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise InvalidHostError(f"{host!r} looks like an IPv4 address but a part is out of range.")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _looks_numeric(label: str) -> bool:
    if label.isdigit():
        return True
    return label[:2].lower() == "0x" and all(c in "0123456789abcdefABCDEF" for c in label[2:])


def _parse_ipv4_part(label: str) -> int:
    if not label:
        raise ValueError("empty part")
    if label[:2].lower() == "0x":
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        return int(label[1:], 8)
    if not label.isdigit():
        raise ValueError("not a number")
    return int(label, 10)


def forbidden_hostname_reason(host: str) -> str | None:
    """Say why a DNS name is refused before it is even resolved, or return None."""
    if host in METADATA_HOSTNAMES:
        return "a cloud metadata host name"
    if host == "localhost" or host.endswith(_PRIVATE_SUFFIXES):
        return "a local or intranet host name"
    if "." not in host:
        return "a single-label (intranet) host name"
    return None


def forbidden_port_reason(port: int) -> str | None:
    """Refuse well-known service ports other than HTTP and HTTPS.

    A research fetcher never needs SSH or SMTP; refusing those ports keeps it
    from being used to poke at non-web services on public hosts.
    """
    if port in (80, 443):
        return None
    if port < 1024:
        return f"port {port}, a non-web service port"
    return None


@dataclass(frozen=True)
class AllowedHost:
    """One entry of the fetch allow-list: a host (or ``*.suffix``) and an optional port."""

    host: str
    port: int | None = None

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    def permits(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.wildcard:
            return host.endswith(self.host[1:])
        return host == self.host


class HostAllowList:
    """The operator's explicit exceptions to the private-address rules.

    Entries look like ``wiki.corp.example``, ``127.0.0.1:8765``,
    ``[::1]:8000`` or ``*.frozen.test:8765``. A listed host may resolve to a
    private address; metadata addresses stay refused.
    """

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.entries: tuple[AllowedHost, ...] = tuple(
            parse_allowed_host(e) for e in entries if e.strip()
        )

    def permits(self, host: str, port: int) -> bool:
        """True when ``host:port`` (a normalised host) is explicitly allowed."""
        return any(entry.permits(host, port) for entry in self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)


def parse_allowed_host(entry: str) -> AllowedHost:
    """Parse ``host``, ``host:port``, ``[v6]:port`` or ``*.suffix[:port]``."""
    text = entry.strip().lower()
    port: int | None = None
    if text.startswith("["):
        closing = text.find("]")
        if closing < 0:
            raise ValueError(f"Allowed host {entry!r} opens '[' without closing it.")
        host, rest = text[1:closing], text[closing + 1 :]
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                raise ValueError(f"Allowed host {entry!r} must look like [::1]:8000.")
            port = int(rest[1:])
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        if not port_text.isdigit():
            raise ValueError(f"Allowed host {entry!r} has a port that is not a number.")
        port = int(port_text)
    else:
        host = text
    if not host:
        raise ValueError(f"Allowed host {entry!r} names no host.")
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"Allowed host {entry!r} has a port outside 1–65535.")
    if not host.startswith("*."):
        host = normalize_host(host)
        if ":" in host:
            host = str(ipaddress.IPv6Address(host))
    return AllowedHost(host=host, port=port)
