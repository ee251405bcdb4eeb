"""Benchmark augmentation (Vibe Checker section 3.1) and suite building.

For each task, seeded by ``(seed, task id)`` so that adding or removing other
tasks changes nothing:

1. the 30 instructions are permuted at random;
2. the permuted list is scanned once: an instruction is kept if it is relevant
   to the task and does not conflict with one already kept, until ``max_k``
   are kept (rule-based selector: :data:`RELEVANCE` and the taxonomy's
   conflicts; LLM selector: the judge model decides, then the same conflict
   rules are enforced);
3. parameters are assigned (rule-based: drawn from the recommended values;
   LLM: proposed by the judge model) and validated by rule: keys the
   instruction does not define are dropped, invalid values revert to the
   defaults.

The suite for ``k`` instructions uses the first ``k`` kept instructions, so
k = 1..5 are nested and comparable; k = 0 is the bare query (functional
baseline S_0).
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ifbench import ParamError

from .instructions import BY_ID, CATEGORIES, INSTRUCTIONS, Instruction, conflicting
from .tasks import Task

# --------------------------------------------------------------------------- system prompts (Fig. 13)

_SYSTEM = """\
Objective:
You are an expert code-generation assistant. Your main goal is to provide {what} for every request.

Output formats -- use exactly one of these two:
1. Markdown-wrapped code. Use it whenever your reply contains ANY text or explanation besides the code. \
Put the entire code solution in the FIRST Markdown code block (```python ... ```).
2. Raw code only. Use it ONLY when your reply consists of nothing but the code solution. Give the raw code \
directly, with no Markdown and no other text.

Requirements:
1. Whenever you write or edit code, satisfy ALL the user's instructions from the whole conversation while \
keeping the functionality intact.
2. Always include {what_short} in every reply, even when nothing needs to change since the previous version."""

SYSTEM_PROMPTS = {
    "bigvibe": _SYSTEM.format(what="a complete, runnable code solution", what_short="the complete, runnable code"),
    "livevibe": _SYSTEM.format(what="complete Python functions as the solution",
                               what_short="the complete Python functions"),
}
SYSTEM_PROMPTS["mbpp"] = SYSTEM_PROMPTS["livevibe"]

#: Paper section 4.1: the underlying benchmarks' defaults.
TEMPERATURE = {"bigvibe": 0.0, "livevibe": 0.2, "mbpp": 0.0}

SINGLE_TURN_HEADER = "Additional instructions:"


def single_turn_prompt(query: str, instructions: Sequence[tuple[Instruction, Mapping[str, Any]]]) -> str:
    """The query followed by the numbered instruction list (the number is the instruction's position)."""
    if not instructions:
        return query
    lines = [f"{n}. {inst.render('generation', params)}" for n, (inst, params) in enumerate(instructions, start=1)]
    return f"{query}\n\n{SINGLE_TURN_HEADER}\n" + "\n".join(lines)


# --------------------------------------------------------------------------- relevance


@dataclass(frozen=True, slots=True, kw_only=True)
class Features:
    """What the rule-based selector knows about a task (from its reference code and query)."""

    kind: str
    imports: bool = True
    functions: bool = True
    loops: bool = True
    collections: bool = True
    numeric_compare: bool = True
    formats_strings: bool = True
    handles_errors: bool = False
    raises: bool = False
    file_io: bool = False
    datetime: bool = False
    builtin_names_required: bool = False
    nonpep8_names_required: bool = False
    mocks_open: bool = False


_FILE_WORDS = re.compile(r"\b(file|files|directory|directories|folder|path|csv|zip|gzip|archive)\b", re.I)
_FILE_CALLS = {"open", "glob", "listdir", "walk", "scandir", "makedirs", "mkdir", "remove", "rename", "unlink",
               "exists", "isfile", "isdir", "join", "basename", "dirname", "splitext", "getsize", "iterdir",
               "read_text", "write_text", "rglob", "stat"}
_FILE_MODULES = {"os", "glob", "pathlib", "shutil", "zipfile", "gzip", "tarfile", "tempfile"}


def _builtin_names() -> frozenset[str]:
    import builtins

    return frozenset(name for name in dir(builtins) if not name.startswith("_"))


def features(task: Task) -> Features:
    query = task.query
    raises_words = re.search(r"\braise[sd]?\b|\bexception\b", query, re.I) is not None
    error_words = raises_words or re.search(r"\binvalid\b|\bmalformed\b|\bcannot be parsed\b|\berror\b", query,
                                            re.I) is not None
    file_words = task.kind != "stdio" and _FILE_WORDS.search(query) is not None
    date_words = re.search(r"\bdatetime\b|\btimestamps?\b|\bdates?\b|\btimezone\b|\bUTC\b", query) is not None
    signature = _signature_names(task)
    builtins = _builtin_names()
    base = {"kind": task.kind, "mocks_open": task.mocks_open,
            "builtin_names_required": any(name in builtins for name in signature),
            "nonpep8_names_required": any(name != name.lower() for name in signature)}
    try:
        tree = ast.parse(task.reference) if task.reference.strip() else None
    except SyntaxError:
        tree = None
    if tree is None:  # no reference: judge from the query alone
        return Features(**base, imports=bool(task.libraries) or task.kind == "realworld",
                        formats_strings=task.kind != "functional", numeric_compare=bool(re.search(r"\b\d", query)),
                        handles_errors=error_words, raises=raises_words, file_io=file_words,
                        datetime=date_words or "datetime" in task.libraries)
    nodes = list(ast.walk(tree))
    modules = {alias.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for alias in n.names} | {
        n.module.split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom) and n.module}
    called = {(n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None))
              for n in nodes if isinstance(n, ast.Call)}
    return Features(
        **base,
        imports=bool(modules) or bool(task.libraries),
        functions=any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in nodes),
        loops=any(isinstance(n, (ast.For, ast.While, ast.comprehension)) for n in nodes),
        collections=any(isinstance(n, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
                                       ast.GeneratorExp)) for n in nodes)
        or bool(called & {"list", "dict", "set", "tuple", "sorted"}),
        numeric_compare=any(isinstance(n, ast.Compare) and any(_magic(c) for c in [n.left, *n.comparators])
                            for n in nodes),
        formats_strings=any(isinstance(n, ast.JoinedStr) for n in nodes) or "format" in called
        or any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant)
               and isinstance(n.left.value, str) for n in nodes) or task.kind == "stdio",
        handles_errors=any(isinstance(n, ast.Try) for n in nodes) or error_words,
        raises=any(isinstance(n, ast.Raise) for n in nodes) or raises_words,
        file_io=task.kind != "stdio" and (bool(modules & _FILE_MODULES) or bool(called & _FILE_CALLS & {"open"})
                                          or file_words),
        datetime="datetime" in modules or "datetime" in task.libraries,
    )


def _magic(node: ast.AST) -> bool:
    value = node.operand.value if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                                   and isinstance(node.operand, ast.Constant)) else getattr(node, "value", None)
    if not isinstance(node, (ast.Constant, ast.UnaryOp)) or isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) and value not in (0, 1, -1)


def _signature_names(task: Task) -> list[str]:
    """The required entry point's name and parameter names (instructions must not contradict them)."""
    if not task.entry_point:
        return []
    try:
        tree = ast.parse(task.reference)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == task.entry_point:
                return [node.name] + [a.arg for a in node.args.args + node.args.kwonlyargs]
    match = re.search(rf"def\s+{re.escape(task.entry_point)}\s*\(([^)]*)\)", task.query)
    names = [task.entry_point]
    if match:
        names += [p.split(":")[0].split("=")[0].strip().lstrip("*") for p in match.group(1).split(",") if p.strip()]
    return names


#: Relevance of each instruction to a task (the rule-based selector's first criterion).
RELEVANCE: dict[str, Callable[[Features], bool]] = {
    "style_1": lambda f: not f.nonpep8_names_required,
    "style_2": lambda f: True,
    "style_3": lambda f: True,
    "style_4": lambda f: f.imports,
    "style_5": lambda f: f.functions or f.kind != "stdio",
    "style_6": lambda f: f.formats_strings,
    "style_7": lambda f: True,
    "style_8": lambda f: not f.builtin_names_required,
    "style_9": lambda f: True,
    "logic_1": lambda f: True,
    "logic_2": lambda f: f.functions or f.kind != "stdio",
    "logic_3": lambda f: True,
    "logic_4": lambda f: True,
    "logic_5": lambda f: f.functions or f.kind != "stdio",
    "logic_6": lambda f: True,
    "logic_7": lambda f: f.collections,
    "logic_8": lambda f: f.numeric_compare,
    "logic_9": lambda f: f.loops,
    "doc_1": lambda f: True,
    "doc_2": lambda f: True,
    "doc_3": lambda f: True,
    "doc_4": lambda f: True,
    "doc_5": lambda f: True,
    "doc_6": lambda f: True,
    "error_1": lambda f: f.handles_errors,
    "error_2": lambda f: f.handles_errors and f.raises,
    "error_3": lambda f: f.file_io,
    "error_4": lambda f: f.raises,
    "library_1": lambda f: f.file_io and not f.mocks_open,
    "library_2": lambda f: f.datetime,
}
assert set(RELEVANCE) == set(BY_ID)


# --------------------------------------------------------------------------- parameters


def validated_params(instruction: Instruction, raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Rule-based validation: unknown keys removed, invalid values reverted to the defaults."""
    clean = instruction.defaults()
    problems: list[str] = []
    if not isinstance(raw, Mapping):
        if raw not in (None, {}):
            problems.append(f"{instruction.id}: parameters are not a mapping; defaults used")
        return instruction.validate(clean), problems
    for name, value in raw.items():
        if name not in instruction.params:
            problems.append(f"{instruction.id}: unknown parameter {name!r} removed")
            continue
        trial = clean | {name: list(value) if isinstance(value, tuple) else value}
        try:
            instruction.validate(trial)
        except ParamError as exc:
            problems.append(f"{instruction.id}: {exc}; default {instruction.params[name].default!r} used")
            continue
        clean = trial
    return instruction.validate(clean), problems


def rule_params(instruction: Instruction, rng: random.Random) -> dict[str, Any]:
    """Draw each parameter from its recommended values (the default when none are given)."""
    raw = {}
    for name in instruction.params:
        choices = instruction.recommended.get(name)
        if choices:
            value = rng.choice(list(choices))
            raw[name] = list(value) if isinstance(value, (list, tuple)) else value
    return raw


# --------------------------------------------------------------------------- selectors


@dataclass(kw_only=True)
class Selection:
    task: Task
    order: list[str]
    chosen: list[tuple[Instruction, dict[str, Any]]]
    problems: list[str] = field(default_factory=list)


def permutation(seed: int, task: Task) -> list[str]:
    order = [i.id for i in INSTRUCTIONS]
    random.Random(f"vericode:{seed}:{task.id}:order").shuffle(order)
    return order


def scan(order: Sequence[str], keep: Callable[[str], bool], max_k: int) -> list[str]:
    """One pass over ``order``: keep relevant, non-conflicting instructions, up to ``max_k``."""
    kept: list[str] = []
    for instruction_id in order:
        if len(kept) == max_k:
            break
        if instruction_id not in BY_ID or instruction_id in kept:
            continue
        if any(conflicting(instruction_id, other) for other in kept):
            continue
        if keep(instruction_id):
            kept.append(instruction_id)
    return kept


class RuleSelector:
    """Deterministic relevance rules (:data:`RELEVANCE`) and parameters drawn from the recommended values."""

    name = "rule"

    def select(self, task: Task, order: Sequence[str], max_k: int) -> list[str]:
        feats = features(task)
        return scan(order, lambda i: RELEVANCE[i](feats), max_k)

    def params(self, task: Task, chosen: Sequence[str], seed: int) -> dict[str, Any]:
        rng = random.Random(f"vericode:{seed}:{task.id}:params")
        return {i: rule_params(BY_ID[i], rng) for i in chosen}


def augment(task: Task, selector: Any, *, seed: int, max_k: int) -> Selection:
    order = permutation(seed, task)
    chosen = selector.select(task, order, max_k)
    proposed = selector.params(task, chosen, seed)
    out, problems = [], []
    for instruction_id in chosen:
        params, issues = validated_params(BY_ID[instruction_id], proposed.get(instruction_id))
        problems.extend(issues)
        out.append((BY_ID[instruction_id], params))
    return Selection(task=task, order=order, chosen=out, problems=problems)


# --------------------------------------------------------------------------- the LLM selector

_SELECT_PROMPT = """\
We are adding verifiable code instructions to a coding task, to test whether a model follows them.

The task (the user's query):
<<<
{query}
>>>

Candidate instructions, in this order:
{candidates}

Go through the candidates once, in the order given. Keep a candidate only if
1. it is relevant to the task: it applies to the code this task needs and could plausibly change how it is \
written, and
2. it does not conflict with any candidate you have already kept.
Keep at most {max_k}. Answer with JSON only: {{"selected": ["<id>", ...]}}, the kept ids in the order given."""

_PARAMS_PROMPT = """\
Choose parameter values for the code instructions below, added to this coding task:
<<<
{query}
>>>

For each instruction: its parameters with type, allowed values or range, recommended values and default.
{specs}

Pick values that are achievable for this task but still challenging, within the allowed values. Answer with \
JSON only: {{"params": {{"<instruction id>": {{"<parameter>": <value>, ...}}, ...}}}}."""


def _param_spec(instruction: Instruction) -> str:
    lines = [f"- {instruction.id}: {instruction.render('generation')}"]
    for name, spec in instruction.params.items():
        described = spec.describe()
        allowed = (f"one of {list(spec.choices)}" if spec.choices else
                   f"range {spec.min:g}..{spec.max:g}" if spec.min is not None and spec.max is not None else "any")
        recommended = list(instruction.recommended.get(name, ()))
        lines.append(f"    {name} ({described['type']}): {allowed}; recommended {recommended}; "
                     f"default {spec.default!r}")
    return "\n".join(lines)


class LLMSelector:
    """The judge model selects instructions and proposes parameters (paper: an LLM-based selector).

    The calls go through :class:`pytest_ifbench.models.client.ModelClient` (retries,
    response cache) at temperature 0 with a JSON schema. Whatever the model
    answers is validated by rule: unknown ids are ignored, the permuted order
    is kept, conflicting instructions are dropped, at most ``max_k`` are kept,
    and parameters go through :func:`validated_params`.
    """

    name = "llm"

    def __init__(self, client: Any, runner: Any | None = None) -> None:
        import asyncio

        self.client = client
        self.runner = runner or asyncio.Runner()
        self.calls = 0

    def _ask(self, prompt: str, schema: Mapping[str, Any], name: str) -> Any:
        from pytest_ifbench import GenerationParams, first_json_object

        fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
        messages = [{"role": "user", "content": prompt}]
        self.calls += 1
        reply = self.runner.run(self.client.complete(
            messages, GenerationParams(temperature=0.0, max_tokens=1024), response_format=fmt))
        raw = first_json_object(reply.text) or reply.text
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def select(self, task: Task, order: Sequence[str], max_k: int) -> list[str]:
        candidates = "\n".join(f"{n}. [{i}] ({CATEGORIES[BY_ID[i].category]}) {BY_ID[i].render('generation')}"
                               for n, i in enumerate(order, start=1))
        schema = {"type": "object", "required": ["selected"], "properties": {
            "selected": {"type": "array", "maxItems": max_k, "items": {"type": "string", "enum": list(order)}}}}
        answer = self._ask(_SELECT_PROMPT.format(query=task.query, candidates=candidates, max_k=max_k),
                           schema, "instruction_selection")
        picked = answer.get("selected") if isinstance(answer, dict) else None
        wanted = {str(i) for i in picked} if isinstance(picked, list) else set()
        return scan(order, lambda i: i in wanted, max_k)

    def params(self, task: Task, chosen: Sequence[str], seed: int) -> dict[str, Any]:
        with_params = [i for i in chosen if BY_ID[i].params]
        if not with_params:
            return {}
        specs = "\n".join(_param_spec(BY_ID[i]) for i in with_params)
        schema = {"type": "object", "required": ["params"], "properties": {"params": {
            "type": "object", "properties": {i: {"type": "object"} for i in with_params}}}}
        answer = self._ask(_PARAMS_PROMPT.format(query=task.query, specs=specs), schema, "instruction_parameters")
        params = answer.get("params") if isinstance(answer, dict) else None
        return dict(params) if isinstance(params, dict) else {}

    def close(self) -> None:
        """Close the client's connections on the runner's loop (aiohttp warns of unclosed ones at exit), then
        the runner."""
        from pytest_ifbench import close_sessions

        self.runner.run(close_sessions())
        self.runner.close()


# --------------------------------------------------------------------------- instances


def _instruction_check(instruction: Instruction, params: Mapping[str, Any], position: int) -> dict[str, Any]:
    return {
        "id": instruction.id, "verifier": instruction.verifier_id, "params": dict(params),
        "description": instruction.render("generation", params), "category": instruction.category,
        "metadata": {"role": "instruction", "instruction": instruction.id, "position": position,
                     "category": instruction.category},
    }


def instance_id(task: Task, k: int, protocol: str) -> str:
    return f"{task.id}-k0" if k == 0 else f"{task.id}-k{k}-{'single' if protocol == 'single_turn' else 'multi'}"


def build_instance(selection: Selection, k: int, protocol: str, *, seed: int, selector: str,
                   functional: Mapping[str, Any]) -> dict[str, Any]:
    task = selection.task
    chosen = selection.chosen[:k]
    checks = [_instruction_check(inst, params, n) for n, (inst, params) in enumerate(chosen, start=1)]
    checks.append(dict(functional))
    instance: dict[str, Any] = {"id": instance_id(task, k, protocol), "category": task.kind}
    if protocol == "multi_turn":
        instance["protocol"] = "multi_turn"
        instance["turns"] = [{"user": task.query}] + [{"user": inst.render("edit", params)} for inst, params in chosen]
    else:
        instance["prompt"] = single_turn_prompt(task.query, chosen)
    categories = sorted({inst.category for inst, _ in chosen}, key=list(CATEGORIES).index)
    instance["markers"] = [f"k_{k}", task.testbed] + [f"category_{c}" for c in categories]
    instance["checks"] = checks
    instance["metadata"] = {"task": task.source_id or task.id, "task_kind": task.kind, "testbed": task.testbed,
                            "k": k, "instructions": [inst.id for inst, _ in chosen], "selector": selector,
                            "seed": seed}
    return instance


def build_instances(selection: Selection, *, max_k: int, seed: int, selector: str) -> list[dict[str, Any]]:
    """k = 0 (single-turn, bare query) and, for every k <= available, one instance per protocol."""
    functional = selection.task.functional_check()
    out = [build_instance(selection, 0, "single_turn", seed=seed, selector=selector, functional=functional)]
    for k in range(1, min(max_k, len(selection.chosen)) + 1):
        for protocol in ("single_turn", "multi_turn"):
            out.append(build_instance(selection, k, protocol, seed=seed, selector=selector, functional=functional))
    return out
