"""One error shape for every API answer that is not a success:
``{"code": "...", "message": "one sentence", "field": "name" | null}``."""

from __future__ import annotations

from typing import Any

from ninja import Schema


class ErrorOut(Schema):
    code: str
    message: str
    field: str | None = None


class ConflictOut(ErrorOut):
    """A stale plan write: what the plan is now and which of its fields differ."""

    current_version: int
    changed_fields: list[str]


class ApiError(Exception):
    """Raised anywhere in an API call; answered as ``ErrorOut`` with ``status``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "field": self.field, **self.extra}


def not_found(message: str = "No such research run.") -> ApiError:
    return ApiError(404, "not_found", message)
