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


# A command line in a question: the program, its subcommand, then an option ("tool push
# --force", "pkg install --user"), in lower case as people type them. Two words before an
# option are a program and its subcommand only on a command line, so the first names the
# program; one word is not enough ("than plain --force"), since the subcommand is what shows
# the words to be a command. A command with arguments before its option ("tool push origin
# --force") is missed: its subcommand and argument are taken for the pair, which names nothing.
_COMMAND_LINE = re.compile(
    r"(?<![\w.-])([a-z][a-z0-9_]*(?:-[a-z0-9_]+)*)\s+([a-z][a-z0-9_-]*)\s+--?[A-Za-z]"
)
# A passage a question quotes ("fails with \"Working outside of context\""): an error message
# or a line of output is the name a question gives an error. Three words are the shortest
# quotation that is a message rather than a term ("the" or "Foo bar" quoted for emphasis).
_QUOTATION = re.compile(r"[\"\u201c]([^\"\u201c\u201d]+)[\"\u201d]")
_QUOTATION_MIN_WORDS = 3


def command_names(texts: Iterable[str]) -> frozenset[str]:
    """The programs a text runs on a command line (``_COMMAND_LINE``), folded: ``tool`` of
    "Is tool push --force safe?"; a function word is no program ("is plain --force")."""
    return frozenset(
        _fold(match.group(1))
        for text in texts
        for match in _COMMAND_LINE.finditer(text)
        if not {match.group(1), match.group(2)} & STOP_WORDS and len(match.group(1)) > 1
    )


def quotations(texts: Iterable[str]) -> frozenset[str]:
    """The passages of at least ``_QUOTATION_MIN_WORDS`` words the texts quote, folded."""
    return frozenset(
        _fold(match.group(1))
        for text in texts
        for match in _QUOTATION.finditer(text)
        if len(match.group(1).split()) >= _QUOTATION_MIN_WORDS
    )


def plain_words(texts: Iterable[str]) -> frozenset[str]:
    """Every word of the texts but the stop words, folded as names are, in whatever case it
    is written: a name typed in lower case ("run zircon stash") is among them."""
    return frozenset(
        _fold(match.group(0))
        for text in texts
        for match in _WORD.finditer(text)
        if match.group(0).lower() not in STOP_WORDS and len(match.group(0)) > 1
    )


# A name written as a call in a question ("create_engine()", "Pool.take()"): the question
# names an API function, and a function is documented by its project's reference, where it
# is named far below the page's opening (the opening says what the page is about, "Engine
# Configuration", and the function comes in the second section).
_CALL = re.compile(_WORD.pattern + r"\(")


def call_names(texts: Iterable[str]) -> frozenset[str]:
    """The functions the texts name as calls (``_CALL``), folded as names are."""
    names = (match.group(0)[:-1] for text in texts for match in _CALL.finditer(text))
    return frozenset(_fold(name) for name in names if name.lower() not in STOP_WORDS and len(name) > 1)


class Subjects(frozenset[str]):
    """A plan's subject names (a frozenset of folded names); as ``quotations``, the folded
    passages its wording quotes; as ``words``, all its words (:func:`plain_words`); as
    ``calls``, the functions it names as calls (:func:`call_names`)."""

    quotations: frozenset[str]
    words: frozenset[str]
    calls: frozenset[str]

    def __new__(
        cls,
        names: Iterable[str],
        quoted: Iterable[str] = (),
        words: Iterable[str] = (),
        calls: Iterable[str] = (),
    ) -> "Subjects":
        subjects = super().__new__(cls, names)
        subjects.quotations = frozenset(quoted)
        subjects.words = frozenset(words)
        subjects.calls = frozenset(calls)
        return subjects


def plan_subjects(plan: ResearchPlan) -> Subjects:
    """Names of the plan's subject, from its objective, topics and questions: the names they
    mention (:func:`subject_names`) and the programs they run on a command line
    (:func:`command_names`); with the passages they quote (:func:`quotations`) and all their
    words (:func:`plain_words`)."""
    texts = [plan.objective, *plan.scope.included_topics, *(q.text for q in plan.questions)]
    return Subjects(
        subject_names(texts) | command_names(texts),
        quotations(texts),
        plain_words(texts),
        call_names(texts),
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
    return any(text.startswith(word) and _own_words(text[len(word) :]) for word in _OWN_SITE_WORDS)


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


# How much of a page's text is its opening, where documentation says what a page is about:
# about the first two short paragraphs (80 words). A name further down is mentioned by the
# page, not documented by it.
LEAD_CHARS = 500


def _address_project(label: str) -> str | None:
    """The name an address label gives as a project's own: a name, then own-site words only,
    at least one (``tarn-lang`` → ``tarn``, ``zircon-scm`` → ``zircon``, ``briskjs`` →
    ``brisk``); the shortest such name."""
    compact = _fold(label)
    for end in range(2, len(compact)):
        rest = compact[end:]
        if not rest.isdigit() and _own_words(rest):
            return compact[:end]
    return None


def _declared_project(words: list[str], labels: list[str]) -> str | None:
    """The name a site name gives the site as a project's own documentation: name words, then
    own-site words and version marks only, at least one own-site word ("Quill Documentation
    (2.2.x)", "Megastore 1.4 Documentation"), where the name spells an address label."""
    if words[:1] == ["the"]:
        words = words[1:]
    for end in range(1, len(words)):
        rest = words[end:]
        own = [word for word in rest if word in _OWN_SITE_WORDS]
        if own and all(word in _OWN_SITE_WORDS or _VERSION_WORD.match(word) for word in rest):
            name = words[:end]
            return "".join(name) if any(_spells(label, name) for label in labels) else None
    return None


def _opening_names(document: SourceDocument) -> frozenset[str]:
    """The words of a page's title and opening (``LEAD_CHARS``), folded as names are, with the
    first part of each dotted one (as :func:`subject_names` gives it)."""
    opening = f"{document.title or ''}\n{document.text[:LEAD_CHARS]}"
    names: set[str] = set()
    for match in _WORD.finditer(opening):
        names.add(_fold(match.group(0)))
        names.add(_fold(match.group(0).split(".")[0]))
    return frozenset(names)


def _documented_subject(
    document: SourceDocument, subjects: Collection[str], labels: list[str]
) -> tuple[str, str] | None:
    """(5) of :func:`first_party_subject`: the site presents itself as a project's own
    documentation and the page documents a subject of the question, or quotes a passage the
    question quotes. Gives the subject (the project, for a quotation) and the note's reason."""
    projects = [found for found in map(_address_project, labels) if found]
    projects += [
        found for words in _site_names(document) if (found := _declared_project(words, labels))
    ]
    if not projects:
        return None
    project = projects[0]
    opening = _opening_names(document)
    for subject in sorted(subjects, key=lambda name: (-len(name), name)):
        if subject in opening:
            return subject, (
                f"the site presents itself as {project!r}'s own documentation and the page "
                f"documents {subject!r}, a subject of the question."
            )
    # A function the question names as a call is documented wherever the page names it: a
    # reference page's opening introduces its topic, and the function comes further down.
    calls = getattr(subjects, "calls", frozenset())
    if calls:
        named = {_fold(match.group(0)) for match in _WORD.finditer(document.text)}
        call = min(calls & named, default=None)
        if call is not None:
            return call, (
                f"the site presents itself as {project!r}'s own documentation and the page "
                f"documents {call!r}, a function the question names."
            )
    quoted = getattr(subjects, "quotations", frozenset())
    if quoted and any(passage in fold_name(document.text) for passage in quoted):
        return project, (
            f"the site presents itself as {project!r}'s own documentation and the page quotes "
            "the passage the question quotes."
        )
    # The project itself, named in any case: a name typed in lower case ("does zircon stash
    # keep ...") is no subject by its shape, but the word the site's address or name gives
    # as a project's own documentation is that project's name.
    words = getattr(subjects, "words", frozenset())
    for found in projects:
        if found in words:
            return found, (
                f"the site presents itself as {found!r}'s own documentation and the question "
                f"names {found!r}."
            )
    return None


def _first_party(document: SourceDocument, subjects: Collection[str]) -> tuple[str, str] | None:
    """:func:`first_party_subject`'s subject and the reason its note gives."""
    if not subjects and not getattr(subjects, "words", None):
        return None
    try:
        host = hostname(document.final_url)
        canonical_host = hostname(document.canonical_url)
    except UnsupportedURLError:
        return None
    if registrable_domain(canonical_host) != registrable_domain(host):
        return None  # a page claiming another site's identity is a copy, not first-party
    own = "the site's own address or name matches {!r}, a subject of the question."
    site = registrable_domain(host)
    if site in _FORGE_DOMAINS:
        path = document.final_url.split("//", 1)[-1].split("/")[1:3]
        for part in path:
            if _fold(part) in subjects:
                return _fold(part), own.format(_fold(part))
        return None
    brand = site.split(".")[0]
    subject = _address_subject(brand, subjects)
    if subject:
        return subject, own.format(subject)
    sub_labels = [label for label in host[: -len(site)].split(".") if label and label != "www"]
    named = [(words, _name_subject(words, subjects)) for words in _site_names(document)]
    for label in sub_labels:
        subject = _address_subject(label, subjects)
        if subject and any(found == subject for _, found in named):
            return subject, own.format(subject)
    for words, found in named:
        if found and any(_spells(label, words) for label in [brand, *sub_labels]):
            return found, own.format(found)
    return _documented_subject(document, subjects, [brand, *sub_labels])


def first_party_subject(document: SourceDocument, subjects: Collection[str]) -> str | None:
    """The subject whose own site ``document`` appears to be, or None.

    A subject counts when (1) the registrable domain's label spells it as its own: the
    subject's name first, then only own-site words (``zircon.org``, ``zircon-scm.com``,
    ``doc.tarn-lang.org``, ``nodejs.org``); or (2) a subdomain label does so and the site's
    own name presents the site as the subject's (``quill.palletworks.com`` calling itself
    "Quill Documentation"); or (3) the site's own name presents it as the subject's (own-site
    words or a public body's name after the subject) and that name spells one of the address
    labels; or (4) on a code forge, the repository's owner or name is the subject; or (5) the
    site presents itself as some project's own documentation — an address label or the site
    name that spells one is a name followed by own-site words (``tarn-lang.org``, "Quill
    Documentation") — and the page's title or opening (``LEAD_CHARS``) names the subject, or
    the page quotes a passage the question quotes (``Subjects.quotations``; the subject is
    then the project), or the page names anywhere a function the question writes as a call
    (``Subjects.calls``), or the question names that project in any case (``Subjects.words``): a
    project's documentation documents its own tools, options and error messages, which a
    question may name without naming the project, or name in lower case. The final and the
    canonical address must agree on the site.
    """
    found = _first_party(document, subjects)
    return found[0] if found else None


def with_first_party(
    document: SourceDocument, quality: SourceQuality, subjects: Collection[str]
) -> SourceQuality:
    """``quality``, relabelled ``primary`` when an otherwise unclassified page is the subject's
    own site (:func:`first_party_subject`); the note says it is a heuristic and why."""
    if quality.source_class != "unknown":
        return quality
    found = _first_party(document, subjects)
    if found is None:
        return quality
    note = f"{FIRST_PARTY_NOTE_PREFIX} {found[1]}"
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
        note.startswith(FIRST_PARTY_NOTE_PREFIX)
        for note in quality.notes  # type: ignore[union-attr]
    )
