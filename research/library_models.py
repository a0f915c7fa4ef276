"""The library tables: personal and team libraries and the documents uploaded to them.

A document's file lives in the ``documents`` storage (``STORAGES`` in config/settings.py:
files under ``DATA_DIR`` by default); its parsed snapshot (the engine's ``SourceDocument``,
page spans for PDFs, headings and blocks for the others) lives in the row, so a search never
reads files. A run that reads a document keeps its own copy of the snapshot as a
``ResearchSource``, exactly as it keeps a web page, so deleting a document never changes a
report that cited it.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.files.storage import Storage, storages
from django.db import models
from django.utils import timezone

from research.fields import SchemaJSONField


def document_storage() -> Storage:
    """The storage backend that holds uploaded files (``STORAGES["documents"]``)."""
    return storages["documents"]


def _document_path(instance: LibraryDocument, filename: str) -> str:
    # Never the uploaded name: it is shown, not trusted as a path.
    return f"libraries/{instance.library_id}/{instance.pk}"


class Library(models.Model):
    """A collection of uploaded documents, personal (``owner``) or a team's (``team``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="libraries",
    )
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="libraries"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "created_at"]
        verbose_name_plural = "libraries"
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(owner__isnull=False, team__isnull=True)
                    | models.Q(owner__isnull=True, team__isnull=False)
                ),
                name="library_personal_or_team",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def address_id(self) -> str:
        """The library's part of its documents' ``document://`` addresses."""
        return str(self.pk)


class LibraryDocument(models.Model):
    """One uploaded file and the snapshot parsed from it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="documents")
    # The file name as uploaded, for display only.
    name = models.CharField(max_length=255)
    title = models.CharField(max_length=500, blank=True)
    file = models.FileField(storage=document_storage, upload_to=_document_path, max_length=300)
    size_bytes = models.PositiveBigIntegerField()
    file_sha256 = models.CharField(max_length=64)
    mime_type = models.CharField(max_length=100)
    page_count = models.PositiveIntegerField(default=0)
    snapshot = SchemaJSONField(schema="research.engine.contracts.SourceDocument")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["library", "file_sha256"], name="library_document_unique_file"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.name

    @property
    def address_id(self) -> str:
        return str(self.pk)
