"""Source classification: the label and quality an acquired document gets from its address."""

from collections.abc import Callable, Iterable
from datetime import datetime

from research.engine.contracts import SourceDocument, SourceQuality
from research.engine.guards import PRIMARY_CLASSES
from research.engine.urls import UnsupportedURLError, hostname, is_document_url

ABSTRACT_ONLY_NOTE = (
    "Only the abstract was read: no open-access full text of this work was available, so the "
    "snapshot is the index's record (title, authors, venue, abstract)."
)

# --------------------------------------------------------------------------------------------
# Source quality
# --------------------------------------------------------------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Address-based labels; a heuristic that the sources list shows as such.
_OFFICIAL_SUFFIXES = tuple(
    sorted(_names(".gov .mil .int .europa.eu .gouv.fr .gc.ca .govt.nz .gov.uk .gov.au .bund.de"))
)
_OFFICIAL_DOMAINS = _names(
    """europa.eu un.org who.int oecd.org imf.org worldbank.org insee.fr destatis.de
    ons.gov.uk census.gov ecb.europa.eu admin.ch"""
)
_ACADEMIC_SUFFIXES = tuple(sorted(_names(".edu .ac.uk .ac.jp .edu.au .ac.nz")))
_ACADEMIC_DOMAINS = _names(
    """arxiv.org doi.org nature.com science.org sciencedirect.com springer.com wiley.com
    jstor.org plos.org ssrn.com nber.org biorxiv.org medrxiv.org semanticscholar.org"""
)
_USER_GENERATED_DOMAINS = _names(
    """reddit.com quora.com medium.com substack.com stackexchange.com stackoverflow.com
    twitter.com x.com facebook.com youtube.com tiktok.com blogspot.com wordpress.com
    tumblr.com linkedin.com"""
)
_AGGREGATOR_DOMAINS = _names(
    "wikipedia.org news.google.com msn.com yahoo.com flipboard.com statista.com"
)
_REPUTABLE_SECONDARY_DOMAINS = _names(
    """reuters.com apnews.com bbc.co.uk bbc.com nytimes.com ft.com economist.com
    theguardian.com wsj.com bloomberg.com lemonde.fr washingtonpost.com npr.org"""
)


def _matches(host: str, domains: Iterable[str]) -> bool:
    return any(host == domain or host.endswith("." + domain) for domain in domains)


def classify_source(document: SourceDocument, *, now: datetime | None = None) -> SourceQuality:
    """Label an acquired document from its address and metadata (a heuristic, shown as such).

    Government and intergovernmental sites are ``official``; universities, preprint servers
    and journals ``academic``; forums, social networks and blog platforms
    ``user_generated``; encyclopedias and news aggregators ``aggregator``; a short list of
    wire services and newspapers ``reputable_secondary``; everything else ``unknown``.
    Recency compares the publication year with ``now``.
    """
    try:
        host = hostname(document.final_url)
    except UnsupportedURLError:
        host = ""
    if _matches(host, _OFFICIAL_DOMAINS) or host.endswith(_OFFICIAL_SUFFIXES):
        source_class, authority = "official", "high"
    elif _matches(host, _ACADEMIC_DOMAINS) or host.endswith(_ACADEMIC_SUFFIXES):
        source_class, authority = "academic", "high"
    elif _matches(host, _USER_GENERATED_DOMAINS):
        source_class, authority = "user_generated", "low"
    elif _matches(host, _AGGREGATOR_DOMAINS):
        source_class, authority = "aggregator", "medium"
    elif _matches(host, _REPUTABLE_SECONDARY_DOMAINS):
        source_class, authority = "reputable_secondary", "medium"
    else:
        source_class, authority = "unknown", "unknown"
    recency = "unknown"
    year = (document.published_at or "")[:4]
    if year.isdigit() and now is not None:
        recency = "current" if now.year - int(year) <= 2 else "dated"
    notes = (
        ["An uploaded document: it has no web address to classify it by."]
        if is_document_url(document.final_url)
        else ["Classified from the web address; not a judgement of accuracy."]
    )
    if document.truncated:
        notes.append("Only the first part of the page was kept (size limit).")
    if document.abstract_only:
        notes.append(ABSTRACT_ONLY_NOTE)
    return SourceQuality(
        source_class=source_class,  # type: ignore[arg-type]
        authority=authority,  # type: ignore[arg-type]
        proximity="direct" if source_class in PRIMARY_CLASSES else "unknown",
        recency=recency,  # type: ignore[arg-type]
        notes=notes,
    )


SourceClassifier = Callable[[SourceDocument], SourceQuality]
