"""Library pages: the list of libraries, one library with its upload form, one document.

Every lookup goes through ``research.libraries`` (404 for what the user may not see, a
sentence for what they see but may not change); uploads are parsed and stored by
``libraries.document_upload``, which stores nothing when it refuses a file.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import User
from research import libraries
from research.access import can_delete_library, can_edit_library
from research.libraries import LIBRARY_NAME_MAX_CHARS, LibraryError
from research.models import Library
from research.sources.documents import DocumentRefused, document_limits_from_settings
from research.sources.documents.limits import format_size
from research.web.forms import TeamChoiceField, editable_teams


class LibraryForm(forms.Form):
    name = forms.CharField(
        max_length=LIBRARY_NAME_MAX_CHARS,
        error_messages={
            "required": "Give the library a name.",
            "max_length": f"Keep the name under {LIBRARY_NAME_MAX_CHARS} characters.",
        },
    )
    team = TeamChoiceField(
        queryset=None,
        required=False,
        empty_label="Nobody — a personal library",
        error_messages={"invalid_choice": "Choose one of your teams where you are an editor."},
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = editable_teams(user)


class UploadForm(forms.Form):
    file = forms.FileField(
        allow_empty_file=True,
        error_messages={"required": "Choose a file to upload.", "invalid": "Choose a file."},
    )


def _refused(request: HttpRequest, sentence: str, status: int = 403) -> HttpResponse:
    return render(request, "refused.html", {"reason": sentence}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def library_list(request: HttpRequest) -> HttpResponse:
    form = LibraryForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            library = libraries.library_create(
                user=request.user, name=form.cleaned_data["name"], team=form.cleaned_data["team"]
            )
        except LibraryError as error:
            form.add_error(None, str(error))
        else:
            return redirect("research:library_detail", library_id=library.pk)
    context = {"libraries": libraries.visible_libraries(request.user), "form": form}
    return render(request, "research/libraries.html", context, status=422 if form.errors else 200)


def _library_context(request: HttpRequest, library: Library, form: UploadForm) -> dict:
    limits = document_limits_from_settings()
    return {
        "library": library,
        "documents": library.documents.order_by("name", "created_at"),
        "form": form,
        "may_edit": can_edit_library(request.user, library),
        "may_delete": can_delete_library(request.user, library),
        "file_limit": format_size(limits.max_file_bytes),
        "library_limit": format_size(limits.max_library_bytes),
    }


@login_required
@require_http_methods(["GET", "POST"])
def library_detail(request: HttpRequest, library_id: uuid.UUID) -> HttpResponse:
    need = "edit" if request.method == "POST" else "view"
    try:
        library = libraries.library_get_for_user(request.user, library_id, need=need)
    except PermissionDenied as refusal:
        return _refused(request, str(refusal))
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            document = libraries.document_upload(
                library=library, user=request.user, name=upload.name, data=upload
            )
        except (DocumentRefused, LibraryError) as error:
            form.add_error("file", str(error))
        else:
            messages.success(request, f"“{document}” is stored and can be researched.")
            return redirect("research:library_detail", library_id=library.pk)
    context = _library_context(request, library, form)
    return render(
        request, "research/library_detail.html", context, status=422 if form.errors else 200
    )


@login_required
@require_POST
def library_delete(request: HttpRequest, library_id: uuid.UUID) -> HttpResponse:
    try:
        library = libraries.library_get_for_user(request.user, library_id, need="delete")
    except PermissionDenied as refusal:
        return _refused(request, str(refusal))
    libraries.library_delete(library=library)
    messages.success(request, f"The library “{library}” and its documents are deleted.")
    return redirect("research:library_list")


@login_required
@require_http_methods(["GET"])
def document_detail(request: HttpRequest, document_id: uuid.UUID) -> HttpResponse:
    document = libraries.document_get_for_user(request.user, document_id)
    context = {
        "document": document,
        "pages": libraries.document_pages(document),
        "may_edit": can_edit_library(request.user, document.library),
    }
    return render(request, "research/document_detail.html", context)


@login_required
@require_POST
def document_delete(request: HttpRequest, document_id: uuid.UUID) -> HttpResponse:
    try:
        document = libraries.document_get_for_user(request.user, document_id, need="edit")
    except PermissionDenied as refusal:
        return _refused(request, str(refusal))
    library_id = document.library_id
    libraries.document_delete(document=document)
    messages.success(request, f"“{document}” is deleted; reports that cited it keep its excerpts.")
    return redirect("research:library_detail", library_id=library_id)
