"""Tables for asking a report: frozen evidence per report version, topics and their turns.

A ``ReportSnapshot`` is written once per report version and never updated (its ``save`` refuses
to change a stored row); its ``content_hash`` is the SHA-256 of the frozen record, so saving the
same report twice yields one version. At most one turn per topic is waiting or generating: a
partial unique index says so, so two people asking at once cannot both start an answer.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from research.engine.answers import Answer, FrozenEvidence
from research.fields import SchemaJSONField, Typed

_CONTRACTS = "research.engine.answers"


class ReportSnapshot(models.Model):
    """One report version and the evidence it was written from, frozen."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(
        "research.ResearchRun", on_delete=models.CASCADE, related_name="snapshots"
    )
    version = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    content = SchemaJSONField(schema=f"{_CONTRACTS}.FrozenEvidence")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "version"]
        constraints = [
            models.UniqueConstraint(fields=["run", "version"], name="snapshot_version_unique"),
            models.UniqueConstraint(fields=["run", "content_hash"], name="snapshot_hash_unique"),
        ]

    frozen: FrozenEvidence = Typed("content")  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"version {self.version} of {self.run_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise ValueError("A report snapshot is immutable; write a new version instead.")
        super().save(*args, **kwargs)


class QuestionTopic(models.Model):
    """A named thread of questions about one report version."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    snapshot = models.ForeignKey(ReportSnapshot, on_delete=models.CASCADE, related_name="topics")
    title = models.CharField(max_length=120)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.title


class QuestionTurn(models.Model):
    """One question and its answer. Only ``answered`` and ``not_answered`` turns feed the
    history of later answers; a failed or cancelled turn can be retried."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be answered"
        GENERATING = "generating", "Answering"
        ANSWERED = "answered", "Answered"
        NOT_ANSWERED = "not_answered", "Not answered by the evidence"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE = (Status.PENDING, Status.GENERATING)
    RETRYABLE = (Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    topic = models.ForeignKey(QuestionTopic, on_delete=models.CASCADE, related_name="turns")
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    question = models.TextField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    answer = SchemaJSONField(schema=f"{_CONTRACTS}.Answer", null=True, blank=True)
    answer_contract: Answer | None = Typed("answer")  # type: ignore[assignment]
    error = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic"],
                condition=Q(status__in=["pending", "generating"]),
                name="one_active_turn_per_topic",
            )
        ]

    def __str__(self) -> str:
        return self.question[:80]
