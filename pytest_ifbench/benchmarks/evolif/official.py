"""Official EvolIF dialogue files as suites: ``pytest path/to/dialog_1.jsonl``.

An official file is JSON Lines, one object per turn with ``turn`` (from 1),
``active_topic``, ``user_query``, ``user_query_verified`` (the text to send),
``instructions`` (``[{id, args, description}]``, every constraint in force at
that turn), ``style`` and the construction flags. A file holds one dialogue;
a ``turn`` that does not increase starts the next one. Each dialogue becomes a
``multi_turn`` instance with the paper's patience (3) and one subtest per turn;
each instruction becomes the check ``evolif.<id>`` with ``params`` = ``args``
(a bare keyword list, ``forbidden``'s form, is wrapped as ``{keywords: [...]}``).
The message sent is ``user_query_verified``, or ``user_query`` where the
authors' pipeline left it empty (a query that failed their checkers); those
turns are listed in the instance's ``metadata.unverified_turns``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ifbench import JsonlError, ReadOptions, SuiteError, iter_jsonl

#: Defaults of imported suites, as the authors' ``src/eval.py`` runs (``ifbench generate evolif import``
#: and the run flags can change them): patience 3, temperature 1.0 (their ``LLM_backend`` default), no
#: token limit (none is sent), and their released system prompt (``--system_prompt 1``).
PATIENCE = 3
_SUFFIXES = (".jsonl", ".json")
_TURN_KEYS = {"turn", "instructions"}
_MAX_ARRAY_BYTES = 64 << 20


class EvolifFormatError(ValueError):
    """An official file could not be read; the message names the file and line."""


def _first_object(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace").lstrip()
    if text.startswith("["):  # a JSON array of turns: parse it only when it looks like one
        if '"instructions"' not in text or '"turn"' not in text or path.stat().st_size > _MAX_ARRAY_BYTES:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data[0] if isinstance(data, list) and data else None
    line = text.split("\n", 1)[0]
    try:
        return json.loads(line)
    except ValueError:
        return None


def is_official(path: Path) -> bool:
    """Cheap sniff: a .jsonl/.json file whose first record looks like an EvolIF turn."""
    if path.suffix not in _SUFFIXES:
        return False
    first = _first_object(path)
    return isinstance(first, dict) and _TURN_KEYS <= set(first) and (
        "user_query_verified" in first or "user_query" in first)


def read_turns(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise EvolifFormatError(f"{path}: not valid JSON: {exc}") from None
        if not all(isinstance(x, dict) for x in data):
            raise EvolifFormatError(f"{path}: expected a list of turn objects")
        return data
    turns = []
    try:
        for number, record in iter_jsonl(text, expected="expected a JSON object per turn"):
            record["_line"] = number
            turns.append(record)
    except JsonlError as exc:
        raise EvolifFormatError(f"{path}: {exc}") from None
    return turns


def split_dialogues(turns: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A turn number that does not increase starts a new dialogue."""
    out: list[list[dict[str, Any]]] = []
    previous = None
    for record in turns:
        number = record.get("turn")
        if not out or not isinstance(number, int) or not isinstance(previous, int) or number <= previous:
            out.append([])
        out[-1].append(record)
        previous = number
    return out


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-._")
    return slug or "dialogue"


def _check(instruction: Any, where: str) -> dict[str, Any]:
    if not isinstance(instruction, dict) or not isinstance(instruction.get("id"), str):
        raise EvolifFormatError(f"{where}: an instruction needs an 'id' string, got {instruction!r}")
    name = instruction["id"]
    args = instruction.get("args")
    params = {"keywords": list(args)} if isinstance(args, list) else (args if args is not None else {})
    return {"id": _slug(name), "verifier": f"evolif.{name}", "params": params}


#: A turn's fields the instance is built from: the types they may have (None: absent or null), as said.
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "active_topic": ((int, str), "an integer or a string"), "user_query": ((str,), "a string"),
    "user_query_verified": ((str,), "a string"), "style": ((dict,), "an object")}


def _check_fields(record: Mapping[str, Any], where: str) -> None:
    """Each field of a turn, of its type: a ``turn`` that is not a number split the dialogue silently, and a
    topic that is an object crashed the import (a warning, then pytest's "not found")."""
    number = record.get("turn")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise EvolifFormatError(f"{where}: turn: expected a turn number (1, 2, ...), got {number!r:.60}")
    for field, (types, expected) in _FIELD_TYPES.items():
        value = record.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise EvolifFormatError(f"{where}: {field}: expected {expected}, got {value!r:.60}")


def dialogue_instance(turns: Sequence[dict[str, Any]], instance_id: str, source: str,
                      patience: int = PATIENCE) -> dict[str, Any]:
    out_turns = []
    unverified = []
    for position, record in enumerate(turns, start=1):
        where = f"{source}: line {record.get('_line', position)}"
        _check_fields(record, where)
        text = record.get("user_query_verified") or ""
        if not isinstance(text, str) or not text.strip():
            text = record.get("user_query")
            unverified.append(position)
        if not isinstance(text, str) or not text.strip():
            raise EvolifFormatError(f"{where}: the turn has no user_query_verified or user_query text")
        instructions = record.get("instructions") or []
        if not isinstance(instructions, list):
            raise EvolifFormatError(f"{where}: 'instructions' must be a list")
        checks: list[dict[str, Any]] = []
        for instruction in instructions:
            check = _check(instruction, where)
            taken = {c["id"] for c in checks}
            base, n = check["id"], 2
            while check["id"] in taken:
                check["id"] = f"{base}-{n}"
                n += 1
            checks.append(check)
        out_turns.append({"user": text, "checks": checks})
    style = turns[0].get("style") if isinstance(turns[0].get("style"), dict) else {}
    metadata: dict[str, Any] = {
        "patience": patience, "source": source,
        "topics": list(dict.fromkeys(t.get("active_topic") for t in turns if t.get("active_topic") is not None)),
        "persona": style.get("uuid"), "styles": list(style.get("styles") or []),
    }
    if unverified:
        metadata["unverified_turns"] = unverified
    return {"id": instance_id, "metadata": metadata, "turns": out_turns}


def suite_from_files(paths: Sequence[Path], *, patience: int = PATIENCE, max_tokens: int | None = None,
                     system_prompt: str = "authors", markers: Sequence[str] = ()) -> dict[str, Any]:
    from .assemble import suite_defaults
    from .settings import AUTHORS_TEMPERATURE, SYSTEM_PROMPTS, system_defaults

    if system_prompt not in SYSTEM_PROMPTS:
        raise EvolifFormatError(f"system prompt: expected one of {', '.join(SYSTEM_PROMPTS)}, got {system_prompt!r}")
    defaults = suite_defaults(patience=patience, max_tokens=max_tokens, system=False, markers=markers)
    # An explicit null: a missing key would leave the core's default (1024) in place, and eval.py sends none.
    defaults["generation"] = {"temperature": AUTHORS_TEMPERATURE, "max_tokens": max_tokens or None}
    system_defaults(defaults, system_prompt)
    instances = []
    seen: set[str] = set()
    for path in paths:
        dialogues = split_dialogues(read_turns(path))
        for number, turns in enumerate(dialogues, start=1):
            base = _slug(path.stem) + (f".{number}" if len(dialogues) > 1 else "")
            instance_id, n = base, 2
            while instance_id in seen:
                instance_id = f"{base}-{n}"
                n += 1
            seen.add(instance_id)
            instances.append(dialogue_instance(turns, instance_id, path.name, patience))
    return {
        "ifbench": 1, "benchmark": "evolif",
        "description": "Official EvolIF dialogues: " + ", ".join(p.name for p in paths),
        "defaults": defaults,
        "instances": instances,
    }


def read(path: Path, options: ReadOptions) -> Mapping[str, Any] | None:
    """The core's official reader (cached per file content): :func:`suite_data` with ``--evolif-compat``."""
    return suite_data(path, options.compat)


def suite_data(path: Path, compat: str | None = None) -> Mapping[str, Any] | None:
    """Suite data for an official EvolIF dialogue file (``compat``: ``--evolif-compat``), or an EvolIF
    suite YAML with ``options.system_prompt`` applied (the core applies ``compat`` to YAML suites); else None."""
    if not is_official(path):
        from .compat import suite_yaml

        return suite_yaml(path)
    try:
        data = suite_from_files([path])
    except EvolifFormatError as exc:
        raise SuiteError(path, str(exc).removeprefix(f"{path}: ")) from None
    if compat is not None:
        from .compat import apply_compat

        apply_compat(data, flag=compat, default=None)
    return data
