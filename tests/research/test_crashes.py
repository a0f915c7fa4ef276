"""What a worker error may say on a page: its class and first line, never a credential."""

from __future__ import annotations

import pytest

from research.worker.crashes import SUMMARY_CHARS, crash_summary


@pytest.mark.parametrize(
    ("error", "summary"),
    [
        (KeyError("choices"), "KeyError: 'choices'"),
        (RuntimeError(), "RuntimeError"),
        (
            ValueError("first line\n  File 'x.py', line 3, in <module>"),
            "ValueError: first line",
        ),
        (
            ConnectionError("could not reach postgresql://app:hunter2@db.internal:5432/research"),
            "ConnectionError: could not reach postgresql://…@db.internal:5432/research",
        ),
        (
            RuntimeError("GET /v1/chat?api_key=abc123&model=x failed"),
            "RuntimeError: GET /v1/chat?api_key=…&model=x failed",
        ),
        (
            RuntimeError('headers: {"Authorization": "Bearer eyJhbGciOi.secret"}'),
            'RuntimeError: headers: {"Authorization": …}',
        ),
        (
            RuntimeError("401 for Bearer abc.def.ghi, denied"),
            "RuntimeError: 401 for Bearer …, denied",
        ),
        (PermissionError("token=s3cr3t, password: 'p w'"), "PermissionError: token=…, password: …"),
        (
            RuntimeError("key sk-proj-ABCDEFGHIJKLMNOP was refused"),
            "RuntimeError: key … was refused",
        ),
    ],
)
def test_a_crash_is_summarised_without_secrets(error: BaseException, summary: str) -> None:
    assert crash_summary(error) == summary


def test_a_long_message_is_cut() -> None:
    summary = crash_summary(RuntimeError("word " * 200))
    assert len(summary) <= SUMMARY_CHARS and summary.endswith("…")
