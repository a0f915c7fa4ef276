"""The research tables: runs, their durable steps, sources and evidence.

JSON columns are validated by the engine's pydantic contracts on every write
(``SchemaJSONField``). Uniqueness that the engine relies on for idempotency is
enforced by the database, not only in Python.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Length
from django.utils import timezone

from research.engine.contracts import ScholarlyMetadata, SourceSummary
from research.engine.guards import StopReason
from research.engine.outcomes import STATUS_LABELS, Outcome, run_outcome
from research.engine.states import RunStatus
from research.engine.works import reference_text
from research.fields import SchemaJSONField, Typed

models.TextField.register_lookup(Length)

CONTRACTS = "research.engine.contracts"


# The engine's stop reasons are the choices; their values are what filters and programs use.
_STOP_REASONS = [(reason.value, reason.value.replace("_", " ")) for reason in StopReason]


def _empty_working_state() -> dict:
    return {}


def _standard_budget() -> dict:
    from research.engine.guards import budget_for

    return budget_for("standard").model_dump(mode="json")


class ResearchRun(models.Model):
    class Status(models.TextChoices):
        CREATED = "created", STATUS_LABELS[RunStatus.CREATED]
        PLANNING = "planning", STATUS_LABELS[RunStatus.PLANNING]
        AWAITING_APPROVAL = "awaiting_approval", STATUS_LABELS[RunStatus.AWAITING_APPROVAL]
        QUEUED = "queued", STATUS_LABELS[RunStatus.QUEUED]
        RESEARCHING = "researching", STATUS_LABELS[RunStatus.RESEARCHING]
        SYNTHESIZING = "synthesizing", STATUS_LABELS[RunStatus.SYNTHESIZING]
        COMPLETED = "completed", STATUS_LABELS[RunStatus.COMPLETED]
        PAUSED = "paused", STATUS_LABELS[RunStatus.PAUSED]
        CANCELLED = "cancelled", STATUS_LABELS[RunStatus.CANCELLED]
        FAILED = "failed", STATUS_LABELS[RunStatus.FAILED]
        BUDGET_EXHAUSTED = "budget_exhausted", STATUS_LABELS[RunStatus.BUDGET_EXHAUSTED]

    class Depth(models.TextChoices):
        QUICK = "quick", "Quick"
        STANDARD = "standard", "Standard"
        THOROUGH = "thorough", "Thorough"

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Only me"
        TEAM = "team", "My team"
        LINK = "link", "Anyone with the link (and the team, if one is chosen)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="research_runs"
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="research_runs",
    )
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    share_token = models.CharField(max_length=64, null=True, blank=True, unique=True)
    parent_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="refinements"
    )
    # NULL, not "", so the partial unique constraint ignores runs without one.
    client_request_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001

    question = models.TextField()
    title = models.CharField(max_length=200, blank=True)
    depth = models.CharField(max_length=10, choices=Depth.choices, default=Depth.STANDARD)
    report_template = models.CharField(max_length=40, blank=True)

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CREATED)
    resume_phase = models.CharField(max_length=20, choices=Status.choices, blank=True)
    terminal_reason = models.CharField(max_length=200, blank=True)
    last_error = models.TextField(blank=True)
    # Why the run stopped, as data (research.engine.outcomes describes it), and for a budget
    # stop the usage counter that ran out. Kept for runs that ended; cleared when one moves on.
    stop_reason = models.CharField(max_length=30, choices=_STOP_REASONS, blank=True)
    stop_limit = models.CharField(max_length=30, blank=True)
    # Consecutive worker attempts that ended in an unexpected error, and the last one's
    # class and first line (never a traceback); see research.worker.crashes.
    worker_attempts = models.PositiveSmallIntegerField(default=0)
    worker_error = models.CharField(max_length=300, blank=True)

    plan = SchemaJSONField(schema=f"{CONTRACTS}.ResearchPlan", null=True, blank=True)
    plan_version = models.PositiveIntegerField(default=0)
    # Who saved the current plan version (None: drafted by the planner), so a person editing
    # an older version is told "version 9 by alice".
    plan_saved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_policy = SchemaJSONField(schema=f"{CONTRACTS}.SourcePolicy", default=dict)
    budget = SchemaJSONField(schema=f"{CONTRACTS}.Budget", default=_standard_budget)
    usage = SchemaJSONField(schema=f"{CONTRACTS}.Usage", default=dict)
    working_state = SchemaJSONField(
        schema=f"{CONTRACTS}.WorkingState", default=_empty_working_state
    )
    report = SchemaJSONField(schema=f"{CONTRACTS}.Report", null=True, blank=True)
    # The JSON fields above read back as their contracts (research.engine.contracts).
    plan_contract = Typed("plan")
    policy_contract = Typed("source_policy")
    budget_contract = Typed("budget")
    usage_contract = Typed("usage")
    state_contract = Typed("working_state")
    report_contract = Typed("report")

    refinement_instruction = models.TextField(blank=True)
    # Approve the plan as soon as it is drafted (asked for through the API); kept on the run so
    # a worker that restarts still honours it.
    auto_approve = models.BooleanField(default=False)
    # Whether people holding the share link may ask questions of the report (docs/questions.md).
    link_viewers_may_ask = models.BooleanField(default=False)
    # Clarifying questions answered before planning: [{"question": …, "answer": …}], given to
    # the planner and kept in the plan's assumptions (research/llm/clarify.py).
    clarifications = models.JSONField(default=list, blank=True)

    pause_requested = models.BooleanField(default=False)
    cancel_requested = models.BooleanField(default=False)
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="run_owner_created"),
            models.Index(fields=["team", "-created_at"], name="run_team_created"),
            models.Index(fields=["status", "updated_at"], name="run_status_updated"),
            models.Index(fields=["status", "stop_reason"], name="run_status_stop_reason"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(visibility="team") | models.Q(team__isnull=False),
                name="run_team_visibility_needs_team",
            ),
            models.CheckConstraint(
                condition=~models.Q(visibility="link") | models.Q(share_token__isnull=False),
                name="run_link_visibility_needs_token",
            ),
            models.UniqueConstraint(
                fields=["owner", "client_request_id"],
                condition=models.Q(client_request_id__isnull=False),
                name="run_unique_client_request",
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.question[:80]

    @property
    def outcome(self) -> Outcome:
        """How the run stands, in the words every page and the command line use."""
        return run_outcome(
            self.status,
            self.stop_reason,
            self.stop_limit,
            budget=self.budget,
            detail=self.last_error if self.status == self.Status.FAILED else self.terminal_reason,
        )


class ResearchStep(models.Model):
    """One durable action of a run, written as pending before it runs."""

    class Kind(models.TextChoices):
        PLAN = "plan", "Plan"
        DECIDE = "decide", "Decide"
        SEARCH = "search", "Search"
        READ = "read", "Read"
        EXTRACT = "extract", "Extract"
        SYNTHESIZE = "synthesize", "Synthesize"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        SKIPPED = "skipped", "Skipped"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="steps")
    iteration = models.PositiveIntegerField(default=0)
    attempt = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    dedupe_key = models.CharField(max_length=200)
    question_ids = models.JSONField(default=list, blank=True)
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(default=dict, blank=True)
    usage = SchemaJSONField(schema=f"{CONTRACTS}.Usage", default=dict)
    summary = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["run", "created_at"], name="step_run_created"),
            models.Index(fields=["run", "iteration"], name="step_run_iteration"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["run", "dedupe_key"], name="step_unique_dedupe_key"),
        ]

    def __str__(self) -> str:
        return self.summary or f"{self.kind} #{self.iteration}"


class SourceClass(models.TextChoices):
    PRIMARY = "primary", "Primary"
    OFFICIAL = "official", "Official"
    ACADEMIC = "academic", "Academic"
    REPUTABLE_SECONDARY = "reputable_secondary", "Reputable secondary"
    AGGREGATOR = "aggregator", "Aggregator"
    USER_GENERATED = "user_generated", "User generated"
    UNKNOWN = "unknown", "Unknown"


class ResearchSource(models.Model):
    class Kind(models.TextChoices):
        WEB = "web", "Web page"
        PDF = "pdf", "PDF"
        UPLOAD = "upload", "Upload"
        API = "api", "API result"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        FETCHED = "fetched", "Fetched"
        BLOCKED = "blocked", "Blocked"
        FAILED = "failed", "Failed"
        UNSUPPORTED = "unsupported", "Unsupported"
        DUPLICATE = "duplicate", "Duplicate"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.WEB)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CANDIDATE)
    url = models.URLField(max_length=2000)
    canonical_url = models.URLField(max_length=2000, blank=True)
    # NULL for sources without a URL (uploads); unique per run when set.
    canonical_url_hash = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    title = models.CharField(max_length=500, blank=True)
    publisher = models.CharField(max_length=200, blank=True)
    domain = models.CharField(max_length=255, blank=True)
    author = models.CharField(max_length=300, blank=True)
    published_at = models.CharField(max_length=40, blank=True)
    # Where published_at was read (engine ``DateSource``: meta, json_ld, time, byline,
    # pdf_info); empty when the date is unknown or came from a search result.
    date_source = models.CharField(max_length=20, blank=True)
    retrieved_at = models.DateTimeField(null=True, blank=True)
    mime_type = models.CharField(max_length=100, blank=True)
    source_class = models.CharField(
        max_length=30, choices=SourceClass.choices, default=SourceClass.UNKNOWN
    )
    quality = SchemaJSONField(schema=f"{CONTRACTS}.SourceQuality", null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    discovered_by_step = models.ForeignKey(
        ResearchStep, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    snapshot_text = models.TextField(blank=True)
    # The block map of snapshot_text (engine contract ``Block``), stored compactly as
    # [start, end, kind] lists, with a fourth element 1 for a block after left-out text.
    snapshot_blocks = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    content_bytes = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["run", "status"], name="source_run_status"),
            models.Index(fields=["run", "domain"], name="source_run_domain"),
            models.Index(fields=["run", "content_hash"], name="source_run_content_hash"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "canonical_url_hash"],
                condition=models.Q(canonical_url_hash__isnull=False),
                name="source_unique_canonical_url",
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.canonical_url or self.url

    def summary(self) -> SourceSummary:
        """The source as the report renderer names it (title, address, publisher, date, class)."""
        return SourceSummary(
            id=str(self.pk),
            title=self.title,
            url=self.canonical_url or self.url,
            publisher=self.publisher or None,
            published_at=self.published_at or None,
            source_class=self.source_class,
            reference=self.reference,
            abstract_only=self.abstract_only,
        )

    @property
    def scholarly(self) -> ScholarlyMetadata | None:
        """What a scholarly index said about the work (authors, venue, year, identifiers)."""
        stored = (self.metadata or {}).get("scholarly")
        try:
            return ScholarlyMetadata.model_validate(stored) if stored else None
        except ValueError:
            return None

    @property
    def reference(self) -> str | None:
        """The work's bibliography line, with its DOI, for a scholarly source."""
        metadata = self.scholarly
        return reference_text(metadata) if metadata else None

    @property
    def abstract_only(self) -> bool:
        """Only the index's record and abstract were read, not the work's text."""
        return bool(((self.metadata or {}).get("document") or {}).get("abstract_only"))

    @property
    def variant_urls(self) -> list[str]:
        """Every address of the work this source stands for (kept for audit)."""
        return [str(v.get("url")) for v in (self.metadata or {}).get("variants", [])]


class ResearchEvidence(models.Model):
    """An exact excerpt of one stored source, with where it was found."""

    class Stance(models.TextChoices):
        SUPPORTS = "supports", "Supports"
        CONTRADICTS = "contradicts", "Contradicts"
        CONTEXT = "context", "Context"

    # The engine's id ("ev-" + 20 hex of the evidence hash): reports cite it, so it is
    # stable across retries and resumes.
    id = models.CharField(primary_key=True, max_length=40, editable=False)
    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="evidence")
    source = models.ForeignKey(ResearchSource, on_delete=models.CASCADE, related_name="evidence")
    extraction_step = models.ForeignKey(
        ResearchStep, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question_ids = models.JSONField(default=list, blank=True)
    excerpt = models.TextField()
    locator = SchemaJSONField(schema=f"{CONTRACTS}.Locator")
    claim_key = models.CharField(max_length=200, blank=True)
    stance = models.CharField(max_length=12, choices=Stance.choices, default=Stance.SUPPORTS)
    normalized_value = models.CharField(max_length=200, blank=True)
    scope = SchemaJSONField(schema=f"{CONTRACTS}.EvidenceScope", default=dict)
    relevance_bp = models.PositiveIntegerField(default=0)
    confidence_bp = models.PositiveIntegerField(default=0)
    evidence_hash = models.CharField(max_length=64)
    out_of_scope = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "research evidence"
        indexes = [
            models.Index(fields=["run", "source"], name="evidence_run_source"),
            models.Index(fields=["run", "claim_key"], name="evidence_run_claim_key"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["run", "evidence_hash"], name="evidence_unique_hash"),
            models.CheckConstraint(
                condition=models.Q(excerpt__length__gte=1, excerpt__length__lte=1000),
                name="evidence_excerpt_length",
            ),
            models.CheckConstraint(
                condition=models.Q(relevance_bp__lte=10000, confidence_bp__lte=10000),
                name="evidence_basis_points_range",
            ),
        ]

    def __str__(self) -> str:
        return self.excerpt[:80]


class Webhook(models.Model):
    """A subscription of a person (their runs) or a team (runs shared with it) to run events;
    see research.worker.webhooks. The secret signs each body (HMAC-SHA256); it is kept readable
    because signing needs it, and shown only to the hook's owner."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event for one hook, with every attempt logged in ``attempt_log``."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Delivered"
        FAILED = "failed", "Failed"
        REFUSED = "refused", "Refused"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    run = models.ForeignKey(
        ResearchRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=40)
    dedupe_key = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    attempt_log = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["webhook", "dedupe_key"], name="webhook_delivery_unique_event"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook}"


# The library tables live in their own module; Django finds models through this one.
from research.library_models import Library, LibraryDocument  # noqa: E402, F401

# The tables for asking a report live beside these; importing them here registers them.
from research.question_models import QuestionTopic, QuestionTurn, ReportSnapshot  # noqa: E402, F401
