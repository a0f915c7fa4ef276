"""The first-party heuristic of research/engine/quality.py over varied synthetic sites."""

import pytest

from research.engine.contracts import SourceQuality
from research.engine.quality import (
    FIRST_PARTY_NOTE_PREFIX,
    classify_source,
    first_party_subject,
    is_first_party,
    subject_names,
    with_first_party,
)
from tests.engine.factories import make_document


def _doc(url: str, title: str = "A page", publisher: str | None = None, canonical: str = ""):
    document = make_document("Some text.", url=url, title=title, publisher=publisher)
    if canonical:
        document = document.model_copy(update={"canonical_url": canonical})
    return document


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How do I track down a bad commit, using Zircon?", {"zircon"}),
        ("Does Quillpad ship with a spell checker?", {"quillpad"}),
        ("From which Brisk.io version can I stream uploads?", {"briskio", "brisk"}),
        ("How does corelib.TaskPool differ from corelib.spawn?", {"corelib", "corelibtaskpool",
                                                                  "corelibspawn"}),
        ("What changed in Ferrite 3.11?", {"ferrite"}),
        ("Why does my MegaStore app time out?", {"megastore"}),
        ("Can an ORM use the WAL over HTTP or an API?", set()),
        ("What is a shallow copy?", set()),
        ('It fails with "Working outside of context". Why?', set()),
        ("How do I install Tarn on Linux or macOS?", {"tarn", "linux", "macos"}),
    ],
)
def test_subject_names_are_names_not_ordinary_words(question, expected):
    assert subject_names([question]) == expected


@pytest.mark.parametrize(
    ("url", "title", "publisher", "subjects", "expected"),
    [
        # the project's own domain, its label or a hyphen part of it
        ("https://zircon.org/docs/bisect.html", "Bisecting", None, {"zircon"}, "zircon"),
        ("https://zircon-scm.com/docs/push", "zircon-push", None, {"zircon"}, "zircon"),
        ("https://doc.tarn-lang.org/book/ch1.html", "Threads", None, {"tarn"}, "tarn"),
        ("https://docs.megastore.io/en/14/orm/x.html", "Sessions", None, {"megastore"},
         "megastore"),
        ("https://www.quillpad.net/features", "Features", None, {"quillpad"}, "quillpad"),
        # a subdomain of an umbrella organisation, confirmed by the site's own name
        ("https://quill.palletworks.com/en/2.2.x/x.html", "Quickstart — Quill Documentation",
         None, {"quill"}, "quill"),
        ("https://quill.palletworks.com/x.html", "Intro", "Quill Documentation (2.2.x)",
         {"quill"}, "quill"),
        # the site's name spells the address in words
        ("https://briskjs.org/api/fs.html", "File system", "Brisk.js v18 Documentation",
         {"brisk"}, "brisk"),
        # the repository on a code forge
        ("https://github.com/zircon/zircon-cli/blob/main/README.md", "README", None,
         {"zircon"}, "zircon"),
        ("https://gitlab.com/somebody/quillpad", "quillpad", None, {"quillpad"}, "quillpad"),
    ],
)
def test_first_party_sites_are_recognised(url, title, publisher, subjects, expected):
    assert first_party_subject(_doc(url, title, publisher), subjects) == expected


@pytest.mark.parametrize(
    ("url", "title", "publisher", "subjects"),
    [
        # a community site whose name begins with the subject is not the subject's site
        ("https://zirconnotes-community.test/q/1", "How long? - ZirconNotes Community Q&A",
         None, {"zircon"}),
        ("https://tarnacean-wiki.test/wiki/Rc", "Rc vs Arc - Tarnacean Wiki", None, {"tarn"}),
        ("https://devtalk-forum.test/t/1", "Quill WAL on a NAS - DevTalk Forum", None,
         {"quill"}),
        # a subdomain alone, without the site naming itself so, is not enough
        ("https://quill.blogfarm.com/post", "My notes", None, {"quill"}),
        # the subject only in the page title, not the site's identity
        ("https://example.com/zircon-tips", "Ten Zircon tips - Example Blog", None, {"zircon"}),
        # a forge repository of someone else
        ("https://github.com/someone/dotfiles", "dotfiles", None, {"zircon"}),
        # no subject at all
        ("https://zircon.org/", "Zircon", None, set()),
    ],
)
def test_other_sites_are_not_first_party(url, title, publisher, subjects):
    assert first_party_subject(_doc(url, title, publisher), subjects) is None


def test_acronym_hosts_are_not_first_party_for_acronym_terms():
    # "ORM" in a question is a concept; a blog at orm-patterns.test is not its official site.
    subjects = subject_names(["Can I share a Megastore ORM session between threads?"])
    document = _doc("https://orm-patterns.test/2022/x", "Sharing sessions - ORM Patterns blog")
    assert first_party_subject(document, subjects) is None


def test_copy_with_a_foreign_canonical_is_not_first_party():
    document = _doc(
        "https://mirror.example.net/zircon/docs", "Zircon docs", None,
        canonical="https://zircon.org/docs",
    )
    assert first_party_subject(document, {"zircon"}) is None


def test_label_is_shown_as_a_heuristic_and_only_replaces_unknown():
    document = _doc("https://zircon.org/docs", "Docs")
    quality = with_first_party(document, classify_source(document), {"zircon"})
    assert quality.source_class == "primary"
    assert quality.authority == "high"
    assert quality.notes[0].startswith(FIRST_PARTY_NOTE_PREFIX)
    assert is_first_party(quality)
    official = SourceQuality(source_class="user_generated", authority="low")
    assert with_first_party(document, official, {"zircon"}) == official
    assert not is_first_party(official)
