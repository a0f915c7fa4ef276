"""Source classification: the label and quality an acquired document gets from its address."""

import re
from collections.abc import Callable, Collection, Iterable
from datetime import datetime

from research.engine.contracts import ResearchPlan, SourceDocument, SourceQuality
from research.engine.guards import PRIMARY_CLASSES
from research.engine.text import STOP_WORDS
from research.engine.urls import (
    UnsupportedURLError,
    hostname,
    is_document_url,
    registrable_domain,
)

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


# --------------------------------------------------------------------------------------------
# First-party sources (a heuristic, labelled as such)
# --------------------------------------------------------------------------------------------
#
# Official documentation of the thing asked about is first-hand evidence, but no address list
# can know every project. The site is recognised instead by agreeing signals: the question
# names a subject, and the site's *own identity* — its address, the site name it declares
# (``og:site_name`` or the site segment of its title) or, on a code forge, the repository
# path — names the same subject. Like the address labels above it is a heuristic, shown as
# "first-party (heuristic)" wherever the class is shown.

FIRST_PARTY_LABEL = "first-party (heuristic)"
FIRST_PARTY_NOTE_PREFIX = "First-party (heuristic):"

# Code-hosting sites whose first path segments (owner, repository) name the project; on them
# the address proves nothing about the owner, the path does.
_FORGE_DOMAINS = _names("github.com gitlab.com codeberg.org bitbucket.org sr.ht")

# A word of a question that names something: it carries a capital letter after its first
# character or a digit, dot or underscore joining letters (MegaORM, Brisk.js, read_file),
# or it is capitalised where a sentence does not begin.
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._+#-][A-Za-z0-9]+)*")
# What a sentence (or a quoted one) may begin after.
_SENTENCE_OPENERS = frozenset(".?!:;\"'(\u201c\u2018")
# Acronyms of up to five capitals (API, ORM, WAL, RAM, HTTP) name concepts far more often than
# publishers; treating them as subjects would let any site whose address begins with one claim
# to be first-party. Governments and agencies with acronym names are labelled by address above.
_ACRONYM = re.compile(r"^[A-Z]{2,5}s?$")
# Title separators a site name stands behind ("Quickstart — Quill Documentation").
_TITLE_SEPARATORS = re.compile(r"\s+[-\u2013\u2014|\u00b7:]\s+")


def _fold(name: str) -> str:
    """A name as addresses spell it: lower case, letters and digits only (Brisk.js → briskjs)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def fold_name(text: str) -> str:
    """``text`` folded as names are (:func:`_fold`), so a folded subject name is found in it
    by substring ("Brisk.js" in "the Brisk.js docs")."""
    return _fold(text)


def subject_names(texts: Iterable[str]) -> frozenset[str]:
    """The names a question mentions, folded (``_fold``): the subjects a first-party site may
    be the official site of. Ordinary words, sentence-initial capitals and acronyms are not
    names; a dotted or underscored identifier also gives its first part (``corelib.spawn``
    → ``corelib``), since a module or object is documented by its package."""
    names: set[str] = set()
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group(0)
            before = text[: match.start()].rstrip()
            starts_sentence = not before or before[-1] in _SENTENCE_OPENERS
            if _ACRONYM.match(word):
                continue
            if word.lower() in STOP_WORDS:
                continue
            shaped = bool(re.search(r"[a-z][A-Z]|[A-Za-z][0-9]|[A-Za-z][._+#][A-Za-z]", word))
            capitalised = word[0].isupper() and not starts_sentence
            if not (shaped or capitalised):
                continue
            names.add(_fold(word))
            head = word.split(".")[0]
            if head != word:
                names.add(_fold(head))
    return frozenset(name for name in names if len(name) > 1 and not name.isdigit())


def plan_subjects(plan: ResearchPlan) -> frozenset[str]:
    """Names of the plan's subject: from its objective, topics and questions."""
    return subject_names(
        [plan.objective, *plan.scope.included_topics, *(q.text for q in plan.questions)]
    )


def _site_names(document: SourceDocument) -> list[list[str]]:
    """The names the page gives its own site, each as folded words: the declared site name
    (``og:site_name`` and the like, stored as ``publisher``) and the first and last segments
    of a title that has separators (where sites put their name)."""
    candidates: list[str] = []
    if document.publisher:
        candidates.append(document.publisher)
    segments = _TITLE_SEPARATORS.split(document.title or "")
    if len(segments) > 1:
        candidates += [segments[0], segments[-1]]
    out = []
    for candidate in candidates:
        words = [_fold(w) for w in re.split(r"[^A-Za-z0-9]+", candidate) if w]
        if words:
            out.append(words)
    return out


# Words a project puts beside its own name in its address or in the name its site declares
# ("tarn-lang.org", "nodejs.org", "zircon-scm.com", "Quill Documentation"): they say which
# part of the subject's own presence the site is (its language, project, documentation, code,
# library) and never name another publisher. A site named after the subject plus a word of its
# own kind ("Gazette", "Times", "Weekly", "Blog", "Wiki", "Community") is someone else's site
# about the subject, and that word is not here.
_OWN_SITE_WORDS = _names(
    """lang language project software foundation docs doc documentation official hq dev app
    js py rs cli scm framework lib sdk api reference manual labs"""
)
# The words public bodies end their names with ("… Regional Transit Authority", "… Water
# Board", "… Statistics Office"): a body named after a place or thing the question names is
# its own authority on it, as a newspaper or forum named after the same place is not.
_PUBLIC_BODY_WORDS = _names(
    """authority agency board council commission ministry department office government
    administration bureau municipality directorate inspectorate regulator"""
)
# Version marks a documentation site puts in its name ("v18", "2.2.x", "3").
_VERSION_WORD = re.compile(r"^(?:v?\d+|x)$")


def _own_words(text: str) -> bool:
    """Whether folded ``text`` is made of own-site words and version marks only ("" is)."""
    if not text or text.isdigit():
        return True
    return any(
        text.startswith(word) and _own_words(text[len(word) :]) for word in _OWN_SITE_WORDS
    )


def _address_subject(label: str, subjects: Collection[str]) -> str | None:
    """The subject an address label spells as its own: the subject's name first, then only
    own-site words (``zircon``, ``zircon-scm``, ``tarnlang``, ``nodejs``), hyphens or not."""
    compact = _fold(label)
    for subject in sorted(subjects, key=lambda name: (-len(name), name)):
        if compact.startswith(subject) and _own_words(compact[len(subject) :]):
            return subject
    return None


def _name_subject(words: list[str], subjects: Collection[str]) -> str | None:
    """The subject a site name presents the site as the own site of: the subject's name first
    (after "The"), then only own-site words and versions ("Quill Documentation 2.2.x",
    "Brisk.js v18 Documentation"), or a public body's name ("Marlow Water Board")."""
    if words[:1] == ["the"]:
        words = words[1:]
    if not words or words[0] not in subjects:
        return None
    rest = words[1:]
    if all(word in _OWN_SITE_WORDS or _VERSION_WORD.match(word) for word in rest):
        return words[0]
    return words[0] if rest and rest[-1] in _PUBLIC_BODY_WORDS else None


def _spells(label: str, words: list[str]) -> bool:
    """Whether an address label is spelled by a site name's words: its hyphen parts are all
    words of the name, or it is a run of the name's words or their initials written together
    (``marlow-transit`` / "Marlow Regional Transit Authority", ``mrta``, ``briskjs``)."""
    parts = [_fold(part) for part in label.split("-") if part]
    if parts and set(parts) <= set(words):
        return True
    compact = _fold(label)
    runs = {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    return compact in runs or (len(words) > 1 and compact == "".join(w[0] for w in words))


def first_party_subject(document: SourceDocument, subjects: Collection[str]) -> str | None:
    """The subject whose own site ``document`` appears to be, or None.

    A subject counts when (1) the registrable domain's label spells it as its own: the
    subject's name first, then only own-site words (``zircon.org``, ``zircon-scm.com``,
    ``doc.tarn-lang.org``, ``nodejs.org``); or (2) a subdomain label does so and the site's
    own name presents the site as the subject's (``quill.palletworks.com`` calling itself
    "Quill Documentation"); or (3) the site's own name presents it as the subject's (own-site
    words or a public body's name after the subject) and that name spells one of the address
    labels; or (4) on a code forge, the repository's owner or name is the subject. The final
    and the canonical address must agree on the site.
    """
    if not subjects:
        return None
    try:
        host = hostname(document.final_url)
        canonical_host = hostname(document.canonical_url)
    except UnsupportedURLError:
        return None
    if registrable_domain(canonical_host) != registrable_domain(host):
        return None  # a page claiming another site's identity is a copy, not first-party
    site = registrable_domain(host)
    if site in _FORGE_DOMAINS:
        path = document.final_url.split("//", 1)[-1].split("/")[1:3]
        for part in path:
            if _fold(part) in subjects:
                return _fold(part)
        return None
    brand = site.split(".")[0]
    subject = _address_subject(brand, subjects)
    if subject:
        return subject
    sub_labels = [label for label in host[: -len(site)].split(".") if label and label != "www"]
    named = [(words, _name_subject(words, subjects)) for words in _site_names(document)]
    for label in sub_labels:
        subject = _address_subject(label, subjects)
        if subject and any(found == subject for _, found in named):
            return subject
    for words, found in named:
        if found and any(_spells(label, words) for label in [brand, *sub_labels]):
            return found
    return None


def with_first_party(
    document: SourceDocument, quality: SourceQuality, subjects: Collection[str]
) -> SourceQuality:
    """``quality``, relabelled ``primary`` when an otherwise unclassified page is the subject's
    own site (:func:`first_party_subject`); the note says it is a heuristic and why."""
    if quality.source_class != "unknown":
        return quality
    subject = first_party_subject(document, subjects)
    if subject is None:
        return quality
    note = (
        f"{FIRST_PARTY_NOTE_PREFIX} the site's own address or name matches {subject!r}, "
        "a subject of the question."
    )
    return quality.model_copy(
        update={
            "source_class": "primary",
            "authority": "high",
            "proximity": "direct",
            "notes": [note, *quality.notes],
        }
    )


def is_first_party(quality: SourceQuality | None) -> bool:
    """Whether ``quality`` carries the first-party heuristic's label."""
    return bool(quality) and any(
        note.startswith(FIRST_PARTY_NOTE_PREFIX) for note in quality.notes  # type: ignore[union-attr]
    )
