"""Suite data (dicts shaped like a suite YAML) for ManyIH: generated samples and official files.

Used by ``ifbench generate manyih`` and by the importer plugin that lets pytest
collect the official files directly. Every instance carries the markers
``subset_<coding|if>``, ``ppi_<interface>`` and ``category_<style group>`` (coding)
and ``metadata.sample``, which pairs the variants of one sample (ordinal vs scalar,
original vs perturbed) for the metrics plugin.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .compose import Instruction, expected_styles, if_winners
from .ppi import (
    coding_system_prompt,
    coding_user_prompt,
    interface_of,
    meta_prompt,
    ordinal_ranks,
    perturb,
    split_test_code,
    tag,
)
from .styles import STYLES, canonical

DEFAULT_GENERATION = {"temperature": 0.0, "max_tokens": 1024}
#: Run settings of an official file: the paper's "max generation length 40K, temperature 0,
#: reasoning effort high" (§6.1), with 40960 tokens, the authors' evaluators' --max_tokens default.
AUTHORS_GENERATION = {"temperature": 0.0, "max_tokens": 40960, "reasoning_effort": "high"}


class ImportError_(ValueError):
    """An official file could not be converted (message names the sample)."""


def suite(description: str, instances: list[dict[str, Any]], *, max_tokens: int = 1024,
          options: Mapping[str, Any] | None = None, generation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ManyIH suite; ``generation`` (default: temperature 0 and ``max_tokens``) is its defaults."""
    data: dict[str, Any] = {
        "ifbench": 1, "benchmark": "manyih", "description": description,
        "defaults": {"generation": dict(generation or dict(DEFAULT_GENERATION, max_tokens=max_tokens))},
    }
    if options:
        data["options"] = dict(options)
    data["instances"] = instances
    return data


def _params(compat: str, **params: Any) -> dict[str, Any]:
    out = {k: v for k, v in params.items() if v not in (None, "")}
    if compat != "paper":
        out["compat"] = compat
    return out


def _check_id(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-._") or "check"
    if not base[0].isalnum():
        base = f"c{base}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


# ---------------------------------------------------------------------------- coding


def coding_instance(*, instance_id: str, sample: str, problem: str, task: str, tests: Sequence[str], setup: str,
                    interface: str, instructions: Sequence[Instruction], expected: Mapping[str, list[str]],
                    n_conflicts: int, compat: str = "paper", perturbed: bool = False, full: bool = True,
                    max_tokens: int | None = None, prompt: str | None = None,
                    texts: Mapping[int, str] | None = None, official_ids: Mapping[int, str] | None = None,
                    metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One coding instance: the tests plus one check per style instruction (losers unscored)."""
    texts = texts or {i.number: STYLES[i.style].instruction for i in instructions}
    if prompt is None:
        prompt = coding_user_prompt(task, [(texts[i.number], i.privilege) for i in instructions], interface)
    taken = {"tests"}
    checks: list[dict[str, Any]] = [{
        "id": "tests", "verifier": "manyih.unit_tests",
        "params": _params(compat, tests=tests if isinstance(tests, list) else list(tests), setup=setup),
        "metadata": {"role": "tests"},
    }]
    for ins in instructions:
        check: dict[str, Any] = {"id": _check_id(ins.style, taken), "verifier": f"manyih.{ins.style}"}
        if texts[ins.number] != STYLES[ins.style].instruction:
            check["description"] = texts[ins.number]
        if compat != "paper":
            check["params"] = {"compat": compat}
        if not ins.winner:
            check["scored"] = False
        meta: dict[str, Any] = {"role": "style", "instruction": ins.number, "group": ins.group,
                                "privilege": ins.privilege, "winner": ins.winner}
        if official_ids:  # generated suites: conflicts follow from the style table
            meta["conflicts_with"] = list(ins.conflicts_with)
            if official_ids.get(ins.number, ins.style) != ins.style:
                meta["style_id"] = official_ids[ins.number]
        check["metadata"] = meta
        checks.append(check)
    groups = list(dict.fromkeys(i.group for i in instructions))
    markers = (["full"] if full else []) + ["subset_coding", f"ppi_{interface}"] + (["perturbed"] if perturbed else [])
    markers += [f"category_{slug(g)}" for g in groups]
    instance: dict[str, Any] = {
        "id": instance_id, "tier": len({i.privilege for i in instructions}), "markers": markers,
        "system": coding_system_prompt(interface), "prompt": prompt,
        "metadata": {
            "subset": "coding", "sample": sample, "problem": problem, "ppi": interface, "perturbed": perturbed,
            "n_instructions": len(instructions), "n_conflicts": n_conflicts, "n_style_groups": len(groups),
            "expected_styles": expected if isinstance(expected, dict) else dict(expected), **dict(metadata or {}),
        },
        "checks": checks,
    }
    if max_tokens is not None:
        instance["generation"] = {"max_tokens": max_tokens}
    return instance


def official_coding_instructions(sample: Mapping[str, Any]) -> tuple[list[Instruction], dict[int, str], dict[int, str]]:
    """Instructions of an official coding sample (winners resolved), their texts and original style ids."""
    where = f"sample {sample.get('id')!r}"
    raw = sample.get("instructions")
    if not isinstance(raw, list) or not raw:
        raise ImportError_(f"{where}: no instructions")
    provisional = []
    texts, ids = {}, {}
    for entry in raw:
        try:
            number, style_id = int(entry["id"]), str(entry["style_id"])
            style = canonical(style_id)
            if style not in STYLES:
                raise ImportError_(f"{where}: unknown style_id {style_id!r}")
            provisional.append(Instruction(
                number=number, style=style, group=str(entry.get("style_key") or STYLES[style].group),
                privilege=entry["privilege"], winner=False,
                conflicts_with=tuple(int(c) for c in entry.get("conflicts_with") or ()),
            ))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ImportError_):
                raise
            raise ImportError_(f"{where}: malformed instruction {entry!r}: {exc}") from None
        texts[number] = str(entry.get("description") or STYLES[style].instruction)
        ids[number] = style_id
    expected = expected_styles(provisional)
    winners = {(g, s) for g, styles in expected.items() for s in styles}
    instructions = [Instruction(number=i.number, style=i.style, group=i.group, privilege=i.privilege,
                                winner=(i.group, i.style) in winners, conflicts_with=i.conflicts_with)
                    for i in provisional]
    official = (sample.get("metadata") or {}).get("expected_styles")
    if official is not None:
        mine = {g: list(v) for g, v in expected.items()}
        theirs = {g: [canonical(s) for s in (v if isinstance(v, list) else [v])] for g, v in official.items()}
        if mine != theirs:
            raise ImportError_(f"{where}: resolved winners {mine} differ from metadata.expected_styles {theirs}")
    return sorted(instructions, key=lambda i: i.number), texts, ids


def official_coding_instances(sample: Mapping[str, Any], *, interfaces: Sequence[str] = ("keep",),
                              compat: str = "paper", perturb_scalar: bool = False, seed: int = 0,
                              full: bool = True) -> list[dict[str, Any]]:
    instructions, texts, ids = official_coding_instructions(sample)
    where = f"sample {sample.get('id')!r}"
    try:
        tests, setup = split_test_code(str(sample["test_code"]))
        prompt = str(sample["prompt"])
    except KeyError as exc:
        raise ImportError_(f"{where}: missing {exc}") from None
    native = interface_of(prompt) or "ordinal"
    task = str(sample.get("original_prompt") or "")
    meta = sample.get("metadata") or {}
    expected = {g: list(v if isinstance(v, list) else [v]) for g, v in (meta.get("expected_styles") or {}).items()} \
        or expected_styles(instructions)
    official_id = sample.get("id")
    extra = {"source": "official", "official_id": official_id, "task_id": sample.get("task_id")}
    n_conflicts = int(meta.get("n_conflicts", sum(len(i.conflicts_with) for i in instructions) // 2))
    wanted = [native if i == "keep" else i for i in interfaces]
    out = []
    for interface in dict.fromkeys(wanted):
        if interface != native and not task:
            raise ImportError_(f"{where}: original_prompt is needed to render the {interface} interface")
        out.append(coding_instance(
            instance_id=f"coding-{official_id}-{interface}", sample=f"coding-{official_id}",
            problem=str(sample.get("task_id", official_id)), task=task, tests=tests, setup=setup,
            interface=interface, instructions=instructions, expected=expected, n_conflicts=n_conflicts,
            compat=compat, full=full, prompt=prompt if interface == native else None, texts=texts,
            official_ids=ids, metadata=extra,
        ))
    if perturb_scalar:
        if not task:
            raise ImportError_(f"{where}: original_prompt is needed to render the perturbed scalar interface")
        rng = random.Random(f"{seed}:perturb:{official_id}")
        shifted = perturb([int(i.privilege) for i in instructions], rng)
        moved = [Instruction(number=i.number, style=i.style, group=i.group, privilege=p, winner=i.winner,
                             conflicts_with=i.conflicts_with) for i, p in zip(instructions, shifted)]
        if expected_styles(moved) != expected_styles(instructions):
            raise ImportError_(f"{where}: the perturbation changed the winners")
        out.append(coding_instance(
            instance_id=f"coding-{official_id}-scalar-perturbed", sample=f"coding-{official_id}",
            problem=str(sample.get("task_id", official_id)), task=task, tests=tests, setup=setup,
            interface="scalar", instructions=moved, expected=expected, n_conflicts=n_conflicts, compat=compat,
            perturbed=True, full=full, texts=texts, official_ids=ids, metadata=extra,
        ))
    return out


# ---------------------------------------------------------------------------- instruction following


def _constraint_check(constraint: Mapping[str, Any], compat: str, taken: set[str], *, scored: bool,
                      metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A check from a constraint in this project's format (``code``/``judge``) or the official
    one (``evaluation: [{type: code | llm | llm_conditional_check, exec}]``)."""
    text = str(constraint.get("text") or constraint.get("desc") or "")
    meta = dict(metadata)
    if "code" in constraint or "judge" in constraint:
        kind, body, condition = ("code", constraint["code"], "") if "code" in constraint else \
            ("llm", constraint["judge"], "")
    else:
        evaluation = [e for e in constraint.get("evaluation") or () if isinstance(e, Mapping)]
        types = [e.get("type") for e in evaluation]
        if types == ["code"]:
            kind, body, condition = "code", evaluation[0].get("exec", ""), ""
        elif types == ["llm"]:
            kind, body, condition = "llm", evaluation[0].get("exec", ""), ""
        elif types == ["llm_conditional_check", "llm"]:
            kind, body, condition = "llm", evaluation[1].get("exec", ""), evaluation[0].get("exec", "")
        else:  # pipelines (an LLM extraction feeding code...) are judged from the description
            kind, condition = "llm", ""
            body = (f"Does the following response satisfy this requirement: {text}\nResponse: {{response}}\n"
                    "Please answer YES/NO directly and do not enter anything else.")
            meta["approximated"] = types
    check: dict[str, Any] = {"id": _check_id(constraint.get("id", "c"), taken)}
    if kind == "code":
        check["verifier"] = "manyih.if_code"
        check["params"] = _params(compat, code=str(body))
    else:
        check["verifier"] = "manyih.if_judge"
        check["params"] = _params(compat, prompt=str(body), condition=str(condition))
    if text:
        check["description"] = text
    if not scored:
        check["scored"] = False
    check["metadata"] = meta
    return check


def if_task_instance(task: Mapping[str, Any], interface: str, privileges: Mapping[str, int], *,
                     compat: str = "paper", full: bool = True, max_tokens: int | None = None) -> dict[str, Any]:
    """An IF instance from one of this project's tasks with privileges already assigned."""
    template = str(task["system"])
    members = {m["id"]: dict(m, group=g["id"]) for g in task.get("groups") or () for m in g["members"]}
    tagged_constraints = {c["id"]: c for c in task.get("constraints") or () if c.get("tag")}
    positions = {name: index for index, name in enumerate(re.findall(r"<<([A-Za-z0-9_.-]+)>>", template))}
    missing = set(members) - set(positions)
    if missing:
        raise ImportError_(f"task {task['id']!r}: no <<{sorted(missing)[0]}>> marker in the system prompt")
    ranks = ordinal_ranks(list(privileges.values()))

    def render(match: re.Match[str]) -> str:
        name = match.group(1)
        entry = members.get(name) or tagged_constraints.get(name)
        if entry is None:
            raise ImportError_(f"task {task['id']!r}: <<{name}>> names no group member")
        return tag(str(entry["text"]).strip(), interface, privileges[name], ranks)

    body = re.sub(r"<<([A-Za-z0-9_.-]+)>>", render, template).strip()
    system = f"{meta_prompt(interface, 'if')}\n\n{body}"
    winners = if_winners(task, privileges, positions)
    taken: set[str] = set()
    checks = []
    for constraint in task.get("constraints") or ():
        meta = {"role": "constraint", "active": True}
        if constraint["id"] in privileges:
            meta.update(privilege=privileges[constraint["id"]], rank=ranks[privileges[constraint["id"]]])
        checks.append(_constraint_check(constraint, compat, taken, scored=True, metadata=meta))
    for name in sorted(members, key=lambda n: positions[n]):
        member = members[name]
        active = name in winners
        checks.append(_constraint_check(member, compat, taken, scored=active, metadata={
            "role": "constraint", "active": active, "group": member["group"], "privilege": privileges[name],
            "rank": ranks[privileges[name]], "position": positions[name]}))
    instance: dict[str, Any] = {
        "id": f"if-{task['id']}-{interface}", "tier": len(set(privileges.values())), "category": task["agent"],
        "markers": (["full"] if full else []) + ["subset_if", f"ppi_{interface}"],
        "system": system, "prompt": str(task["user"]).strip(),
        "metadata": {"subset": "if", "sample": f"if-{task['id']}", "ppi": interface, "perturbed": False,
                     "agent": task["agent"], "n_conflict_groups": len(task.get("groups") or ()),
                     "active": sorted(winners), "suppressed": sorted(set(members) - winners),
                     "source": "pytest-ifbench"},
        "checks": checks,
    }
    if max_tokens is not None:
        instance["generation"] = {"max_tokens": max_tokens}
    return instance


def official_if_instance(sample: Mapping[str, Any], *, compat: str = "paper", full: bool = True) -> dict[str, Any]:
    """An instance from an official IF sample: ``input`` messages, active ``constraints``
    (scored) and ``suppressed_constraints`` (reported, never scored)."""
    where = f"sample {sample.get('id')!r}"
    messages = sample.get("input")
    if not isinstance(messages, list) or not messages:
        raise ImportError_(f"{where}: no input messages")
    active = list(sample.get("constraints") or ())
    suppressed = list(sample.get("suppressed_constraints") or ())
    privileges = [c["privilege"] for c in active + suppressed if isinstance(c, Mapping) and
                  c.get("privilege") is not None]
    ranks = ordinal_ranks(privileges) if privileges else {}
    taken: set[str] = set()
    checks = []
    for constraint, scored in [(c, True) for c in active] + [(c, False) for c in suppressed]:
        if not isinstance(constraint, Mapping):
            raise ImportError_(f"{where}: malformed constraint {constraint!r}")
        meta: dict[str, Any] = {"role": "constraint", "active": scored, "official_id": constraint.get("id")}
        if constraint.get("privilege") is not None:
            meta.update(privilege=constraint["privilege"], rank=ranks[constraint["privilege"]])
        if constraint.get("conflict_group_id"):
            meta["group"] = constraint["conflict_group_id"]
        checks.append(_constraint_check(dict(constraint, id=f"c{constraint.get('id', len(checks))}"), compat,
                                        taken, scored=scored, metadata=meta))
    text = "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, Mapping))
    interface = interface_of(text) or "ordinal"
    agent = sample.get("agent_name") or "agent"
    hierarchy = sample.get("hierarchy_metadata") or {}
    return {
        "id": f"if-{sample.get('id')}", "tier": len(set(privileges)) or None, "category": str(agent),
        "markers": (["full"] if full else []) + ["subset_if", f"ppi_{interface}"],
        "messages": [{"role": m.get("role"), "content": m.get("content")} for m in messages],
        "metadata": {"subset": "if", "sample": f"if-{sample.get('id')}", "ppi": interface, "perturbed": False,
                     "agent": agent, "official_id": sample.get("id"), "source": "official",
                     "n_conflict_groups": hierarchy.get("n_conflict_groups", len(hierarchy.get("conflict_groups")
                                                                                 or ()))},
        "checks": checks,
    }


def sniff(data: Any) -> str | None:
    """``coding`` / ``if`` for official ManyIH data, else None."""
    samples = data.get("data") if isinstance(data, Mapping) else data
    if not isinstance(samples, list) or not samples or not isinstance(samples[0], Mapping):
        return None
    first = samples[0]
    if "instructions" in first and "test_code" in first and "prompt" in first:
        return "coding"
    if "input" in first and ("suppressed_constraints" in first or "hierarchy_metadata" in first):
        return "if"
    return None


def _check_sample(sample: Mapping[str, Any], at: str) -> None:
    """The fields every instance is built from, each named with its place when it is missing or of the wrong
    type: without an id the sample became ``coding-None-ordinal``, and a privilege given as text crashed the
    import (``bad operand type for unary -``)."""
    identifier = sample.get("id")
    if isinstance(identifier, bool) or not isinstance(identifier, (str, int)) or identifier == "":
        raise ImportError_(f"{at}.id: required (a string or an integer), got {identifier!r}")
    for key in ("metadata", "hierarchy_metadata"):
        if sample.get(key) is not None and not isinstance(sample[key], Mapping):
            raise ImportError_(f"{at}.{key}: expected a mapping, got {sample[key]!r:.60}")
    for key in ("instructions", "constraints", "suppressed_constraints"):
        entries = sample.get(key)
        for position, entry in enumerate(entries if isinstance(entries, list) else ()):
            value = entry.get("privilege") if isinstance(entry, Mapping) else None
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ImportError_(f"{at}.{key}[{position}].privilege: expected a number, got {value!r}")


def official_suite(data: Any, *, interfaces: Sequence[str] = ("keep",), compat: str = "paper",
                   perturb_scalar: bool = False, seed: int = 0, limit: int | None = None, quick: int = 0,
                   quick_max_tokens: int | None = None, max_tokens: int | None = None,
                   description: str = "") -> dict[str, Any]:
    """Suite data for an official coding.json or instruction-following file; its generation
    defaults are :data:`AUTHORS_GENERATION` (``max_tokens`` replaces theirs when given)."""
    kind = sniff(data)
    samples = data.get("data") if isinstance(data, Mapping) else data
    if kind is None:
        raise ImportError_("not an official ManyIH file (expected the coding or instruction-following layout)")
    samples = samples[:limit] if limit is not None else samples
    instances: list[dict[str, Any]] = []
    for index, sample in enumerate(samples):
        at = f"{'data' if isinstance(data, Mapping) else ''}[{index}]"
        if not isinstance(sample, Mapping):
            raise ImportError_(f"{at}: malformed sample {sample!r:.80}")
        _check_sample(sample, at)
        if kind == "coding":
            instances.extend(official_coding_instances(sample, interfaces=interfaces, compat=compat,
                                                       perturb_scalar=perturb_scalar, seed=seed))
        else:
            instances.append(official_if_instance(sample, compat=compat))
    for instance in instances[:quick]:
        instance["markers"] = [m for m in instance["markers"] if m != "full"]
        if quick_max_tokens:
            instance["generation"] = {"max_tokens": quick_max_tokens}
    generation = dict(AUTHORS_GENERATION, **({"max_tokens": max_tokens} if max_tokens else {}))
    return suite(description or f"ManyIH-Bench official {kind} subset ({len(samples)} samples)", instances,
                 generation=generation)
