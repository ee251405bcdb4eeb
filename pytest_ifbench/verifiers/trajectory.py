"""Deterministic checks on an agent run's trajectory (its final workspace: :mod:`.workspace`).

They read ``ctx.trajectory`` (``agents.trajectory.Trajectory``): which tools were called and with what,
whether files were read before being edited, emoji and the language of what the agent wrote. Each raises
("... needs an agent run") when the instance has no trajectory: an error outcome, never a pass.

Scopes of the text checks: ``final`` is the last non-empty assistant text of the main conversation,
``assistant`` every assistant text of the main conversation, ``all`` every assistant text and reasoning of
the run, sub-agents included (and, for ``ifbench.no_emoji``, the text of every tool call's arguments:
what the agent wrote into files and commands).

Tool calls are those the model made: of replies the recording proxy saw it give (``Message.generation``). A
call seen only in a later request's history -- which the agent can rewrite on disk between turns -- earns
nothing (``ifbench.tool_called``, ``ifbench.read_before_edit``), but ``ifbench.tool_not_called`` still counts
it as forbidden: claiming a call cannot help a run, and hiding one leaves the real reply. Text the same way:
``ifbench.language`` reads only what the model generated, ``ifbench.no_emoji`` everything.

``if_offered`` on the tool-call checks: a check naming tools the run never offered (the trajectory's
``tools``) is not applicable rather than decided; see :func:`_not_offered`.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from .._params import Param, ParamError
from .._registry import Verifier
from .._types import Verdict
from ..agents.trajectory import loads_arguments, strings_in
from ._patterns import MULTILINE, BoundedPattern, compile_pattern
from ._unicode import LANGUAGES, LATIN_LANGUAGES, SCRIPT_LANGUAGES, find_emoji, language_shares

SCOPES = ("final", "assistant", "all")
#: Tools that read a file, that change one, and those of them that may create one (generic names, then
#: Claude Code's, Kilo's -- both its editor tools and its CLI's --, Droid's).
READ_TOOLS = ["read_file", "Read", "read"]
EDIT_TOOLS = ["edit_file", "write_file", "Edit", "MultiEdit", "Write", "NotebookEdit", "apply_diff",
              "search_and_replace", "insert_content", "write_to_file", "edit", "multiedit", "write", "Create"]
CREATE_TOOLS = ["write_file", "Write", "write_to_file", "write", "Create"]
#: Argument keys naming a file (searched at any depth: ``{"files": [{"path": ...}]}`` works).
PATH_KEYS = ["path", "file_path", "filePath", "notebook_path", "target_file"]


def _run_of(ctx: Any, verifier_id: str) -> Any:
    trajectory = getattr(ctx, "trajectory", None)
    if trajectory is None:
        raise RuntimeError(f"{verifier_id} needs an agent run: this instance has no trajectory")
    return trajectory


def _short(text: str, limit: int = 160) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _arguments_text(call: Any) -> str:
    return str(call.call["function"].get("arguments") or "")


def _matches(pattern: BoundedPattern | None, call: Any) -> bool:
    """The pattern occurs in the arguments' JSON text or in one of its decoded strings (escapes hide nothing)."""
    if pattern is None:
        return True
    raw = _arguments_text(call)
    if pattern.search(raw):
        return True
    try:
        decoded = loads_arguments(raw or "{}")
    except ValueError:
        return False
    return any(pattern.search(text) for text in strings_in(decoded))


def _calls(trajectory: Any, subagents: bool, *, history: bool = False) -> Iterator[tuple[Any, Any]]:
    for conversation in trajectory.walk() if subagents else (trajectory,):
        for call in conversation.tool_calls(history=history):
            yield conversation, call


def _where(root: Any, conversation: Any, call: Any) -> str:
    where = f"turn {call.turn}" + ("" if getattr(call, "generated", True) else " (only in a later request's history)")
    return where if conversation is root else f"{where} of sub-agent {conversation.id}"


def _tool_list(params: Any) -> Any:
    if isinstance(params, Mapping) and isinstance(params.get("tool"), str):
        return {**params, "tool": [params["tool"]]}
    return params


def _regex(params: Mapping[str, Any], name: str) -> BoundedPattern | None:
    if params.get(name) is None:
        return None
    return compile_pattern(params[name], MULTILINE, param=name)


def _check_called(params: Mapping[str, Any]) -> None:
    _regex(params, "arguments")
    if params["max"] is not None and params["min"] > params["max"]:
        raise ParamError("min", f"must be <= max ({params['max']}), got {params['min']}")


def _check_not_called(params: Mapping[str, Any]) -> None:
    _regex(params, "arguments")
    if params["tool"] is None and params["arguments"] is None:
        raise ParamError("tool", "give a tool, an arguments pattern or both")
    if params["tool"] is None and params["if_offered"]:
        raise ParamError("if_offered", "needs tool: the tools whose offer makes the check applicable")


def _offered(root: Any) -> frozenset[str] | None:
    """Names of the tools the run offered the model (every conversation's, sub-agents' included), or None
    when the trajectory records none: an authors' trajectory may leave ``tools`` out."""
    names = frozenset(t["function"]["name"] for conversation in root.walk() for t in conversation.tools)
    return names or None


def _not_offered(root: Any, params: Mapping[str, Any]) -> Verdict | None:
    """With ``if_offered``: "not applicable" when the run recorded its tools and none of ``tool`` is among them.

    A check written for one tool set (a scaffold's older tool names) then does not pass vacuously, nor fail
    for certain, on a run whose agent never had the tool.
    """
    if not params.get("if_offered"):  # callers outside the registry may leave defaults out
        return None
    offered = _offered(root)
    if offered is None or offered & set(params["tool"]):
        return None
    return Verdict(passed=False, applicable=False,
                   evidence=f"not applicable: none of {', '.join(params['tool'])} was offered in this run")


def _describe(call: Any, where: str) -> str:
    return f"{where}: {call.name} {_short(_arguments_text(call), 200)}"


def tool_called(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Calls to the named tool(s) whose arguments match: between ``min`` and ``max`` of them."""
    root = _run_of(ctx, "ifbench.tool_called")
    if (skipped := _not_offered(root, params)) is not None:
        return skipped
    pattern = _regex(params, "arguments")
    every = list(_calls(root, params["subagents"]))
    found = [(c, call) for c, call in every if call.name in params["tool"] and _matches(pattern, call)]
    upper = params["max"]
    ok = params["min"] <= len(found) and (upper is None or len(found) <= upper)
    what = " or ".join(params["tool"]) + (f" with arguments matching /{pattern.pattern}/" if pattern else "")
    evidence = f"{len(found)} call(s) to {what} (required {params['min']}..{'' if upper is None else upper})"
    if found:
        evidence += "\n" + "\n".join(_describe(call, _where(root, c, call)) for c, call in found[:10])
    else:
        made = Counter(call.name for _, call in every)
        evidence += "; calls made: " + (", ".join(f"{name} x{n}" for name, n in made.most_common()) or "none")
    return Verdict(passed=ok, evidence=evidence, details={"calls": len(found)})


def tool_not_called(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """No call of the tool(s) (any tool when not given) has arguments matching the pattern."""
    root = _run_of(ctx, "ifbench.tool_not_called")
    if (skipped := _not_offered(root, params)) is not None:
        return skipped
    pattern = _regex(params, "arguments")
    tools = params["tool"]
    found = [(c, call) for c, call in _calls(root, params["subagents"], history=True)
             if (tools is None or call.name in tools) and _matches(pattern, call)]
    if not found:
        return Verdict(passed=True, evidence="no forbidden call")
    shown = "\n".join(_describe(call, _where(root, c, call)) for c, call in found[:10])
    return Verdict(passed=False, evidence=f"{len(found)} forbidden call(s):\n{shown}", details={"calls": len(found)})


def _paths(arguments: Any, keys: frozenset[str]) -> Iterator[str]:
    if isinstance(arguments, Mapping):
        for key, value in arguments.items():
            if key in keys and isinstance(value, str) and value:
                yield posixpath.normpath(value)
            elif isinstance(value, Mapping | list):
                yield from _paths(value, keys)
    elif isinstance(arguments, list):
        for item in arguments:
            yield from _paths(item, keys)


def _same_file(a: str, b: str) -> bool:
    """Equal, or one absolute path ends with the other relative one (``/ws/src/a.py`` and ``src/a.py``)."""
    if a == b:
        return True
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer.startswith("/") and not shorter.startswith("/") and longer.endswith("/" + shorter)


def _existed(ctx: Any, path: str) -> bool:
    """Whether ``path`` (normalised) exists in the instance's starting environment (when it has one).

    The environment is what the sandbox shows at :data:`MOUNT` (the agent's working directory), so
    ``/workspace/a.py`` is ``a.py`` -- the form Claude Code's ``Write`` always uses. Other absolute paths
    (``/tmp``, ``HOME``) lie outside the environment: nothing there existed in it."""
    environment = getattr(getattr(ctx, "instance", None), "environment", None)
    if environment is None:
        return False
    from ..sandbox.backend import MOUNT  # (here: ``ifbench verify`` imports no sandbox for a trajectory check)

    if path.startswith(MOUNT + "/"):
        path = path[len(MOUNT) + 1:]
    if not path or path.startswith("/") or path.split("/")[0] == "..":
        return False
    return (environment / path).exists()


def read_before_edit(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Every existing file an edit tool changed was read earlier in the same conversation.

    A path counts as known once a read tool read it or a create tool created it. A create-tool call on an
    unknown path is a creation (no read needed) unless the path exists in the instance's starting
    environment -- relative to the workspace or below its mount point ``/workspace`` --; other edit tools on
    an unknown path are violations. Each sub-agent conversation is
    checked on its own. With ``ignore_failed``, edit calls whose result is an error are skipped. Paths are
    compared after normalisation, an absolute one matching a relative one it ends with. Changes made
    through a shell command (``sed -i``, redirections) are not seen.
    """
    root = _run_of(ctx, "ifbench.read_before_edit")
    keys = frozenset(params["path_keys"])
    violations: list[str] = []
    edits = 0
    for conversation in root.walk():
        known: list[str] = []
        for call in conversation.tool_calls():
            paths = list(_paths(call.arguments, keys))
            if call.name in params["read_tools"]:
                known.extend(paths)
            if call.name not in params["edit_tools"]:
                continue
            failed = call.result is not None and call.result.is_error
            if failed and params["ignore_failed"]:
                continue
            for path in paths:
                edits += 1
                if any(_same_file(path, seen) for seen in known):
                    continue
                if call.name in params["create_tools"] and not _existed(ctx, path):
                    known.append(path)
                    continue
                note = " (the call failed)" if failed else ""
                violations.append(f"{_where(root, conversation, call)}: {call.name} {path} without reading it{note}")
    if violations:
        return Verdict(passed=False, evidence="\n".join(violations[:10]), details={"violations": len(violations)})
    return Verdict(passed=True, evidence=f"{edits} file edit(s), each after a read or of a created file")


def _scope_texts(root: Any, scope: str, *, tool_arguments: bool, history: bool = True) -> list[tuple[str, str]]:
    """(where, text) pairs of ``scope`` (see the module doc); without ``history``, only the replies the model
    generated (a message seen only in a later request's history may be the agent's forgery)."""
    def replies(conversation: Any) -> list[Any]:
        return [m for m in conversation.assistant_turns() if history or m.generation]

    if scope == "final":
        last = next((m for m in reversed(replies(root)) if m.content), None)
        return [(f"turn {last.turn}", last.content)] if last else []
    if scope == "assistant":
        return [(f"turn {m.turn}", m.content) for m in replies(root) if m.content]
    out = []
    for conversation in root.walk():
        label = "" if conversation is root else f" of sub-agent {conversation.id}"
        for m in replies(conversation):
            out += [(f"turn {m.turn}{label}", m.content), (f"turn {m.turn}{label} reasoning", m.reasoning_content)]
            if tool_arguments:
                out += [(f"turn {m.turn}{label} {c['function']['name']} call", s)
                        for c in m.tool_calls for s in strings_in(_decoded(c["function"].get("arguments")))]
    return [(where, text) for where, text in out if text]


def _decoded(arguments: Any) -> Any:
    try:
        return loads_arguments(arguments or "{}")
    except ValueError:
        return arguments


def no_emoji(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """No emoji in the scope's text (Unicode emoji data; see ``verifiers._unicode``)."""
    root = _run_of(ctx, "ifbench.no_emoji")
    found = [(where, e) for where, body in _scope_texts(root, params["scope"], tool_arguments=True)
             for e in find_emoji(body, strict=params["strict"])]
    if not found:
        return Verdict(passed=True, evidence=f"no emoji ({params['scope']})")
    shown = ", ".join(f"{e} ({where})" for where, e in found[:10])
    return Verdict(passed=False, evidence=f"{len(found)} emoji: {shown}", details={"emoji": [e for _, e in found]})


def language(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """At least ``min_share`` of the scope's prose is in ``language`` (code and tool calls left out)."""
    root = _run_of(ctx, "ifbench.language")
    target = params["language"]
    texts = _scope_texts(root, params["scope"], tool_arguments=False, history=False)  # what the model said
    shares = language_shares(body for _, body in texts)
    total = sum(shares.values())
    if not total:
        return Verdict(passed=False, applicable=False, evidence=f"no prose to judge ({params['scope']})")
    mine = shares.get(target, 0.0) + (shares.get("und", 0.0) if target in LATIN_LANGUAGES else 0.0)
    share = mine / total
    parts = ", ".join(f"{lang} {100 * v / total:.0f}%" for lang, v in sorted(shares.items(), key=lambda kv: -kv[1]))
    return Verdict(passed=share >= params["min_share"],
                   evidence=f"{target}: {100 * share:.0f}% (required {100 * params['min_share']:.0f}%); {parts}",
                   details={"share": round(share, 4), "shares": {k: round(v / total, 4) for k, v in shares.items()}})


#: Refusal kinds that mean the agent tried to reach the model by itself (not through its CLI).
ABUSE_KINDS = ["not_cli"]


def no_relay_abuse(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """No request of a refused kind in the run (``meta["refused_requests"]``, recorded by the proxy)."""
    trajectory = _run_of(ctx, "ifbench.no_relay_abuse")
    kinds = set(params["kinds"])
    refused = [event for conversation in trajectory.walk()
               for event in conversation.meta.get("refused_requests") or () if event.get("kind") in kinds]
    if not refused:
        return Verdict(passed=True, evidence="no refused request of these kinds")
    first = _short(str(refused[0].get("reason")))
    return Verdict(passed=False, evidence=f"{len(refused)} refused request(s), first: {first}",
                   details={"refused": len(refused), "kinds": dict(Counter(str(e.get("kind")) for e in refused))})


def register(registry) -> None:
    tools = Param(list, items=str, description="a tool name or a list of names")
    if_offered = Param(bool, default=False, description=(
        "not applicable when the run recorded the tools it offered and none of `tool` is among them"))
    registry.add(Verifier(
        id="ifbench.tool_called", func=tool_called, coerce_params=_tool_list, check_params=_check_called,
        params={"tool": tools,
                "arguments": Param(str, default=None, description="regex searched in the call's JSON arguments"),
                "min": Param(int, default=1, min=0), "max": Param(int, default=None, min=0),
                "subagents": Param(bool, default=True, description="count sub-agents' calls too"),
                "if_offered": if_offered},
        description="The agent called the tool(s), with matching arguments, between min and max times.",
    ))
    registry.add(Verifier(
        id="ifbench.tool_not_called", func=tool_not_called, coerce_params=_tool_list, check_params=_check_not_called,
        params={"tool": Param(list, items=str, default=None, description="a tool name or list (default: any tool)"),
                "arguments": Param(str, default=None, description="regex searched in the call's JSON arguments"),
                "subagents": Param(bool, default=True, description="check sub-agents' calls too"),
                "if_offered": if_offered},
        description="No call of the tool(s) with arguments matching the pattern (e.g. no `git reset --hard`).",
    ))
    registry.add(Verifier(
        id="ifbench.read_before_edit", func=read_before_edit,
        params={"read_tools": Param(list, items=str, default=READ_TOOLS),
                "edit_tools": Param(list, items=str, default=EDIT_TOOLS),
                "create_tools": Param(list, items=str, default=CREATE_TOOLS,
                                      description="edit tools that may create a new file"),
                "path_keys": Param(list, items=str, default=PATH_KEYS),
                "ignore_failed": Param(bool, default=False, description="skip edit calls that returned an error")},
        description="Every existing file the agent edited was read earlier (files it created need no read).",
    ))
    registry.add(Verifier(
        id="ifbench.no_relay_abuse", func=no_relay_abuse,
        params={"kinds": Param(list, items=str, default=ABUSE_KINDS, description=(
            "refusal kinds that fail the check: not_cli (a request by anything but the agent CLI), too_large, "
            "too_deep, not_json, over_capacity, untranslatable"))},
        description="The agent never tried to call the model except through its CLI (a real CLI's run).",
    ))
    scope = Param(str, default="assistant", choices=SCOPES)
    registry.add(Verifier(
        id="ifbench.no_emoji", func=no_emoji,
        params={"scope": scope, "strict": Param(bool, default=False,
                                                description="also count text-style pictographs (©, ™, ↔, ✔)")},
        description="The agent's text has no emoji.",
    ))
    registry.add(Verifier(
        id="ifbench.language", func=language,
        params={"language": Param(str, choices=LANGUAGES, description=", ".join(
                    [*LATIN_LANGUAGES, *(f"{k} ({v})" for k, v in SCRIPT_LANGUAGES.items())])),
                "scope": scope, "min_share": Param(float, default=0.8, min=0, max=1)},
        description="At least min_share of the agent's prose is in the language (not applicable without prose).",
    ))
