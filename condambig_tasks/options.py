"""Typed options from loosely typed values: lm-eval ``--metadata`` (JSON), Inspect ``-T``
(YAML) and ``condambig-score`` flags (strings) all become one frozen options dataclass."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

from condambig_tasks.errors import ConfigurationError

_FALSE = {"0", "false", "no", "off", "none", "disabled"}
_TRUE = {"1", "true", "yes", "on", "enabled"}


def parse_options(kind: type, values: Mapping[str, Any], *, strict: bool, owner: str) -> Any:
    """A frozen options dataclass from loosely typed values (JSON, YAML or CLI strings).

    Values are coerced to each field's annotated type (int, float, bool, str, an Enum, or
    Optional of one); the dataclass's own ``__post_init__`` then validates them. One
    :class:`ConfigurationError` names the option and what is allowed.
    """
    hints = typing.get_type_hints(kind)
    fields = {f.name: f for f in dataclasses.fields(kind) if f.init}
    unknown = sorted(set(values) - set(fields))
    if strict and unknown:
        raise ConfigurationError(
            f"{owner}: unknown option(s) {', '.join(unknown)}; known: {', '.join(fields)}")
    coerced: dict[str, Any] = {}
    for name, value in values.items():
        if name not in fields or value is None and not _optional(hints[name]):
            continue
        coerced[name] = _coerce(hints[name], value, f"{owner} option {name}")
    try:
        return kind(**coerced)
    except ConfigurationError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{owner}: {error}") from None


def _optional(annotation: Any) -> bool:
    return type(None) in typing.get_args(annotation)


def _coerce(annotation: Any, value: Any, label: str) -> Any:
    if value is None:
        return None
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    try:
        if annotation is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError
        if annotation is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if annotation is float:
            return float(value)
        if annotation is str:
            return str(value).strip()
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return annotation(value)
    except (TypeError, ValueError):
        allowed = ""
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            allowed = " (one of " + ", ".join(str(m.value) for m in annotation) + ")"
        name = getattr(annotation, "__name__", str(annotation))
        raise ConfigurationError(f"{label} must be {name}{allowed}, got {value!r}") from None
    return value
