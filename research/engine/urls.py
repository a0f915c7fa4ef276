"""URL normalisation, canonical hashing and the domain part of the source policy.

The normalised URL is an *identity*: two URLs that normalise to the same string are treated as
the same source, and its SHA-256 is the canonical hash that stops a run acquiring a page twice.
Normalisation is conservative: it only removes differences that never change which resource a
server returns (case of scheme and host, default ports, fragments, tracking parameters,
dot-segments, percent-encoding of unreserved characters, query parameter order).

Trailing slashes are kept: ``/docs`` and ``/docs/`` stay distinct because servers may serve
different resources for them. Duplicates that slip through are caught later by content hash.
"""

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urljoin, urlsplit

import idna

from research.engine.addresses import (
    DOCUMENT_IDENTIFIER,
    document_address,
    document_policy,
    is_document_url,
)

if TYPE_CHECKING:
    from research.engine.contracts import SourcePolicy

__all__ = [
    "InvalidPolicyEntry",
    "PolicyDecision",
    "PolicyEntry",
    "DOCUMENT_IDENTIFIER",
    "PolicyRefusal",
    "UnsupportedURLError",
    "canonical_url",
    "evaluate_domain_policy",
    "host_matches",
    "hostname",
    "document_address",
    "is_document_url",
    "is_http_url",
    "normalize_host",
    "normalize_url",
    "parse_policy_entry",
    "registrable_domain",
    "url_hash",
]


class UnsupportedURLError(ValueError):
    """The input is not an http(s) URL the engine can work with."""


_DEFAULT_PORTS = {"http": 80, "https": 443}

# Exact query keys that only identify a click or a campaign, never the resource.
_TRACKING_KEYS = frozenset(
    {
        "fbclid",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "igshid",
        "mc_eid",
        "mc_cid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "__hssc",
        "__hstc",
        "__hsfp",
        "hsctatracking",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "vero_conv",
        "wickedid",
        "rb_clickid",
        "s_cid",
        "ncid",
        "cmpid",
    }
)
# Key prefixes used by campaign tagging schemes (utm_source, utm_medium, pk_campaign...).
_TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_")

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
# Characters left as they are when re-quoting a path or a query component.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_KEY_SAFE = ":@!$'()*+,;/?-._~%"
_QUERY_VALUE_SAFE = _QUERY_KEY_SAFE + "="
_ASCII_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")

# Public suffixes with more than one label, and hosting platforms that give each customer a
# subdomain. Without the full Public Suffix List this keeps the common cases right: two
# different *.github.io sites or two *.co.uk companies are different registrable domains.
# fmt: off
_MULTI_LABEL_SUFFIXES = frozenset(
    {
        "co.uk", "org.uk", "ac.uk", "gov.uk", "ltd.uk", "plc.uk", "me.uk", "net.uk", "nhs.uk",
        "police.uk", "sch.uk", "com.au", "net.au", "org.au", "edu.au", "gov.au", "asn.au",
        "id.au", "co.nz", "org.nz", "govt.nz", "ac.nz", "net.nz", "co.jp", "ne.jp", "or.jp",
        "ac.jp", "go.jp", "co.kr", "or.kr", "go.kr", "ac.kr", "com.br", "gov.br", "org.br",
        "net.br", "edu.br", "com.cn", "gov.cn", "org.cn", "net.cn", "edu.cn", "ac.cn", "co.in",
        "gov.in", "nic.in", "ac.in", "org.in", "net.in", "res.in", "com.mx", "gob.mx", "org.mx",
        "edu.mx", "co.za", "gov.za", "org.za", "ac.za", "com.sg", "gov.sg", "edu.sg", "org.sg",
        "com.hk", "gov.hk", "edu.hk", "org.hk", "com.tw", "gov.tw", "edu.tw", "org.tw", "com.tr",
        "gov.tr", "edu.tr", "org.tr", "co.il", "gov.il", "ac.il", "org.il", "com.ar", "gob.ar",
        "org.ar", "gouv.fr", "gv.at", "ac.at", "co.at", "or.at", "com.pl", "gov.pl", "edu.pl",
        "com.ua", "gov.ua", "co.id", "go.id", "ac.id", "or.id", "com.my", "gov.my", "edu.my",
        "com.ph", "gov.ph", "edu.ph", "com.vn", "gov.vn", "edu.vn", "com.eg", "gov.eg",
        "com.ng", "gov.ng", "co.ke", "go.ke", "ac.ke",
        "github.io", "gitlab.io", "blogspot.com", "wordpress.com", "substack.com", "tumblr.com",
        "netlify.app", "vercel.app", "pages.dev", "herokuapp.com", "appspot.com",
        "readthedocs.io", "web.app", "firebaseapp.com",
    }
)
# fmt: on


PolicyRefusal = Literal[
    "not a web address",
    "excluded domain",
    "outside the allowed domains",
    "web not used by this run",
    "document not chosen for this run",
]
"""Why the source policy refuses a URL, as the short fixed phrase a search step counts."""


@dataclass(frozen=True)
class PolicyDecision:
    """Whether the source policy lets a run use a URL, and whether it should be preferred.

    ``reason`` is a sentence; ``refusal`` names a refusal with a fixed phrase (``None`` when
    the URL is allowed)."""

    allowed: bool
    preferred: bool
    reason: str
    refusal: PolicyRefusal | None = None


def normalize_host(host: str) -> str:
    """Lower-case a hostname, drop a trailing dot and convert international names to punycode.

    IPv6 literals (with or without brackets) come back compressed and bracketed. Raises
    :class:`UnsupportedURLError` for anything that is not a valid host name or IP literal.
    """
    candidate = host.strip()
    if candidate.startswith("[") and candidate.endswith("]"):
        candidate = candidate[1:-1]
    if ":" in candidate:
        try:
            address = ipaddress.IPv6Address(candidate.split("%", 1)[0])
        except ValueError:
            raise UnsupportedURLError(f"{host!r} is not a valid host name.") from None
        return f"[{address.compressed}]"
    candidate = candidate.rstrip(".")
    if not candidate:
        raise UnsupportedURLError("The URL has no host name.")
    if not candidate.isascii():
        try:
            mapped = idna.uts46_remap(candidate, std3_rules=False, transitional=False)
            labels = [
                label if label.isascii() else idna.alabel(label).decode("ascii")
                for label in mapped.rstrip(".").split(".")
            ]
        except (UnicodeError, ValueError):
            raise UnsupportedURLError(f"{host!r} is not a valid host name.") from None
        candidate = ".".join(labels)
    candidate = candidate.lower()
    if len(candidate) > 253 or not all(_ASCII_LABEL.match(lb) for lb in candidate.split(".")):
        raise UnsupportedURLError(f"{host!r} is not a valid host name.")
    return candidate


def _normalize_escapes(component: str) -> str:
    """Decode percent-escapes of unreserved characters and upper-case the rest (RFC 3986 6.2.2)."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _PERCENT.sub(fix, component)


def _requote(component: str, safe: str) -> str:
    # A lone "%" not followed by two hex digits is encoded so that the output is stable.
    component = re.sub(r"%(?![0-9A-Fa-f]{2})", "%25", component)
    try:
        return quote(component, safe=safe)
    except UnicodeEncodeError:
        raise UnsupportedURLError("The URL contains characters that cannot be encoded.") from None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, so /a/./b/../c becomes /a/c."""
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
            continue
        output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def _is_tracking_key(key: str) -> bool:
    lowered = key.lower()
    return lowered in _TRACKING_KEYS or lowered.startswith(_TRACKING_PREFIXES)


def _normalize_query(query: str) -> str:
    pairs: list[tuple[str, str | None]] = []
    for part in query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = _requote(_normalize_escapes(key), _QUERY_KEY_SAFE)
        if _is_tracking_key(_PERCENT.sub(lambda m: chr(int(m.group(1), 16)), key)):
            continue
        pairs.append((key, _requote(_normalize_escapes(value), _QUERY_VALUE_SAFE) if sep else None))
    # Sorting makes ?a=1&b=2 and ?b=2&a=1 one URL; the stable sort keeps repeated keys in order.
    pairs.sort(key=lambda pair: pair[0])
    return "&".join(key if value is None else f"{key}={value}" for key, value in pairs)


def normalize_url(url: str) -> str:
    """Return the normalised form of an http(s) URL, used as the URL's identity.

    Lower-cases scheme and host, converts international hosts to punycode, drops default ports,
    fragments, empty query parts and tracking parameters (``utm_*``, ``fbclid``, ``gclid``,
    ``msclkid``, ``mc_eid``...), removes dot-segments, normalises percent-encoding, sorts query
    parameters and turns an empty path into ``/``. Trailing slashes are kept.

    Raises :class:`UnsupportedURLError` for other schemes, embedded credentials, missing or
    invalid hosts, invalid ports and other unparseable input.
    """
    if not isinstance(url, str):
        raise UnsupportedURLError("A URL must be text.")
    text = url.strip()
    if _CONTROL.search(text.replace(" ", "%20")):
        raise UnsupportedURLError("The URL contains control characters.")
    try:
        parts = urlsplit(text)
        port = parts.port
        raw_host = parts.hostname
    except ValueError:
        raise UnsupportedURLError(f"{_preview(url)} is not a valid URL.") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        if scheme:
            raise UnsupportedURLError(f"Only http and https URLs are supported, not {scheme}:.")
        raise UnsupportedURLError(f"{_preview(url)} is not an absolute http(s) URL.")
    if parts.username is not None or parts.password is not None:
        raise UnsupportedURLError("URLs with embedded credentials are not supported.")
    if not raw_host:
        raise UnsupportedURLError("The URL has no host name.")
    # urlsplit lower-cases .hostname but keeps escapes; a host must be plain text.
    netloc_host = parts.netloc.rsplit("@", 1)[-1]
    if "%" in netloc_host and not netloc_host.startswith("["):
        raise UnsupportedURLError(f"{_preview(url)} has an invalid host name.")
    host = normalize_host(raw_host)
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _remove_dot_segments(_requote(_normalize_escapes(parts.path), _PATH_SAFE))
    query = _normalize_query(parts.query)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _preview(url: object) -> str:
    text = str(url)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an http(s) URL that normalises cleanly."""
    try:
        normalize_url(url)
    except UnsupportedURLError:
        return False
    return True


def hostname(url: str) -> str:
    """The normalised host of an http(s) URL (raises :class:`UnsupportedURLError`)."""
    return urlsplit(normalize_url(url)).hostname or ""


def registrable_domain(host: str) -> str:
    """The domain a registrant controls, e.g. ``news.bbc.co.uk`` → ``bbc.co.uk``.

    Uses the two last labels, or three under a known multi-label public suffix or hosting
    platform. IP literals are returned unchanged.
    """
    candidate = host.strip().lower().rstrip(".")
    if candidate.startswith("[") or _is_ipv4(candidate):
        return candidate
    labels = candidate.split(".")
    if len(labels) <= 2:
        return candidate
    if ".".join(labels[-2:]) in _MULTI_LABEL_SUFFIXES:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def canonical_url(url: str, canonical_link: str | None = None) -> str:
    """The URL a source is identified by: its declared canonical link when that link is a valid
    http(s) URL on the same site (same registrable domain), otherwise the normalised ``url``.

    A relative canonical link is resolved against ``url``. Canonical links pointing to another
    site are ignored here (a page cannot claim another site's identity), but see
    ``ledger.assign_independence_clusters`` which treats them as a sign of syndication.
    """
    normalized = normalize_url(url)
    if not canonical_link or not canonical_link.strip():
        return normalized
    try:
        candidate = normalize_url(urljoin(normalized, canonical_link.strip()))
    except (UnsupportedURLError, ValueError):
        return normalized
    own_site = registrable_domain(urlsplit(normalized).hostname or "")
    if registrable_domain(urlsplit(candidate).hostname or "") != own_site:
        return normalized
    return candidate


def url_hash(url: str) -> str:
    """SHA-256 hex digest of the normalised URL: the canonical hash of a source."""
    return hashlib.sha256(normalize_url(url).encode("utf-8")).hexdigest()


def host_matches(host: str, domain: str) -> bool:
    """Whether ``host`` is ``domain`` or one of its subdomains, comparing whole labels.

    ``news.example.org`` matches ``example.org``; ``badexample.org`` does not.
    """
    try:
        host_norm = normalize_host(host)
        domain_norm = normalize_host(domain)
    except UnsupportedURLError:
        return False
    return host_norm == domain_norm or host_norm.endswith("." + domain_norm)


class InvalidPolicyEntry(ValueError):
    """A domain-control entry that is neither a domain name nor an IP address (with an optional
    port); the message is a sentence saying what is wrong and how to write it. ``general`` is
    true when the entry is not even close to a host (a URL, a path, a bare word), false when
    it is a malformed address or port the sentence explains."""

    def __init__(self, message: str, *, general: bool = False) -> None:
        super().__init__(message)
        self.general = general


@dataclass(frozen=True)
class PolicyEntry:
    """One entry of a source policy's domain lists.

    ``host`` is a normalised domain name (which also covers its subdomains) or an IP address
    (IPv6 in brackets, matched exactly); ``port``, when given, limits the entry to URLs on
    that port. ``str()`` is the stored form: ``example.org``, ``10.0.0.5``, ``[fd00::1]:8443``.
    """

    host: str
    port: int | None = None
    is_address: bool = False

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"

    def matches(self, host: str, port: int) -> bool:
        """Whether a URL on the normalised ``host`` and ``port`` falls under this entry."""
        if self.port is not None and self.port != port:
            return False
        if self.is_address:
            return host == self.host
        return host_matches(host, self.host)


_BARE_NAME_REFUSED = "/@?#\\ "
_ADDRESS_EXAMPLES = "like 10.0.0.5, [fd00::1] or [fd00::1]:8443"
_IPV6_EXAMPLES = "like [fd00::1] or [fd00::1]:8443"


def parse_policy_entry(value: str) -> PolicyEntry:
    """Parse a domain-control entry: ``example.org``, ``sub.example.org:8443``, an IPv4 address
    (``10.0.0.5``, ``10.0.0.5:8080``) or an IPv6 address (``[fd00::1]``, ``[fd00::1]:8443``,
    or ``fd00::1`` without a port).

    Raises :class:`InvalidPolicyEntry` with a sentence; a value that is not even close to a
    host gets the general sentence starting "… is not a bare domain name".
    """
    text = value.strip()
    sentence = (
        f"“{value}” is not a bare domain name; write it like example.org or sub.example.org, "
        f"or an address {_ADDRESS_EXAMPLES}."
    )
    if not text or any(char in text for char in _BARE_NAME_REFUSED):
        raise InvalidPolicyEntry(sentence, general=True)
    if text.startswith("["):
        closing = text.find("]")
        if closing < 0:
            raise InvalidPolicyEntry(
                f"“{value}” has an opening bracket but no closing one; write an IPv6 address {_IPV6_EXAMPLES}."
            )
        return PolicyEntry(
            host=_ipv6_entry_host(text[1:closing], value),
            port=_entry_port(text[closing + 1 :], value),
            is_address=True,
        )
    if "]" in text:
        raise InvalidPolicyEntry(
            f"“{value}” has a closing bracket but no opening one; write an IPv6 address {_IPV6_EXAMPLES}."
        )
    if text.count(":") > 1:
        # Without brackets an IPv6 address cannot carry a port: "fd00::1:8443" is an address.
        return PolicyEntry(host=_ipv6_entry_host(text, value), is_address=True)
    name, colon, port_text = text.partition(":")
    port = _entry_port(colon + port_text, value)
    labels = name.rstrip(".").split(".")
    if len(labels) > 1 and all(label.isdigit() for label in labels):
        return PolicyEntry(
            host=_ipv4_entry_host(name.rstrip("."), value), port=port, is_address=True
        )
    try:
        host = normalize_host(name)
    except UnsupportedURLError:
        raise InvalidPolicyEntry(sentence, general=True) from None
    if "." not in host or host.rsplit(".", 1)[1].isdigit():
        raise InvalidPolicyEntry(sentence, general=True)
    return PolicyEntry(host=host, port=port)


def _entry_port(rest: str, value: str) -> int | None:
    """The port after a host (``rest`` is empty or ``:digits``)."""
    if not rest:
        return None
    if not rest.startswith(":") or not rest[1:].isdigit():
        raise InvalidPolicyEntry(
            f"“{value}” has a port that is not a number; write the port after a colon, "
            "like example.org:8443 or [fd00::1]:8443."
        )
    port = int(rest[1:])
    if not 0 < port < 65536:
        raise InvalidPolicyEntry(f"“{value}” has a port outside 1–65535.")
    return port


def _ipv6_entry_host(inside: str, value: str) -> str:
    if "%" in inside:
        raise InvalidPolicyEntry(
            f"“{value}” has a zone index (the part after %), which a source policy cannot use; "
            f"write the address alone, {_IPV6_EXAMPLES}."
        )
    try:
        address = ipaddress.IPv6Address(inside)
    except ValueError:
        hint = (
            " IPv4 addresses are written without brackets, like 10.0.0.5."
            if _is_ipv4(inside)
            else f" Write an IPv6 address {_IPV6_EXAMPLES}."
        )
        raise InvalidPolicyEntry(f"“{value}” is not a valid IPv6 address.{hint}") from None
    return f"[{address.compressed}]"


def _ipv4_entry_host(name: str, value: str) -> str:
    if name.count(".") != 3:
        raise InvalidPolicyEntry(
            f"“{value}” looks like an IPv4 address but does not have four numbers; "
            "write it like 10.0.0.5."
        )
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        raise InvalidPolicyEntry(
            f"“{value}” is not a valid IPv4 address: write four numbers from 0 to 255 without "
            "leading zeros, like 10.0.0.5."
        ) from None


def _url_host_and_port(url: str) -> tuple[str, int, str]:
    """The normalised host (IPv6 in brackets), the port (explicit or the scheme's default)
    and the host as messages show it (with the port when it is not the default)."""
    parts = urlsplit(normalize_url(url))
    host = normalize_host(parts.hostname or "")
    if parts.port is None:
        return host, _DEFAULT_PORTS[parts.scheme], host
    return host, parts.port, f"{host}:{parts.port}"


def evaluate_domain_policy(url: str, policy: "SourcePolicy") -> PolicyDecision:
    """Decide whether the source policy allows ``url`` and whether it is a preferred domain.

    Excluded domains always win. ``only_domains`` allows the listed domains and their
    subdomains only; ``prefer_domains`` allows everything but marks listed domains preferred;
    ``full_web`` allows everything not excluded. Listed IP addresses match exactly, and an
    entry with a port matches that port only.
    """
    document = document_policy(url, policy)
    if document is not None:
        allowed, reason, refusal = document
        return PolicyDecision(allowed=allowed, preferred=allowed, reason=reason, refusal=refusal)
    if not policy.web:
        return PolicyDecision(
            allowed=False,
            preferred=False,
            reason="This run uses its documents only, not the web.",
            refusal="web not used by this run",
        )
    try:
        host, port, shown = _url_host_and_port(url)
    except UnsupportedURLError as error:
        return PolicyDecision(
            allowed=False, preferred=False, reason=str(error), refusal="not a web address"
        )
    for domain in policy.excluded_domains:
        if _entry(domain).matches(host, port):
            return PolicyDecision(
                allowed=False,
                preferred=False,
                reason=f"{shown} is excluded by the source policy ({domain}).",
                refusal="excluded domain",
            )
    listed = next((domain for domain in policy.domains if _entry(domain).matches(host, port)), None)
    if policy.mode == "only_domains":
        if listed is None:
            return PolicyDecision(
                allowed=False,
                preferred=False,
                reason=f"{shown} is not one of the domains this run is limited to.",
                refusal="outside the allowed domains",
            )
        return PolicyDecision(
            allowed=True, preferred=True, reason=f"{shown} is an allowed domain ({listed})."
        )
    if policy.mode == "prefer_domains" and listed is not None:
        return PolicyDecision(
            allowed=True, preferred=True, reason=f"{shown} is a preferred domain ({listed})."
        )
    return PolicyDecision(allowed=True, preferred=False, reason=f"{shown} is allowed.")


def _entry(text: str) -> PolicyEntry:
    """A stored policy entry (already validated by the contract); an entry that no longer
    parses matches nothing rather than everything."""
    try:
        return parse_policy_entry(text)
    except InvalidPolicyEntry:
        return PolicyEntry(host="", port=0, is_address=True)


def safe_source_url(url: str | None) -> str | None:
    """The normalised http(s) form of a source URL, or ``None`` when it may not be linked."""
    if not url:
        return None
    try:
        return normalize_url(url)
    except UnsupportedURLError:
        return None
