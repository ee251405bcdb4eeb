"""Result records: one JSON-ready mapping per instance (the results file's entries).

Schema (documented in docs/results-format.md): nodeid, suite, benchmark,
instance, model, judges, protocol, category, scaffold, tier, markers,
status (passed | failed | not_applicable | error), error, error_kind,
errored_checks, ended, turns[], checks[], tokens,
cost, durations, verifier_versions.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic_file import replace_file
from .._redact import redact
from .._version import __version__

if TYPE_CHECKING:
    from .._protocols import Episode
    from .._registry import Registry
    from .._types import Instance
    from .._verify import CheckOutcome
    from ..models.client import Completion

RESULTS_FORMAT = 1


def _base(nodeid: str, instance: Instance, model: str | None, judges: Sequence[str]) -> dict[str, Any]:
    return {
        "nodeid": nodeid, "suite": instance.suite.as_posix(), "benchmark": instance.benchmark,
        "instance": instance.id, "model": model, "judges": list(judges), "protocol": instance.protocol,
        "protocol_options": json_safe(instance.protocol_options),
        "category": instance.category, "scaffold": instance.scaffold, "tier": instance.tier,
        "markers": list(instance.markers), "metadata": json_safe(instance.metadata),
        "generation": instance.generation.to_json(),
    }


#: How deep :func:`json_safe` follows nested data before it writes ``"…"``.
_MAX_DEPTH = 200


def json_safe(value: Any, _depth: int = 0, _open: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON data: what ``json.dumps`` cannot write becomes a string.

    Suites and importers may carry anything YAML can express into metadata (dates,
    bytes, sets, keys that are not strings, a structure that contains itself, a
    5,000-digit int); one such value must not cost the results file. Dates become
    ISO strings, other objects ``str()``, non-finite floats ``"nan"``/``"inf"``, and
    a cycle or excessive depth ``"…"``.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() < 4000 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if _depth >= _MAX_DEPTH or id(value) in _open:
        return "…"
    if isinstance(value, Mapping):
        inner = _open | {id(value)}
        return {_json_key(key): json_safe(item, _depth + 1, inner) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        inner = _open | {id(value)}
        return [json_safe(item, _depth + 1, inner) for item in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a broken __str__
        return f"<{type(value).__name__}>"


def _json_key(key: Any) -> str:
    safe = json_safe(key)
    return safe if isinstance(safe, str) else json.dumps(safe)


def error_record(nodeid: str, instance: Instance, model: str | None, judges: Sequence[str],
                 error: str, kind: str = "model", paid: Sequence[Completion] = (),
                 paid_judges: Sequence[Completion] = ()) -> dict[str, Any]:
    """The record of an instance that errored before it had a turn to score; ``paid``: the calls it had
    made (an agent run's steps, a dialogue's earlier turns and their judges), counted in ``tokens``,
    ``cost`` and ``paid_calls``; ``paid_judges``, the judge calls among them, listed in ``judge_calls``."""
    tokens, costs = usage(paid)
    return plain(_base(nodeid, instance, model, judges) | {
        "status": "error", "error": error, "error_kind": kind, "turns": [], "checks": [],
        "tokens": tokens, **costs, "judge_cost": judge_cost(paid_judges), "durations": {},
        **({"paid_calls": len(paid)} if paid else {}),
        **({"judge_calls": [c.to_json() for c in paid_judges]} if paid_judges else {}),
    })


def judge_cost(judge_calls: Sequence[Completion]) -> float | None:
    """What this run paid for the judge calls among an instance's calls (``cost`` counts them too): the
    summary's Totals say what of the money went to judges. None when none has a price."""
    return usage(judge_calls)[1]["cost"]


def usage(completions: Sequence[Completion]) -> tuple[dict[str, int], dict[str, float | None]]:
    """The tokens (paid and from caches) of ``completions``, and their costs: ``cost``, what this run paid
    for them, and ``cached_cost``, what the replies it took from a cache cost when they were paid (each None
    when no call has a price). Apart, as the tokens are: a re-scored run paid nothing, and a team checking
    from the records whether a run paid twice, or kept to its limit, must not count cached replies."""
    priced = any(c.cost is not None for c in completions)
    paid = sum(c.cost for c in completions if c.cost is not None and not c.cached)
    cached = sum(c.cost for c in completions if c.cost is not None and c.cached)
    return {"prompt": sum(c.prompt_tokens for c in completions if not c.cached),
            "completion": sum(c.completion_tokens for c in completions if not c.cached),
            "cached_prompt": sum(c.prompt_tokens for c in completions if c.cached),
            "cached_completion": sum(c.completion_tokens for c in completions if c.cached)}, \
        {"cost": paid if priced else None, "cached_cost": cached if priced else None}


def errored_after_run(record: dict[str, Any], error: str, kind: str, paid: Sequence[Completion] = (),
                      paid_judges: Sequence[Completion] = ()) -> dict[str, Any]:
    """An instance that ran, then errored (its judge failed): the episode's ``record`` keeps its turns,
    tokens, cost, durations and every check decided without the failing part; it is an error, and
    ``errored_checks`` names the checks left undecided and why. ``paid``: calls made outside the episode
    (its other samples), added to ``tokens`` and ``cost``; ``paid_judges``, the judge calls among them,
    added to ``judge_calls``."""
    errored = [{"check": c["check"], "error": c["error"]} for c in record.get("checks", []) if c.get("error")]
    out = record | {"status": "error", "error": error, "error_kind": kind, "errored_checks": errored}
    if paid_judges:
        out["judge_calls"] = [*record.get("judge_calls", ()), *(c.to_json() for c in paid_judges)]
        more = judge_cost(paid_judges)
        if more is not None:
            out["judge_cost"] = (record.get("judge_cost") or 0.0) + more
    if paid:
        tokens, costs = usage(paid)
        out["tokens"] = {name: record["tokens"].get(name, 0) + value for name, value in tokens.items()}
        for name, value in costs.items():
            if value is not None:
                out[name] = (record.get(name) or 0.0) + value
    return out


def episode_record(
    nodeid: str, instance: Instance, model: str | None, judges: Sequence[str], episodes: Sequence[Episode],
    outcomes: Sequence[tuple[int, CheckOutcome]], registry: Registry, verify_seconds: float,
) -> dict[str, Any]:
    """The record of a run instance; ``episodes`` has one entry per sample (sample 0 first)."""
    episode = episodes[0]
    tokens, costs = usage([c for e in episodes for c in e.paid()])
    checks = []
    for turn, outcome in outcomes:
        entry = outcome.check.to_json() | outcome.to_json() | {"turn_ran": turn}
        entry["version"] = registry.get(outcome.check.verifier).version
        checks.append(entry)
    # A not-applicable check (a condition that never arose) neither passes nor fails the instance; an
    # instance with scored checks but none applicable is neither passed nor failed either.
    scored = [c for c in checks if c["scored"] and c.get("applicable", True)]
    status = ("not_applicable" if not scored and any(c["scored"] for c in checks) else
              "passed" if all(c["passed"] for c in scored) else "failed")
    return plain(_base(nodeid, instance, model, judges) | {
        "status": status,
        "error": None, "error_kind": None, "ended": episode.ended,
        "turns": [
            {"index": t.index, "messages": t.messages, "response": t.completion.to_json()}
            for t in episode.turns
        ],
        "checks": checks,
        "judge_calls": [c.to_json() for e in episodes for c in e.judge_completions],  # every sample's
        "tokens": tokens,
        **costs,
        "judge_cost": judge_cost([c for e in episodes for c in e.judge_completions]),
        "durations": {"generation": round(max(e.duration for e in episodes), 4),
                      "verification": round(verify_seconds, 4)},
        "samples": len(episodes),
        "sample_responses": [[t.completion.text for t in e.turns] for e in episodes[1:]],
        "verifier_versions": {c["verifier"]: c["version"] for c in checks},
    } | ({"agent": episode.agent.to_json()} if episode.agent is not None else {}))


def plain(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` itself when it is plain JSON data (the C encoder checks), else :func:`json_safe` of it:
    records travel between xdist processes and into the results file, and must survive both."""
    try:
        json.dumps(record, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json_safe(record)
    return record


#: The key a result record travels under between xdist processes: its JSON text (see :func:`record_to_wire`).
WIRE_KEY = "ifbench_record_json"
#: ...and of a record UTF-8 cannot carry (a lone surrogate): its JSON text with non-ASCII characters escaped.
WIRE_ASCII_KEY = "ifbench_record_ascii_json"
#: A rebuilt report's record as the worker wrote it (:data:`WIRE_KEY`): the results journal's line for it.
RECORD_TEXT_ATTR = "ifbench_record_text"


def record_to_wire(data: dict[str, Any]) -> dict[str, Any]:
    """A serialised report (``pytest_report_to_serializable``'s mapping) with its result record as JSON text.

    xdist sends reports through execnet, whose serializer cannot write every value JSON can: an integer
    below -2**31 (the agent CLIs' tool schemas say ``"minimum": -9007199254740991``) raises
    ``struct.error`` and ends the run in an INTERNALERROR. JSON text carries any record unchanged;
    :func:`record_from_wire` turns it back on the controller. The text is the one the results journal
    writes (:func:`dumps_record`), so the controller writes it as it came instead of encoding the record
    again; a record with a lone surrogate, which execnet's UTF-8 cannot carry, travels ASCII-escaped."""
    record = data.pop("ifbench_record", None)
    if record is not None:
        text = dumps_record(record)
        if text.isascii() or _utf8_encodable(text):
            data[WIRE_KEY] = text
        else:
            data[WIRE_ASCII_KEY] = dumps_record(record, ascii=True)
    return data


def _utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def record_from_wire(report: Any) -> Any:
    """``report`` (rebuilt from a worker's mapping) with the record :func:`record_to_wire` encoded, and
    the journal's text for it (:data:`RECORD_TEXT_ATTR`) when it came in that form."""
    fields = getattr(report, "__dict__", {})
    text = fields.pop(WIRE_KEY, None)
    if isinstance(text, str):
        report.ifbench_record = json.loads(text)
        fields[RECORD_TEXT_ATTR] = text
    else:
        text = fields.pop(WIRE_ASCII_KEY, None)
        if isinstance(text, str):
            report.ifbench_record = json.loads(text)
    return report


def write_results(path: Path, records: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
    """Write the results file atomically. Never fails on a value: each record (and the run's
    metadata) is encoded on its own, and one that ``json.dumps`` refuses is made
    :func:`json_safe` first, so a single odd value never costs the other records."""
    head = dumps_record({"format": RESULTS_FORMAT, "plugin_version": __version__, **meta, "instances": []})
    body = ",".join(dumps_record(record) for record in sorted(records, key=lambda r: str(r.get("nodeid"))))
    text = head[:-2] + body + "]}"  # head ends with the empty list: `"instances":[]}`
    replace_file(path, redact(text), mode=0o644)


def dumps_record(value: Any, *, ascii: bool = False) -> str:
    """``value`` as compact JSON text; what ``json.dumps`` refuses is made :func:`json_safe` first."""
    # Compact: the C encoder is ~5x faster than indent=; use `python -m json.tool` to read it.
    try:
        return json.dumps(value, ensure_ascii=ascii, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # a date, a cycle, NaN, a 5,000-digit int, ...
        return json.dumps(json_safe(value), ensure_ascii=ascii, allow_nan=False, separators=(",", ":"))


#: Parts longer than this as JSON are not shared (:class:`SummaryViews`): rarely equal, and costly to compare.
_SHARE_MAX_CHARS = 512


class _ViewKeys:
    """Nothing but a holder of keys: a view is the ``__dict__`` of one of these.

    CPython keeps the keys of its instances' dicts once for the class (PEP 412's key-sharing dicts),
    so a view filled key by key, in the order every record has, stores only its ~26 values: ~300
    bytes instead of ~830 as a dict of its own. It is an ordinary ``dict`` all the same; a record
    with other keys or another order just gets a dict of its own (never filled with ``update()``,
    which copies the keys). The small dicts a view keeps per record (its turns and their replies,
    ``tokens``, ``durations``) are made the same way, each kind from a holder of its own
    (:func:`_keyed`): ~90 bytes instead of ~185 (pymalloc's count; ``sys.getsizeof`` overstates
    a key-sharing dict)."""


class _TurnKeys:
    """Holder of a view's turns' keys (see :class:`_ViewKeys`)."""


class _ReplyKeys:
    """Holder of the keys of a view's turn's reply (see :class:`_ViewKeys`)."""


class _TokenKeys:
    """Holder of the keys of a view's ``tokens`` (see :class:`_ViewKeys`)."""


class _DurationKeys:
    """Holder of the keys of a view's ``durations`` (see :class:`_ViewKeys`)."""


#: The parts of a record a view keeps as they are, in key-sharing dicts, by the holder of their keys.
_OWN_PARTS: dict[str, type] = {"tokens": _TokenKeys, "durations": _DurationKeys}


def _keyed(holder: type, items: Any) -> dict[str, Any]:
    """A key-sharing ``dict`` of ``items`` (key, value pairs), its keys held by ``holder``'s class."""
    out: dict[str, Any] = holder().__dict__
    for key, value in items:
        out[key] = value
    return out


class SummaryViews:
    """The compact in-memory copy of each record that the end-of-run tables, metrics and summary read.

    A full record stays on disk (the results journal); what a session keeps per finished instance is
    this view of it: the record without the bulky parts no metric reads -- ``turns`` keep only their
    ``index`` and the reply's verified text (``response.text``: what a benchmark's own metric may
    measure, e.g. words per reply), ``judge_calls`` only ``model`` and ``cached``, ``sample_responses``
    is empty, checks lose ``description``, ``duration`` and ``verdict.evidence`` -- and with equal
    small parts (a check entry, ``generation``, ``metadata``, ``verifier_versions``...) stored once
    and shared between records.
    Views are read-only: a metric that changed one would change it in other records too.
    """

    __slots__ = ("_memo",)

    #: Distinct shared parts kept; past it new parts are stored per record (a suite of unique checks).
    MAX_SHARED = 50_000

    def __init__(self) -> None:
        self._memo: dict[str, Any] = {}

    def view(self, record: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = _ViewKeys().__dict__
        for key, value in record.items():
            if key == "turns":
                value = [self._turn(t) for t in value or () if isinstance(t, Mapping)]
            elif key == "judge_calls":
                value = self._share([self._share({"model": c.get("model"), "cached": c.get("cached")})
                                     for c in value or () if isinstance(c, Mapping)])
            elif key == "sample_responses":
                value = self._share([])
            elif key == "checks":
                value = [self._share(self._check(c)) if isinstance(c, Mapping) else c for c in value or ()]
            elif key in _OWN_PARTS:  # different in every record
                if type(value) is dict:
                    value = _keyed(_OWN_PARTS[key], value.items())
            elif key == "agent":
                pass  # rare, and read whole (an agent's trajectory)
            elif isinstance(value, (dict, list)):
                value = self._share(value)
            elif type(value) is str and len(value) <= 64 and key not in ("nodeid", "instance"):
                value = sys.intern(value)  # suite, benchmark, model, status...: one copy for the run
            out[key] = value
        return out

    def _turn(self, turn: Mapping[str, Any]) -> dict[str, Any]:
        response = turn.get("response")
        text = response.get("text") if isinstance(response, Mapping) else None
        if text is None:
            return self._share({"index": turn.get("index")})
        return _keyed(_TurnKeys, (("index", turn.get("index")), ("response", _keyed(_ReplyKeys, (("text", text),)))))

    @staticmethod
    def _check(check: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in check.items() if k not in ("description", "duration", "verdict")}
        verdict = check.get("verdict")
        if isinstance(verdict, Mapping):
            out["verdict"] = {k: v for k, v in verdict.items() if k != "evidence"}
        return out

    def _share(self, value: Any) -> Any:
        # repr, not json.dumps: twice as fast, and records of one run build their parts in the same order.
        # Records are plain JSON data (see plain()), so equal reprs mean equal values.
        try:
            key = repr(value)
        except RecursionError:
            return value
        if len(key) > _SHARE_MAX_CHARS:
            return value
        kept = self._memo.get(key)
        if kept is not None:
            return kept
        if len(self._memo) < self.MAX_SHARED:
            self._memo[key] = value
        return value
