"""``ifbench generate vericode``: Vibe Checker suites from the bundled tasks or downloaded benchmark files.

Default (no arguments): augment the 64 bundled tasks with the rule-based
selector (seed 0, k = 1..5) and write ``suites/vericode/bigvibe.yaml`` and
``suites/vericode/livevibe.yaml`` (every instance marked ``full``) plus
``suites/vericode/quick.yaml`` (the few instances a plain ``pytest suites/``
runs). ``--source bigcodebench|livecodebench|mbpp --input FILE`` imports a
downloaded JSONL file instead and writes one suite. The output only depends on
the arguments (and, with ``--selector llm``, on the judge model's replies,
which are cached).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("suites") / "vericode"
QUICK_MAX_TOKENS = 400
DEFAULT_MAX_TOKENS = 1024

#: The plain-run subset: (task, k, protocol). Three short tasks (solve(), stdio, realworld), k = 0..2, both
#: protocols (positions 1-2 in both): 10 instances, 14 model calls (80 s on the embedded model, 2 idle cores).
QUICK = (
    ("fn_004", 0, "single_turn"), ("fn_004", 1, "single_turn"), ("fn_004", 2, "single_turn"),
    ("fn_004", 1, "multi_turn"), ("fn_004", 2, "multi_turn"),
    ("st_008", 0, "single_turn"), ("st_008", 1, "single_turn"),
    ("rw_012", 0, "single_turn"), ("rw_012", 1, "single_turn"), ("rw_012", 1, "multi_turn"),
)

_DESCRIPTION = {
    "bigvibe": "Vibe Checker, BigVibeBench-style: real-world programming tasks (task_func with unit tests) "
               "augmented with VeriCode instructions, single-turn generation and multi-turn editing.",
    "livevibe": "Vibe Checker, LiveVibeBench-style: algorithmic tasks (stdin/stdout programs and solve() "
                "functions) augmented with VeriCode instructions, single-turn generation and multi-turn editing.",
    "mbpp": "Vibe Checker on MBPP-style function tasks augmented with VeriCode instructions.",
    "quick": "The Vibe Checker instances a plain `pytest suites/` runs: a few short tasks, both protocols, "
             "k = 0..2, short replies. The full suites are bigvibe.yaml and livevibe.yaml (marker `full`: "
             "run them with --ifbench-full).",
}


def _parser() -> argparse.ArgumentParser:
    from .tasks import SOURCES

    parser = argparse.ArgumentParser(
        prog="ifbench generate vericode", description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Input formats (docs/vericode.md has the details):\n"
               "  bigcodebench   task_id, instruct_prompt, test, [entry_point, code_prompt, canonical_solution, libs]\n"
               "  livecodebench  question_id, question_content, public_test_cases, [private_test_cases,\n"
               "                 starter_code]\n"
               "  mbpp           task_id, text (or prompt), test_list, [test_setup_code, code]\n"
               "  builtin        the bundled format (pytest_ifbench/benchmarks/vericode/data/tasks.jsonl)",
    )
    parser.add_argument("--source", choices=(*SOURCES, "auto"), default=None,
                        help="task source (default: builtin without --input, auto-detected with it)")
    parser.add_argument("--input", type=Path, default=None, metavar="FILE", help="a downloaded JSONL file")
    parser.add_argument("--out", type=Path, default=None, metavar="PATH",
                        help="output directory (builtin; default suites/vericode) or file (imports; default "
                             "suites/vericode/<source>.yaml)")
    parser.add_argument("--seed", type=int, default=0, help="augmentation seed (default 0)")
    parser.add_argument("--max-k", type=int, default=5, choices=range(1, 31), metavar="K",
                        help="instructions per task; suites for k = 0..K are written (default 5)")
    parser.add_argument("--selector", choices=("rule", "llm"), default="rule",
                        help="rule-based selection (default) or the judge model (--judge-model)")
    parser.add_argument("--judge-model", default=None, metavar="MODEL",
                        help="litellm model string for --selector llm (default local/smollm2)")
    parser.add_argument("--api-base", default=None, metavar="URL", help="OpenAI-compatible base URL for the judge")
    parser.add_argument("--cache", type=Path, default=Path(".ifbench-cache"), metavar="DIR",
                        help="response cache for the judge's replies (default .ifbench-cache)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, metavar="N",
                        help=f"max_tokens of the model under test (default {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--tasks", default=None, metavar="ID,...", help="only these task ids")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N tasks")
    parser.add_argument("--no-full", action="store_true",
                        help="do not mark the instances 'full' (marked ones run only with --ifbench-full, -m full "
                             "or their node ids)")
    parser.add_argument("--no-quick", action="store_true", help="builtin: do not write quick.yaml")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the files on disk differ from what would be written")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .tasks import TaskFormatError

    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    try:
        outputs = generate(args)
    except TaskFormatError as exc:
        print(f"ifbench generate vericode: error: {exc}", file=sys.stderr)
        return 2
    stale = []
    for path, text in outputs.items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({text.count(chr(10) + '- id: ')} instances)")
    if stale:
        print("out of date: " + ", ".join(map(str, stale)) + " (regenerate with the command in the file header)",
              file=sys.stderr)
        return 1
    return 0


def _command(argv_args: argparse.Namespace) -> str:
    parts = ["ifbench", "generate", "vericode"]
    for name in ("source", "input", "seed", "max_k", "selector", "judge_model", "max_tokens", "tasks", "limit"):
        value = getattr(argv_args, name)
        if value is not None:
            parts += [f"--{name.replace('_', '-')}", str(value)]
    parts += ["--no-full"] if argv_args.no_full else []
    return " ".join(shlex.quote(p) for p in parts)


def _selector(args: argparse.Namespace) -> Any:
    from .augment import LLMSelector, RuleSelector

    if args.selector == "rule":
        return RuleSelector()
    from pytest_ifbench import ResponseCache, make_client

    model = args.judge_model or "local/smollm2"
    client = make_client(model, api_base=args.api_base, cache=None if args.no_cache else ResponseCache(args.cache))
    return LLMSelector(client)


def generate(args: argparse.Namespace) -> dict[Path, str]:
    """Every output file's path and text."""
    from .augment import augment, build_instances
    from .tasks import TaskFormatError, detect_source, load_tasks

    source = args.source or ("auto" if args.input else "builtin")
    if source == "auto":
        if args.input is None:
            raise TaskFormatError("--source auto needs --input FILE")
        source = detect_source(args.input)
    tasks = load_tasks(source, args.input)
    if args.tasks:
        wanted = [t.strip() for t in args.tasks.split(",") if t.strip()]
        unknown = sorted(set(wanted) - {t.id for t in tasks} - {t.source_id for t in tasks})
        if unknown:
            raise TaskFormatError(f"--tasks: unknown task ids {', '.join(unknown)}")
        tasks = [t for t in tasks if t.id in wanted or t.source_id in wanted]
    if args.limit is not None:
        tasks = tasks[: args.limit]
    selector = _selector(args)
    try:
        selections = [augment(task, selector, seed=args.seed, max_k=args.max_k) for task in tasks]
    finally:
        if hasattr(selector, "close"):
            selector.close()
    for selection in selections:
        for problem in selection.problems:
            print(f"{selection.task.id}: {problem}", file=sys.stderr)
    header = _command(args)
    by_testbed: dict[str, list[dict[str, Any]]] = {}
    for selection in selections:
        by_testbed.setdefault(selection.task.testbed, []).extend(
            build_instances(selection, max_k=args.max_k, seed=args.seed, selector=selector.name))
    outputs: dict[Path, str] = {}
    if source == "builtin":
        directory = args.out or DEFAULT_OUT
        for testbed, instances in by_testbed.items():
            outputs[directory / f"{testbed}.yaml"] = suite_text(
                instances, testbed=testbed, header=header, max_tokens=args.max_tokens, full=not args.no_full)
        quick = _quick_instances(by_testbed)
        if quick and not args.no_quick:
            outputs[directory / "quick.yaml"] = suite_text(quick, testbed="quick", header=header,
                                                           max_tokens=QUICK_MAX_TOKENS, full=False)
    else:
        path = args.out or DEFAULT_OUT / f"{source}.yaml"
        testbeds = sorted(by_testbed)
        instances = [i for t in testbeds for i in by_testbed[t]]
        outputs[path] = suite_text(instances, testbed=testbeds[0] if len(testbeds) == 1 else "mixed",
                                   header=header, max_tokens=args.max_tokens, full=not args.no_full)
    return outputs


def _quick_instances(by_testbed: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    from .augment import SYSTEM_PROMPTS

    index = {(i["metadata"]["task"], i["metadata"]["k"], i.get("protocol", "single_turn")): i
             for instances in by_testbed.values() for i in instances}
    out = []
    for key in QUICK:
        if key not in index:
            continue
        instance = dict(index[key])
        testbed = instance["metadata"]["testbed"]
        instance = {"id": instance["id"], "system": SYSTEM_PROMPTS[testbed],
                    **{k: v for k, v in instance.items() if k != "id"}}
        instance["markers"] = [m for m in instance["markers"] if m not in ("bigvibe", "livevibe")] + [testbed]
        instance["metadata"] = dict(instance["metadata"]) | {"testbed": "quick", "source_testbed": testbed}
        out.append(instance)
    return out


def suite_text(instances: Sequence[Mapping[str, Any]], *, testbed: str, header: str, max_tokens: int,
               full: bool) -> str:
    from .augment import SYSTEM_PROMPTS, TEMPERATURE

    defaults: dict[str, Any] = {}
    if testbed in SYSTEM_PROMPTS:
        defaults["system"] = SYSTEM_PROMPTS[testbed]
    defaults["generation"] = {"temperature": TEMPERATURE.get(testbed, 0.0), "max_tokens": max_tokens}
    if full:
        defaults["markers"] = ["full"]
    data = {"ifbench": 1, "benchmark": "vericode", "description": _DESCRIPTION.get(testbed, _DESCRIPTION["bigvibe"]),
            "defaults": defaults, "instances": list(instances)}
    lines = ["# Generated by pytest-ifbench; do not edit by hand. Regenerate with:",
             f"#   {header}", ""]
    return "\n".join(lines) + dump_yaml(data)


def dump_yaml(data: Any) -> str:
    import yaml

    class Dumper(yaml.CSafeDumper):  # the C emitter (a hard dependency, like the C loader): fast, stable output
        pass

    def string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, string)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
