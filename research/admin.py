"""The admin is an audit tool: staff read runs, steps, sources and evidence.

Everything the research engine writes is read-only here; no one edits evidence.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from pydantic import ValidationError

from research.engine.contracts import Statement
from research.highlight import Span, highlight_spans
from research.models import (
    Library,
    LibraryDocument,
    ResearchEvidence,
    ResearchRun,
    ResearchSource,
    ResearchStep,
    Webhook,
    WebhookDelivery,
)


class AuditOnly:
    """Staff may look; nobody may add or change what the engine wrote."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class StepInline(AuditOnly, admin.TabularInline):
    model = ResearchStep
    fields = ("created_at", "iteration", "kind", "status", "attempt", "summary", "error")
    readonly_fields = fields
    extra = 0
    show_change_link = True


@admin.register(ResearchRun)
class ResearchRunAdmin(AuditOnly, admin.ModelAdmin):
    list_display = (
        "question_short",
        "owner",
        "team",
        "status",
        "depth",
        "step_count",
        "source_count",
        "evidence_count",
        "usage_summary",
        "created_at",
    )
    list_filter = ("status", "stop_reason", "depth", "visibility")
    search_fields = ("question", "title", "owner__username")
    date_hierarchy = "created_at"
    inlines = [StepInline]
    readonly_fields = [f.name for f in ResearchRun._meta.fields] + [
        "step_count",
        "source_count",
        "evidence_count",
        "statement_review",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ResearchRun]:
        return (
            super()
            .get_queryset(request)
            .select_related("owner", "team")
            .annotate(
                n_steps=Count("steps", distinct=True),
                n_sources=Count("sources", distinct=True),
                n_evidence=Count("evidence", distinct=True),
            )
        )

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        # Removing a whole run (and everything under it) is an administrator's call.
        return request.user.is_active and request.user.is_superuser

    @admin.display(description="Question")
    def question_short(self, run: ResearchRun) -> str:
        return (run.title or run.question)[:80]

    @admin.display(description="Steps", ordering="n_steps")
    def step_count(self, run: ResearchRun) -> int:
        return run.n_steps

    @admin.display(description="Sources", ordering="n_sources")
    def source_count(self, run: ResearchRun) -> int:
        return run.n_sources

    @admin.display(description="Evidence", ordering="n_evidence")
    def evidence_count(self, run: ResearchRun) -> int:
        return run.n_evidence

    @admin.display(description="Statements: checks and verifier verdicts")
    def statement_review(self, run: ResearchRun) -> str:
        try:
            statements = run.report_contract.statements() if run.report else []
        except ValidationError:
            return "The stored report does not validate."
        if not statements:
            return "No report yet."
        rows = format_html_join("", "<tr>{}</tr>", (_review_cells(s) for s in statements))
        return format_html(
            "<table><thead><tr><th>Claim</th><th>Kind</th><th>Text</th><th>Evidence</th>"
            "<th>Checks</th><th>Verifier</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="Usage")
    def usage_summary(self, run: ResearchRun) -> str:
        usage = run.usage or {}
        return (
            f"{usage.get('searches', 0)} searches, {usage.get('fetched_sources', 0)} fetches, "
            f"{usage.get('model_calls', 0)} model calls"
        )


def _review_cells(statement: Statement) -> tuple[str]:
    """One statement's row of the review table: every cell escaped."""
    failed = [f"{c.name}: {c.detail}" for c in statement.checks if not c.passed]
    checks = "; ".join(failed) or ("all passed" if statement.checks else "not checked")
    verdict = statement.verdict
    judged = "not judged"
    if verdict is not None:
        judged = verdict.verdict.replace("_", " ")
        if verdict.unsupported_part:
            judged += f" — not borne out: “{verdict.unsupported_part}”"
    return (
        format_html(
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            statement.claim_id,
            statement.kind,
            statement.text[:300],
            ", ".join(statement.evidence_ids),
            checks,
            judged,
        ),
    )


@admin.register(ResearchStep)
class ResearchStepAdmin(AuditOnly, admin.ModelAdmin):
    list_display = ("created_at", "run", "iteration", "kind", "status", "attempt", "summary")
    list_filter = ("kind", "status")
    search_fields = ("run__id", "dedupe_key", "summary")
    readonly_fields = [f.name for f in ResearchStep._meta.fields]
    list_select_related = ("run",)


class EvidenceInline(AuditOnly, admin.TabularInline):
    model = ResearchEvidence
    fields = ("excerpt", "stance", "claim_key", "normalized_value", "question_ids")
    readonly_fields = fields
    extra = 0
    show_change_link = True


# The snapshot is shown with its evidence marked; its block map is offsets, not for reading.
_SNAPSHOT_FIELDS = ("snapshot_text", "snapshot_blocks")


@admin.register(ResearchSource)
class ResearchSourceAdmin(AuditOnly, admin.ModelAdmin):
    list_display = ("title_short", "domain", "status", "source_class", "evidence_count", "run")
    list_filter = ("status", "source_class", "kind", "truncated")
    search_fields = ("title", "url", "canonical_url", "domain", "run__id")
    list_select_related = ("run",)
    exclude = _SNAPSHOT_FIELDS
    readonly_fields = [
        f.name for f in ResearchSource._meta.fields if f.name not in _SNAPSHOT_FIELDS
    ] + ["highlighted_snapshot"]
    inlines = [EvidenceInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ResearchSource]:
        return super().get_queryset(request).annotate(n_evidence=Count("evidence"))

    @admin.display(description="Title")
    def title_short(self, source: ResearchSource) -> str:
        return (source.title or source.url)[:80]

    @admin.display(description="Evidence", ordering="n_evidence")
    def evidence_count(self, source: ResearchSource) -> int:
        return source.n_evidence

    @admin.display(description="Snapshot (evidence highlighted at stored offsets)")
    def highlighted_snapshot(self, source: ResearchSource) -> str:
        spans = []
        for evidence in source.evidence.all():
            locator = evidence.locator or {}
            start, end = locator.get("start"), locator.get("end")
            if isinstance(start, int) and isinstance(end, int):
                spans.append(Span(start, end, f"evidence {evidence.pk}"))
        return format_html(
            '<pre class="snapshot">{}</pre>', highlight_spans(source.snapshot_text, spans)
        )


class ClaimKeyFilter(admin.AllValuesFieldListFilter):
    """Claim keys, with evidence that has none listed under a named link (an empty value
    would be a link without text, which a screen reader cannot announce)."""

    def choices(self, changelist):  # noqa: ANN001, ANN201 (Django's signature)
        for choice in super().choices(changelist):
            if choice["display"] in ("", None):
                choice = {**choice, "display": "(no claim key)"}
            yield choice


@admin.register(ResearchEvidence)
class ResearchEvidenceAdmin(AuditOnly, admin.ModelAdmin):
    list_display = ("excerpt_short", "stance", "claim_key", "source_class", "source", "run")
    list_filter = (
        "stance",
        "source__source_class",
        ("claim_key", ClaimKeyFilter),
        "out_of_scope",
        ("run", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("excerpt", "claim_key", "normalized_value", "run__id")
    list_select_related = ("source", "run")
    readonly_fields = [f.name for f in ResearchEvidence._meta.fields]

    @admin.display(description="Excerpt")
    def excerpt_short(self, evidence: ResearchEvidence) -> str:
        return evidence.excerpt[:100]

    @admin.display(description="Source class", ordering="source__source_class")
    def source_class(self, evidence: ResearchEvidence) -> str:
        return evidence.source.get_source_class_display()


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("url", "owner", "team", "active", "created_at")
    list_filter = ("active",)
    search_fields = ("url", "owner__username")
    raw_id_fields = ("owner", "team")
    exclude = ("secret",)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """The delivery log: every event sent to every hook, with each attempt's outcome."""

    list_display = ("event", "webhook", "status", "attempts", "created_at", "delivered_at")
    list_filter = ("status", "event")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Library)
class LibraryAdmin(AuditOnly, admin.ModelAdmin):
    """Libraries and their documents by name and size only: their text is private to their
    owners and teams; what a report cited is audited through the run's sources."""

    list_display = ("name", "owner", "team", "created_at")
    search_fields = ("name", "owner__username", "team__name")
    fields = ("name", "owner", "team", "created_by", "created_at")


@admin.register(LibraryDocument)
class LibraryDocumentAdmin(AuditOnly, admin.ModelAdmin):
    list_display = ("name", "library", "mime_type", "size_bytes", "page_count", "created_at")
    search_fields = ("name", "library__name")
    fields = (
        "name",
        "title",
        "library",
        "mime_type",
        "size_bytes",
        "page_count",
        "file_sha256",
        "uploaded_by",
        "created_at",
    )
