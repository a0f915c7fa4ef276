"""SSRF defences of SafeFetcher: every forbidden target is refused before any connection.

Each case runs against a fetcher whose network backend records connection
attempts; a refusal must leave that record empty (or, for redirects, hold
only the connection to the page that redirected).
"""

from __future__ import annotations

import pytest

from research.sources.config import SourcesConfig
from research.sources.errors import SourceError
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.frozen_web.server import FrozenWeb
from tests.sources.fakes import RecordingBackend, ScriptedResolver

PUBLIC = "93.184.216.34"  # stands in for a public web server; routed to the frozen web

DNS = {
    "internal.example.com": ["10.1.2.3"],
    "loopback.example.com": ["127.0.0.1"],
    "metadata.example.com": ["169.254.169.254"],
    "ula.example.com": ["fd12:3456::1"],
    "mapped.example.com": ["::ffff:192.168.0.10"],
    "cgnat.example.com": ["100.64.12.1"],
    "mixed.example.com": [PUBLIC, "10.0.0.5"],
    "mixed-v6.example.com": [PUBLIC, "::1"],
    "garbage.example.com": ["not-an-address"],
    "127.0.0.1.nip.io": ["127.0.0.1"],
}

FORBIDDEN = [
    # IPv4 literals and their alternative spellings
    ("loopback", "http://127.0.0.1/"),
    ("decimal loopback", "http://2130706433/"),
    ("hex loopback", "http://0x7f000001/"),
    ("octal loopback", "http://0177.0.0.1/"),
    ("whole octal loopback", "http://017700000001/"),
    ("mixed hex short form", "http://0x7f.1/"),
    ("short form", "http://127.1/"),
    ("dotted hex", "http://0x7f.0x0.0x0.0x1/"),
    ("full-width digits", "http://１２７.０.０.１/"),
    ("unspecified", "http://0.0.0.0/"),
    ("bare zero", "http://0/"),
    ("private 10/8", "http://10.0.0.1/"),
    ("private 172.16/12", "http://172.16.5.4/"),
    ("private 192.168/16 with trailing dot", "http://192.168.0.1./"),
    ("carrier-grade NAT", "http://100.64.0.1/"),
    ("metadata", "http://169.254.169.254/latest/meta-data/"),
    ("decimal metadata", "http://2852039166/latest/meta-data/"),
    ("link-local", "http://169.254.10.10/"),
    ("multicast", "http://224.0.0.1/"),
    ("broadcast", "http://255.255.255.255/"),
    ("reserved", "http://240.0.0.1/"),
    ("documentation range", "http://192.0.2.10/"),
    # IPv6 literals and IPv4 addresses wrapped in IPv6
    ("IPv6 loopback", "http://[::1]/"),
    ("IPv6 unspecified", "http://[::]/"),
    ("IPv4-mapped loopback", "http://[::ffff:127.0.0.1]/"),
    ("IPv4-mapped loopback in hex", "http://[::ffff:7f00:1]/"),
    ("IPv4-mapped metadata", "http://[0:0:0:0:0:ffff:169.254.169.254]/"),
    ("unique local", "http://[fc00::1]/"),
    ("IPv6 link-local", "http://[fe80::1]/"),
    ("IPv6 multicast", "http://[ff02::1]/"),
    ("NAT64 of a private address", "http://[64:ff9b::a00:1]/"),
    ("6to4 of loopback", "http://[2002:7f00:1::]/"),
    ("Teredo", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"),
    ("AWS IPv6 metadata", "http://[fd00:ec2::254]/"),
    # Names refused before DNS
    ("localhost", "http://localhost/"),
    ("look-alike localhost", "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/"),
    ("localhost subdomain", "http://app.localhost/"),
    ("GCP metadata name", "http://metadata.google.internal/computeMetadata/v1/"),
    ("single-label intranet name", "http://intranet/"),
    ("mDNS name", "http://printer.local/"),
    # Names whose DNS answers are not public
    ("name resolving to 10/8", "http://internal.example.com/"),
    ("name resolving to loopback", "http://loopback.example.com/"),
    ("name resolving to metadata", "http://metadata.example.com/"),
    ("name resolving to a ULA", "http://ula.example.com/"),
    ("name resolving to a mapped private address", "http://mapped.example.com/"),
    ("name resolving to CGNAT", "http://cgnat.example.com/"),
    ("wildcard DNS service for loopback", "http://127.0.0.1.nip.io/"),
    ("one public and one private address", "http://mixed.example.com/"),
    ("one public and one IPv6 loopback address", "http://mixed-v6.example.com/"),
    ("DNS answer that is not an address", "http://garbage.example.com/"),
    # Schemes, credentials and ports
    ("credentials in the URL", "http://user:secret@example.com/"),
    ("backslash-at trick", "http://example.com\\@127.0.0.1/"),
    ("file scheme", "file:///etc/passwd"),
    ("gopher scheme", "gopher://example.com:70/_HELO"),
    ("ftp scheme", "ftp://example.com/"),
    ("SSH port", "http://example.com:22/"),
    ("SMTP port", "http://example.com:25/"),
]


@pytest.fixture
def backend() -> RecordingBackend:
    return RecordingBackend()


@pytest.fixture
def resolver() -> ScriptedResolver:
    return ScriptedResolver(DNS)


@pytest.mark.parametrize(("case", "url"), FORBIDDEN, ids=[case for case, _ in FORBIDDEN])
def test_forbidden_target_is_refused_before_connecting(
    case: str, url: str, web: FrozenWeb, backend: RecordingBackend, resolver: ScriptedResolver
) -> None:
    # The allow-list holds the frozen web, to show that allowing one local
    # host:port does not open the door to any other.
    fetcher = SafeFetcher(web.sources_config(), resolver=resolver, network_backend=backend)

    with pytest.raises(SourceError) as refused:
        fetcher.fetch(url)

    assert refused.value.kind == "blocked", refused.value.reason
    assert refused.value.retryable is False
    assert backend.attempts == []
    assert web.requests == []
    assert str(refused.value)  # a sentence for the user


def test_allow_listed_loopback_port_does_not_allow_other_ports(
    web: FrozenWeb, backend: RecordingBackend
) -> None:
    fetcher = SafeFetcher(web.sources_config(), network_backend=backend)

    with pytest.raises(SourceError, match="loopback"):
        fetcher.fetch(f"http://127.0.0.1:{web.port + 1 if web.port < 65535 else web.port - 1}/")
    assert backend.attempts == []


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://10.0.0.1/admin",
        "http://127.0.0.1:8000/admin/",
        "http://internal.example.com/",
        "file:///etc/passwd",
    ],
)
def test_redirect_to_forbidden_target_is_refused(
    target: str, web: FrozenWeb, backend: RecordingBackend, resolver: ScriptedResolver
) -> None:
    fetcher = SafeFetcher(web.sources_config(), resolver=resolver, network_backend=backend)

    with pytest.raises(SourceError) as refused:
        fetcher.fetch(web.url(f"/_lab/redirect?to={target}"))

    assert refused.value.kind == "blocked"
    assert "redirected to" in refused.value.reason
    # The only connection went to the frozen web page that issued the redirect.
    assert backend.attempts == [("127.0.0.1", web.port)]


def test_allow_listed_address_does_not_admit_a_name_that_resolves_to_it(
    web: FrozenWeb, backend: RecordingBackend
) -> None:
    resolver = ScriptedResolver({"sneaky.example": ["127.0.0.1"]})
    fetcher = SafeFetcher(web.sources_config(), resolver=resolver, network_backend=backend)

    with pytest.raises(SourceError, match="resolves to 127.0.0.1, a loopback address"):
        fetcher.fetch(f"http://sneaky.example:{web.port}/")
    assert backend.attempts == []


def test_redirect_chain_is_followed_with_each_hop_checked(
    web: FrozenWeb, backend: RecordingBackend
) -> None:
    fetcher = SafeFetcher(web.sources_config(), network_backend=backend)

    response = fetcher.fetch(web.url("/_lab/chain/3"))

    assert response.final_url.endswith("/_lab/chain/0")
    assert len(response.redirects) == 3
    assert all(host == "127.0.0.1" for host, _ in backend.attempts)


def test_rebinding_dns_gets_one_lookup_per_fetch_and_the_connection_is_pinned(
    web: FrozenWeb,
) -> None:
    # First answer public, every later answer private: a classic rebinding server.
    resolver = ScriptedResolver({"rebind.example": [[PUBLIC], ["127.0.0.1"]]})
    backend = RecordingBackend(routes={(PUBLIC, web.port): ("127.0.0.1", web.port)})
    fetcher = SafeFetcher(web.sources_config(), resolver=resolver, network_backend=backend)

    # Three redirects back to the same host: each hop reuses the checked answer.
    response = fetcher.fetch(f"http://rebind.example:{web.port}/_lab/chain/3")

    assert response.final_url == f"http://rebind.example:{web.port}/_lab/chain/0"
    assert resolver.lookups == ["rebind.example"]
    assert backend.attempts == [(PUBLIC, web.port)] * 4
    # The server saw the real host name, not the pinned address.
    assert {r.host for r in web.requests} == {"rebind.example"}

    # A new fetch resolves again, gets the private answer and is refused unconnected.
    with pytest.raises(SourceError, match="loopback"):
        fetcher.fetch(f"http://rebind.example:{web.port}/_lab/chain/0")
    assert resolver.lookups == ["rebind.example", "rebind.example"]
    assert len(backend.attempts) == 4


def test_name_with_public_and_private_addresses_is_refused_even_though_one_is_public(
    web: FrozenWeb, backend: RecordingBackend
) -> None:
    resolver = ScriptedResolver({"dual.example": [PUBLIC, "192.168.1.20"]})
    fetcher = SafeFetcher(web.sources_config(), resolver=resolver, network_backend=backend)

    with pytest.raises(SourceError, match=r"192\.168\.1\.20, a private"):
        fetcher.fetch(f"http://dual.example:{web.port}/")
    assert backend.attempts == []


def test_metadata_address_is_refused_even_for_an_allow_listed_host(
    backend: RecordingBackend,
) -> None:
    config = SourcesConfig(allowed_hosts=("cloud.corp.example",))
    resolver = ScriptedResolver({"cloud.corp.example": ["169.254.169.254"]})
    fetcher = SafeFetcher(config, resolver=resolver, network_backend=backend)

    with pytest.raises(SourceError, match="metadata"):
        fetcher.fetch("http://cloud.corp.example/")
    assert backend.attempts == []


def test_allow_listed_intranet_host_may_use_a_private_address(web: FrozenWeb) -> None:
    config = web.sources_config(allowed_hosts=(f"wiki.corp.example:{web.port}",))
    resolver = ScriptedResolver({"wiki.corp.example": ["10.20.30.40"]})
    backend = RecordingBackend(routes={("10.20.30.40", web.port): ("127.0.0.1", web.port)})
    fetcher = SafeFetcher(config, resolver=resolver, network_backend=backend)

    response = fetcher.fetch(f"http://wiki.corp.example:{web.port}/_lab/chain/0")

    assert response.status_code == 200
    assert backend.attempts == [("10.20.30.40", web.port)]


def test_check_url_reports_the_pinned_addresses_without_connecting(
    backend: RecordingBackend,
) -> None:
    resolver = ScriptedResolver({"example.org": [PUBLIC, "2606:2800:220:1:248:1893:25c8:1946"]})
    fetcher = SafeFetcher(SourcesConfig(), resolver=resolver, network_backend=backend)

    destination = fetcher.check_url("https://Example.ORG./path")

    assert destination.host == "example.org"
    assert destination.port == 443
    assert [str(a) for a in destination.addresses] == [PUBLIC, "2606:2800:220:1:248:1893:25c8:1946"]
    assert backend.attempts == []


def test_public_numeric_host_is_rewritten_to_its_dotted_form(backend: RecordingBackend) -> None:
    fetcher = SafeFetcher(SourcesConfig(), network_backend=backend)

    destination = fetcher.check_url("http://1572395042/")  # 93.184.216.34

    assert destination.host == PUBLIC
    assert str(destination.url) == f"http://{PUBLIC}/"
