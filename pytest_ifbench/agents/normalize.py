"""Raw proxy logs to trajectories: one per session, sub-agent conversations as linked children.

Input: the recording proxy's JSONL (ours and the authors' logger write the same format), one record per
model call: ``session_id``, ``request_time``, ``request_body`` {system, messages, tools, model, ...} and
``response_body`` {content: [thinking | text | tool_use blocks]}; either body may be JSON-encoded text.

Rules, per session (``session_id``):

1. Records with the same request and response (canonical JSON, ``request_time`` ignored) are one call:
   the authors' logger writes each call 2-4 times.
2. Calls are ordered by ``request_time`` (then log order). A call whose request messages plus its response
   start a later call's request messages continues in that call; such chains are threads, rebuilt from their
   last call: its request messages plus its response. Messages are compared without the transport keys
   ``cache_control``/``signature`` and without thinking blocks (clients move cache marks, re-sign or drop
   thinking).
3. An assistant message is taken from the logged response of the call that produced it when there is one
   (all its blocks; ``generation`` True), else from the later request's history (``generation`` False: its
   tool calls are credited to no check, see :meth:`.Trajectory.tool_calls`). Only responses are what the model
   said; history is what the CLI resent, read back from files the agent's own tools can write (Claude Code's
   ``~/.claude/projects/*/*.jsonl`` between ``claude -p`` and ``claude -p -c``). So an assistant message in a
   request's history where an earlier call with exactly the history before it got another reply is a
   **rewrite**: the message is replaced by that logged reply (the one sharing a tool-call id, else the latest)
   before calls are chained, and the thread's ``meta["history_rewrites"]`` records it -- ``request_time`` of
   the first call that carried it, ``turn``, the ``history`` blocks and the ``logged`` ones, ``answered_at``
   (that reply's call). A history-only message reusing the id of a logged tool call with other contents is
   recorded the same way (it has no request to be repaired by). Thinking, empty text and transport keys are
   ignored as in rule 2, so a CLI dropping them rewrites nothing. A tool result is the one the first request
   carrying it sent (:mod:`.sent_results`); another text later is recorded too, with ``tool_result`` (the call id).
4. A call whose request a later call with the same system prompt contains, but not its response (a retry, an
   abandoned branch), adds no message; its response is kept in ``meta["abandoned"]`` with the index of the
   message it would have followed.
5. A thread whose first user message holds a string argument of an earlier tool call (Claude Code's ``Task``
   ``prompt``, Kilo's ``new_task`` ``message``; exact text block first, else contained if >= 40 characters) or
   whose final text is in that call's result is a sub-agent: a child of the calling thread, ``parent_call_id``
   that call's id, ``meta["link"] = "tool_call"`` (only a call of a reply the relay saw spawns). The main
   thread is the unspawned one with the most generated assistant turns (rule 3) in its tree (then most tools,
   most messages, earliest): history alone, however long, never makes a thread the main one. Other unspawned
   threads (Claude Code's warm-up calls, side calls) are linked by time: children of the main thread with
   ``parent_call_id`` None and ``meta["link"] = "time"``. Children are ordered by start time; ids are
   ``<session>/<n>``, nested.
6. If the system prompt changes within a thread, a system message is inserted before the first reply under it;
   ``tools`` are the union of the thread's calls' tools (by name, first-seen order, latest definition).
7. A record with ``"refused"`` (a request the recording proxy refused: not the agent CLI's own, or out of
   bounds; both bodies null) is no call: it cannot become a message or a thread, so no forged conversation
   can be the main one. Its event lands, in log order, in the session's main trajectory's
   ``meta["refused_requests"]`` (a session of refusals alone gives an empty trajectory carrying them).
   A refusal of kind ``limit`` (the run reached ``max_steps``, ``max_tokens``, ``max_seconds`` or ``max_cost``)
   also sets ``meta["stop_reason"]`` (the limit, the loop's name for it) and ``meta["stop_message"]`` (what
   the CLI was told), so a trajectory rebuilt from the raw log alone says why the run ended.

Where we deliberately differ from the authors' converter (``convert/`` in GitHub MiniMax-AI/mini-vela):

- nothing is dropped for being short: a run that read one file and answered (2 assistant turns) is kept
  (theirs drops conversations with fewer than 3 assistant turns by default);
- sub-agents are children linked to their ``Task`` call: ``Trajectory(id="s/2", parent="s",
  parent_call_id="toolu_1")`` (theirs: separate records, never judged);
- a retry is kept, not silently dropped: requests [u] -> "attempt one", [u] -> "attempt two", [u, "attempt two",
  u2] -> "ok" give turns "attempt two", "ok" and ``meta["abandoned"]`` holding "attempt one";
- user text blocks stay separate blocks: ["<system-reminder>..</system-reminder>\\n", "Warmup"] has content
  "..</system-reminder>\\n\\n\\nWarmup" and two blocks (theirs glues them: "..</system-reminder>\\nWarmup");
- every block of every reply is kept (see :mod:`.trajectory`), and no length truncation happens here.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from os import PathLike
from pathlib import Path
from typing import Any

from ..suite.jsonl import JsonlError, iter_jsonl
from .sent_results import ResultRewrite, SentResults
from .trajectory import Message, Trajectory, blocks_of, openai_tool, strings_in

#: A tool-call argument that is only contained in (not equal to) a sub-agent's first message must be this long.
SPAWN_MIN_CHARS = 40


class TrajectoryFileError(ValueError):
    """A raw or normalized trajectory file that cannot be read; the message names the file and line."""


@dataclass(eq=False, slots=True)
class _Call:
    order: int
    time: float
    session: str
    biz_id: str
    body: dict[str, Any]
    system: tuple[dict[str, Any], ...]
    messages: list[tuple[str, tuple[dict[str, Any], ...]]]  # (role, blocks)
    response: tuple[dict[str, Any], ...]
    records: int = 1
    rank: int = 0
    ids: list[int] = field(default_factory=list)  # ids[n]: the id of the first n request messages
    rewrites: list[tuple[int, tuple[dict[str, Any], ...], _Call]] = field(default_factory=list)  # rule 3
    result_rewrites: list[ResultRewrite] = field(default_factory=list)  # rule 3, tool results
    ext: int | None = None  # the id of the request messages plus the response
    succ: _Call | None = None


@dataclass(eq=False, slots=True)
class _Thread:
    end: _Call
    start: float
    meta: dict[str, Any]
    tools: tuple[dict[str, Any], ...]
    messages: tuple[Message, ...]
    uses: list[tuple[dict[str, Any], float, str]]  # (tool_use block, time of its call, result text)
    spawner: tuple[_Thread, str] | None = None
    children: list[_Thread] = field(default_factory=list)


def _body(value: Any, name: str, *, optional: bool = False) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{name} is text but not JSON: {exc}") from None
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object")
    return value


def _time(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
    return 0.0


def _parse(record: Any, order: int) -> _Call:
    """One call from one raw record; ValueError saying what is wrong."""
    if not isinstance(record, Mapping):
        raise ValueError("a record must be a JSON object")
    request = _body(record.get("request_body"), "request_body")
    response = _body(record.get("response_body"), "response_body", optional=True)
    if not isinstance(request.get("messages"), list):
        raise ValueError('request_body needs a "messages" list')
    messages = []
    for n, message in enumerate(request["messages"]):
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"request_body.messages[{n}] needs a role system, user or assistant")
        messages.append((message["role"], blocks_of(message.get("content"))))
    try:
        time = _time(record.get("request_time"))
    except ValueError:
        raise ValueError(f"request_time {record.get('request_time')!r} is neither a number nor an ISO time") from None
    return _Call(order=order, time=time, session=str(record.get("session_id") or ""),
                 biz_id=str(record.get("biz_id") or ""), body=request, system=blocks_of(request.get("system")),
                 messages=messages, response=blocks_of(response.get("content")))


def _digest(record: Mapping[str, Any], call: _Call) -> str:
    payload = [call.session, call.body, _body(record.get("response_body"), "response_body", optional=True)]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _key(role: str, blocks: Iterable[Mapping[str, Any]]) -> str:
    kept = [b for b in blocks if b.get("type") != "thinking" and not (b.get("type") == "text" and not b["text"])]
    return json.dumps([role, kept], sort_keys=True, ensure_ascii=False, default=str)


def refusal(record: Any) -> dict[str, Any] | None:
    """The event of a refused-request record (rule 7), or None for a model call; ValueError if malformed."""
    if not isinstance(record, Mapping) or "refused" not in record:
        return None
    event = record["refused"]
    if not isinstance(event, Mapping):
        raise ValueError('"refused" must be an object')
    return {**event, "time": record.get("request_time")}


def _limit_stop(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``stop_reason`` and ``stop_message`` from the first ``limit`` refusal (rule 7), or nothing."""
    for event in events:
        if event.get("kind") == "limit":
            return {"stop_reason": str(event.get("limit") or "limit"), "stop_message": event.get("reason")}
    return {}


def normalize(records: Iterable[Mapping[str, Any]]) -> list[Trajectory]:
    """One trajectory per session (in order of first appearance) from raw proxy records (see the module doc)."""
    sessions: dict[str, list[_Call]] = {}
    refused: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, _Call] = {}
    for order, record in enumerate(records):
        try:
            event = refusal(record)
            if event is not None:
                session = str(record.get("session_id") or "")
                sessions.setdefault(session, [])
                refused.setdefault(session, []).append(event)
                continue
            call = _parse(record, order)
        except ValueError as exc:
            raise ValueError(f"record {order}: {exc}") from None
        digest = _digest(record, call)
        if digest in seen:
            seen[digest].records += 1
            continue
        seen[digest] = call
        sessions.setdefault(call.session, []).append(call)
    out = []
    for session, calls in sessions.items():
        trajectory = _session(session, calls) if calls else Trajectory(id=session or "session")
        if session in refused:
            trajectory = replace(trajectory, meta={**trajectory.meta, "refused_requests": refused[session],
                                                   **_limit_stop(refused[session])})
        out.append(trajectory)
    return out


def _uses(blocks: Iterable[Mapping[str, Any]]) -> set[str]:
    return {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}


def _answered(asked: list[_Call], blocks: tuple[dict[str, Any], ...]) -> _Call:
    """Of the earlier calls asked what a rewritten reply answers, the one whose reply it was (shared tool-call
    ids), else the latest."""
    ids = _uses(blocks)
    return next((c for c in reversed(asked) if ids & _uses(c.response)), asked[-1])


def _session(session: str, calls: list[_Call]) -> Trajectory:
    calls.sort(key=lambda c: (c.time, c.order))
    trie: dict[tuple[int, str], int] = {}
    containing: dict[int, list[_Call]] = defaultdict(list)  # prefix id -> calls whose request has it, by time
    producers: dict[int, _Call] = {}  # request-plus-response id -> the (first) call that produced it
    asked: dict[int, list[_Call]] = defaultdict(list)  # request id -> the earlier calls with that request
    sent = SentResults()
    for rank, call in enumerate(calls):
        call.rank, call.ids = rank, [0]
        for n, (role, blocks) in enumerate(call.messages):
            if role == "user":  # each tool result as first sent (rule 3)
                blocks, rewritten = sent.restore(n, blocks, call.time)
                call.messages[n] = (role, blocks)
                call.result_rewrites += rewritten
            key = _key(role, blocks)
            if role == "assistant" and asked.get(call.ids[-1]) and producers.get(trie.get((call.ids[-1], key))) is None:
                # The relay saw the model answer this very request otherwise: the history was rewritten (rule 3).
                logged = _answered(asked[call.ids[-1]], blocks)
                call.rewrites.append((n, blocks, logged))
                call.messages[n] = ("assistant", logged.response)
                key = _key("assistant", logged.response)
            call.ids.append(trie.setdefault((call.ids[-1], key), len(trie) + 1))
            containing[call.ids[-1]].append(call)
        if call.response:
            call.ext = trie.setdefault((call.ids[-1], _key("assistant", call.response)), len(trie) + 1)
            producers.setdefault(call.ext, call)
            asked[call.ids[-1]].append(call)
    for call in calls:
        if call.ext is not None and containing.get(call.ext):
            call.succ = containing[call.ext][0]

    def container(call: _Call) -> _Call | None:
        """A longer, or as long and later, call with the same system prompt whose request contains this one's."""
        return next((other for other in containing.get(call.ids[-1], ()) if other is not call
                     and other.system == call.system and (len(other.ids) > len(call.ids) or other.rank > call.rank)),
                    None) if len(call.ids) > 1 else None

    groups: dict[int, tuple[_Call, list[_Call], list[_Call]]] = {}  # end rank -> (end, members, abandoned)
    for call in calls:
        end, abandoned = call, call.succ is None and container(call) is not None
        while (step := end.succ or container(end)) is not None:
            end = step
        group = groups.setdefault(end.rank, (end, [], []))
        group[1].append(call)
        if abandoned:
            group[2].append(call)
    replies = {str(b.get("id")): (c, b) for c in calls for b in c.response if b.get("type") == "tool_use"}
    threads = [_thread(session, end, members, abandoned, producers, replies)
               for end, members, abandoned in groups.values()]
    return _tree(_link(threads), session or "session", None, None, None)


def _rewrites(members: list[_Call], items: list[tuple[str, tuple[dict[str, Any], ...], _Call | None]],
              turns: list[int | None], replies: Mapping[str, tuple[_Call, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The thread's assistant messages whose history contradicts what the relay saw the model answer, then its
    tool results whose history contradicts what was first sent (rule 3)."""
    found: dict[int, dict[str, Any]] = {}
    results: dict[tuple[int, str], dict[str, Any]] = {}
    for call in members:  # each member's request is a prefix of the thread's: the same message indices
        for n, history, logged in call.rewrites:
            found.setdefault(n, {"request_time": call.time, "turn": turns[n], "history": [dict(b) for b in history],
                                 "logged": [dict(b) for b in logged.response], "answered_at": logged.time})
        for rewrite in call.result_rewrites:  # after the assistant turn whose call it answers
            results.setdefault((rewrite.message, rewrite.call_id), {
                "request_time": call.time, "turn": max((t for t in turns[:rewrite.message] if t), default=None),
                "tool_result": rewrite.call_id, "history": [rewrite.history],
                "logged": [rewrite.sent], "answered_at": rewrite.sent_at})
    for n, (role, blocks, producer) in enumerate(items):
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        if role != "assistant" or producer is not None or n in found:
            continue
        seen = next((replies[str(b.get("id"))] for b in uses if str(b.get("id")) in replies
                     and _key("assistant", [replies[str(b.get("id"))][1]]) != _key("assistant", [b])), None)
        if seen is not None:  # a call id the model gave to another call: no request to repair it by
            found[n] = {"request_time": min(c.time for c in members), "turn": turns[n],
                        "history": [dict(b) for b in blocks], "logged": [dict(b) for b in seen[0].response],
                        "answered_at": seen[0].time}
    return [found[n] for n in sorted(found)] + [results[key] for key in sorted(results)]


def _thread(session: str, end: _Call, members: list[_Call], abandoned: list[_Call],
            producers: dict[int, _Call], replies: Mapping[str, tuple[_Call, dict[str, Any]]]) -> _Thread:
    raw = end.messages + ([("assistant", end.response)] if end.response else [])
    ids = end.ids + ([end.ext] if end.response else [])
    items: list[tuple[str, tuple[dict[str, Any], ...], _Call | None]] = []
    for n, (role, blocks) in enumerate(raw):
        producer = (end if n == len(end.messages) else producers.get(ids[n + 1])) if role == "assistant" else None
        if producer is not None and len(producer.response) >= len(blocks):
            blocks = producer.response  # the logged reply: history may have lost blocks (thinking)
        items.append((role, blocks, producer))
    names = {b.get("id"): b.get("name") for role, blocks, _ in items if role == "assistant"
             for b in blocks if b.get("type") == "tool_use"}
    system = next((p.system for role, _, p in items if p is not None), end.system)
    messages: list[Message] = [Message.from_blocks("system", system)] if system else []
    before: list[int] = []  # before[n]: how many of our messages precede raw message n
    times: list[float] = []  # per assistant message: when the call that produced it was made
    turns: list[int | None] = []  # per raw message: its turn (assistant messages)
    turn = 0
    for role, blocks, producer in items:
        before.append(len(messages))
        turns.append(turn + 1 if role == "assistant" else None)
        if role == "assistant":
            if producer is not None and producer.system != system:
                system = producer.system
                messages.append(Message.from_blocks("system", system))
            turn += 1
            times.append(producer.time if producer is not None else members[0].time)
            messages.append(Message.from_blocks("assistant", blocks, turn=turn, generation=producer is not None))
        elif role == "user":
            pending: list[dict[str, Any]] = []
            results = [b for b in blocks if b.get("type") == "tool_result"]
            for block in blocks:
                if block.get("type") != "tool_result":
                    pending.append(block)
                    continue
                if pending:
                    messages.append(Message.from_blocks("user", pending))
                    pending = []
                messages.append(Message.from_blocks("tool", [block], tool_name=names.get(block.get("tool_use_id"))))
            if pending or not results:
                messages.append(Message.from_blocks("user", pending))
        else:
            messages.append(Message.from_blocks("system", blocks))
    before.append(len(messages))
    tools: dict[str, dict[str, Any]] = {}
    for call in members:
        for tool in call.body.get("tools") or ():
            spec = openai_tool(tool)
            tools[spec["function"]["name"]] = spec
    meta = dict(end.body.get("metadata") or {}) | {
        "max_tokens": end.body.get("max_tokens"), "session_id": session, "biz_id": end.biz_id,
        "model": end.body.get("model"), "calls": len(members), "records": sum(c.records for c in members),
        "start_time": members[0].time, "end_time": members[-1].time}
    models = sorted({str(c.body.get("model")) for c in members if c.body.get("model")})
    if len(models) > 1:
        meta["models"] = models
    if abandoned:
        meta["abandoned"] = [{"request_time": c.time, "after_message": before[len(c.messages)],
                              "blocks": [dict(b) for b in c.response]} for c in abandoned]
    if rewrites := _rewrites(members, items, turns, replies):
        meta["history_rewrites"] = rewrites
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    uses = [(b, time, results.get(b.get("id"), "")) for m, time in zip(
        [m for m in messages if m.role == "assistant"], times) if m.generation
        for b in m.blocks if b.get("type") == "tool_use"]
    return _Thread(end=end, start=members[0].time, meta=meta, tools=tuple(tools.values()),
                   messages=tuple(messages), uses=uses)


def _spawn_score(use: Mapping[str, Any], result: str, child: _Thread) -> int:
    """2: an argument is a text block of the child's first user message; 1: contained in it, or the child's
    final text is in the call's result; 0: no evidence."""
    first = next((m for m in child.messages if m.role == "user"), None)
    texts = [b["text"].strip() for b in (first.blocks if first else ()) if b.get("type") == "text"]
    arguments = [s.strip() for s in strings_in(use.get("input")) if s.strip()]
    if any(s in texts for s in arguments):
        return 2
    joined = "\n\n".join(texts)
    if any(len(s) >= SPAWN_MIN_CHARS and s in joined for s in arguments):
        return 1
    final = next((m.content.strip() for m in reversed(child.messages) if m.role == "assistant"), "")
    return int(len(final) >= SPAWN_MIN_CHARS and final in result)


def _link(threads: list[_Thread]) -> _Thread:
    """Attach sub-agent threads to the calls that spawned them; return the main thread (see rule 5)."""
    threads.sort(key=lambda t: (t.start, t.end.rank))
    taken: set[str] = set()
    for child in threads:
        best: tuple[int, float, _Thread, str] | None = None
        for parent in threads:
            if parent.start >= child.start:
                break
            for use, time, result in parent.uses:
                if use.get("id") in taken or time > child.start:
                    continue
                score = _spawn_score(use, result, child)
                if score and (best is None or (score, -time) > (best[0], -best[1])):
                    best = (score, time, parent, str(use.get("id")))
        if best is not None:
            child.spawner = (best[2], best[3])
            best[2].children.append(child)
            taken.add(best[3])

    def turns(thread: _Thread) -> int:  # replies the relay saw: history alone decides nothing (rule 3)
        return sum(m.role == "assistant" and m.generation for m in thread.messages) + sum(
            turns(c) for c in thread.children)

    roots = [t for t in threads if t.spawner is None]
    main = max(roots, key=lambda t: (turns(t), len(t.tools), len(t.messages), -t.start))
    main.children.extend(t for t in roots if t is not main)
    return main


def _tree(thread: _Thread, ident: str, parent: str | None, call_id: str | None, link: str | None) -> Trajectory:
    children = sorted(thread.children, key=lambda t: (t.start, t.end.rank))
    return Trajectory(
        id=ident, meta=thread.meta | ({"link": link} if link else {}), tools=thread.tools, messages=thread.messages,
        children=tuple(_tree(child, f"{ident}/{n}", ident, child.spawner[1] if child.spawner else None,
                             "tool_call" if child.spawner else "time") for n, child in enumerate(children, start=1)),
        parent=parent, parent_call_id=call_id)


def _lines(path: Path) -> list[str]:
    """The file's lines, split on "\\n" only (JSON strings may hold U+2028); errors name file and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TrajectoryFileError(f"{path}: cannot read: {exc}") from None
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TrajectoryFileError(f"{path}:{line}: not UTF-8 text: {exc.reason}") from None


def load_raw(path: str | PathLike[str]) -> list[dict[str, Any]]:
    """The records of a raw proxy log (JSONL), each checked; the first bad line raises, naming file and line."""
    path = Path(path)
    records = []
    try:
        for number, record in iter_jsonl(_lines(path), expected="expected one JSON object per model call"):
            try:
                if refusal(record) is None:
                    _parse(record, number)
            except ValueError as exc:
                raise TrajectoryFileError(f"{path}:{number}: {exc}") from None
            records.append(record)
    except JsonlError as exc:
        raise TrajectoryFileError(f"{path}:{exc.line}: {exc.reason}") from None
    return records


def load_normalized(path: str | PathLike[str]) -> list[Trajectory]:
    """Normalized trajectories: JSONL (the authors' files, ours) or, for ``*.json``, one object or a list.

    The authors' records carry no id: theirs become ``<session_id>:<line>`` (``<file stem>:<line>``).
    """
    path = Path(path)
    lines = _lines(path)
    if path.suffix == ".json":
        try:
            data = json.loads("\n".join(lines))
        except ValueError as exc:
            raise TrajectoryFileError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
        entries = list(enumerate(data if isinstance(data, list) else [data], start=1))
    else:
        try:
            entries = list(iter_jsonl(lines, expected="expected one trajectory object per line"))
        except JsonlError as exc:
            raise TrajectoryFileError(f"{path}:{exc.line}: {exc.reason}") from None
    out = []
    for number, entry in entries:
        location = f"{path}: entry {number}" if path.suffix == ".json" else f"{path}:{number}"
        if not isinstance(entry, Mapping):
            raise TrajectoryFileError(f"{location}: expected a trajectory object")
        meta = entry.get("meta") if isinstance(entry.get("meta"), Mapping) else {}
        try:
            out.append(Trajectory.from_json(entry, default_id=f"{meta.get('session_id') or path.stem}:{number}"))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise TrajectoryFileError(f"{location}: {exc}") from None
    return out
