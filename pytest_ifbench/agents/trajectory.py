"""Agent trajectories: everything one agent run saw and did, as data verifiers can query.

A :class:`Trajectory` is ``{meta, tools, messages}`` -- the normalized form of the authors' harness
(GitHub MiniMax-AI/mini-vela), so ``to_json()`` is readable by their judge -- plus ``id``, ``parent``,
``parent_call_id`` and nested ``children`` (sub-agent conversations).

Rules:

- ``tools`` are OpenAI function tools ``{type: function, function: {name, description, parameters}}``;
  ``parameters`` is the tool's whole JSON schema.
- Every message keeps all its original blocks, in order, in ``blocks`` (``text | thinking | tool_use |
  tool_result | image``; other block types pass through; only the transport keys ``cache_control`` and
  ``signature`` are dropped). ``content`` joins all non-empty text blocks with a blank line,
  ``reasoning_content`` all thinking blocks.
- Assistant messages carry a 1-based ``turn`` and OpenAI ``tool_calls`` (``arguments`` a JSON string);
  ``generation`` is False when the message was only seen in a later request's history, not as a response:
  :meth:`Trajectory.tool_calls` leaves such a message's calls out unless asked (``history=True``), so a
  conversation the agent rewrote on disk between turns cannot earn it calls it never made.
- A ``tool`` message answers exactly one call: ``tool_call_id``, ``tool_name``, ``is_error``.

Where we differ from the authors' converter (``convert/utils.py`` there):

- all blocks are kept: an assistant reply [thinking A, text "Plan", thinking B, text "Done"] gives
  ``content`` "Plan\\n\\nDone" and ``reasoning_content`` "A\\n\\nB" (theirs: "Done" and "B"; a history
  message with two thinking blocks makes theirs drop the whole conversation).
- tool calls keep their ids: ``{"id": "toolu_1", "type": "function", "function": {"name": "Read",
  "arguments": "{\\"file_path\\": \\"a.py\\"}"}}`` (theirs: ``{"name": "Read", "arguments": {...}}``), and
  each tool message names the call it answers (theirs: only ``tool_name``).
- ``parameters`` is the full ``input_schema`` (theirs keeps only ``properties`` and ``required``, losing
  e.g. ``additionalProperties: false``).
- sub-agents are ``children`` linked to the call that spawned them (theirs: separate, unlinked records).

:func:`messages_from_json` also reads the authors' messages (ids are then synthesised as
``call_<turn>_<k>`` and tool messages are matched to the pending calls in order).
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .._atomic_file import replace_file
from .._redact import redact

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
#: Keys that only steer the transport (prompt caching, thinking signatures); dropped from blocks.
TRANSPORT_KEYS = frozenset({"cache_control", "signature"})


def normalize_block(block: Any) -> dict[str, Any]:
    """One content block in our form (a bare string is a text block)."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if not isinstance(block, Mapping):
        raise ValueError(f"a content block must be an object or a string, not {type(block).__name__}")
    out = {key: copy.deepcopy(value) for key, value in block.items() if key not in TRANSPORT_KEYS}
    kind = out.get("type")
    if kind == "redacted_thinking":  # encrypted reasoning: the block is kept, its opaque payload is not
        return {"type": "thinking", "thinking": "", "redacted": True}
    if kind == "text":
        out["text"] = str(out.get("text") or "")
    elif kind == "thinking":
        out["thinking"] = str(out.get("thinking") or "")
    elif kind == "tool_use":
        out["input"] = out.get("input") if out.get("input") is not None else {}
    elif kind == "tool_result":
        if isinstance(out.get("content"), list):
            out["content"] = [normalize_block(item) for item in out["content"]]
        out["is_error"] = bool(out.get("is_error", False))
    return out


def blocks_of(content: Any) -> tuple[dict[str, Any], ...]:
    """The blocks of Anthropic/OpenAI message content: None, a string or a list of blocks."""
    if content is None or content == "":
        return ()
    if isinstance(content, str | Mapping):
        return (normalize_block(content),)
    return tuple(normalize_block(block) for block in content)


def text_of(blocks: Iterable[Mapping[str, Any]], kind: str = "text") -> str:
    """The non-empty ``text`` (or ``thinking``) of ``blocks`` of that type, joined by a blank line."""
    return "\n\n".join(b[kind] for b in blocks if b.get("type") == kind and b.get(kind))


def result_text(block: Mapping[str, Any]) -> str:
    """The text of a ``tool_result`` block (its content is a string or a list of blocks)."""
    content = block.get("content")
    return content if isinstance(content, str) else text_of(blocks_of(content))


def openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool definition (Anthropic ``input_schema``, OpenAI function, or bare) in OpenAI function form."""
    spec = tool.get("function") if tool.get("type") == "function" else tool
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise ValueError(f"a tool needs a name: {json.dumps(tool)[:200]}")
    schema = spec.get("parameters", spec.get("input_schema"))
    return {"type": "function", "function": {
        "name": spec["name"], "description": spec.get("description") or "",
        "parameters": copy.deepcopy(schema) if schema is not None else {"type": "object", "properties": {}}}}


def openai_call(call: Mapping[str, Any], default_id: str | None = None) -> dict[str, Any]:
    """A tool call -- OpenAI form, ``{id, name, arguments}`` (object or JSON string) or a ``tool_use``
    block -- in OpenAI form; ``default_id`` when it has none."""
    spec = call.get("function") if isinstance(call.get("function"), Mapping) else call
    arguments = spec.get("arguments", spec.get("input", call.get("input", {})))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": call.get("id") or default_id, "type": "function",
            "function": {"name": str(spec.get("name") or ""), "arguments": arguments}}


#: How deep tool-call arguments may nest (objects and arrays); real tools' arguments stay below 10.
MAX_ARGUMENT_DEPTH = 64


def too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit`` (iteratively: no recursion). Also the
    proxy's bound on a request body (:mod:`.proxy_bounds`)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


class ArgumentsError(ValueError):
    """Tool-call arguments that are JSON but no tool can take: nested too deeply, or holding NaN/Infinity."""


def _constant(name: str) -> Any:
    raise ArgumentsError(f"{name} is not valid JSON")


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ArgumentsError(f"the number {text[:40]} is out of range")
    return value


def loads_arguments(raw: str) -> Any:
    """Tool-call arguments text parsed as strict JSON (raises ``ValueError``; :class:`ArgumentsError` when the
    text is JSON only to a lenient parser -- ``NaN``, ``Infinity``, a number out of range -- or nests past
    :data:`MAX_ARGUMENT_DEPTH`).

    Whatever parses here can be copied, dumped and walked recursively without a ``RecursionError``."""
    try:
        value = json.loads(raw, parse_constant=_constant, parse_float=_float)
    except RecursionError:
        raise ArgumentsError(f"the arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels") from None
    if too_deep(value, MAX_ARGUMENT_DEPTH):
        raise ArgumentsError(f"the arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    return value


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    try:
        value = loads_arguments(call["function"]["arguments"] or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a trajectory (fields that do not apply to a role keep their defaults)."""

    role: Role
    content: str = ""
    blocks: tuple[Mapping[str, Any], ...] = ()
    #: assistant only
    reasoning_content: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    turn: int | None = None
    generation: bool = True
    #: tool only
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False

    @classmethod
    def from_blocks(cls, role: Role, blocks: Iterable[Mapping[str, Any]], **fields: Any) -> Message:
        """A message whose ``content`` (and for an assistant ``reasoning_content``/``tool_calls``) derive
        from ``blocks``; a tool message's blocks are its one ``tool_result`` block."""
        blocks = tuple(normalize_block(b) for b in blocks)
        if role == "tool":
            result = next((b for b in blocks if b.get("type") == "tool_result"), {})
            fields = {"tool_call_id": result.get("tool_use_id"), "is_error": bool(result.get("is_error")), **fields}
            return cls(role=role, content=result_text(result), blocks=blocks, **fields)
        if role == "assistant":
            fields = {"reasoning_content": text_of(blocks, "thinking"),
                      "tool_calls": tuple(openai_call(b) for b in blocks if b.get("type") == "tool_use"), **fields}
        return cls(role=role, content=text_of(blocks), blocks=blocks, **fields)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == "assistant":
            out["reasoning_content"] = self.reasoning_content
            if self.tool_calls:
                out["tool_calls"] = copy.deepcopy([dict(c) for c in self.tool_calls])
            out |= {"turn": self.turn, "generation": self.generation}
        elif self.role == "tool":
            out |= {"tool_call_id": self.tool_call_id, "tool_name": self.tool_name, "is_error": self.is_error}
        out["blocks"] = copy.deepcopy([dict(b) for b in self.blocks])
        return out


def messages_from_json(items: Iterable[Mapping[str, Any]]) -> tuple[Message, ...]:
    """Messages written by :meth:`Message.to_json` or by the authors' converter (see the module doc)."""
    out: list[Message] = []
    pending: list[Mapping[str, Any]] = []  # calls of the last assistant message not answered yet
    names: dict[str, str] = {}
    turn = 0
    for index, data in enumerate(items):
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"message {index}: role must be one of {', '.join(ROLES)}, not {role!r}")
        content = data.get("content")
        blocks = blocks_of(data["blocks"]) if data.get("blocks") is not None else None
        if role == "assistant":
            turn += 1
            calls = [openai_call(c, f"call_{turn}_{k}") for k, c in enumerate(data.get("tool_calls") or ())]
            if blocks is None:
                blocks = blocks_of([{"type": "thinking", "thinking": data.get("reasoning_content") or ""}]
                                   if data.get("reasoning_content") else []) + blocks_of(content) + tuple(
                    {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": _arguments(c)}
                    for c in calls)
            pending = list(calls)
            names |= {c["id"]: c["function"]["name"] for c in calls}
            out.append(Message(role=role, content=content if isinstance(content, str) else text_of(blocks),
                               blocks=blocks, reasoning_content=data.get("reasoning_content") or "",
                               tool_calls=tuple(calls), turn=data.get("turn") or turn,
                               generation=bool(data.get("generation", True))))
        elif role == "tool":
            call_id, name = data.get("tool_call_id"), data.get("tool_name")
            match = next((c for c in pending if c["id"] == call_id or not call_id and (
                name is None or c["function"]["name"] == name)), None)
            if match is not None:
                pending.remove(match)
                call_id = call_id or match["id"]
            name = name or names.get(call_id or "")
            if blocks is None:
                blocks = ({"type": "tool_result", "tool_use_id": call_id, "is_error": bool(data.get("is_error")),
                           "content": content if isinstance(content, str) else list(blocks_of(content))},)
            out.append(Message(role=role, content=content if isinstance(content, str) else text_of(blocks_of(content)),
                               blocks=blocks, tool_call_id=call_id, tool_name=name,
                               is_error=bool(data.get("is_error", False))))
        else:
            blocks = blocks if blocks is not None else blocks_of(content)
            out.append(Message(role=role, content=content if isinstance(content, str) else text_of(blocks),
                               blocks=blocks))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call of a trajectory with where it happened and what answered it."""

    #: OpenAI form ``{id, type: function, function: {name, arguments}}``.
    call: Mapping[str, Any]
    #: 0-based position among the trajectory's calls.
    index: int
    turn: int | None
    #: The tool message answering it; None if the run ended (or was killed) before the result.
    result: Message | None = None
    #: False when its message was only seen in a later request's history (``Message.generation``).
    generated: bool = True

    @property
    def id(self) -> str | None:
        return self.call.get("id")

    @property
    def name(self) -> str:
        return self.call["function"]["name"]

    @property
    def arguments(self) -> dict[str, Any]:
        """The parsed arguments; ``{}`` when they are not a JSON object (the raw text stays in ``call``)."""
        return _arguments(self.call)


@dataclass(frozen=True, slots=True, kw_only=True)
class Trajectory:
    """One agent conversation; sub-agent conversations are ``children``."""

    id: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[Mapping[str, Any], ...] = ()
    messages: tuple[Message, ...] = ()
    children: tuple[Trajectory, ...] = ()
    #: The parent trajectory's id, and the id of the parent's tool call that spawned this one when known.
    parent: str | None = None
    parent_call_id: str | None = None

    def assistant_turns(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.role == "assistant")

    def tool_calls(self, *, history: bool = False) -> tuple[ToolCall, ...]:
        """The calls the model made: those of replies it generated (``Message.generation``); with ``history``
        also those seen only in a later request's history (which the agent may have rewritten)."""
        results: dict[str, Message] = {}
        for message in self.messages:
            if message.role == "tool" and message.tool_call_id:
                results.setdefault(message.tool_call_id, message)
        calls = [(m, c) for m in self.messages if m.role == "assistant" and (history or m.generation)
                 for c in m.tool_calls]
        return tuple(ToolCall(call=c, index=i, turn=m.turn, result=results.get(c.get("id") or ""),
                              generated=m.generation) for i, (m, c) in enumerate(calls))

    def calls_to(self, name: str, *, history: bool = False) -> tuple[ToolCall, ...]:
        return tuple(call for call in self.tool_calls(history=history) if call.name == name)

    def final_text(self) -> str:
        """The text of the last assistant message ("" when it only called tools or there is none)."""
        turns = self.assistant_turns()
        return turns[-1].content if turns else ""

    def user_texts(self) -> tuple[str, ...]:
        return tuple(m.content for m in self.messages if m.role == "user" and m.content)

    def system_text(self) -> str:
        """Every system message's text (a prompt that changed mid-run appears again), blank-line joined."""
        return "\n\n".join(m.content for m in self.messages if m.role == "system" and m.content)

    def walk(self) -> Iterator[Trajectory]:
        """This trajectory and all its descendants, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def to_json(self) -> dict[str, Any]:
        return {"meta": copy.deepcopy(dict(self.meta)), "tools": copy.deepcopy([dict(t) for t in self.tools]),
                "messages": [m.to_json() for m in self.messages], "id": self.id, "parent": self.parent,
                "parent_call_id": self.parent_call_id, "children": [c.to_json() for c in self.children]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, default_id: str = "trajectory") -> Trajectory:
        """Ours, or the authors' ``{meta, tools, messages}`` (``id`` then defaults to ``default_id``)."""
        if not isinstance(data.get("messages"), list):
            raise ValueError('a trajectory needs a "messages" list')
        ident = data.get("id") or default_id
        return cls(id=ident, meta=dict(data.get("meta") or {}),
                   tools=tuple(openai_tool(t) for t in data.get("tools") or ()),
                   messages=messages_from_json(data["messages"]),
                   children=tuple(cls.from_json(c, default_id=f"{ident}/{n}")
                                  for n, c in enumerate(data.get("children") or (), start=1)),
                   parent=data.get("parent"), parent_call_id=data.get("parent_call_id"))


def strings_in(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (tool-call arguments), depth first, as written."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (secrets redacted, as in every file the run writes) so a reader never
    sees a half-written file."""
    replace_file(path, redact(text))


class TrajectoryBuilder:
    """Records a run as it happens (used by our own tool loop).

    With ``path`` the trajectory so far is rewritten atomically after every step, so a killed run
    leaves a readable partial trajectory: one JSON line for ``*.jsonl`` (what :func:`load_normalized`
    reads), indented JSON otherwise.
    """

    def __init__(self, *, id: str, meta: Mapping[str, Any] | None = None, tools: Iterable[Mapping[str, Any]] = (),
                 path: str | os.PathLike[str] | None = None, parent: str | None = None,
                 parent_call_id: str | None = None, autosave: bool = True) -> None:
        #: Rewrite the file after every message; with False the caller calls :meth:`checkpoint`
        #: once per step (a step is a reply and its tool results: one write instead of several).
        self.autosave = autosave
        self.id, self.parent, self.parent_call_id = id, parent, parent_call_id
        self.meta: dict[str, Any] = dict(meta or {})
        self.tools = [openai_tool(t) for t in tools]
        self.path = Path(path) if path is not None else None
        self._messages: list[Message] = []
        self._children: list[Trajectory] = []
        self._calls: dict[str, str] = {}  # call id -> tool name
        self._turn = 0
        self._save()

    def system(self, content: str | Sequence[Mapping[str, Any]]) -> Message:
        return self._add(Message.from_blocks("system", blocks_of(content)))

    def user(self, content: str | Sequence[Mapping[str, Any]]) -> Message:
        return self._add(Message.from_blocks("user", blocks_of(content)))

    def assistant(self, text: str = "", *, reasoning: str = "",
                  tool_calls: Iterable[Mapping[str, Any]] = ()) -> Message:
        """A model reply; ``tool_calls`` in OpenAI form, ``{id, name, arguments}`` or ``tool_use`` blocks."""
        self._turn += 1
        calls = [openai_call(c, f"call_{self._turn}_{k}") for k, c in enumerate(tool_calls)]
        blocks = ([{"type": "thinking", "thinking": reasoning}] if reasoning else []) + \
                 ([{"type": "text", "text": text}] if text else []) + \
                 [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": _arguments(c)}
                  for c in calls]
        self._calls |= {c["id"]: c["function"]["name"] for c in calls}
        # The calls keep their exact arguments text even when it is not valid JSON.
        return self._add(replace(Message.from_blocks("assistant", blocks, turn=self._turn), tool_calls=tuple(calls)))

    def tool(self, call_id: str, content: str | Sequence[Mapping[str, Any]], *, name: str | None = None,
             is_error: bool = False) -> Message:
        """The result of call ``call_id`` (its tool name is looked up when not given)."""
        if call_id not in self._calls:
            raise ValueError(f"no tool call {call_id!r} to answer (known: {sorted(self._calls)})")
        block = {"type": "tool_result", "tool_use_id": call_id, "is_error": is_error,
                 "content": content if isinstance(content, str) else list(content)}
        return self._add(Message.from_blocks("tool", [block], tool_name=name or self._calls[call_id]))

    def add_child(self, child: Trajectory) -> None:
        """A sub-agent's trajectory; its ``parent`` becomes this run's id."""
        self._children.append(replace(child, parent=self.id))
        self._save()

    def build(self) -> Trajectory:
        return Trajectory(id=self.id, meta=dict(self.meta), tools=tuple(self.tools), messages=tuple(self._messages),
                          children=tuple(self._children), parent=self.parent, parent_call_id=self.parent_call_id)

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the trajectory so far to ``path`` (atomic replace) and return it."""
        path = Path(path)
        data = self.build().to_json()
        if path.suffix == ".jsonl":
            write_atomic(path, json.dumps(data, ensure_ascii=False) + "\n")
        else:
            write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return path

    def _add(self, message: Message) -> Message:
        self._messages.append(message)
        if self.autosave:
            self._save()
        return message

    def checkpoint(self) -> None:
        """Write the trajectory so far (when built with a ``path``)."""
        self._save()

    def _save(self) -> None:
        if self.path is not None:
            self.write(self.path)
