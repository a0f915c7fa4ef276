"""Libraries of uploaded documents: the writes people cause and the reads they may make.

Access rules are ``research.access`` (``can_view_library`` and friends); every lookup goes
through ``library_get_for_user`` / ``document_get_for_user``, which answer 404 for what the
user may not see and ``PermissionDenied`` for what they see but may not change. An upload is
parsed completely (``research.sources.documents.parse_upload``: sniffing, limits, the PDF
reader's own process) before anything is stored, so a refused file leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from typing import Literal

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.base import ContentFile, File
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.http import Http404

from accounts.models import Team, User
from research.access import (
    can_delete_library,
    can_edit_library,
    can_view_library,
    libraries_for_user,
    teams_for_new_runs,
)
from research.engine.contracts import SourceDocument, SourcePolicy
from research.models import Library, LibraryDocument
from research.sources.documents import (
    DocumentRefused,
    check_file_size,
    check_library_capacity,
    document_limits_from_settings,
    document_url,
    parse_upload,
)
from research.sources.documents.pdf_reader import PdfReaderUnavailable

logger = logging.getLogger(__name__)

__all__ = [
    "DocumentRefused",
    "LibraryError",
    "check_policy_documents",
    "document_delete",
    "document_get_for_user",
    "document_pages",
    "document_upload",
    "library_create",
    "library_delete",
    "library_get_for_user",
    "visible_libraries",
]

LibraryNeed = Literal["view", "edit", "delete"]
LIBRARY_NAME_MAX_CHARS = 100
_CHECKS = {"view": can_view_library, "edit": can_edit_library, "delete": can_delete_library}
_REFUSED_ACTION = {
    "edit": "Only the library's owners and editors can add or delete documents.",
    "delete": "Only the library's owners can delete it.",
}


class LibraryError(Exception):
    """A library action that cannot be done; the message says why, in one sentence."""


def library_get_for_user(
    user: User | AnonymousUser, library_id: object, *, need: LibraryNeed = "view"
) -> Library:
    """The library if ``user`` may see it (else 404) and do ``need`` (else PermissionDenied)."""
    try:
        library = Library.objects.select_related("owner", "team").get(pk=library_id)
    except (Library.DoesNotExist, ValidationError, ValueError, TypeError):
        raise Http404("No such library.") from None
    if not can_view_library(user, library):
        raise Http404("No such library.")
    if not _CHECKS[need](user, library):
        raise PermissionDenied(_REFUSED_ACTION[need])
    return library


def document_get_for_user(
    user: User | AnonymousUser, document_id: object, *, need: LibraryNeed = "view"
) -> LibraryDocument:
    """The document if ``user`` may see its library (else 404) and do ``need`` with it."""
    try:
        document = LibraryDocument.objects.select_related("library").get(pk=document_id)
    except (LibraryDocument.DoesNotExist, ValidationError, ValueError, TypeError):
        raise Http404("No such document.") from None
    library_get_for_user(user, document.library_id, need="view")
    if not _CHECKS[need](user, document.library):
        raise PermissionDenied(_REFUSED_ACTION[need])
    return document


def visible_libraries(user: User | AnonymousUser) -> list[Library]:
    """The user's libraries, personal first, each once."""
    rows = libraries_for_user(user).select_related("team").distinct()
    return sorted(rows, key=lambda lib: (lib.team_id is not None, lib.name.casefold()))


def library_create(*, user: User, name: str, team: Team | None = None) -> Library:
    """A new personal library, or a team library (for the team's owners and editors)."""
    name = " ".join(name.split())
    if not name:
        raise LibraryError("Give the library a name.")
    if len(name) > LIBRARY_NAME_MAX_CHARS:
        raise LibraryError(f"Keep the name under {LIBRARY_NAME_MAX_CHARS} characters.")
    if team is not None:
        if not teams_for_new_runs(user).filter(pk=team.pk).exists():
            raise LibraryError("Only a team's owners and editors can create a library for it.")
        return Library.objects.create(name=name, team=team, created_by=user)
    return Library.objects.create(name=name, owner=user, created_by=user)


def document_upload(
    *, library: Library, user: User, name: str, data: bytes | File
) -> LibraryDocument:
    """Parse ``data`` (bytes, or an uploaded file, whose size is checked before it is read)
    and store it as a document of ``library``.

    Raises ``DocumentRefused`` (with a sentence) for a file that may not be stored, and
    ``LibraryError`` when the PDF reader cannot run. The caller has checked that ``user`` may
    edit the library (``library_get_for_user(..., need="edit")``).
    """
    limits = document_limits_from_settings()
    if isinstance(data, File):
        check_file_size(data.size or 0, limits)
        data = data.read()
    check_file_size(len(data), limits)
    document_id = uuid.uuid4()
    url = document_url(library.address_id, str(document_id))
    try:
        snapshot = parse_upload(name, data, url=url, limits=limits)
    except PdfReaderUnavailable:
        logger.exception("The PDF reader could not start")
        raise LibraryError(
            "PDFs cannot be read on this server right now; try again later or upload "
            "another format."
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    stored_name: str | None = None
    try:
        with transaction.atomic():
            # One upload per library at a time, so two cannot both fit in the last space.
            Library.objects.select_for_update().filter(pk=library.pk).first()
            used = library.documents.aggregate(total=Sum("size_bytes"))["total"] or 0
            check_library_capacity(used, len(data), limits)
            same = library.documents.filter(file_sha256=digest).first()
            if same is not None:
                raise DocumentRefused(
                    "duplicate", f"This file is already in the library as “{same}”."
                )
            document = LibraryDocument(
                id=document_id,
                library=library,
                name=name[:255],
                title=snapshot.title,
                size_bytes=len(data),
                file_sha256=digest,
                mime_type=snapshot.mime_type,
                page_count=len(snapshot.pages),
                snapshot=snapshot.model_dump(mode="json"),
                uploaded_by=user,
            )
            document.file.save(name, ContentFile(data), save=False)
            stored_name = document.file.name
            document.save(force_insert=True)
    except BaseException as error:
        # Nothing about a refused or failed upload stays behind, its file included.
        if stored_name:
            document.file.storage.delete(stored_name)
        if isinstance(error, IntegrityError):  # the same file, uploaded twice at once
            raise DocumentRefused("duplicate", "This file is already in the library.") from None
        raise
    return document


def document_pages(document: LibraryDocument) -> list[tuple[str, str]]:
    """The document's stored text to show: page by page for a PDF, else whole."""
    snapshot = SourceDocument.model_validate(document.snapshot)
    if snapshot.pages:
        return [(f"Page {p.page}", snapshot.text[p.start : p.end]) for p in snapshot.pages]
    return [("", snapshot.text)]


def document_delete(*, document: LibraryDocument) -> None:
    """Delete a document and its file. Runs keep their own copy of what they read, so
    reports that cited it still show its excerpts."""
    storage, name = document.file.storage, document.file.name
    with transaction.atomic():
        document.delete()
        transaction.on_commit(lambda: storage.delete(name))


def library_delete(*, library: Library) -> None:
    """Delete a library with every document and file in it."""
    files = [(d.file.storage, d.file.name) for d in library.documents.all()]
    with transaction.atomic():
        library.delete()
        for storage, name in files:
            transaction.on_commit(lambda s=storage, n=name: s.delete(n))


def check_policy_documents(owner: User, policy: SourcePolicy) -> None:
    """Refuse a source policy that names a library or documents ``owner`` may not use."""
    if policy.documents == "none":
        return
    visible = libraries_for_user(owner)
    if policy.documents == "library":
        if not visible.filter(pk=_uuid_or_none(policy.library_id)).exists():
            raise LibraryError("The chosen library does not exist or is not one of yours.")
        return
    ids = [i for i in (_uuid_or_none(d) for d in policy.document_ids) if i is not None]
    found = LibraryDocument.objects.filter(pk__in=ids, library__in=visible).count()
    if found != len(policy.document_ids):
        raise LibraryError("Some chosen documents do not exist or are not in your libraries.")


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
