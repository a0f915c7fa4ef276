"""A JSONField whose value is validated by a pydantic model on every write."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.expressions import BaseExpression
from django.utils.module_loading import import_string
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError


class SchemaJSONField(models.JSONField):
    """JSON validated against ``schema`` (a dotted path to a pydantic model or type).

    Validation happens in ``get_db_prep_save``, which Django calls for
    ``Model.save()`` *and* for ``QuerySet.update()``, so no write path skips it.
    The stored value is the schema's JSON dump, defaults filled in.
    """

    def __init__(self, *args: Any, schema: str, **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()
        kwargs["schema"] = self.schema
        return name, path, args, kwargs

    @cached_property
    def adapter(self) -> TypeAdapter:
        return TypeAdapter(import_string(self.schema))

    def validate_value(self, value: Any) -> Any:
        if value is None or isinstance(value, BaseExpression):
            return value
        try:
            parsed = self.adapter.validate_python(value)
        except PydanticValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ValidationError(
                f"{self.model.__name__}.{self.name} is not valid: {problems}.",
                code="invalid_schema",
            ) from None
        return self.adapter.dump_python(parsed, mode="json")

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        return super().get_db_prep_save(self.validate_value(value), connection)

    def validate(self, value: Any, model_instance: models.Model | None) -> None:
        super().validate(value, model_instance)
        self.validate_value(value)


class Typed:
    """The value of a ``SchemaJSONField`` read back as its schema's type (a pydantic
    contract), so code reads ``run.plan_contract.questions`` instead of digging in dicts.

    ``Typed("plan")`` on a model gives the ``plan`` field's value parsed on each read (an
    unsaved change to the field shows at once); ``None`` stays ``None``. A stored value that
    no longer validates raises ``pydantic.ValidationError``.
    """

    def __init__(self, field_name: str) -> None:
        self.field_name = field_name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: models.Model | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = getattr(instance, self.field_name)
        if value is None:
            return None
        field = instance._meta.get_field(self.field_name)
        return field.adapter.validate_python(value)
