"""Duplicates, mirrors and independence clusters of sources."""

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from research.engine.contracts import SourceDocument, SourceRecord
from research.engine.text import fold
from research.engine.urls import UnsupportedURLError, hostname, registrable_domain
from research.engine.works import work_cluster_keys


def snapshot_content_hash(text: str) -> str:
    """SHA-256 of a snapshot's text after NFKC and whitespace normalisation, so that mirrors
    differing only in layout whitespace share a content hash."""
    normalized = " ".join(unicodedata.normalize("NFKC", text).split())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DuplicateMatch:
    """An acquired document that repeats a source the run already has."""

    source_id: str
    reason: Literal["canonical_url", "content_hash"]


def find_duplicate(
    document: SourceDocument, sources: Iterable[SourceRecord], *, source_id: str | None = None
) -> DuplicateMatch | None:
    """The already fetched source ``document`` duplicates (same canonical URL hash, or the same
    content hash: a mirror or syndicated copy), or ``None``. ``source_id`` is the document's
    own source, which is never its own duplicate."""
    content_match: DuplicateMatch | None = None
    for record in sources:
        if record.id == source_id or record.status != "fetched":
            continue
        if record.canonical_url_hash and record.canonical_url_hash == document.canonical_url_hash:
            return DuplicateMatch(record.id, "canonical_url")
        if content_match is None and record.content_hash == document.content_hash:
            content_match = DuplicateMatch(record.id, "content_hash")
    return content_match


def normalize_publisher(publisher: str | None) -> str:
    """A publisher name in comparable form (case, accents and punctuation folded)."""
    if not publisher:
        return ""
    words = re.findall(r"[0-9a-z]+", fold(publisher))
    if words and words[0] == "the":
        words = words[1:]
    return " ".join(words)


def _site_of(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return registrable_domain(hostname(url))
    except UnsupportedURLError:
        return None


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, first: str, second: str) -> None:
        root_a, root_b = self.find(first), self.find(second)
        if root_a != root_b:
            # The smaller root wins so cluster names do not depend on input order.
            low, high = sorted((root_a, root_b))
            self.parent[high] = low


def assign_independence_clusters(sources: Iterable[SourceRecord]) -> dict[str, str]:
    """Group sources that are not independent of each other; returns source id → cluster.

    Two sources share a cluster when they share a registrable domain, a publisher, a content
    hash (mirrors and syndicated copies), when one declares a canonical URL on the other's
    site, or when one is recorded as a duplicate of the other. A scholarly work (a source with
    a DOI, arXiv id, PMID or PMCID in its ``work_ids`` or its URL) is grouped by that identity
    instead of its domain and publisher: two copies of a paper are one cluster, while two
    papers on arXiv, in PubMed or in one journal are different studies. Grouping is
    transitive. The cluster name is the smallest ``domain:`` key of the group (else its
    smallest key), so it reads like ``domain:example.org``.
    """
    groups = _UnionFind()
    records = list(sources)
    for record in records:
        node = f"source:{record.id}"
        groups.find(node)
        keys = [f"work:{key}" for key in work_cluster_keys(record)]
        if not keys:
            site = _site_of(record.url) or (
                registrable_domain(record.domain) if record.domain else None
            )
            if site:
                keys.append(f"domain:{site}")
            publisher = normalize_publisher(record.publisher)
            if publisher:
                keys.append(f"publisher:{publisher}")
        if record.content_hash:
            keys.append(f"content:{record.content_hash}")
        declared = _site_of(record.declared_canonical_url)
        if declared:
            keys.append(f"domain:{declared}")
        if record.duplicate_of:
            keys.append(f"source:{record.duplicate_of}")
        for key in keys:
            groups.union(node, key)
    members: dict[str, list[str]] = {}
    for item in list(groups.parent):
        members.setdefault(groups.find(item), []).append(item)
    names: dict[str, str] = {}
    for root, items in members.items():
        domains = sorted(item for item in items if item.startswith("domain:"))
        names[root] = domains[0] if domains else sorted(items)[0]
    return {record.id: names[groups.find(f"source:{record.id}")] for record in records}
