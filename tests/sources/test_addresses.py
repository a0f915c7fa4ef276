"""Address and host classification, and the allow-list syntax."""

from __future__ import annotations

import ipaddress

import pytest

from research.sources.addresses import (
    HostAllowList,
    InvalidHostError,
    forbidden_address_reason,
    normalize_host,
    parse_allowed_host,
    parse_ip_host,
)


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0", "0.0.0.0"),  # noqa: S104 - an address under test, not a bind
        ("0x", "0.0.0.0"),  # noqa: S104
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
    ],
)
def test_numeric_hosts_are_read_like_browsers_read_them(host: str, address: str) -> None:
    assert parse_ip_host(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.com", "1.example", "www.0x7f.example"])
def test_names_are_not_addresses(host: str) -> None:
    assert parse_ip_host(host) is None


@pytest.mark.parametrize(
    "host", ["256.1.1.1", "1.2.3.4.5", "1.0x1.08", "1.2.3.0999", "127.0.0.65536"]
)
def test_malformed_numeric_hosts_are_rejected_not_resolved(host: str) -> None:
    with pytest.raises(InvalidHostError):
        parse_ip_host(host)


def test_look_alike_characters_fold_to_plain_names() -> None:
    assert normalize_host("ⓛⓞⓒⓐⓛⓗⓞⓢⓣ") == "localhost"
    assert normalize_host("１２７.０.０.１") == "127.0.0.1"
    assert normalize_host("Example.COM.") == "example.com"


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"],
)
def test_public_addresses_pass(address: str) -> None:
    assert forbidden_address_reason(ipaddress.ip_address(address)) is None


def test_allow_list_entries_match_host_and_port() -> None:
    allow = HostAllowList(
        ["127.0.0.1:8765", "*.frozen.test:8765", "wiki.corp.example", "[::1]:9000"]
    )

    assert allow.permits("127.0.0.1", 8765)
    assert not allow.permits("127.0.0.1", 8766)
    assert allow.permits("news.frozen.test", 8765)
    assert not allow.permits("frozen.test.evil.example", 8765)
    assert allow.permits("wiki.corp.example", 443)
    assert allow.permits("::1", 9000)


@pytest.mark.parametrize("entry", ["", "host:port", "[::1", "host:70000"])
def test_bad_allow_list_entries_explain_themselves(entry: str) -> None:
    with pytest.raises(ValueError, match="Allowed host"):
        parse_allowed_host(entry)
