"""Loading and validating suite files.

A suite is a YAML mapping with the top-level key ``ifbench: 1``. Everything is
validated before a single item is collected; every error names the file, the
instance and the field. Telling a suite file from other YAML (sniffing, the
top-level read, lookalikes) is :mod:`.detect`'s job.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._params import ParamError
from .._registry import Registry, UnknownVerifier
from .._text import short_repr
from .._types import CheckSpec, GenerationParams, Instance, Suite, Turn
from .detect import read_suite_yaml
from .errors import SuiteError, SuiteErrors, _cut, _type_name

SUITE_VERSION = 1
#: Ids must survive ``pytest path::id`` and ``-k``: no spaces, brackets or "::".
INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
NAME = re.compile(r"[a-z][a-z0-9_]*")
#: Caps on ``generation`` fields and on ints used elsewhere, so a typo cannot ask for a
#: billion samples or a 5,000-digit seed (documented in docs/suite-format.md, "Limits").
MAX_SAMPLES = 100
MAX_TOKENS = 1_000_000
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1
MAX_TIER = 1000
MAX_PATIENCE = 1000
MAX_POINTS = 1_000_000

_TOP_KEYS = {"ifbench", "benchmark", "description", "defaults", "instances", "options", "sandbox"}
_INSTANCE_KEYS = {
    "id", "prompt", "system", "messages", "turns", "tools", "checks", "generation", "category",
    "scaffold", "tier", "markers", "protocol", "protocol_options", "response", "metadata", "description",
    "environment", "sandbox",
}
_CHECK_KEYS = {"id", "verifier", "params", "description", "kind", "points", "turn", "scored", "category", "metadata"}
_GENERATION_KEYS = {"temperature", "max_tokens", "top_p", "seed", "stop", "samples", "reasoning_effort"}
#: Values of ``generation.reasoning_effort`` (litellm passes them on to reasoning models).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
_ROLES = {"system", "user", "assistant", "tool"}
#: Allowed range of each numeric ``generation`` field (int bounds: an int field).
_GENERATION_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, MAX_TEMPERATURE), "top_p": (0.0, 1.0), "max_tokens": (1, MAX_TOKENS),
    "seed": (-MAX_SEED - 1, MAX_SEED), "samples": (1, MAX_SAMPLES),
}


def _num(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"





class _Reader:
    """Validation helpers bound to one file and instance, for precise messages."""

    def __init__(self, path: Path, instance: str | None = None, shared: _Reader | None = None):
        self.path = path
        self.instance = instance
        #: Checks and generation settings already read from this file, by their raw form (and turn, or
        #: base settings): see :func:`_check` and :func:`_generation`. An instance's reader shares its file's.
        self.checks: dict[Any, CheckSpec] = {} if shared is None else shared.checks
        self.generations: dict[Any, GenerationParams] = {} if shared is None else shared.generations

    def remembered(self, table: dict[Any, Any], context: Any, raw: Any, read: Callable[[], Any]) -> Any:
        """``read()``, or what it gave before in this file for the same ``raw`` data in the same
        ``context`` (the results are immutable); raw data that is not plain YAML is always read."""
        frozen = _frozen(raw) if type(raw) is dict else None
        if frozen is None:
            return read()
        key = (context, frozen)
        known = table.get(key)
        if known is None:
            known = table[key] = read()
        return known

    def fail(self, field: str, message: str) -> SuiteError:
        return SuiteError(self.path, message, instance=self.instance, field=field)

    def expect(self, value: Any, types: type | tuple[type, ...], field: str) -> Any:
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types))
        if not ok:
            names = " or ".join(t.__name__ if t is not dict else "mapping" for t in _as_tuple(types))
            raise self.fail(field, f"expected {names}, got {short_repr(value)}" if isinstance(value, (str, int, float))
                            else f"expected {names}, got {_type_name(value)}")
        return value

    def unknown_keys(self, data: Mapping[Any, Any], allowed: set[str], field: str) -> None:
        # Keys may be of any hashable type (1, 2020-01-01, null): order them by their reprs.
        unknown = sorted((key for key in data if key not in allowed), key=short_repr)
        if unknown:
            prefix = f"{field}." if field else ""
            name = unknown[0] if isinstance(unknown[0], str) else short_repr(unknown[0])
            raise self.fail(f"{prefix}{_cut(name, 80)}", f"unknown field (allowed: {', '.join(sorted(allowed))})")

    def number(self, value: Any, field: str, low: float, high: float, *, integer: bool = False) -> Any:
        """``value`` if it is a finite int (or float unless ``integer``) in ``[low, high]``."""
        self.expect(value, int if integer else (int, float), field)
        if not (isinstance(value, int) or math.isfinite(value)) or not low <= value <= high:
            raise self.fail(field, f"must be between {_num(low)} and {_num(high)}, got {short_repr(value)}")
        return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def set_check_param(data: Mapping[str, Any], verifier_prefix: str, name: str, *, flag: Any = None,
                    default: Any = None, coerce: Callable[[Any], Any] | None = None) -> None:
    """Set ``params[name]`` of every check in raw suite ``data`` whose verifier id starts with
    ``verifier_prefix`` (defaults, instances, turns): ``flag`` (a run-wide option) overrides, ``default``
    (a suite option) fills in where the check sets nothing. For a benchmark's importer applying a
    setting such as ``compat``; ``coerce`` first turns other accepted params shapes into a mapping.
    Malformed parts are left alone for validation to report."""
    if flag is None and default is None:
        return
    holders = [data.get("defaults"), *(data.get("instances") or [])]
    holders += [turn for holder in holders if isinstance(holder, dict)
                for turn in (holder.get("turns") or []) if isinstance(turn, dict)]
    for holder in holders:
        if not isinstance(holder, dict) or not isinstance(holder.get("checks"), list):
            continue
        for check in holder["checks"]:
            if not isinstance(check, dict) or not str(check.get("verifier", "")).startswith(verifier_prefix):
                continue
            params = coerce(check.get("params")) if coerce else check.get("params")
            params = {} if params is None else dict(params) if isinstance(params, Mapping) else params
            if not isinstance(params, dict):
                continue
            if flag is not None:
                params[name] = flag
            else:
                params.setdefault(name, default)
            check["params"] = params


def marker_name(prefix: str, value: Any) -> str:
    """``category_<x>`` etc.: lower case, non-alphanumerics folded to ``_``."""
    slug = re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")
    return f"{prefix}_{slug}" if prefix else slug


def _generation(r: _Reader, raw: Any, base: GenerationParams, field: str) -> GenerationParams:
    """``base`` with ``raw``'s settings; the same settings over the same base before in the file give
    that (immutable) result, as :func:`_check` does for checks (the defaults are read per instance)."""
    if raw is None:
        return base
    return r.remembered(r.generations, base, raw, lambda: _read_generation(r, raw, base, field))


def _read_generation(r: _Reader, raw: Any, base: GenerationParams, field: str) -> GenerationParams:
    r.expect(raw, dict, field)
    r.unknown_keys(raw, _GENERATION_KEYS, field)
    values: dict[str, Any] = {
        "temperature": base.temperature, "max_tokens": base.max_tokens, "top_p": base.top_p,
        "seed": base.seed, "stop": base.stop, "samples": base.samples, "reasoning_effort": base.reasoning_effort,
    }
    for key, value in raw.items():
        sub = f"{field}.{key}"
        if key in _GENERATION_RANGES and (value is not None or key == "samples"):
            low, high = _GENERATION_RANGES[key]
            r.number(value, sub, low, high, integer=isinstance(low, int))
        elif key == "stop":
            value = (value,) if isinstance(value, str) else tuple(r.expect(value, list, sub))
            for index, stop in enumerate(value):
                r.expect(stop, str, f"{sub}[{index}]")
        elif key == "reasoning_effort" and value is not None and value not in REASONING_EFFORTS:
            raise r.fail(sub, f"must be one of {', '.join(REASONING_EFFORTS)} or null, got {str(value)[:40]!r}")
        values[key] = value
    return GenerationParams(**values)


def _check(r: _Reader, raw: Any, field: str, registry: Registry, turn: int | None) -> CheckSpec:
    """The check ``raw`` describes. A check written the same way before in the file (same fields,
    same turn) is that one's spec: specs are immutable, and a suite repeats its checks across
    instances (a 50,000-instance suite of five checks held 250,000 specs with their parameters,
    ~1.9 KB per instance, for the whole session; now five)."""
    return r.remembered(r.checks, turn, raw, lambda: _read_check(r, raw, field, registry, turn))


#: Scalars a frozen form keeps by (type, value): 1, 1.0 and True are equal in Python, not in a suite.
_SCALARS = (str, int, float, bool, type(None))


def _frozen(value: Any) -> Any:
    """A hashable form of plain YAML data, equal exactly when the data is; None when it holds
    something else."""
    kind = type(value)
    if kind in _SCALARS:
        return kind, value
    if kind is dict:
        items = []
        for key, item in value.items():
            frozen = _frozen(item)
            if frozen is None or type(key) not in _SCALARS:
                return None
            items.append((type(key), key, frozen))
        return dict, tuple(items)
    if kind is list:
        frozen_items = tuple(_frozen(item) for item in value)
        return None if None in frozen_items else (list, frozen_items)
    return None


def _read_check(r: _Reader, raw: Any, field: str, registry: Registry, turn: int | None) -> CheckSpec:
    r.expect(raw, dict, field)
    r.unknown_keys(raw, _CHECK_KEYS, field)
    for key in ("id", "verifier"):
        if key not in raw:
            raise r.fail(f"{field}.{key}", "required field is missing")
        r.expect(raw[key], str, f"{field}.{key}")
    check_id = raw["id"]
    if not INSTANCE_ID.fullmatch(check_id):
        raise r.fail(f"{field}.id", f"{short_repr(check_id)} is not a valid check id (letters, digits, '_', '.', '-')")
    try:
        verifier = registry.get(raw["verifier"])
    except UnknownVerifier as exc:
        raise r.fail(f"{field}.verifier", str(exc)) from None
    try:
        params = verifier.validate(raw.get("params"))
    except ParamError as exc:
        where = f"{field}.params.{exc.field}" if exc.field != "params" else f"{field}.params"
        raise r.fail(where, exc.message) from None
    except Exception as exc:  # noqa: BLE001 - a verifier's own validator choking on odd values
        raise r.fail(f"{field}.params", f"rejected by {verifier.id}: {type(exc).__name__}: {exc}") from None
    kind = raw.get("kind", "check")
    if kind not in ("check", "bonus", "penalty"):
        raise r.fail(f"{field}.kind", f"expected check, bonus or penalty, got {short_repr(kind)}")
    points = r.expect(raw.get("points", 1), (int, float), f"{field}.points")
    if not (isinstance(points, int) or math.isfinite(points)) or not 0 < points <= MAX_POINTS:
        raise r.fail(f"{field}.points", f"must be > 0 and <= {MAX_POINTS:,}, got {short_repr(points)}")
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
        if not isinstance(role, str) or role not in _ROLES:
            raise r.fail(f"{sub}.role", f"expected one of {', '.join(sorted(_ROLES))}, got {short_repr(role)}")
        if "content" not in message and "tool_calls" not in message:
            raise r.fail(f"{sub}.content", "required field is missing")
        out.append(dict(message))
    return tuple(out)


def _check_markers(r: _Reader, markers: Sequence[Any], field: str) -> None:
    for index, marker in enumerate(markers):
        if not isinstance(marker, str) or not NAME.fullmatch(marker):
            raise r.fail(f"{field}[{index}]", f"{short_repr(marker)} is not a valid marker name ([a-z][a-z0-9_]*)")


def _instance(r: _Reader, raw: Mapping[str, Any], defaults: Mapping[str, Any], benchmark: str,
              path: Path, registry: Registry, root: Path, suite_sandbox: Any = None) -> Instance:
    merged = {k: v for k, v in defaults.items() if k not in ("generation", "markers")}
    merged.update(raw)
    gen = _generation(r, defaults.get("generation"), GenerationParams(), "defaults.generation")
    gen = _generation(r, raw.get("generation"), gen, "generation")
    markers = list(r.expect(defaults.get("markers", []), list, "defaults.markers")) + list(
        r.expect(raw.get("markers", []), list, "markers"))
    _check_markers(r, markers, "markers")
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
    if turns and protocol == "single_turn":  # one request: the turns would be neither sent nor checked
        raise r.fail("turns", "scripted turns need protocol: multi_turn (or agent); this instance's protocol is "
                              "single_turn, one request")
    all_ids = [c.id for c in checks] + [c.id for t in turns for c in t.checks]
    duplicates = sorted(i for i, n in Counter(all_ids).items() if n > 1)
    if duplicates:
        raise r.fail("checks", f"duplicate check id {duplicates[0]!r}")
    if not all_ids:
        raise r.fail("checks", "an instance needs at least one check")
    tier = merged.get("tier")
    if tier is not None:
        r.number(tier, "tier", 0, MAX_TIER, integer=True)
    for key in ("category", "scaffold"):
        if merged.get(key) is not None:
            r.expect(merged[key], str, key)
    system = merged.get("system")
    if system is not None:
        r.expect(system, str, "system")
    # merged key by key, as generation is: an instance naming one option keeps the suite's others
    options = {**r.expect(defaults.get("protocol_options", {}), dict, "defaults.protocol_options"),
               **r.expect(raw.get("protocol_options", {}), dict, "protocol_options")}
    if options.get("subtests", "check") not in ("check", "turn"):
        raise r.fail("protocol_options.subtests", f"expected check or turn, got {short_repr(options['subtests'])}")
    if "patience" in options and (type(options["patience"]) is not int or not 1 <= options["patience"] <= MAX_PATIENCE):
        raise r.fail("protocol_options.patience",
                     f"expected an int from 1 to {MAX_PATIENCE}, got {short_repr(options['patience'])}")
    environment = _environment(r, merged.get("environment"), root)
    where = "sandbox" if "sandbox" in raw else "defaults.sandbox" if "sandbox" in defaults else None
    if where is not None and protocol != "agent" and where == "sandbox":
        raise r.fail(where, "only agent instances (protocol: agent) run in a sandbox backend")
    sandbox = merged["sandbox"] if where is not None else suite_sandbox
    if sandbox is not None and protocol == "agent":
        if where is not None:
            _check_sandbox(r, sandbox, where)
        options = {**options, "sandbox": dict(sandbox)}
    if protocol == "agent":
        from ..agents.options import OptionError, agent_options

        try:
            agent_options(options)
        except OptionError as exc:
            raise r.fail(f"protocol_options.{exc.field}", str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - odd values the option parser did not foresee
            raise r.fail("protocol_options", f"{type(exc).__name__}: {exc}") from None
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


def _check_sandbox(r: _Reader, value: Any, field: str) -> None:
    """A ``sandbox`` key (suite, ``defaults`` or instance): ``{backend: NAME, image: NAME}``, carried to an
    agent run as ``protocol_options.sandbox``.  The backend must be registered and, with an image, take
    one (its image is checked on the engine when the instance runs)."""
    from ..agents.options import SANDBOX_KEY, OptionError, agent_options
    from ..sandbox.backend import ImageBackend
    from ..sandbox.backends import backend_names, make_backend

    try:
        agent_options({SANDBOX_KEY: value})
    except OptionError as exc:
        raise r.fail(field + exc.field.removeprefix(SANDBOX_KEY), str(exc)) from None
    name = value["backend"]
    if name not in backend_names():
        raise r.fail(f"{field}.backend",
                     f"unknown sandbox backend {short_repr(name)} (known: {', '.join(backend_names())})")
    if "image" in value and not isinstance(make_backend(name), ImageBackend):
        raise r.fail(f"{field}.image", f"the {name} backend takes no image (it shows the host's own system "
                                       "directories); use backend: docker")


def _environment(r: _Reader, value: Any, root: Path) -> Path | None:
    """An agent instance's environment: a directory, relative to the suite file's folder."""
    if value is None:
        return None
    r.expect(value, str, "environment")
    try:
        directory = (root / value).resolve()
        found = directory.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long for the file system
        raise r.fail("environment", f"{short_repr(value)} is not a usable path: {exc}") from None
    if not found:
        raise r.fail("environment", f"{short_repr(value)} is not a directory (looked for {_cut(str(directory), 200)})")
    return directory


def parse_suite(path: Path, data: Any, registry: Registry, *, protocols: set[str] | None = None,
                root: Path | None = None) -> Suite:
    """Validate already-parsed YAML ``data`` read from ``path``.

    An error at the top level stops the reading; the instances' errors are gathered and raised
    together (:class:`SuiteErrors` when there are several).

    ``root`` is the folder relative paths in the suite (``environment``) are resolved
    against: the suite file's real folder (default: ``path``'s).
    """
    root = root if root is not None else path.parent
    r = _Reader(path)
    r.expect(data, dict, "")
    r.unknown_keys(data, _TOP_KEYS, "")
    version = data.get("ifbench")
    if type(version) is not int or version != SUITE_VERSION:
        raise r.fail("ifbench", f"unsupported suite format version {short_repr(version)} (supported: 1)")
    benchmark = data.get("benchmark")
    if not isinstance(benchmark, str) or not NAME.fullmatch(benchmark):
        raise r.fail("benchmark", f"expected a name like 'my_bench' ([a-z][a-z0-9_]*), got {short_repr(benchmark)}")
    defaults = r.expect(data.get("defaults", {}), dict, "defaults")
    r.unknown_keys(defaults, _INSTANCE_KEYS - {"id"}, "defaults")
    # The suite's own settings, read once here: an error in them is the suite's, not its first instance's.
    _generation(r, defaults.get("generation"), GenerationParams(), "defaults.generation")
    _check_markers(r, r.expect(defaults.get("markers", []), list, "defaults.markers"), "defaults.markers")
    if "sandbox" in data:  # suite-wide, below defaults and the instances: checked once, here
        _check_sandbox(r, data["sandbox"], "sandbox")
    description = r.expect(data.get("description", ""), str, "description")
    options = r.expect(data.get("options", {}), dict, "options")
    raw_instances = r.expect(data.get("instances"), list, "instances")
    seen: set[str] = set()
    instances, errors = [], []
    for index, raw in enumerate(raw_instances):
        try:  # each instance is read even after a malformed one, so one run shows every mistake
            if not isinstance(raw, dict):
                raise r.fail(f"instances[{index}]", f"expected mapping, got {_type_name(raw)}")
            instance_id = raw.get("id")
            if "id" not in raw:
                raise r.fail(f"instances[{index}].id", "required field is missing")
            if not isinstance(instance_id, str) or not INSTANCE_ID.fullmatch(instance_id):
                raise r.fail(f"instances[{index}].id", f"{short_repr(instance_id)} is not a selectable id "
                                                        "(letters, digits, '_', '.', '-'; no spaces)")
            if instance_id in seen:
                raise SuiteError(path, "duplicate instance id", instance=instance_id, field="id")
            seen.add(instance_id)
            ir = _Reader(path, instance_id, r)
            ir.unknown_keys(raw, _INSTANCE_KEYS, "")
            instance = _instance(ir, raw, defaults, benchmark, path, registry, root, data.get("sandbox"))
            if protocols is not None and instance.protocol not in protocols:
                raise ir.fail("protocol", f"unknown protocol {short_repr(instance.protocol)} "
                                          f"(known: {', '.join(sorted(protocols))})")
            instances.append(instance)
        except SuiteError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SuiteErrors(path, errors)
    return Suite(path=path, benchmark=benchmark, description=description, instances=tuple(instances),
                 options=options)


def load_suite(path: Path, registry: Registry, *, protocols: set[str] | None = None,
               display: Path | None = None) -> Suite:
    """Read and validate a suite file with the C YAML loader.

    ``display`` is the path shown in messages and records (e.g. relative to rootdir).
    """
    shown = display or path
    data = read_suite_yaml(path, shown)
    return parse_suite(shown, data, registry, protocols=protocols, root=path.parent)
