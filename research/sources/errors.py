"""Typed refusals and failures of source acquisition.

Every problem leaves ``research.sources`` as a ``SourceError``, a subclass of
the engine's ``AcquisitionError``, so the engine can store the source's status
(blocked / failed / unsupported) and show the sentence to the user.
"""

from __future__ import annotations

from research.engine.ports import AcquisitionError


class SourceError(AcquisitionError):
    """An ``AcquisitionError`` that may also say when a retry makes sense.

    ``retry_after`` is the server's Retry-After hint in seconds, if it sent one;
    ``status`` is the HTTP status code that caused the error, if any.
    """

    def __init__(
        self,
        kind: str,
        reason: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        counts_as_fetch: bool | None = None,
    ) -> None:
        super().__init__(kind, reason, retryable=retryable, counts_as_fetch=counts_as_fetch)
        self.retry_after = retry_after
        self.status = status


def blocked(reason: str) -> SourceError:
    """Refused by our own safety or domain policy; retrying cannot help."""
    return SourceError("blocked", reason)


def unsupported(reason: str, *, downloaded: bool = False) -> SourceError:
    """The content exists but is not something we can read as evidence.

    ``downloaded`` says the body was read in full before we could tell (a
    damaged PDF, a page without text): that read spent a fetch of the run's
    budget, while a refusal on the headers or the first bytes did not.
    """
    return SourceError("unsupported", reason, counts_as_fetch=downloaded)


def failed(
    reason: str,
    *,
    retryable: bool = False,
    retry_after: float | None = None,
    status: int | None = None,
) -> SourceError:
    """The request did not succeed; ``retryable`` says whether trying again may help."""
    return SourceError(
        "failed", reason, retryable=retryable, retry_after=retry_after, status=status
    )
