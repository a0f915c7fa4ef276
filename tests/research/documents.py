"""Library documents in tests: a storage of their own per test, and files made in the test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.files.storage import FileSystemStorage
from django.test import override_settings

from research.models import LibraryDocument


@contextmanager
def use_document_storage(location: Path) -> Iterator[FileSystemStorage]:
    """Store uploaded files under ``location`` for the block's duration.

    The file field resolved ``STORAGES["documents"]`` when the model was loaded, as Django
    does for callable storages, so it is pointed at the new backend too.
    """
    config = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(location)},
    }
    field = LibraryDocument._meta.get_field("file")
    previous = field.storage
    from django.conf import settings

    with override_settings(STORAGES={**settings.STORAGES, "documents": config}):
        from django.core.files.storage import storages

        field.storage = storages["documents"]
        try:
            yield field.storage
        finally:
            field.storage = previous
