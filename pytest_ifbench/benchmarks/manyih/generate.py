"""``ifbench generate manyih``: ManyIH-Bench suites, generated (seeded) or imported.

Subcommands:

* ``coding`` -- coding problems (the shipped original set, or an MBPP-format file)
  with composed style instructions: fixed style groups and winners per sample,
  tier variants that add suppressed instructions and conflicts (Table 4), each
  rendered in the ordinal and the scalar interface, plus privilege-perturbed
  scalar variants (§6.4.2) that share ``metadata.sample`` with their original.
* ``if`` -- the shipped instruction-following tasks (or a file in that format) with
  privileges assigned per conflict group, in both interfaces.
* ``import`` -- an official ``coding.json`` or instruction-following file.

Output is a suite YAML (``--out``, default standard output); statistics go to
standard error. The same arguments always produce the same file.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from .assemble import ImportError_, coding_instance, if_task_instance, official_suite, suite
from .compose import (
    DEFAULT_CONFLICTS,
    ComposeError,
    assign_if_privileges,
    compose,
    load_if_tasks,
    load_problems,
    variant,
    with_privileges,
)
from .ppi import COMPAT_MODES, INTERFACES, perturb


def _csv(kind: type = str):
    def parse(text: str) -> list[Any]:
        return [kind(part.strip()) for part in text.split(",") if part.strip()]

    return parse


def _ranges(text: str) -> dict[int, tuple[int, int]]:
    out = dict(DEFAULT_CONFLICTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        tier, _, span = part.partition("=")
        low, _, high = span.partition("-")
        out[int(tier)] = (int(low), int(high or low))
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifbench generate manyih", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sub: argparse.ArgumentParser, interfaces: str = "ordinal,scalar") -> None:
        sub.add_argument("--out", default="-", metavar="FILE", help="suite YAML to write ('-': standard output)")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        sub.add_argument("--interfaces", type=_csv(), default=_csv()(interfaces), metavar="LIST",
                         help=f"privilege prompt interfaces to render (default {interfaces})")
        sub.add_argument("--compat", choices=COMPAT_MODES, default="paper",
                         help="compat parameter written into every check (default paper)")
        sub.add_argument("--max-tokens", type=int, default=None,
                         help="generation.max_tokens (default 1024; import: the authors' 40960)")
        sub.add_argument("--quick", type=int, default=0, metavar="N",
                         help="leave the first N instances unmarked so a plain `pytest suites/` runs them; "
                              "everything else gets the marker 'full' (default 0)")
        sub.add_argument("--quick-max-tokens", type=int, default=None, metavar="N",
                         help="max_tokens for the quick instances")
        sub.add_argument("--limit", type=int, default=None, metavar="N", help="use only the first N problems/samples")

    coding = commands.add_parser("coding", help="coding problems with composed style instructions")
    common(coding)
    coding.add_argument("--problems", type=Path, default=None, metavar="FILE",
                        help="problems in this project's JSONL format or MBPP format "
                             "(text/prompt, code, test_list); default: the shipped original set")
    coding.add_argument("--tiers", type=_csv(int), default=[6, 8, 12], metavar="LIST",
                        help="instructions (= privilege levels) per variant (default 6,8,12)")
    coding.add_argument("--groups", type=int, default=4, help="style groups per sample (default 4)")
    coding.add_argument("--winners", type=int, default=6, help="winning instructions per sample (default 6)")
    coding.add_argument("--conflicts", type=_ranges, default=dict(DEFAULT_CONFLICTS), metavar="T=LO-HI,...",
                        help="pairwise conflicts allowed per tier (default 6=0-0,8=2-4,12=7-11)")
    coding.add_argument("--perturb-tiers", type=_csv(int), default=[12], metavar="LIST",
                        help="tiers whose scalar variant also gets a perturbed copy, delta in [-3, 3] "
                             "(default 12; '' for none)")

    tasks = commands.add_parser("if", help="the instruction-following subset from task files")
    common(tasks)
    tasks.add_argument("--tasks", type=Path, default=None, metavar="FILE",
                       help="task file (default: the shipped original set, benchmarks/manyih/data/if_tasks.yaml)")
    tasks.add_argument("--quick-ids", type=_csv(), default=[], metavar="LIST",
                       help="task ids whose instances stay unmarked (instead of the first --quick)")

    official = commands.add_parser("import", help="convert an official ManyIH file (coding.json or the IF subset)")
    common(official, interfaces="keep")
    official.add_argument("file", type=Path, help="the official JSON file")
    official.add_argument("--perturb", action="store_true",
                          help="coding: add a privilege-perturbed scalar copy of every sample")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for name in args.interfaces:
        if name not in (*INTERFACES, "keep") or (name == "keep" and args.command != "import"):
            print(f"ifbench generate manyih: error: unknown interface {name!r}", file=sys.stderr)
            return 2
    try:
        if args.command == "coding":
            data, stats = _coding(args)
        elif args.command == "if":
            data, stats = _if(args)
        else:
            data, stats = _import(args)
    except (ComposeError, ImportError_, OSError, ValueError) as exc:
        print(f"ifbench generate manyih {args.command}: error: {exc}", file=sys.stderr)
        return 1
    command = "ifbench generate manyih " + " ".join(argv if argv is not None else sys.argv[1:])
    _write(data, args.out, command)
    for line in stats:
        print(line, file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- coding


def _coding(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    problems = load_problems(args.problems)[: args.limit]
    if not problems:
        raise ComposeError("no problems")
    tiers = sorted(set(args.tiers))
    instances = []
    per_tier: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for problem in problems:
        tests = list(problem.tests)  # one object per problem: the YAML shares it between variants
        composition = compose(random.Random(f"{args.seed}:{problem.id}"), n_groups=args.groups,
                              n_winners=args.winners, tiers=tiers, conflict_ranges=args.conflicts)
        for tier in tiers:
            base = variant(composition, tier, random.Random(f"{args.seed}:{problem.id}:t{tier}"))
            sample = f"{problem.id}-t{tier}"
            variants = [(interface, base, False) for interface in args.interfaces]
            if tier in args.perturb_tiers and "scalar" in args.interfaces:
                rng = random.Random(f"{args.seed}:{problem.id}:t{tier}:perturb")
                variants.append(("scalar", with_privileges(base, perturb([i.privilege for i in base.instructions],
                                                                         rng)), True))
            for interface, chosen, perturbed in variants:
                instance = coding_instance(
                    instance_id=f"{sample}-{interface}" + ("-perturbed" if perturbed else ""), sample=sample,
                    problem=problem.id, task=problem.task, tests=tests, setup=problem.setup,
                    interface=interface, instructions=chosen.instructions, expected=chosen.expected,
                    n_conflicts=chosen.n_conflicts, compat=args.compat, perturbed=perturbed,
                    metadata={"source": problem.source, "seed": args.seed},
                )
                instances.append(instance)
                per_tier[tier].append(instance)
    _mark_quick(instances, args.quick, args.quick_max_tokens, order=lambda i: (
        -i["tier"], args.interfaces.index(i["metadata"]["ppi"])))
    description = (f"ManyIH-Bench coding subset, generated from {len(problems)} problems "
                   f"(seed {args.seed}; tiers {', '.join(map(str, tiers))}; interfaces {', '.join(args.interfaces)}).")
    return suite(description, instances, max_tokens=args.max_tokens or 1024), _tier_stats(per_tier)


def _tier_stats(per_tier: dict[int, list[dict[str, Any]]]) -> list[str]:
    lines = ["tier  instances  instructions  levels  groups  winners  conflicts (min-max, avg)  words (min-max, avg)"]
    for tier in sorted(per_tier):
        group = [i for i in per_tier[tier] if not i["metadata"]["perturbed"]]
        conflicts = [i["metadata"]["n_conflicts"] for i in group]
        words = [len((i["system"] + " " + i["prompt"]).split()) for i in group]
        winners = {sum(c.get("scored", True) for c in i["checks"][1:]) for i in group}
        lines.append(
            f"{tier:>4}  {len(per_tier[tier]):>9}  {_span(i['metadata']['n_instructions'] for i in group):>12}  "
            f"{_span(i['tier'] for i in group):>6}  {_span(i['metadata']['n_style_groups'] for i in group):>6}  "
            f"{_span(winners):>7}  {min(conflicts)}-{max(conflicts)}, {statistics.fmean(conflicts):.1f}"
            f"{'':>14}{min(words)}-{max(words)}, {statistics.fmean(words):.0f}")
    return lines


def _span(values: Any) -> str:
    values = list(values)
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _mark_quick(instances: list[dict[str, Any]], count: int, max_tokens: int | None, *, order: Any = None,
                ids: list[str] | None = None) -> None:
    """Leave ``count`` instances (or those of ``ids``) runnable in a plain run; the rest get ``full``."""
    chosen: list[dict[str, Any]] = []
    if ids:
        chosen = [i for i in instances if i["metadata"]["sample"].removeprefix("if-") in ids]
    elif count:
        by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for instance in instances:
            if not instance["metadata"].get("perturbed"):
                key = "problem" if "problem" in instance["metadata"] else "sample"
                by_problem[instance["metadata"][key]].append(instance)
        for group in by_problem.values():
            chosen.extend(sorted(group, key=order) if order else group)
            if len(chosen) >= count:
                break
        chosen = chosen[:count]
    picked = {id(i) for i in chosen}
    for instance in instances:
        markers = [m for m in instance["markers"] if m != "full"]
        if id(instance) in picked:
            if max_tokens:
                instance["generation"] = {"max_tokens": max_tokens}
        else:
            markers.insert(0, "full")
        instance["markers"] = markers


# ---------------------------------------------------------------------------- IF


def _if(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    tasks = load_if_tasks(args.tasks)[: args.limit]
    known = {t["id"] for t in tasks}
    unknown = [i for i in args.quick_ids if i not in known]
    if unknown:
        raise ComposeError(f"--quick-ids: unknown task id {unknown[0]!r}")
    instances = []
    for task in tasks:
        privileges = assign_if_privileges(task, random.Random(f"{args.seed}:{task['id']}"))
        for interface in args.interfaces:
            instances.append(if_task_instance(task, interface, privileges, compat=args.compat))
    _mark_quick(instances, args.quick, args.quick_max_tokens, ids=args.quick_ids)
    agents = sorted({t["agent"] for t in tasks})
    tiers = [i["tier"] for i in instances]
    stats = [f"{len(tasks)} tasks, {len(instances)} instances, {len(agents)} agent types, "
             f"privilege levels {min(tiers)}-{max(tiers)}"]
    description = (f"ManyIH-Bench instruction-following subset: {len(tasks)} original agentic tasks "
                   f"(seed {args.seed}; interfaces {', '.join(args.interfaces)}).")
    return suite(description, instances, max_tokens=args.max_tokens or 1024), stats


# ---------------------------------------------------------------------------- import


def _import(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{args.file}: not JSON: {exc}") from None
    result = official_suite(data, interfaces=args.interfaces, compat=args.compat, perturb_scalar=args.perturb,
                            seed=args.seed, limit=args.limit, max_tokens=args.max_tokens)
    instances = result["instances"]
    _mark_quick(instances, args.quick, args.quick_max_tokens)
    return result, [f"{len(instances)} instances from {args.file}"]


# ---------------------------------------------------------------------------- output


def _write(data: dict[str, Any], out: str, command: str) -> None:
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # long repeated texts (system prompts) become aliases
            return super().ignore_aliases(data) and not (isinstance(data, str) and len(data) > 200)

    def represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)
    text = yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120)
    header = f"# Generated by `{command}`; regenerate rather than edit.\n"
    if out == "-":
        sys.stdout.write(header + text)
    else:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + text, encoding="utf-8")
