"""ManyIH generation: coding problems, style-instruction composition, IF privilege assignment.

Composition follows the paper (§5, §6.2, Table 4): the number of style groups
and the winning styles are fixed per sample; the tier variants only add
suppressed (losing) instructions, hence privilege levels and conflicts. Every
instruction gets a distinct scalar privilege drawn uniformly from 1..100 and
the order is shuffled; winners are resolved with the official rule and must
equal the designated winners (rejection sampling otherwise).
"""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from .ppi import resolve
from .styles import GROUPS, STYLES, compatible_sets, conflicts

#: Table 4: pairwise conflicts per sample for each tier (= number of instructions) variant.
DEFAULT_CONFLICTS: dict[int, tuple[int, int]] = {6: (0, 0), 8: (2, 4), 12: (7, 11)}


class ComposeError(ValueError):
    pass


# ---------------------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    id: str
    task: str
    entry_point: str
    tests: tuple[str, ...]
    setup: str = ""
    source: str = "pytest-ifbench"


def call_signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``name(a, b=1)``: the function's parameters without annotations."""
    args = function.args
    plain = ast.arguments(
        posonlyargs=[ast.arg(arg=a.arg) for a in args.posonlyargs],
        args=[ast.arg(arg=a.arg) for a in args.args],
        vararg=ast.arg(arg=args.vararg.arg) if args.vararg else None,
        kwonlyargs=[ast.arg(arg=a.arg) for a in args.kwonlyargs],
        kw_defaults=list(args.kw_defaults),
        kwarg=ast.arg(arg=args.kwarg.arg) if args.kwarg else None,
        defaults=list(args.defaults),
    )
    return f"{function.name}({ast.unparse(plain)})"


def task_text(text: str, signature: str) -> str:
    """Name the function in the task, as the paper's prompts do (``Write a function `f(x)` to ...``)."""
    marker = "function"
    index = text.find(marker)
    if index >= 0:
        end = index + len(marker)
        return f"{text[:end]} `{signature}`{text[end:]}"
    return f"{text.rstrip()} Name the function `{signature}`."


def _entry_function(code: str, tests: Sequence[str], entry_point: str | None) -> ast.FunctionDef:
    tree = ast.parse(code)
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if entry_point:
        functions = [f for f in functions if f.name == entry_point] or functions
    else:
        called = {n.func.id for t in tests for n in ast.walk(ast.parse(t))
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        functions = [f for f in functions if f.name in called] or functions
    if not functions:
        raise ComposeError("no function definition in the reference code")
    return functions[0]


def problem_from_record(record: Mapping[str, Any], source: str) -> Problem:
    """A problem from this project's format (``signature``/``entry_point``) or MBPP's
    (``text`` or ``prompt``, ``code``, ``test_list``, ``test_setup_code`` / ``test_imports``)."""
    tests = tuple(str(t) for t in record.get("test_list") or ())
    if not tests:
        raise ComposeError("no test_list")
    code = record.get("reference_code") or record.get("code") or ""
    text = str(record.get("text") or record.get("prompt") or "").strip()
    if not text:
        raise ComposeError("no task text (text/prompt)")
    if record.get("signature"):
        function = _entry_function(str(record["signature"]) + "\n    pass\n", tests, record.get("entry_point"))
    else:
        function = _entry_function(str(code), tests, record.get("entry_point"))
    setup = record.get("test_setup_code") or "\n".join(record.get("test_imports") or ())
    raw_id = record.get("id", record.get("task_id"))
    problem_id = str(raw_id) if record.get("signature") else f"mbpp_{raw_id}"
    return Problem(id=problem_id, task=task_text(text, call_signature(function)), entry_point=function.name,
                   tests=tests, setup=str(setup or ""), source=source)


def load_problems(path: Path | None = None) -> list[Problem]:
    """The shipped problems, or a JSONL / JSON-list file in this project's or MBPP's format."""
    if path is None:
        from importlib.resources import files

        text = files(__package__).joinpath("data", "problems.jsonl").read_text(encoding="utf-8")
        source = "pytest-ifbench"
    else:
        text = Path(path).read_text(encoding="utf-8")
        source = Path(path).name
    stripped = text.lstrip()
    if stripped.startswith("["):
        records = json.loads(stripped)
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    problems = []
    for number, record in enumerate(records, start=1):
        try:
            problems.append(problem_from_record(record, source))
        except (ComposeError, SyntaxError, KeyError, TypeError) as exc:
            raise ComposeError(f"{source}: record {number}: {exc}") from None
    return problems


# ---------------------------------------------------------------------------- coding composition


@dataclass(frozen=True, slots=True, kw_only=True)
class Instruction:
    number: int          # 1-based, in prompt order (the official data's ``id``)
    style: str
    group: str
    privilege: int       # scalar, higher wins
    winner: bool
    conflicts_with: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One tier variant of a sample: instructions in prompt order."""

    tier: int
    instructions: tuple[Instruction, ...]
    n_conflicts: int
    expected: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Composition:
    groups: tuple[str, ...]
    winners: tuple[str, ...]
    losers: tuple[str, ...]   # in order of addition: tier t uses the first t - len(winners)


def count_conflicts(styles: Iterable[str]) -> int:
    return sum(conflicts(a, b) for a, b in combinations(list(styles), 2))


def _winner_sizes(groups: Sequence[str], total: int, rng: random.Random) -> list[int] | None:
    caps = [max(len(s) for s in compatible_sets(g)) for g in groups]
    options = [sizes for sizes in _compositions(total, len(groups)) if all(1 <= s <= c for s, c in zip(sizes, caps))]
    return list(rng.choice(options)) if options else None


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(total,)]
    return [(first, *rest) for first in range(1, total - parts + 2) for rest in _compositions(total - first, parts - 1)]


def compose(rng: random.Random, *, n_groups: int = 4, n_winners: int = 6, tiers: Sequence[int] = (6, 8, 12),
            conflict_ranges: Mapping[int, tuple[int, int]] = DEFAULT_CONFLICTS, attempts: int = 2000,
            retries: int = 30) -> Composition:
    """Style groups, winners (held fixed across tiers) and the losers each tier adds."""
    extra = max(tiers) - n_winners
    if extra < 0 or min(tiers) < n_winners:
        raise ComposeError(f"every tier must have at least {n_winners} instructions (the winners)")
    names = list(GROUPS)
    for _ in range(attempts):
        groups = rng.sample(names, n_groups)
        sizes = _winner_sizes(groups, n_winners, rng)
        if sizes is None:
            continue
        winners = [s for g, size in zip(groups, sizes)
                   for s in rng.choice([c for c in compatible_sets(g) if len(c) == size])]
        pool = [s for g in groups for s in GROUPS[g] if s not in winners and any(conflicts(s, w) for w in winners)]
        if len(pool) < extra:
            continue
        # Like the authors' generator (up to 30 tries per problem), keep the draw with the most
        # conflicts inside every tier's range: the released 12-tier data averages 9.8 of at most 11.
        best: tuple[tuple[int, ...], list[str]] | None = None
        for _ in range(retries):
            losers = rng.sample(pool, extra)
            counts = tuple(count_conflicts(winners + losers[: t - n_winners]) for t in sorted(tiers, reverse=True))
            if all(_in_range(c, t, conflict_ranges) for c, t in zip(counts, sorted(tiers, reverse=True))):
                if best is None or counts > best[0]:
                    best = (counts, losers)
        if best is not None:
            return Composition(groups=tuple(groups), winners=tuple(winners), losers=tuple(best[1]))
    raise ComposeError(f"could not compose {n_groups} groups / {n_winners} winners / tiers {list(tiers)} "
                       f"within the conflict ranges after {attempts} attempts")


def _in_range(count: int, tier: int, ranges: Mapping[int, tuple[int, int]]) -> bool:
    low, high = ranges.get(tier, (0, 10**9))
    return low <= count <= high


def expected_styles(instructions: Sequence[Instruction]) -> dict[str, list[str]]:
    """``metadata.expected_styles``: winners per group (groups in order of first appearance)."""
    by_number = {i.number: i for i in instructions}
    out: dict[str, list[str]] = {}
    for group in dict.fromkeys(i.group for i in instructions):
        members = [(i.number, i.privilege, i.number) for i in instructions if i.group == group]
        accepted = resolve(members, lambda a, b: b in by_number[a].conflicts_with)
        out[group] = [by_number[n].style for n in accepted]
    return out


def variant(composition: Composition, tier: int, rng: random.Random, attempts: int = 5000) -> Variant:
    """Privileges (distinct, uniform in 1..100) and a shuffled order for one tier, such that
    the resolved winners are exactly the composition's winners."""
    styles = list(composition.winners) + list(composition.losers[: tier - len(composition.winners)])
    want = set(composition.winners)
    for _ in range(attempts):
        order = rng.sample(styles, len(styles))
        privileges = rng.sample(range(1, 101), len(styles))
        numbered = {n: s for n, s in enumerate(order, start=1)}
        instructions = tuple(
            Instruction(number=n, style=s, group=STYLES[s].group, privilege=p, winner=s in want,
                        conflicts_with=tuple(m for m, other in numbered.items() if conflicts(s, other)))
            for (n, s), p in zip(numbered.items(), privileges)
        )
        expected = expected_styles(instructions)
        if {s for styles_ in expected.values() for s in styles_} == want:
            return Variant(tier=tier, instructions=instructions, n_conflicts=count_conflicts(styles),
                           expected=expected)
    raise ComposeError(f"no privilege assignment makes the designated winners win (tier {tier})")


def with_privileges(base: Variant, privileges: Sequence[int]) -> Variant:
    instructions = tuple(
        Instruction(number=i.number, style=i.style, group=i.group, privilege=p, winner=i.winner,
                    conflicts_with=i.conflicts_with)
        for i, p in zip(base.instructions, privileges)
    )
    expected = expected_styles(instructions)
    if expected != base.expected:
        raise ComposeError("a perturbation changed the winners")
    return Variant(tier=base.tier, instructions=instructions, n_conflicts=base.n_conflicts, expected=base.expected)


# ---------------------------------------------------------------------------- IF subset


@dataclass(frozen=True, slots=True, kw_only=True)
class IfMember:
    id: str
    text: str
    check: dict[str, Any]
    group: str | None = None
    privilege: int | None = None   # scalar, higher wins; None = untagged
    position: int = 0


def load_if_tasks(path: Path | None = None) -> list[dict[str, Any]]:
    import yaml

    if path is None:
        from importlib.resources import files

        text = files(__package__).joinpath("data", "if_tasks.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    data = yaml.load(text, Loader=yaml.CSafeLoader)
    tasks = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(tasks, list):
        raise ComposeError("the IF task file must hold a list of tasks (or {tasks: [...]})")
    return tasks


def assign_if_privileges(task: Mapping[str, Any], rng: random.Random, *, max_levels: int = 7) -> dict[str, int]:
    """Scalar privileges (1..99) for the tagged members: distinct within each conflict group,
    drawn from at most ``max_levels`` values per task; explicit ``privilege`` values are kept."""
    groups = task.get("groups") or []
    tagged = [m for g in groups for m in g["members"]] + [c for c in task.get("constraints") or () if c.get("tag")]
    biggest = max([len(g["members"]) for g in groups] or [1])
    levels = sorted(rng.sample(range(1, 100), max(biggest, min(max_levels, len(tagged)))))
    out: dict[str, int] = {}
    for group in groups:
        fixed = {m["id"]: int(m["privilege"]) for m in group["members"] if m.get("privilege") is not None}
        free = [m["id"] for m in group["members"] if m["id"] not in fixed]
        choices = [v for v in levels if v not in fixed.values()]
        unused = [v for v in choices if v not in out.values()]
        if len(unused) >= len(free):  # spread groups over the levels: more tiers per task
            choices = unused
        elif len(choices) < len(free):
            choices = [v for v in range(1, 100) if v not in fixed.values()]
        out.update(fixed)
        out.update(zip(free, rng.sample(choices, len(free))))
    for constraint in task.get("constraints") or ():
        if constraint.get("tag"):
            out[constraint["id"]] = int(constraint["privilege"]) if constraint.get("privilege") is not None \
                else rng.choice(levels)
    return out


def if_winners(task: Mapping[str, Any], privileges: Mapping[str, int], positions: Mapping[str, int]) -> set[str]:
    """Winner of each conflict group (members are mutually exclusive): the highest privilege,
    the later position on a tie."""
    out = set()
    for group in task.get("groups") or ():
        members = [(m["id"], privileges[m["id"]], positions[m["id"]]) for m in group["members"]]
        out.update(resolve(members, lambda a, b: True)[:1])
    return out
