"""Typed options from loosely typed values: lm-eval ``--metadata`` (JSON), Inspect ``-T``
(YAML) and ``condambig-score`` flags (strings) all become one frozen options dataclass.

A field's annotation is its one declaration: a ``Literal[...]`` or an Enum names the allowed
values, and every front end reads them (with the default and the help text) through
:func:`option_specs` — argparse ``choices``, lm-eval messages, the Inspect ``@task``
signatures. Ranges a type cannot express (``1 <= max_conditions <= 10``) stay in the
dataclass's ``__post_init__``, one check each.

:func:`resolve_scoped` is the one reader of the options a front end hands every task of a
run (lm-eval ``--metadata``, Inspect ``-T``): keys scoped to one benchmark, the scope hint,
and values contradicting what a variant's task fixes. Each front end gives only its
:class:`Wording`.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal

from condambig_tasks.errors import ConfigurationError

# how a yes/no value is written (an option, or a setting such as CONDAMBIG_JUDGE_CACHE=off)
FALSE_WORDS = frozenset({"0", "false", "no", "off", "none", "disabled"})
TRUE_WORDS = frozenset({"1", "true", "yes", "on", "enabled"})
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
            if text in TRUE_WORDS or text in FALSE_WORDS:
                return text in TRUE_WORDS
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


# ---------------------------------------------------------------- options of a whole run
@dataclasses.dataclass(frozen=True)
class Wording:
    """How one front end's user writes options, for :func:`resolve_scoped`'s messages.

    The templates are ``str.format`` strings: ``not_mapping`` (``name``, ``example``,
    ``value``), ``unknown`` (``name``, ``keys``, ``are``, ``hint``, ``options``) and
    ``scope_hint`` (``key``, ``others``, ``scoped``); ``scoped(benchmark, key, value)``
    spells one scoped option; ``contradiction(benchmark, task, fixed, contradicted,
    tasks)`` says that values contradict what ``task`` fixes and which ``tasks`` run them.
    """

    not_mapping: str
    unknown: str
    scope_hint: str
    scoped: Callable[[str, str, Any], str]
    contradiction: Callable[[Any, str | None, Mapping[str, Any], Mapping[str, Any],
                             list[str]], str]


@dataclasses.dataclass(frozen=True)
class Scoped:
    """One task's options from a run's, none of those its variant fixes: the ``plain``
    keys, those ``scoped`` to its benchmark, and ``hint``, how to scope a plain one another
    benchmark also has (to add to a message rejecting its value)."""

    plain: dict[str, Any]
    scoped: dict[str, Any]
    hint: str

    @property
    def values(self) -> dict[str, Any]:
        """The plain keys, overridden by the scoped ones."""
        return {**self.plain, **self.scoped}


def resolve_scoped(benchmark: Any, given: Mapping[str, Any], fixed: Mapping[str, Any], *,
                   options_of: Mapping[str, Collection[str]], known: Collection[str],
                   wording: Wording) -> Scoped:
    """The options ``given`` to every task of a run, for one task of ``benchmark`` (a
    :class:`~condambig_tasks.benchmark.Benchmark`) whose variant fixes ``fixed``.

    A key named after a benchmark of ``options_of`` (benchmark -> its options) must map
    options, and those scoped to ``benchmark`` must be ``known``; a value for a fixed option
    must read as the fixed one. Each breach is one :class:`ConfigurationError`.
    """
    plain: dict[str, Any] = {}
    scoped: dict[str, Any] = {}
    for key, value in given.items():
        if key not in options_of:
            plain[key] = value
        elif not isinstance(value, Mapping):
            raise ConfigurationError(wording.not_mapping.format(
                name=key, example=wording.scoped(key, "OPTION", "VALUE"), value=value))
        elif key == benchmark.name:
            scoped = dict(value)
    unknown = sorted(set(scoped) - set(known))
    if unknown:
        raise ConfigurationError(wording.unknown.format(
            name=benchmark.name, keys=", ".join(map(repr, unknown)),
            are="is not an option" if len(unknown) == 1 else "are not options",
            hint=suggestion(unknown[0], known), options=", ".join(sorted(known))))
    values = {**plain, **scoped}
    from_plain = {key: value for key, value in plain.items() if key in known and key not in scoped}
    try:
        contradicted = _contradicted(benchmark, fixed, values)
    except ConfigurationError as error:
        hint = _scope_hint(benchmark.name, {key: value for key, value in from_plain.items()
                                            if key in fixed}, options_of, wording)
        raise ConfigurationError(f"{error}{hint}") from None
    if contradicted:
        message = wording.contradiction(benchmark, _task_fixing(benchmark, fixed), fixed,
                                        contradicted, _tasks_running(benchmark, fixed,
                                                                    contradicted))
        hint = _scope_hint(benchmark.name, {key: value for key, value in from_plain.items()
                                            if key in contradicted}, options_of, wording)
        raise ConfigurationError(f"{message}{hint}")
    hint = _scope_hint(benchmark.name, from_plain, options_of, wording)
    return Scoped({key: value for key, value in plain.items() if key not in fixed},
                  {key: value for key, value in scoped.items() if key not in fixed}, hint)


def _scope_hint(benchmark: str, plain: Mapping[str, Any],
                options_of: Mapping[str, Collection[str]], wording: Wording) -> str:
    """For plain keys that other benchmarks also have: how to give them to one only."""
    for key, value in plain.items():
        others = sorted(name for name, options in options_of.items()
                        if name != benchmark and key in options)
        if others:
            return wording.scope_hint.format(key=key, others=" or ".join(others),
                                             scoped=wording.scoped(others[0], key, value))
    return ""


def _contradicted(benchmark: Any, fixed: Mapping[str, Any],
                  values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``values`` of fixed options that read as another value than the fixed one."""
    own = benchmark.options(dict(fixed), strict=False)
    contradicted: dict[str, Any] = {}
    for key in sorted(set(values) & set(fixed)):
        asked = benchmark.options({**fixed, key: values[key]}, strict=False)
        if getattr(asked, key) != getattr(own, key):
            contradicted[key] = values[key]
    return contradicted


def _task_fixing(benchmark: Any, fixed: Mapping[str, Any]) -> str | None:
    """The variant task that fixes exactly ``fixed``, when one does."""
    tasks = [variant.task for variant in benchmark.variants
             if dict(variant.options) == dict(fixed)]
    return tasks[0] if len(tasks) == 1 else None


def _tasks_running(benchmark: Any, fixed: Mapping[str, Any],
                  contradicted: Mapping[str, Any]) -> list[str]:
    """The variant tasks that run ``fixed`` with ``contradicted`` over it: those fixing
    nothing else and agreeing on every one of those options, else those agreeing on the
    ``contradicted`` ones."""
    keys = set(fixed) | set(contradicted)
    wanted = benchmark.options({**fixed, **contradicted}, strict=False)

    def agrees(options: Mapping[str, Any], over: Iterable[str]) -> bool:
        try:
            theirs = benchmark.options(dict(options), strict=False)
        except ConfigurationError:
            return False
        return set(options) <= keys and all(
            getattr(theirs, key) == getattr(wanted, key) for key in over)

    exact = [variant.task for variant in benchmark.variants if agrees(variant.options, keys)]
    return exact or [variant.task for variant in benchmark.variants
                     if agrees(variant.options, contradicted)]
