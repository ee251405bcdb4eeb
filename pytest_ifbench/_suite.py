"""Loading and validating suite files.

A suite is a YAML mapping with the top-level key ``ifbench: 1``. Everything is
validated before a single item is collected; every error names the file, the
instance and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ._model_types import CheckSpec, GenerationParams, Instance, Suite, Turn
from ._params import ParamError
from ._registry import Registry, UnknownVerifier

SUITE_VERSION = 1
#: Ids must survive ``pytest path::id`` and ``-k``: no spaces, brackets or "::".
INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
NAME = re.compile(r"[a-z][a-z0-9_]*")
_HEADER = re.compile(rb"^ifbench\s*:", re.MULTILINE)

_TOP_KEYS = {"ifbench", "benchmark", "description", "defaults", "instances", "options"}
_INSTANCE_KEYS = {
    "id", "prompt", "system", "messages", "turns", "tools", "checks", "generation", "category",
    "scaffold", "tier", "markers", "protocol", "protocol_options", "response", "metadata", "description",
    "environment",
}
_CHECK_KEYS = {"id", "verifier", "params", "description", "kind", "points", "turn", "scored", "category", "metadata"}
_GENERATION_KEYS = {"temperature", "max_tokens", "top_p", "seed", "stop", "samples", "reasoning_effort"}
#: Values of ``generation.reasoning_effort`` (litellm passes them on to reasoning models).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
_ROLES = {"system", "user", "assistant", "tool"}


class SuiteError(Exception):
    """A suite file is malformed. ``str()`` names file, instance and field."""

    def __init__(self, path: Path | str, message: str, *, instance: str | None = None, field: str | None = None):
        self.path = Path(path)
        self.instance = instance
        self.field = field
        self.message = message
        where = str(path)
        if instance is not None:
            where += f": instance {instance!r}"
        if field:
            where += f": {field}"
        super().__init__(f"{where}: {message}")


def is_suite_file(path: Path) -> bool:
    """Cheap sniff: a YAML file whose top level has an ``ifbench:`` key."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return bool(_HEADER.search(head))


def _type_name(value: Any) -> str:
    return {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


class _Reader:
    """Validation helpers bound to one file and instance, for precise messages."""

    def __init__(self, path: Path, instance: str | None = None):
        self.path = path
        self.instance = instance

    def fail(self, field: str, message: str) -> SuiteError:
        return SuiteError(self.path, message, instance=self.instance, field=field)

    def expect(self, value: Any, types: type | tuple[type, ...], field: str) -> Any:
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types))
        if not ok:
            names = " or ".join(t.__name__ if t is not dict else "mapping" for t in _as_tuple(types))
            raise self.fail(field, f"expected {names}, got {value!r}" if isinstance(value, (str, int, float)) else
                            f"expected {names}, got {_type_name(value)}")
        return value

    def unknown_keys(self, data: Mapping[str, Any], allowed: set[str], field: str) -> None:
        unknown = sorted(set(data) - allowed)
        if unknown:
            prefix = f"{field}." if field else ""
            raise self.fail(f"{prefix}{unknown[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def marker_name(prefix: str, value: Any) -> str:
    """``category_<x>`` etc.: lower case, non-alphanumerics folded to ``_``."""
    slug = re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")
    return f"{prefix}_{slug}" if prefix else slug


def _generation(r: _Reader, raw: Any, base: GenerationParams, field: str) -> GenerationParams:
    if raw is None:
        return base
    r.expect(raw, dict, field)
    r.unknown_keys(raw, _GENERATION_KEYS, field)
    values: dict[str, Any] = {
        "temperature": base.temperature, "max_tokens": base.max_tokens, "top_p": base.top_p,
        "seed": base.seed, "stop": base.stop, "samples": base.samples, "reasoning_effort": base.reasoning_effort,
    }
    for key, value in raw.items():
        sub = f"{field}.{key}"
        if key in ("temperature", "top_p"):
            if value is not None:
                r.expect(value, (int, float), sub)
        elif key in ("max_tokens", "seed", "samples"):
            if value is not None or key == "samples":
                r.expect(value, int, sub)
            if key in ("samples", "max_tokens") and value is not None and value < 1:
                raise r.fail(sub, f"must be >= 1, got {value}")
        elif key == "stop":
            value = (value,) if isinstance(value, str) else tuple(r.expect(value, list, sub))
        elif key == "reasoning_effort" and value is not None and value not in REASONING_EFFORTS:
            raise r.fail(sub, f"must be one of {', '.join(REASONING_EFFORTS)} or null, got {str(value)[:40]!r}")
        values[key] = value
    return GenerationParams(**values)


def _check(r: _Reader, raw: Any, field: str, registry: Registry, turn: int | None) -> CheckSpec:
    r.expect(raw, dict, field)
    r.unknown_keys(raw, _CHECK_KEYS, field)
    for key in ("id", "verifier"):
        if key not in raw:
            raise r.fail(f"{field}.{key}", "required field is missing")
        r.expect(raw[key], str, f"{field}.{key}")
    check_id = raw["id"]
    if not INSTANCE_ID.fullmatch(check_id):
        raise r.fail(f"{field}.id", f"{check_id!r} is not a valid check id (letters, digits, '_', '.', '-')")
    try:
        verifier = registry.get(raw["verifier"])
    except UnknownVerifier as exc:
        raise r.fail(f"{field}.verifier", str(exc)) from None
    try:
        params = verifier.validate(raw.get("params"))
    except ParamError as exc:
        where = f"{field}.params.{exc.field}" if exc.field != "params" else f"{field}.params"
        raise r.fail(where, exc.message) from None
    kind = raw.get("kind", "check")
    if kind not in ("check", "bonus", "penalty"):
        raise r.fail(f"{field}.kind", f"expected check, bonus or penalty, got {kind!r}")
    points = r.expect(raw.get("points", 1), (int, float), f"{field}.points")
    if points <= 0:
        raise r.fail(f"{field}.points", f"must be > 0, got {points}")
    check_turn = raw.get("turn", turn)
    if check_turn is not None:
        r.expect(check_turn, int, f"{field}.turn")
    return CheckSpec(
        id=check_id if turn is None else f"turn{turn}.{check_id}",
        verifier=verifier.id, params=params,
        description=r.expect(raw.get("description", ""), str, f"{field}.description")
        or (verifier.criterion(params) if verifier.criterion else verifier.description),
        kind=kind, points=float(points), turn=check_turn,
        scored=r.expect(raw.get("scored", True), bool, f"{field}.scored"),
        category=r.expect(raw["category"], str, f"{field}.category") if raw.get("category") is not None else None,
        metadata=r.expect(raw.get("metadata", {}), dict, f"{field}.metadata"),
    )


def _messages(r: _Reader, raw: Any, field: str) -> tuple[Mapping[str, Any], ...]:
    r.expect(raw, list, field)
    out = []
    for index, message in enumerate(raw):
        sub = f"{field}[{index}]"
        r.expect(message, dict, sub)
        role = message.get("role")
        if role not in _ROLES:
            raise r.fail(f"{sub}.role", f"expected one of {', '.join(sorted(_ROLES))}, got {role!r}")
        if "content" not in message and "tool_calls" not in message:
            raise r.fail(f"{sub}.content", "required field is missing")
        out.append(dict(message))
    return tuple(out)


def _instance(r: _Reader, raw: Mapping[str, Any], defaults: Mapping[str, Any], benchmark: str,
              path: Path, registry: Registry, root: Path) -> Instance:
    merged = {k: v for k, v in defaults.items() if k not in ("generation", "markers")}
    merged.update(raw)
    gen = _generation(r, defaults.get("generation"), GenerationParams(), "defaults.generation")
    gen = _generation(r, raw.get("generation"), gen, "generation")
    markers = list(r.expect(defaults.get("markers", []), list, "defaults.markers")) + list(
        r.expect(raw.get("markers", []), list, "markers"))
    for index, marker in enumerate(markers):
        if not isinstance(marker, str) or not NAME.fullmatch(marker):
            raise r.fail(f"markers[{index}]", f"{marker!r} is not a valid marker name ([a-z][a-z0-9_]*)")
    protocol = r.expect(merged.get("protocol", "single_turn"), str, "protocol")
    turns: list[Turn] = []
    for index, turn in enumerate(r.expect(merged.get("turns", []), list, "turns")):
        sub = f"turns[{index}]"
        r.expect(turn, dict, sub)
        r.unknown_keys(turn, {"user", "checks"}, sub)
        if "user" not in turn:
            raise r.fail(f"{sub}.user", "required field is missing")
        turns.append(Turn(
            user=r.expect(turn["user"], str, f"{sub}.user"),
            checks=tuple(
                _check(r, c, f"{sub}.checks[{j}]", registry, index + 1)
                for j, c in enumerate(r.expect(turn.get("checks", []), list, f"{sub}.checks"))
            ),
        ))
    where = "checks" if "checks" in raw else "defaults.checks"
    checks = tuple(
        _check(r, c, f"{where}[{j}]", registry, None)
        for j, c in enumerate(r.expect(merged.get("checks", []), list, where))
    )
    last_turn = max(1, len(turns))
    for j, check in enumerate(checks):
        if check.turn is not None and not 1 <= check.turn <= last_turn:
            raise r.fail(f"{where}[{j}].turn",
                         f"must be between 1 and {last_turn} (the instance's turns), got {check.turn}")
    prompt = merged.get("prompt")
    if prompt is not None:
        r.expect(prompt, str, "prompt")
    messages = _messages(r, merged["messages"], "messages") if "messages" in merged else ()
    response = merged.get("response")
    if response is not None:
        r.expect(response, str, "response")
    if prompt is None and not messages and not turns:
        raise r.fail("prompt", "an instance needs a prompt, messages or turns")
    all_ids = [c.id for c in checks] + [c.id for t in turns for c in t.checks]
    duplicates = sorted({i for i in all_ids if all_ids.count(i) > 1})
    if duplicates:
        raise r.fail("checks", f"duplicate check id {duplicates[0]!r}")
    if not all_ids:
        raise r.fail("checks", "an instance needs at least one check")
    tier = merged.get("tier")
    if tier is not None:
        r.expect(tier, int, "tier")
    for key in ("category", "scaffold"):
        if merged.get(key) is not None:
            r.expect(merged[key], str, key)
    system = merged.get("system")
    if system is not None:
        r.expect(system, str, "system")
    options = r.expect(merged.get("protocol_options", {}), dict, "protocol_options")
    if options.get("subtests", "check") not in ("check", "turn"):
        raise r.fail("protocol_options.subtests", f"expected check or turn, got {options['subtests']!r}")
    if "patience" in options and (type(options["patience"]) is not int or options["patience"] < 1):
        raise r.fail("protocol_options.patience", f"expected an int >= 1, got {options['patience']!r}")
    environment = _environment(r, merged.get("environment"), root)
    if protocol == "agent":
        from .agents.options import OptionError, agent_options

        try:
            agent_options(options)
        except OptionError as exc:
            raise r.fail(f"protocol_options.{exc.field}", str(exc)) from None
    return Instance(
        id=raw["id"], benchmark=benchmark, suite=path, protocol=protocol,
        protocol_options=options,
        system=system, prompt=prompt, messages=messages, turns=tuple(turns),
        tools=tuple(r.expect(merged.get("tools", []), list, "tools")), checks=checks,
        generation=gen, category=merged.get("category"), scaffold=merged.get("scaffold"), tier=tier,
        markers=tuple(markers), response=response, environment=environment,
        metadata=r.expect(merged.get("metadata", {}), dict, "metadata"),
        description=r.expect(merged.get("description", ""), str, "description"),
    )


def _environment(r: _Reader, value: Any, root: Path) -> Path | None:
    """An agent instance's environment: a directory, relative to the suite file's folder."""
    if value is None:
        return None
    r.expect(value, str, "environment")
    directory = (root / value).resolve()
    if not directory.is_dir():
        raise r.fail("environment", f"{value!r} is not a directory (looked for {directory})")
    return directory


def parse_suite(path: Path, data: Any, registry: Registry, *, protocols: set[str] | None = None,
                root: Path | None = None) -> Suite:
    """Validate already-parsed YAML ``data`` read from ``path``.

    ``root`` is the folder relative paths in the suite (``environment``) are resolved
    against: the suite file's real folder (default: ``path``'s).
    """
    root = root if root is not None else path.parent
    r = _Reader(path)
    r.expect(data, dict, "")
    r.unknown_keys(data, _TOP_KEYS, "")
    version = data.get("ifbench")
    if type(version) is not int or version != SUITE_VERSION:
        raise r.fail("ifbench", f"unsupported suite format version {data.get('ifbench')!r} (supported: 1)")
    benchmark = data.get("benchmark")
    if not isinstance(benchmark, str) or not NAME.fullmatch(benchmark):
        raise r.fail("benchmark", f"expected a name like 'my_bench' ([a-z][a-z0-9_]*), got {benchmark!r}")
    defaults = r.expect(data.get("defaults", {}), dict, "defaults")
    r.unknown_keys(defaults, _INSTANCE_KEYS - {"id"}, "defaults")
    raw_instances = r.expect(data.get("instances"), list, "instances")
    seen: set[str] = set()
    instances = []
    for index, raw in enumerate(raw_instances):
        if not isinstance(raw, dict):
            raise r.fail(f"instances[{index}]", f"expected mapping, got {_type_name(raw)}")
        instance_id = raw.get("id")
        if not isinstance(instance_id, str) or not INSTANCE_ID.fullmatch(instance_id):
            raise r.fail(f"instances[{index}].id",
                         f"{instance_id!r} is not a selectable id (letters, digits, '_', '.', '-'; no spaces)")
        if instance_id in seen:
            raise SuiteError(path, "duplicate instance id", instance=instance_id, field="id")
        seen.add(instance_id)
        ir = _Reader(path, instance_id)
        ir.unknown_keys(raw, _INSTANCE_KEYS, "")
        instance = _instance(ir, raw, defaults, benchmark, path, registry, root)
        if protocols is not None and instance.protocol not in protocols:
            raise ir.fail("protocol", f"unknown protocol {instance.protocol!r} (known: {', '.join(sorted(protocols))})")
        instances.append(instance)
    return Suite(
        path=path, benchmark=benchmark, description=str(data.get("description", "")),
        instances=tuple(instances), options=r.expect(data.get("options", {}), dict, "options"),
    )


def load_suite(path: Path, registry: Registry, *, protocols: set[str] | None = None,
               display: Path | None = None) -> Suite:
    """Read and validate a suite file with the C YAML loader.

    ``display`` is the path shown in messages and records (e.g. relative to rootdir).
    """
    shown = display or path
    try:
        with path.open("rb") as handle:
            data = yaml.load(handle, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        raise SuiteError(shown, f"invalid YAML: {exc}") from None
    except OSError as exc:
        raise SuiteError(shown, f"cannot read: {exc}") from None
    return parse_suite(shown, data, registry, protocols=protocols, root=path.parent)
