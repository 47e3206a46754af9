"""Typed options from loosely typed values: lm-eval ``--metadata`` (JSON), Inspect ``-T``
(YAML) and ``condambig-score`` flags (strings) all become one frozen options dataclass.

A field's annotation is its one declaration: a ``Literal[...]`` or an Enum names the allowed
values, and every front end reads them (with the default and the help text) through
:func:`option_specs` — argparse ``choices``, lm-eval messages, the Inspect ``@task``
signatures. Ranges a type cannot express (``1 <= max_conditions <= 10``) stay in the
dataclass's ``__post_init__``, one check each.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from condambig_tasks.errors import ConfigurationError

_FALSE = {"0", "false", "no", "off", "none", "disabled"}
_TRUE = {"1", "true", "yes", "on", "enabled"}
# a misspelt key or value counts as a typo from this similarity on (difflib ratio;
# ``judge_modle`` ~ ``judge_model`` 0.91, ``spilt`` ~ ``split`` 0.8, ``exatc`` ~ ``exact`` 0.8)
CLOSE_MATCH_CUTOFF = 0.8


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """What a front end needs to offer one option: its type, allowed values, default, help.

    ``environment``: the variable that fills the option when no value is given (field
    metadata ``"environment"``); front ends then leave it unset (None) rather than passing
    the default, so the variable is not overridden.
    """

    name: str
    annotation: Any
    default: Any
    help: str = ""
    flags: tuple[str, ...] = ()
    environment: str | None = None

    @property
    def kind(self) -> Any:
        """The annotation without ``| None``."""
        return _without_none(self.annotation)

    @property
    def optional(self) -> bool:
        return type(None) in typing.get_args(self.annotation)

    @property
    def allowed(self) -> tuple[Any, ...] | None:
        """The allowed values (as JSON values) of a Literal or Enum option, else None."""
        return allowed_values(self.annotation)

    @property
    def default_value(self) -> Any:
        """The default as a JSON value (an Enum member's value)."""
        return _plain(self.default)


@functools.cache
def option_specs(kind: type) -> tuple[OptionSpec, ...]:
    """One :class:`OptionSpec` per init field of the options dataclass ``kind``."""
    hints = typing.get_type_hints(kind)
    return tuple(
        OptionSpec(name=f.name, annotation=hints[f.name],
                   default=None if f.default is dataclasses.MISSING else f.default,
                   help=f.metadata.get("help", ""), flags=tuple(f.metadata.get("cli", ())),
                   environment=f.metadata.get("environment"))
        for f in dataclasses.fields(kind) if f.init)


def option_values(kind: type, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``kind`` among ``arguments`` (an Inspect ``@task``'s ``locals()``)."""
    names = {spec.name for spec in option_specs(kind)}
    return {name: value for name, value in arguments.items() if name in names}


def allowed_values(annotation: Any) -> tuple[Any, ...] | None:
    """The values a Literal or Enum annotation (or Optional of one) allows, as JSON values;
    None for an open type (str, int, ...)."""
    kind = _without_none(annotation)
    if typing.get_origin(kind) is Literal:
        return typing.get_args(kind)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return tuple(member.value for member in kind)
    return None


def suggestion(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known word, or an empty string."""
    match = difflib.get_close_matches(str(word), sorted(map(str, known)), n=1,
                                      cutoff=CLOSE_MATCH_CUTOFF)
    return f" (did you mean {match[0]!r}?)" if match else ""


def parse_options(kind: type, values: Mapping[str, Any], *, strict: bool, owner: str) -> Any:
    """A frozen options dataclass from loosely typed values (JSON, YAML or CLI strings).

    Values are coerced to each field's annotated type (int, float, bool, str, a Literal, an
    Enum, or Optional of one); the dataclass's ``__post_init__`` then checks its ranges. One
    :class:`ConfigurationError` names the option and what is allowed.
    """
    specs = {spec.name: spec for spec in option_specs(kind)}
    unknown = sorted(set(values) - set(specs))
    if strict and unknown:
        raise ConfigurationError(
            f"{owner}: unknown option(s) {', '.join(unknown)}"
            f"{suggestion(unknown[0], specs)}; known: {', '.join(specs)}")
    coerced: dict[str, Any] = {}
    for name, value in values.items():
        spec = specs.get(name)
        if spec is None or value is None and not spec.optional:
            continue
        coerced[name] = coerce(spec.annotation, value, f"{owner} option {name}")
    try:
        return kind(**coerced)
    except ConfigurationError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{owner}: {error}") from None


def coerce(annotation: Any, value: Any, label: str) -> Any:
    """``value`` as the type ``annotation``; a :class:`ConfigurationError` naming ``label``
    and, for a Literal or Enum, the allowed values."""
    if value is None:
        return None
    kind = _without_none(annotation)
    allowed = allowed_values(kind)
    if allowed is not None:
        members = (typing.get_args(kind) if typing.get_origin(kind) is Literal
                   else tuple(kind))
        chosen = _choose(allowed, members, value)
        if chosen is _NO_CHOICE:
            raise ConfigurationError(
                f"{label} must be one of {', '.join(map(str, allowed))}; got {value!r}"
                f"{suggestion(_plain(value), allowed)}")
        return chosen
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError
        if kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if kind is float:
            return float(value)
        if kind is str:
            return str(value).strip()
    except (TypeError, ValueError):
        name = getattr(kind, "__name__", str(kind))
        raise ConfigurationError(f"{label} must be {name}, got {value!r}") from None
    return value


_NO_CHOICE = object()


def _choose(allowed: tuple[Any, ...], members: tuple[Any, ...], value: Any) -> Any:
    """The member whose value reads as ``value``: exactly, else ignoring case when that
    names one (YAML reads ``-T release=200`` as the number 200, the value is "200")."""
    if isinstance(value, bool):
        return _NO_CHOICE
    text = str(_plain(value)).strip()
    for plain, member in zip(allowed, members, strict=True):
        if str(plain) == text:
            return member
    folded = [member for plain, member in zip(allowed, members, strict=True)
              if str(plain).lower() == text.lower()]
    return folded[0] if len(folded) == 1 else _NO_CHOICE


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation
