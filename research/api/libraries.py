"""Libraries: list them, list and upload documents, delete a document.

Lookups go through ``research.libraries`` (404 for a library the caller may not see, 403 for
one they see but may not change); uploads are the same ``document_upload`` the pages call, so
a refused file is a 422 with the sentence and a ``code`` (``DocumentRefused.code``), and
nothing is stored. A team-scoped token sees only its team's libraries.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import File, Schema, Status
from ninja.files import UploadedFile

from research import libraries
from research.access import can_edit_library
from research.api.base import READ, WRITE, E, _token, api
from research.api.errors import ApiError, not_found
from research.models import Library, LibraryDocument


class LibraryOut(Schema):
    id: str
    name: str
    team: str | None
    documents: int
    may_upload: bool


class DocumentOut(Schema):
    id: str
    library_id: str
    name: str
    title: str
    mime_type: str
    size_bytes: int
    pages: int
    uploaded_at: datetime


def _in_scope(request: HttpRequest, library: Library) -> bool:
    token = _token(request)
    return token is None or token.team_id is None or library.team_id == token.team_id


def _library(request: HttpRequest, library_id: UUID, *, need: str = "view") -> Library:
    try:
        library = libraries.library_get_for_user(request.auth, library_id, need=need)
    except Http404:
        raise not_found("No such library.") from None
    except PermissionDenied as refusal:
        raise ApiError(403, "forbidden", str(refusal)) from None
    if not _in_scope(request, library):
        raise not_found("No such library.")
    return library


def _library_out(request: HttpRequest, library: Library) -> dict:
    return {
        "id": str(library.pk),
        "name": library.name,
        "team": library.team.slug if library.team_id else None,
        "documents": library.documents.count(),
        "may_upload": can_edit_library(request.auth, library),
    }


def _document_out(document: LibraryDocument) -> dict:
    return {
        "id": str(document.pk),
        "library_id": str(document.library_id),
        "name": document.name,
        "title": document.title,
        "mime_type": document.mime_type,
        "size_bytes": document.size_bytes,
        "pages": document.page_count,
        "uploaded_at": document.created_at,
    }


@api.get("/libraries", response={200: list[LibraryOut], **READ}, tags=["libraries"])
def library_list(request: HttpRequest):
    """Libraries you may research with: your own and your teams'. Use a library's `id` as
    `library_id` (or its documents' ids as `document_ids`) in a run's `source_policy`."""
    visible = [lib for lib in libraries.visible_libraries(request.auth) if _in_scope(request, lib)]
    return [_library_out(request, library) for library in visible]


@api.get(
    "/libraries/{library_id}/documents",
    response={200: list[DocumentOut], **READ},
    tags=["libraries"],
)
def document_list(request: HttpRequest, library_id: UUID):
    library = _library(request, library_id)
    return [_document_out(d) for d in library.documents.order_by("name", "created_at")]


@api.post(
    "/libraries/{library_id}/documents",
    response={201: DocumentOut, 503: E, **WRITE},
    tags=["libraries"],
    summary="Upload a document",
)
def document_upload(request: HttpRequest, library_id: UUID, file: File[UploadedFile]):
    """Upload one file (multipart form field `file`): PDF, DOCX, Markdown, HTML or text. The
    content is sniffed, limits are checked and the file is parsed before anything is stored;
    a refusal is a 422 whose `message` says why."""
    library = _library(request, library_id, need="edit")
    try:
        document = libraries.document_upload(
            library=library, user=request.auth, name=file.name or "upload", data=file
        )
    except libraries.DocumentRefused as refusal:
        raise ApiError(422, refusal.code, refusal.reason, field="file") from None
    except libraries.LibraryError as error:
        raise ApiError(503, "unavailable", str(error)) from None
    return Status(201, _document_out(document))


@api.delete("/documents/{document_id}", response={204: None, **WRITE}, tags=["libraries"])
def document_delete(request: HttpRequest, document_id: UUID):
    """Delete a document and its file; reports that cited it keep their excerpts."""
    try:
        document = libraries.document_get_for_user(request.auth, document_id)
    except Http404:
        raise not_found("No such document.") from None
    _library(request, document.library_id, need="edit")
    libraries.document_delete(document=document)
    return Status(204, None)
