"""Declarative parameter schemas for verifiers, validated at collection time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ._text import short_repr

_MISSING: Any = object()

_TYPE_NAMES = {int: "int", float: "number", str: "str", bool: "bool", list: "list", dict: "mapping"}


class ParamError(ValueError):
    """A parameter failed validation; ``field`` is the dotted path below ``params``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class Param:
    """One verifier parameter: type, default, allowed values or range."""

    type: type
    _: KW_ONLY
    default: Any = _MISSING
    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: float | None = None
    #: Element type when ``type`` is list.
    items: type | None = None
    description: str = ""

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": _TYPE_NAMES.get(self.type, self.type.__name__)}
        if not self.required:
            out["default"] = self.default
        for name in ("choices", "min", "max"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.description:
            out["description"] = self.description
        return out


def _type_ok(value: Any, expected: type) -> bool:
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _show(value: Any) -> str:
    return short_repr(value)


def validate_params(
    schema: Mapping[str, Param], params: Any, *, allow_extra: bool = False
) -> dict[str, Any]:
    """Return ``params`` with defaults filled in, or raise :class:`ParamError`."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ParamError("params", f"expected mapping, got {type(params).__name__}")
    if not allow_extra:
        unknown = sorted(set(params) - set(schema), key=short_repr)  # keys of mixed types: sort their reprs
        if unknown:
            known = ", ".join(sorted(schema)) or "none"
            raise ParamError(unknown[0] if isinstance(unknown[0], str) else short_repr(unknown[0]),
                             f"unknown parameter (known: {known})")
    out = dict(params)
    for name, spec in schema.items():
        if name not in params:
            if spec.required:
                raise ParamError(name, "required parameter is missing")
            out[name] = spec.default
            continue
        value = params[name]
        if not _type_ok(value, spec.type):
            want = _TYPE_NAMES.get(spec.type, spec.type.__name__)
            raise ParamError(name, f"expected {want}, got {_show(value)}")
        if spec.items is not None and isinstance(value, list):
            for index, element in enumerate(value):
                if not _type_ok(element, spec.items):
                    want = _TYPE_NAMES.get(spec.items, spec.items.__name__)
                    raise ParamError(f"{name}[{index}]", f"expected {want}, got {_show(element)}")
        if spec.choices is not None and value not in spec.choices:
            allowed = ", ".join(map(str, spec.choices))
            raise ParamError(name, f"expected one of {allowed}, got {_show(value)}")
        if spec.min is not None and value < spec.min:
            raise ParamError(name, f"must be >= {spec.min}, got {_show(value)}")
        if spec.max is not None and value > spec.max:
            raise ParamError(name, f"must be <= {spec.max}, got {_show(value)}")
    return out
