"""Library pages: uploads of real files made here, hostile files refused with a sentence and
nothing stored, and who may see, upload and delete."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from research import libraries
from research.models import Library, LibraryDocument
from tests.research.documents import use_document_storage
from tests.sources.documents.files import (
    nested_forms_pdf,
    ratio_bomb_docx,
    report_docx,
    report_pdf,
)

MARKDOWN = b"""# Field notes

The survey covered nine beaches.

## Findings

Plastic pellets were found on seven of them.
"""


@pytest.fixture(autouse=True)
def document_storage(tmp_path: Path) -> Iterator[Path]:
    location = tmp_path / "documents"
    with use_document_storage(location):
        yield location


def stored_files(location: Path) -> list[Path]:
    return [path for path in location.rglob("*") if path.is_file()] if location.exists() else []


@pytest.fixture
def personal(owner) -> Library:
    return libraries.library_create(user=owner, name="My papers")


@pytest.fixture
def team_library(owner, team) -> Library:
    return libraries.library_create(user=owner, name="Lab library", team=team)


def refusal(response) -> str:
    """The sentence the upload form shows under the file field."""
    found = re.search(r'<p class="field-error" role="alert">(.*?)</p>', response.content.decode())
    assert found, "the page shows no refusal"
    return html.unescape(found.group(1))


def upload(client, library: Library, name: str, data: bytes):
    return client.post(
        reverse("research:library_detail", args=[library.pk]),
        {"file": SimpleUploadedFile(name, data)},
    )


def test_owner_creates_a_personal_library(client_for, owner) -> None:
    response = client_for(owner).post(reverse("research:library_list"), {"name": "  Reading  "})
    library = Library.objects.get()
    assert response.status_code == 302
    assert (library.name, library.owner, library.team) == ("Reading", owner, None)


def test_a_team_viewer_cannot_create_a_team_library(client_for, viewer, team) -> None:
    response = client_for(viewer).post(
        reverse("research:library_list"), {"name": "Ours", "team": team.pk}
    )
    assert response.status_code == 422
    assert not Library.objects.exists()


def test_multi_page_pdf_is_stored_with_its_pages(client_for, owner, personal, document_storage):
    response = upload(client_for(owner), personal, "tide.pdf", report_pdf())
    assert response.status_code == 302
    document = LibraryDocument.objects.get()
    assert document.page_count == 3
    assert document.mime_type == "application/pdf"
    assert [p["page"] for p in document.snapshot["pages"]] == [1, 2, 3]
    text = document.snapshot["text"]
    second = document.snapshot["pages"][1]
    assert "recalibrated the gauge on 14 August" in text[second["start"] : second["end"]]
    assert len(stored_files(document_storage)) == 1
    assert document.file.read() == report_pdf()
    page = client_for(owner).get(reverse("research:document_detail", args=[document.pk]))
    assert b"Page 2" in page.content


def test_docx_keeps_headings_and_table_cells(client_for, owner, personal) -> None:
    assert upload(client_for(owner), personal, "survey.docx", report_docx()).status_code == 302
    snapshot = LibraryDocument.objects.get().snapshot
    assert [h["text"] for h in snapshot["headings"]] == [
        "Harbour Survey 2024",
        "Method",
        "Sites",
        "Results",
    ]
    assert "cell" in {block["kind"] for block in snapshot["blocks"]}
    assert "455" in snapshot["text"]


def test_markdown_keeps_headings_with_offsets(client_for, owner, personal) -> None:
    assert upload(client_for(owner), personal, "notes.md", MARKDOWN).status_code == 302
    snapshot = LibraryDocument.objects.get().snapshot
    findings = next(h for h in snapshot["headings"] if h["text"] == "Findings")
    assert snapshot["text"][findings["offset"] :].startswith("Findings")


HOSTILE = {
    "zip bomb": ("bomb.docx", ratio_bomb_docx, "looks like a zip bomb"),
    "wrong extension": ("report.docx", report_pdf, "PDF"),
    "empty": ("empty.md", lambda: b"", "empty (0 bytes)"),
    "over the limit": ("big.txt", lambda: b"word " * 1000, "over the 4 KB limit"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_files_are_refused_with_a_sentence_and_nothing_stored(
    case, client_for, owner, personal, settings, document_storage
) -> None:
    if case == "over the limit":
        settings.RESEARCH_DOCUMENT_MAX_BYTES = 4096
    name, data, words = HOSTILE[case]
    response = upload(client_for(owner), personal, name, data())
    assert response.status_code == 422
    assert words in refusal(response)
    assert not LibraryDocument.objects.exists()
    assert stored_files(document_storage) == []


def test_a_pdf_that_loops_the_parser_is_stopped_and_nothing_stored(
    client_for, owner, personal, settings, document_storage
) -> None:
    settings.RESEARCH_DOCUMENT_PDF_TIMEOUT_SECONDS = 2
    response = upload(client_for(owner), personal, "loop.pdf", nested_forms_pdf())
    assert response.status_code == 422
    assert "took longer than 2 seconds" in refusal(response)
    assert not LibraryDocument.objects.exists()
    assert stored_files(document_storage) == []


def test_a_file_that_does_not_fit_the_library_is_refused(
    client_for, owner, personal, settings, document_storage
) -> None:
    settings.RESEARCH_DOCUMENT_MAX_BYTES = 2048
    settings.RESEARCH_LIBRARY_MAX_BYTES = 2048
    client = client_for(owner)
    first = MARKDOWN + b"\nMore notes. " * 100
    assert upload(client, personal, "notes.md", first).status_code == 302
    response = upload(client, personal, "more.md", first.replace(b"nine", b"ten"))
    assert response.status_code == 422
    assert "does not fit in the library" in refusal(response)
    assert LibraryDocument.objects.count() == 1
    assert len(stored_files(document_storage)) == 1


def test_the_same_file_twice_is_refused(client_for, owner, personal) -> None:
    client = client_for(owner)
    upload(client, personal, "notes.md", MARKDOWN)
    response = upload(client, personal, "copy.md", MARKDOWN)
    assert "already in the library as “Field notes”" in refusal(response)
    assert LibraryDocument.objects.count() == 1


# --- access -------------------------------------------------------------------------------


@pytest.fixture
def team_document(owner, team_library) -> LibraryDocument:
    return libraries.document_upload(
        library=team_library, user=owner, name="notes.md", data=MARKDOWN
    )


def test_team_viewer_reads_but_cannot_delete_or_upload(
    client_for, viewer, team_library, team_document, document_storage
) -> None:
    client = client_for(viewer)
    assert client.get(reverse("research:library_detail", args=[team_library.pk])).status_code == 200
    assert (
        client.get(reverse("research:document_detail", args=[team_document.pk])).status_code == 200
    )
    response = client.post(reverse("research:document_delete", args=[team_document.pk]))
    assert response.status_code == 403
    assert "owners and editors" in response.content.decode()
    assert upload(client, team_library, "other.md", b"# Other\n\ntext").status_code == 403
    deleted = client.post(reverse("research:library_delete", args=[team_library.pk]))
    assert deleted.status_code == 403
    assert LibraryDocument.objects.count() == 1
    assert len(stored_files(document_storage)) == 1


def test_team_editor_uploads_and_deletes(client_for, editor, team_library, team_document):
    client = client_for(editor)
    assert upload(client, team_library, "other.md", b"# Other\n\nSome text.").status_code == 302
    response = client.post(reverse("research:document_delete", args=[team_document.pk]))
    assert response.status_code == 302
    assert list(LibraryDocument.objects.values_list("name", flat=True)) == ["other.md"]
    assert (
        client.post(reverse("research:library_delete", args=[team_library.pk])).status_code == 403
    )


def test_deleting_a_document_removes_its_file(
    client_for, owner, team_document, document_storage, django_capture_on_commit_callbacks
) -> None:
    assert len(stored_files(document_storage)) == 1
    with django_capture_on_commit_callbacks(execute=True):
        client_for(owner).post(reverse("research:document_delete", args=[team_document.pk]))
    assert not LibraryDocument.objects.exists()
    assert stored_files(document_storage) == []


def test_outsider_gets_404_for_library_and_document(
    client_for, outsider, team_library, team_document
) -> None:
    client = client_for(outsider)
    for url in (
        reverse("research:library_detail", args=[team_library.pk]),
        reverse("research:document_detail", args=[team_document.pk]),
    ):
        assert client.get(url).status_code == 404
    for url in (
        reverse("research:document_delete", args=[team_document.pk]),
        reverse("research:library_delete", args=[team_library.pk]),
    ):
        assert client.post(url).status_code == 404
    assert upload(client, team_library, "x.md", b"# X\n\ny").status_code == 404
    listing = client.get(reverse("research:library_list")).content.decode()
    assert "Lab library" not in listing
    assert LibraryDocument.objects.count() == 1


def test_a_run_cannot_name_a_library_its_owner_cannot_see(
    client_for, outsider, team_library
) -> None:
    response = client_for(outsider).post(
        reverse("research:run_new"),
        {
            "question": "What did the survey find?",
            "depth": "quick",
            "source_mode": "full_web",
            "visibility": "private",
            "library": str(team_library.pk),
        },
    )
    assert response.status_code == 422
    assert "Choose one of your libraries" in response.content.decode()


def test_the_composer_starts_research_on_a_library_without_the_web(
    client_for, owner, personal
) -> None:
    from research.models import ResearchRun

    libraries.document_upload(library=personal, user=owner, name="notes.md", data=MARKDOWN)
    client = client_for(owner)
    page = client.get(reverse("research:run_new")).content.decode()
    assert "My papers" in page and "Field notes" in page
    response = client.post(
        reverse("research:run_new"),
        {
            "question": "What did the beach survey find?",
            "depth": "quick",
            "source_mode": "full_web",
            "visibility": "private",
            "library": str(personal.pk),
            "documents_only": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:500]
    policy = ResearchRun.objects.get().source_policy
    assert (policy["documents"], policy["library_id"], policy["web"]) == (
        "library",
        str(personal.pk),
        False,
    )


def test_documents_only_needs_a_library_or_documents(client_for, owner) -> None:
    response = client_for(owner).post(
        reverse("research:run_new"),
        {
            "question": "What did the survey find?",
            "depth": "quick",
            "source_mode": "full_web",
            "visibility": "private",
            "documents_only": "on",
        },
    )
    assert response.status_code == 422
    assert "Choose a library or documents to research without the web." in (
        response.content.decode()
    )


def test_html_and_plain_text_uploads_are_stored(client_for, owner, personal) -> None:
    page = (
        b"<!doctype html><html><head><title>Saved memo</title></head><body><article>"
        b"<h1>Saved memo</h1><p>The board approved the new intake screens in May, after the "
        b"trial at two pumping stations showed fewer blockages than the old bar screens.</p>"
        b"<h2>Costs</h2><p>The screens cost 310,000 euros in total, spread over two budget "
        b"years, and maintenance contracts were signed with the supplier for five years.</p>"
        b"</article></body></html>"
    )
    client = client_for(owner)
    assert upload(client, personal, "memo.html", page).status_code == 302
    assert (
        upload(client, personal, "plain.txt", b"Intake screens were cleaned weekly.").status_code
        == 302
    )
    html_doc = LibraryDocument.objects.get(name="memo.html")
    assert html_doc.mime_type == "text/html"
    assert "Costs" in [h["text"] for h in html_doc.snapshot["headings"]]
    assert LibraryDocument.objects.get(name="plain.txt").mime_type.startswith("text/plain")
