"""The first-party heuristic of research/engine/quality.py over varied synthetic sites."""

import pytest

from research.engine.contracts import PlanQuestion, SourceQuality
from research.engine.quality import (
    FIRST_PARTY_NOTE_PREFIX,
    Subjects,
    call_names,
    classify_source,
    command_names,
    first_party_subject,
    fold_name,
    is_first_party,
    plain_words,
    plan_subjects,
    quotations,
    subject_names,
    with_first_party,
)
from tests.engine.factories import make_document, make_plan


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
        (
            "How does corelib.TaskPool differ from corelib.spawn?",
            {"corelib", "corelibtaskpool", "corelibspawn"},
        ),
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
        (
            "https://docs.megastore.io/en/14/orm/x.html",
            "Sessions",
            None,
            {"megastore"},
            "megastore",
        ),
        ("https://www.quillpad.net/features", "Features", None, {"quillpad"}, "quillpad"),
        # a subdomain of an umbrella organisation, confirmed by the site's own name
        (
            "https://quill.palletworks.com/en/2.2.x/x.html",
            "Quickstart — Quill Documentation",
            None,
            {"quill"},
            "quill",
        ),
        (
            "https://quill.palletworks.com/x.html",
            "Intro",
            "Quill Documentation (2.2.x)",
            {"quill"},
            "quill",
        ),
        # the site's name spells the address in words
        (
            "https://briskjs.org/api/fs.html",
            "File system",
            "Brisk.js v18 Documentation",
            {"brisk"},
            "brisk",
        ),
        # the repository on a code forge
        (
            "https://github.com/zircon/zircon-cli/blob/main/README.md",
            "README",
            None,
            {"zircon"},
            "zircon",
        ),
        ("https://gitlab.com/somebody/quillpad", "quillpad", None, {"quillpad"}, "quillpad"),
    ],
)
def test_first_party_sites_are_recognised(url, title, publisher, subjects, expected):
    assert first_party_subject(_doc(url, title, publisher), subjects) == expected


@pytest.mark.parametrize(
    ("url", "title", "publisher", "subjects"),
    [
        # a community site whose name begins with the subject is not the subject's site
        (
            "https://zirconnotes-community.test/q/1",
            "How long? - ZirconNotes Community Q&A",
            None,
            {"zircon"},
        ),
        ("https://tarnacean-wiki.test/wiki/Rc", "Rc vs Arc - Tarnacean Wiki", None, {"tarn"}),
        ("https://devtalk-forum.test/t/1", "Quill WAL on a NAS - DevTalk Forum", None, {"quill"}),
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
        "https://mirror.example.net/zircon/docs",
        "Zircon docs",
        None,
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


# One row per site: the question, the page's address, title and declared site name, and the
# subject the heuristic should take the site for (None: not the subject's own site).
SITES = [
    # the registrable domain spells the subject, alone or with own-site words
    (
        "How does SQLite handle concurrent writers?",
        "https://sqlite.org/wal.html",
        "Write-Ahead Logging",
        None,
        "sqlite",
    ),
    (
        "Is the borrow checker of Rust sound?",
        "https://doc.rust-lang.org/book/ch04-00.html",
        "Understanding Ownership - The Rust Programming Language",
        None,
        "rust",
    ),
    ("Does Rust have a forum?", "https://users.rust-lang.org/t/1", "Help", None, "rust"),
    (
        "What does the blog of Rust say?",
        "https://blog.rust-lang.org/2024/01/01/x.html",
        "Announcing | Rust Blog",
        "Rust Blog",
        "rust",
    ),
    (
        "What does Node.js do with unhandled rejections?",
        "https://nodejs.org/api/process.html",
        "Process | Node.js v20 Documentation",
        None,
        "nodejs",
    ),
    (
        "How does git bisect work in Git?",
        "https://git-scm.com/docs/git-bisect",
        "Git - git-bisect Documentation",
        None,
        "git",
    ),
    (
        "Is Kotlin null-safe?",
        "https://kotlinlang.org/docs/null-safety.html",
        "Null safety",
        None,
        "kotlin",
    ),
    (
        "How are props passed in Vue.js?",
        "https://vuejs.org/guide/components/props.html",
        "Props | Vue.js",
        None,
        "vuejs",
    ),
    (
        "Does Grafana support alert silences?",
        "https://grafana.com/docs/grafana/latest/x/",
        "Silences | Grafana documentation",
        None,
        "grafana",
    ),
    (
        "How does Zig handle allocation?",
        "https://ziglang.org/documentation/master/",
        "Documentation - The Zig Programming Language",
        None,
        "zig",
    ),
    (
        "Which permissions does Deno grant?",
        "https://docs.deno.com/runtime/permissions",
        "Security and permissions",
        None,
        "deno",
    ),
    (
        "Can NumPy broadcast ragged arrays?",
        "https://numpy.org/doc/stable/user/basics.html",
        "Broadcasting — NumPy v2.1 Manual",
        None,
        "numpy",
    ),
    # a product under an umbrella organisation's domain, named so by its own site
    (
        "How do I configure sessions in Flask?",
        "https://flask.palletsprojects.com/en/3.0.x/config/",
        "Configuration Handling — Flask Documentation (3.0.x)",
        None,
        "flask",
    ),
    # a documentation host: the project's subdomain is its own site, another project's is not
    (
        "How do I schedule tasks with Celery beat?",
        "https://celery.readthedocs.io/en/stable/x",
        "Periodic Tasks",
        None,
        "celery",
    ),
    (
        "How do I schedule tasks with Celery beat?",
        "https://celery-tips.readthedocs.io/x",
        "Beat recipes",
        None,
        None,
    ),
    # a code forge: the project's repository, not someone's collection about it
    (
        "Does SQLite accept pull requests?",
        "https://github.com/sqlite/sqlite/blob/master/README.md",
        "README",
        None,
        "sqlite",
    ),
    (
        "How do I spawn tasks in Tokio?",
        "https://github.com/tokio-rs/tokio",
        "tokio-rs/tokio",
        None,
        "tokio",
    ),
    (
        "Is the borrow checker of Rust sound?",
        "https://github.com/someone/awesome-rust",
        "awesome-rust",
        None,
        None,
    ),
    # a public body named after the place the question names, by its name and address
    (
        "When does the Marlow Tram Line 2 open?",
        "https://marlow-transit.test/line-2",
        "Line 2 | Marlow Regional Transit Authority",
        "Marlow Regional Transit Authority",
        "marlow",
    ),
    (
        "When does the Marlow Tram Line 2 open?",
        "https://mrta.test/line-2",
        "Line 2",
        "Marlow Regional Transit Authority",
        "marlow",
    ),
    (
        "How clean is Lake Osterby?",
        "https://osterby-water.test/report",
        "Report | Osterby Basin Water Board",
        None,
        "osterby",
    ),
    # news sites named after the place or a word of the question are not the subject's site
    (
        "When does the Marlow Tram Line 2 open?",
        "https://marlow-courier.test/news/line-2",
        "Line 2 delayed | The Marlow Courier",
        "The Marlow Courier",
        None,
    ),
    (
        "When does the Marlow Tram Line 2 open?",
        "https://tram-digest.test/stories/marlow",
        "Marlow's Line 2 | Tram Digest",
        "Tram Digest",
        None,
    ),
    (
        "How does SQLite handle concurrent writers?",
        "https://sqliteweekly.test/issue/12",
        "Issue 12 | SQLite Weekly",
        "SQLite Weekly",
        None,
    ),
    # tutorial sites and other projects named after the subject
    (
        "How does SQLite handle concurrent writers?",
        "https://www.sqlitetutorial.net/x/",
        "SQLite Transaction",
        "SQLite Tutorial",
        None,
    ),
    (
        "What does Node.js do with unhandled rejections?",
        "https://nodered.org/docs/",
        "Documentation : Node-RED",
        None,
        None,
    ),
    (
        "How do hooks work in React?",
        "https://react-bootstrap.github.io/docs/",
        "Introduction | React Bootstrap",
        None,
        None,
    ),
    (
        "Is Kotlin null-safe?",
        "https://kotlinblog.test/null",
        "Null safety | Kotlin Blog Daily",
        "Kotlin Blog Daily",
        None,
    ),
    # a mirror that keeps the project's name but not its address
    (
        "How does SQLite handle concurrent writers?",
        "https://mirrors.example.net/sqlite/wal.html",
        "Write-Ahead Logging",
        "SQLite",
        None,
    ),
    # a product's pages on its vendor's general site: a path proves nothing off a code forge
    (
        "How do I import state in Terraform?",
        "https://developer.hashicorp.com/terraform/cli",
        "Terraform | HashiCorp Developer",
        None,
        None,
    ),
    # an encyclopedia article about the subject
    (
        "How does SQLite handle concurrent writers?",
        "https://en.wikipedia.org/wiki/SQLite",
        "SQLite - Wikipedia",
        "Wikipedia",
        None,
    ),
]


@pytest.mark.parametrize(("question", "url", "title", "publisher", "expected"), SITES)
def test_first_party_rule_over_many_sites(question, url, title, publisher, expected):
    subjects = subject_names([question])
    assert first_party_subject(_doc(url, title, publisher), subjects) == expected


# --------------------------------------------------------------------------------------------
# Subjects a question names without naming them as names: programs on a command line and
# quoted messages, and the project documentation that documents them
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Is zircon push --force-with-lease safer than plain --force?", {"zircon"}),
        ("How do I run brisk build --release?", {"brisk"}),
        ("Why does tarnpkg install --user fail?", {"tarnpkg"}),
        # one word before an option is no command line; nor is a function word a program
        ("How safe is plain --force?", set()),
        ("Is it --force or --lease?", set()),
        ("What does ls -la show?", set()),
    ],
)
def test_command_names_are_the_programs_a_question_runs(text, expected):
    assert command_names([text]) == expected


def test_plan_subjects_carry_command_names_and_quotations():
    plan = make_plan(
        objective='Is zircon push --force-with-lease safe? It says "Updates were rejected '
        'because the tip is behind".',
        questions=[PlanQuestion(id="q1", text="How safe is plain --force?", priority="required")],
    )
    subjects = plan_subjects(plan)
    assert "zircon" in subjects
    assert subjects.quotations == {fold_name("Updates were rejected because the tip is behind")}
    assert {"zircon", "push", "safe", "plain"} <= subjects.words
    assert "is" not in subjects.words
    # two words quoted for emphasis are no message
    assert quotations(['Is "plain force" safe?']) == frozenset()


_LEAD = "Widgetry has two main profiles: the dev profile and the release profile. "
_FILLER = "Profiles are configured independently of each other. " * 12


# One row per page: its address, title, declared site name and text, the subjects, and the
# subject the heuristic should take the page for (None: not first-party).
DOCUMENTED = [
    # the address says whose documentation the site is; the page's opening names the subject
    (
        "https://doc.tarn-lang.org/book/ch14-01.html",
        "The Tarn Book",
        None,
        _LEAD + _FILLER,
        {"widgetry"},
        "widgetry",
    ),
    (
        "https://zircon-scm.com/docs/zircon-gc.html",
        "zircon-gc(1)",
        None,
        "Widgetry runs housekeeping tasks. " + _FILLER,
        {"widgetry"},
        "widgetry",
    ),
    # the declared site name does (it spells the address)
    (
        "https://docs.megastore.io/en/14/core/pooling.html",
        "Pooling — Megastore 1.4 Documentation",
        None,
        "QueuePool keeps a fixed number of connections. " + _FILLER,
        {"queuepool"},
        "queuepool",
    ),
    (
        "https://quill.palletworks.com/en/2.2.x/cli.html",
        "Command Line Interface",
        "Quill Documentation (2.2.x)",
        "The init_db command creates the tables. " + _FILLER,
        {"initdb"},
        "initdb",
    ),
    # the page quotes the message the question quotes, past its opening: the project's
    (
        "https://quill.palletworks.com/en/2.2.x/appcontext.html",
        "The Application Context",
        "Quill Documentation (2.2.x)",
        _FILLER + "It raises RuntimeError: Working outside of application context. " + _FILLER,
        Subjects(
            {"runtimeerror"}, {fold_name("RuntimeError: Working outside of application context")}
        ),
        "quill",
    ),
    # a subject named only past the opening is mentioned, not documented
    (
        "https://doc.tarn-lang.org/book/ch14-01.html",
        "The Tarn Book",
        None,
        _FILLER + _LEAD,
        {"widgetry"},
        None,
    ),
    # sites that are not a project's own documentation, whatever their pages say
    (
        "https://example.com/widgetry-tips",
        "Widgetry tips - Example Blog",
        "Example Blog",
        _LEAD + _FILLER,
        {"widgetry"},
        None,
    ),
    (
        "https://zirconnotes-community.test/q/1",
        "Profiles - ZirconNotes Community Q&A",
        None,
        _LEAD + _FILLER,
        {"widgetry"},
        None,
    ),
    (
        "https://kotlinblog.test/profiles",
        "Profiles | Kotlin Blog Daily",
        "Kotlin Blog Daily",
        _LEAD + _FILLER,
        {"widgetry"},
        None,
    ),
    (
        "https://devtalk-forum.test/t/1",
        "Context errors - DevTalk Forum",
        None,
        "RuntimeError: Working outside of application context. " + _FILLER,
        Subjects(
            {"runtimeerror"}, {fold_name("RuntimeError: Working outside of application context")}
        ),
        None,
    ),
    (
        "https://developer.hashicorp.com/terraform/cli",
        "Terraform | HashiCorp Developer",
        None,
        "Widgetry plans changes. " + _FILLER,
        {"widgetry"},
        None,
    ),
    # the question names the project in lower case, as a command is typed ("does zircon
    # stash ..."): no subject by its shape, but the word the address gives as the project's
    (
        "https://zircon-scm.com/docs/zircon-stash.html",
        "zircon-stash(1)",
        None,
        _FILLER,
        Subjects(set(), (), plain_words(["Will zircon stash keep new files?"])),
        "zircon",
    ),
    (
        "https://docs.megastore.io/en/14/orm/session.html",
        "Session — Megastore 1.4 Documentation",
        None,
        _FILLER,
        Subjects(set(), (), plain_words(["does megastore flush first?"])),
        "megastore",
    ),
    # ... while a question that does not name the project gets no such page
    (
        "https://zircon-scm.com/docs/zircon-stash.html",
        "zircon-stash(1)",
        None,
        _FILLER,
        Subjects(set(), (), plain_words(["Will tarn stash keep new files?"])),
        None,
    ),
    # and a site that is not a project's documentation is not one for naming its name
    (
        "https://example.com/zircon-tips",
        "Zircon tips - Example Blog",
        "Example Blog",
        _FILLER,
        Subjects(set(), (), plain_words(["Will zircon stash keep new files?", "example"])),
        None,
    ),
    # a function the question names as a call ("make_pool()"), documented past the opening
    (
        "https://docs.megastore.io/en/14/core/pools.html",
        "Pool Configuration",
        "Megastore 1.4 Documentation",
        _FILLER + "The make_pool() call connects lazily. " + _FILLER,
        Subjects({"makepool"}, (), (), call_names(["Does make_pool() connect at once?"])),
        "makepool",
    ),
    # ... but not on a site that is no project's documentation, nor when the page lacks it
    (
        "https://example.com/pools",
        "Pools - Example Blog",
        "Example Blog",
        _FILLER + "The make_pool() call connects lazily. " + _FILLER,
        Subjects({"makepool"}, (), (), call_names(["Does make_pool() connect at once?"])),
        None,
    ),
    (
        "https://docs.megastore.io/en/14/core/pools.html",
        "Pool Configuration",
        "Megastore 1.4 Documentation",
        _FILLER,
        Subjects({"makepool"}, (), (), call_names(["Does make_pool() connect at once?"])),
        None,
    ),
    # a project's documentation that neither names a subject nor quotes the question
    (
        "https://doc.tarn-lang.org/book/ch01.html",
        "The Tarn Book",
        None,
        _FILLER,
        Subjects({"widgetry"}, {fold_name("Working outside of application context")}),
        None,
    ),
]


@pytest.mark.parametrize(("url", "title", "publisher", "text", "subjects", "expected"), DOCUMENTED)
def test_project_documentation_is_first_party_for_what_it_documents(
    url, title, publisher, text, subjects, expected
):
    document = make_document(text, url=url, title=title, publisher=publisher)
    assert first_party_subject(document, subjects) == expected


def test_the_note_says_whose_documentation_the_page_is():
    document = make_document(
        _LEAD + _FILLER, url="https://doc.tarn-lang.org/book/ch14.html", title="The Tarn Book"
    )
    quality = with_first_party(document, classify_source(document), {"widgetry"})
    assert quality.source_class == "primary"
    assert "'tarn'" in quality.notes[0] and "'widgetry'" in quality.notes[0]


def test_call_names_are_the_functions_a_question_calls():
    assert call_names(["Does make_pool() connect?", "What does Pool.take() do (if any)?"]) == {
        "makepool",
        "pooltake",
    }
