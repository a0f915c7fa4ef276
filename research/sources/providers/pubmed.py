"""PubMed through NCBI's E-utilities: ``esearch.fcgi`` for ids, ``efetch.fcgi`` for records.

``esearch`` answers an ``eSearchResult`` document whose ``IdList`` holds PMIDs in relevance
order (or an ``ERROR`` element); ``efetch`` with ``retmode=xml`` answers a
``PubmedArticleSet`` of ``PubmedArticle`` records: title, authors, journal, dates, the
(possibly structured) abstract and, in ``ArticleIdList``, the DOI and the PubMed Central id.
A record in PubMed Central is free to read there, so its PMC page is named as the full text.
Both documents are parsed with DTDs, entities and network access disabled.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest
from research.sources.providers.scholarly import (
    build_metadata,
    first_present,
    pmcid_of,
    pmid_of,
    scholarly_hit,
)
from research.sources.responses import XML_MEDIA_TYPES

# E-utilities allow 10,000 ids per esearch; a search never asks for more than a few dozen.
MAX_RETMAX = 10_000
PUBMED_RECORD_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
PMC_ARTICLE_URL = "https://pmc.ncbi.nlm.nih.gov/articles/{pmcid}/"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}


class PubMedProvider:
    """Sends ``tool`` and ``email`` (NCBI asks every client to identify itself) and
    ``api_key`` when configured (which raises NCBI's limit from 3 to 10 requests a second)."""

    name = "pubmed"
    label = "PubMed"
    supports_site = False

    def __init__(
        self,
        client: ProviderClient,
        *,
        api_url: str,
        tool: str,
        email: str = "",
        api_key: str = "",
    ) -> None:
        self._client = client
        self._base = api_url.rstrip("/")
        self._identity: dict[str, str] = {"tool": tool}
        if email:
            self._identity["email"] = email
        if api_key:
            self._identity["api_key"] = api_key

    def search(self, request: SearchRequest) -> list[SearchHit]:
        pmids = self._search_ids(request.query, min(request.limit, MAX_RETMAX))
        if not pmids:
            return []
        content = self._client.request(
            "GET",
            f"{self._base}/efetch.fcgi",
            params={"db": "pubmed", "id": ",".join(pmids), "retmode": "xml", **self._identity},
            media_types=XML_MEDIA_TYPES,
        )
        root = _parse(content)
        if root.tag != "PubmedArticleSet":
            raise failed("PubMed answered efetch with XML that is not a PubmedArticleSet.")
        by_pmid: dict[str, SearchHit] = {}
        for article in root.iter("PubmedArticle"):
            hit = _hit(article)
            if hit is not None and hit.scholarly is not None and hit.scholarly.pmid:
                by_pmid.setdefault(hit.scholarly.pmid, hit)
        # efetch may reorder records or leave out withdrawn ones; esearch's order is the rank.
        return [by_pmid[pmid] for pmid in pmids if pmid in by_pmid][: request.limit]

    def _search_ids(self, query: str, limit: int) -> list[str]:
        content = self._client.request(
            "GET",
            f"{self._base}/esearch.fcgi",
            params={
                "db": "pubmed",
                "term": query,
                "retmax": limit,
                "sort": "relevance",
                "retmode": "xml",
                **self._identity,
            },
            media_types=XML_MEDIA_TYPES,
        )
        root = _parse(content)
        if root.tag != "eSearchResult":
            raise failed("PubMed answered esearch with XML that is not an eSearchResult.")
        error = root.findtext("ERROR")
        if error:
            raise failed(f"PubMed refused the search: {' '.join(error.split())[:200]}.")
        id_list = root.find("IdList")
        if id_list is None:
            raise failed("PubMed answered esearch without an IdList.")
        pmids = [pmid for pmid in (pmid_of(el.text or "") for el in id_list.iter("Id")) if pmid]
        return list(dict.fromkeys(pmids))


def _parse(content: bytes) -> Any:
    try:
        return etree.fromstring(content, parser=_PARSER)  # noqa: S320 - hardened parser above
    except etree.XMLSyntaxError:
        raise failed("PubMed answered with malformed XML.") from None


def _text(element: Any) -> str:
    """All text inside ``element`` (titles and abstracts may hold <i>, <sup>…)."""
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def _hit(article: Any) -> SearchHit | None:
    citation = article.find("MedlineCitation")
    if citation is None:
        return None
    pmid = pmid_of(citation.findtext("PMID") or "")
    if pmid is None:
        return None
    journal = citation.find("Article/Journal")
    ids = {
        el.get("IdType"): (el.text or "").strip()
        for el in article.iterfind("PubmedData/ArticleIdList/ArticleId")
    }
    elocation_doi = next(
        (
            (el.text or "").strip()
            for el in citation.iterfind("Article/ELocationID")
            if el.get("EIdType") == "doi"
        ),
        None,
    )
    pmcid = pmcid_of(ids.get("pmc") or "")
    author_list = citation.find("Article/AuthorList")
    date = _publication_date(citation)
    metadata = build_metadata(
        "PubMed",
        doi=first_present(ids.get("doi"), elocation_doi),
        pmid=pmid,
        pmcid=pmcid,
        title=_text(citation.find("Article/ArticleTitle")),
        authors=[_author(a) for a in citation.iterfind("Article/AuthorList/Author")],
        more_authors=author_list is not None and author_list.get("CompleteYN") == "N",
        venue=_text(journal.find("Title")) if journal is not None else None,
        year=date[:4] if date else None,
        abstract=_abstract(citation),
        full_text_url=PMC_ARTICLE_URL.format(pmcid=pmcid) if pmcid else None,
        landing_url=PUBMED_RECORD_URL.format(pmid=pmid),
    )
    return scholarly_hit(metadata, published=date if date and len(date) == 10 else None)


def _author(author: Any) -> str | None:
    collective = _text(author.find("CollectiveName"))
    if collective:
        return collective
    last = _text(author.find("LastName"))
    first = _text(author.find("ForeName")) or _text(author.find("Initials"))
    return f"{first} {last}".strip() or None


def _abstract(citation: Any) -> str | None:
    """The abstract, a structured one as ``LABEL: text`` paragraphs joined by spaces."""
    parts = []
    for section in citation.iterfind("Article/Abstract/AbstractText"):
        text = _text(section)
        label = section.get("Label")
        if text:
            parts.append(f"{label}: {text}" if label else text)
    return " ".join(parts) or None


def _publication_date(citation: Any) -> str | None:
    """``YYYY-MM-DD`` of the electronic article date, else as much of the issue date as
    PubMed gives (``YYYY``), else ``None``."""
    electronic = citation.find("Article/ArticleDate")
    if electronic is not None:
        parts = [electronic.findtext(k) or "" for k in ("Year", "Month", "Day")]
        if all(p.isdigit() for p in parts):
            return f"{int(parts[0]):04d}-{int(parts[1]):02d}-{int(parts[2]):02d}"
    issue = citation.find("Article/Journal/JournalIssue/PubDate")
    if issue is None:
        return None
    year = issue.findtext("Year") or (issue.findtext("MedlineDate") or "")[:4]
    if not year.isdigit():
        return None
    month = _MONTHS.get((issue.findtext("Month") or "")[:3].lower())
    day = issue.findtext("Day") or ""
    if month and day.isdigit():
        return f"{year}-{month:02d}-{int(day):02d}"
    return year
