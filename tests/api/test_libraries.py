"""The libraries API: upload through the API, refusals as 422 with a code, and who may see
and change what."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from research import libraries
from research.models import LibraryDocument
from tests.research.documents import use_document_storage
from tests.sources.documents.files import ratio_bomb_docx, report_pdf

NOTES = b"# Notes\n\nThe pump ran for 41 hours.\n"


@pytest.fixture(autouse=True)
def document_storage(tmp_path: Path) -> Iterator[Path]:
    with use_document_storage(tmp_path / "documents"):
        yield tmp_path / "documents"


@pytest.fixture
def team_library(owner, team):
    return libraries.library_create(user=owner, name="Lab library", team=team)


def post_file(client, library, name: str, data: bytes):
    return client.post(
        f"/api/v1/libraries/{library.pk}/documents", {"file": SimpleUploadedFile(name, data)}
    )


def test_upload_lists_and_deletes_through_the_api(api_for, owner, team_library) -> None:
    client = api_for(owner)
    response = post_file(client, team_library, "tide.pdf", report_pdf())
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["pages"], body["mime_type"]) == (3, "application/pdf")
    [listed] = client.get("/api/v1/libraries").json()
    assert listed == {
        "id": str(team_library.pk),
        "name": "Lab library",
        "team": team_library.team.slug,
        "documents": 1,
        "may_upload": True,
    }
    documents = client.get(f"/api/v1/libraries/{team_library.pk}/documents").json()
    assert [d["id"] for d in documents] == [body["id"]]
    assert client.delete(f"/api/v1/documents/{body['id']}").status_code == 204
    assert not LibraryDocument.objects.exists()


def test_a_hostile_upload_is_a_422_with_a_code_and_nothing_stored(
    api_for, owner, team_library, document_storage
) -> None:
    response = post_file(api_for(owner), team_library, "bomb.docx", ratio_bomb_docx())
    assert response.status_code == 422
    assert response.json()["code"] == "archive_bomb"
    assert "zip bomb" in response.json()["message"]
    assert not LibraryDocument.objects.exists()
    assert not any(p.is_file() for p in document_storage.rglob("*"))


def test_viewer_may_list_but_not_upload_or_delete(api_for, owner, viewer, team_library) -> None:
    document = libraries.document_upload(
        library=team_library, user=owner, name="notes.md", data=NOTES
    )
    client = api_for(viewer)
    assert client.get(f"/api/v1/libraries/{team_library.pk}/documents").status_code == 200
    assert post_file(client, team_library, "more.md", b"# More\n\ntext").status_code == 403
    refused = client.delete(f"/api/v1/documents/{document.pk}")
    assert refused.status_code == 403
    assert "owners and editors" in refused.json()["message"]
    assert LibraryDocument.objects.count() == 1


def test_outsider_gets_404_for_library_and_document(api_for, owner, outsider, team_library):
    document = libraries.document_upload(
        library=team_library, user=owner, name="notes.md", data=NOTES
    )
    client = api_for(outsider)
    assert client.get("/api/v1/libraries").json() == []
    assert client.get(f"/api/v1/libraries/{team_library.pk}/documents").status_code == 404
    assert post_file(client, team_library, "x.md", b"# X\n\ny").status_code == 404
    assert client.delete(f"/api/v1/documents/{document.pk}").status_code == 404
    assert LibraryDocument.objects.count() == 1


def test_a_run_naming_someone_elses_library_is_refused(api_for, outsider, team_library) -> None:
    response = api_for(outsider).post(
        "/api/v1/runs",
        {
            "question": "How long did the pump run?",
            "depth": "quick",
            "source_policy": {"documents": "library", "library_id": str(team_library.pk)},
        },
        content_type="application/json",
    )
    assert response.status_code == 422
    assert "library" in response.json()["message"]
