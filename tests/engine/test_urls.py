import hashlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from research.engine.contracts import SourcePolicy
from research.engine.urls import (
    UnsupportedURLError,
    canonical_url,
    evaluate_domain_policy,
    host_matches,
    normalize_url,
    registrable_domain,
    url_hash,
)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("HTTP://Example.ORG/Path", "http://example.org/Path"),
        ("https://example.org", "https://example.org/"),
        ("http://example.org:80/a", "http://example.org/a"),
        ("https://example.org:443/a", "https://example.org/a"),
        ("https://example.org:8443/a", "https://example.org:8443/a"),
        ("https://example.org/a#section-2", "https://example.org/a"),
        ("https://example.org/a/./b/../c", "https://example.org/a/c"),
        ("https://example.org/../../a", "https://example.org/a"),
        ("https://example.org/%7euser/%2f", "https://example.org/~user/%2F"),
        ("https://example.org/a b", "https://example.org/a%20b"),
        ("https://example.org/?b=2&a=1", "https://example.org/?a=1&b=2"),
        ("https://example.org/?q=a+b&&", "https://example.org/?q=a+b"),
        ("https://example.org/?flag", "https://example.org/?flag"),
        ("https://example.org./a", "https://example.org/a"),
        ("https://bücher.de/straße", "https://xn--bcher-kva.de/stra%C3%9Fe"),
        ("http://[::FFFF:1.2.3.4]:8080/", "http://[::ffff:102:304]:8080/"),
        ("  https://example.org/a  ", "https://example.org/a"),
    ],
)
def test_url_is_normalized(raw: str, normalized: str) -> None:
    assert normalize_url(raw) == normalized


def test_tracking_parameters_are_removed() -> None:
    raw = (
        "https://example.org/article?id=7&utm_source=news&UTM_Medium=mail&fbclid=abc"
        "&gclid=1&msclkid=2&mc_eid=3&mc_cid=4&_ga=5&page=2"
    )
    assert normalize_url(raw) == "https://example.org/article?id=7&page=2"


def test_trailing_slash_is_kept_except_for_the_root() -> None:
    assert normalize_url("https://example.org/docs/") == "https://example.org/docs/"
    assert normalize_url("https://example.org/docs") == "https://example.org/docs"
    assert normalize_url("https://example.org") == normalize_url("https://example.org/")


@pytest.mark.parametrize(
    "raw",
    [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "ftp://example.org/file",
        "mailto:someone@example.org",
        "example.org/no-scheme",
        "//example.org/protocol-relative",
        "https://",
        "https://user:secret@example.org/",
        "https://example.org:99999/",
        "https://example.org:port/",
        "https://exa mple.org/",
        "https://[not-ipv6]/",
        "https://example.org/\nnewline",
        "",
    ],
)
def test_unsupported_or_unparseable_url_is_refused(raw: str) -> None:
    with pytest.raises(UnsupportedURLError):
        normalize_url(raw)


def test_refusal_message_names_the_scheme() -> None:
    with pytest.raises(UnsupportedURLError, match="not javascript:"):
        normalize_url("javascript:alert(1)")


def test_url_hash_is_sha256_of_the_normalized_url() -> None:
    expected = hashlib.sha256(b"https://example.org/a?x=1").hexdigest()
    assert url_hash("HTTPS://EXAMPLE.org:443/a?utm_source=x&x=1#top") == expected


def test_canonical_link_on_the_same_site_is_preferred() -> None:
    assert (
        canonical_url("https://www.example.org/story?utm_source=x", "https://example.org/story")
        == "https://example.org/story"
    )


def test_relative_canonical_link_is_resolved() -> None:
    assert canonical_url("https://example.org/a/b?page=1", "../c") == "https://example.org/c"


@pytest.mark.parametrize(
    "link", ["https://other.example.net/story", "javascript:alert(1)", "   ", None, "http://[bad/"]
)
def test_unusable_canonical_link_falls_back_to_the_url(link: str | None) -> None:
    assert canonical_url("https://example.org/Story#x", link) == "https://example.org/Story"


@pytest.mark.parametrize(
    ("host", "domain", "matches"),
    [
        ("example.org", "example.org", True),
        ("news.example.org", "example.org", True),
        ("a.b.example.org", "example.org", True),
        ("EXAMPLE.ORG.", "example.org", True),
        ("badexample.org", "example.org", False),
        ("example.org.evil.net", "example.org", False),
        ("example.org", "news.example.org", False),
    ],
)
def test_host_matching_is_label_aware(host: str, domain: str, matches: bool) -> None:
    assert host_matches(host, domain) is matches


@pytest.mark.parametrize(
    ("host", "registrable"),
    [
        ("news.example.org", "example.org"),
        ("example.org", "example.org"),
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("alice.github.io", "alice.github.io"),
        ("192.0.2.1", "192.0.2.1"),
    ],
)
def test_registrable_domain(host: str, registrable: str) -> None:
    assert registrable_domain(host) == registrable


def test_full_web_allows_everything_not_excluded() -> None:
    policy = SourcePolicy(excluded_domains=["spam.example"])
    assert evaluate_domain_policy("https://example.org/", policy).allowed
    denied = evaluate_domain_policy("https://www.spam.example/page", policy)
    assert not denied.allowed
    assert "excluded" in denied.reason


def test_only_domains_allows_listed_domains_and_subdomains_only() -> None:
    policy = SourcePolicy(mode="only_domains", domains=["insee.fr"])
    assert evaluate_domain_policy("https://insee.fr/x", policy).allowed
    assert evaluate_domain_policy("https://www.insee.fr/x", policy).allowed
    refused = evaluate_domain_policy("https://badinsee.fr/x", policy)
    assert not refused.allowed
    assert refused.reason == "badinsee.fr is not one of the domains this run is limited to."


def test_prefer_domains_allows_all_but_marks_listed_ones_preferred() -> None:
    policy = SourcePolicy(mode="prefer_domains", domains=["insee.fr"])
    listed = evaluate_domain_policy("https://www.insee.fr/x", policy)
    other = evaluate_domain_policy("https://example.org/x", policy)
    assert listed.allowed and listed.preferred
    assert other.allowed and not other.preferred


def test_excluded_domain_wins_over_an_allowed_one() -> None:
    policy = SourcePolicy(
        mode="only_domains", domains=["example.org"], excluded_domains=["forum.example.org"]
    )
    assert evaluate_domain_policy("https://example.org/", policy).allowed
    assert not evaluate_domain_policy("https://forum.example.org/t/1", policy).allowed


def test_policy_refuses_non_http_urls() -> None:
    decision = evaluate_domain_policy("javascript:alert(1)", SourcePolicy())
    assert not decision.allowed and not decision.preferred


# Property tests ------------------------------------------------------------------------------

_labels = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?", fullmatch=True)
_hosts = st.one_of(
    st.lists(_labels, min_size=2, max_size=4).map(".".join),
    st.sampled_from(["bücher.de", "EXAMPLE.org.", "[::1]", "192.0.2.7", "xn--bcher-kva.de"]),
)
_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
_path = st.lists(
    st.one_of(_text, st.sampled_from([".", "..", "%2e", "%7E", "%zz", "a%2Fb", ""])), max_size=5
).map(lambda parts: "/" + "/".join(parts))
_query = st.lists(
    st.tuples(
        st.one_of(_text, st.sampled_from(["utm_source", "fbclid", "a", "A", "q"])),
        st.one_of(st.none(), _text),
    ),
    max_size=4,
).map(lambda pairs: "&".join(k if v is None else f"{k}={v}" for k, v in pairs))


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTPS", "ftp", "javascript", ""]))
    port = draw(st.one_of(st.none(), st.integers(0, 70000)))
    netloc = draw(_hosts) + (f":{port}" if port is not None else "")
    fragment = draw(st.one_of(st.none(), _text))
    url = f"{scheme}://{netloc}{draw(_path)}"
    query = draw(_query)
    if query:
        url += "?" + query
    if fragment is not None:
        url += "#" + fragment
    return url


@settings(max_examples=400, deadline=None)
@given(st.one_of(urls(), st.text(max_size=60)))
@example("https://example.org/a/%2e%2e/b?%75tm_source=1")
@example("http://example.org/%")
@example("http://example.org/?a=b=c")
def test_normalization_is_idempotent_and_only_yields_http_urls(url: str) -> None:
    try:
        once = normalize_url(url)
    except UnsupportedURLError:
        return
    assert once.startswith(("http://", "https://"))
    assert "#" not in once
    assert normalize_url(once) == once
