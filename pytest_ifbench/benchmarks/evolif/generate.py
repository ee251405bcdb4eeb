"""EvolIF dialogue generator and importer: ``ifbench generate evolif synth|import ...``.

``synth`` builds multi-topic dialogues with the three-layer tracking of
Jia et al. §3.2: a topic layer (continue the current topic, open a new one, or
backtrack to one from the topic history), an instruction layer (each topic
keeps its own constraint set, evolved by adding, modifying or removing one
constraint per turn) and a constraint layer (a modified constraint gets new
parameters in its own group). A topic holds at most one constraint per group
and never a combination the checkers could not satisfy together. Every turn is
then written as a user message, by a template realiser (no model: offline and
reproducible) or by an LLM synthesizer (``--synthesizer-model``) whose output
must pass the topic and constraint checkers within ``--attempts`` tries (else
the template message is used and the turn is flagged). A persona colours every
message of a dialogue. The same seed gives the same file, byte for byte.

The stages live in their own modules: ``sampling`` (the constraint layer),
``tracking`` (the topic and instruction layers: the dialogue script),
``realise`` (user messages, by templates or an LLM) and ``assemble``
(instances, suite defaults, YAML); this module is the command line.

``import`` turns official EvolIF dialogue files (JSONL, one line per turn)
into a suite YAML file; ``pytest official.jsonl`` runs them without it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .assemble import SynthConfig, build_suite, dump_suite
from .catalog import GROUPS, PAPER_GROUPS
from .realise import LLMSynthesizer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifbench generate evolif",
                                     description="Generate EvolIF dialogue suites, or import official EvolIF files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    synth = commands.add_parser("synth", help="generate dialogues (three-layer tracking + realisation)",
                                description="Generate seeded EvolIF dialogues as a suite YAML file.")
    synth.add_argument("--out", required=True, metavar="FILE", help="suite file to write ('-' for stdout)")
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--dialogues", type=int, default=30, metavar="N")
    synth.add_argument("--start", type=int, default=1, metavar="K",
                       help="index of the first dialogue (ids <prefix>-<K>...; lets one seed span several files)")
    synth.add_argument("--turns", type=int, default=50, metavar="T", help="scripted turns per dialogue")
    _common(synth)
    synth.add_argument("--id-prefix", default="evolif", metavar="PREFIX")
    synth.add_argument("--groups", default=",".join(PAPER_GROUPS), metavar="IDS",
                       help="comma-separated constraint ids to draw from (default: the paper's 12 groups; "
                            "'language' is also available)")
    synth.add_argument("--description", default="")
    synth.add_argument("--synthesizer-model", default=None, metavar="MODEL",
                       help="litellm model that rewrites each turn in the persona's voice (default: templates only)")
    synth.add_argument("--api-base", default=None, metavar="URL")
    synth.add_argument("--attempts", type=int, default=3, help="synthesizer tries per turn before the template is used")
    synth.add_argument("--temperature", type=float, default=1.0, help="synthesizer sampling temperature")
    synth.add_argument("--no-llm-topic-check", action="store_true",
                       help="only the keyword topic checker (no LLM fallback)")
    synth.add_argument("--cache", default=None, metavar="DIR", help="response cache for synthesizer calls")

    importer = commands.add_parser("import", help="convert official EvolIF dialogue files to a suite",
                                   description="Convert official EvolIF dialogue files (JSONL, one line per "
                                               "turn) into one suite YAML file.")
    importer.add_argument("files", nargs="+", metavar="FILE")
    importer.add_argument("--out", required=True, metavar="FILE", help="suite file to write ('-' for stdout)")
    _common(importer)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--patience", type=int, default=3, metavar="P", help="user patience (default 3)")
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N",
                        help="max_tokens of each reply (0: the provider's default; default 1024 for synth, "
                             "none for import, as the authors' eval.py)")
    parser.add_argument("--marker", dest="markers", action="append", default=[], metavar="NAME",
                        help="marker for every instance, e.g. full; repeatable")
    parser.add_argument("--no-system", action="store_true", help="no system prompt")
    parser.add_argument("--system-prompt", choices=("authors", "ours", "none"), default=None,
                        help="import only: the authors' released system prompt (default), ours, or none")


def _write(text: str, out: str) -> None:
    if out == "-":
        sys.stdout.write(text)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _command_line(argv: Sequence[str]) -> str:
    """The command that wrote a file, without its ``--out`` (so regenerating gives the same bytes)."""
    import shlex

    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--out":
            skip = True
            continue
        if arg.startswith("--out="):
            continue
        kept.append(arg)
    return "ifbench generate evolif " + " ".join(shlex.quote(a) for a in kept) + " --out FILE"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.patience < 1:
        print(f"ifbench generate evolif {args.command}: error: --patience must be >= 1", file=sys.stderr)
        return 2
    if args.command == "import":
        max_tokens = args.max_tokens or None
        system_prompt = "none" if args.no_system else (args.system_prompt or "authors")
        from .official import EvolifFormatError, suite_from_files

        try:
            data = suite_from_files([Path(f) for f in args.files], patience=args.patience, max_tokens=max_tokens,
                                    system_prompt=system_prompt, markers=args.markers)
        except (OSError, EvolifFormatError) as exc:
            print(f"ifbench generate evolif import: error: {exc}", file=sys.stderr)
            return 2
        _write(dump_suite(data, f"# Imported by: {_command_line(argv)}\n"), args.out)
        return 0
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        print(f"ifbench generate evolif synth: error: unknown constraint id(s) {unknown} "
              f"(known: {', '.join(GROUPS)})", file=sys.stderr)
        return 2
    max_tokens = 1024 if args.max_tokens is None else (args.max_tokens or None)
    config = SynthConfig(seed=args.seed, dialogues=args.dialogues, start=args.start, turns=args.turns,
                         patience=args.patience, max_tokens=max_tokens, id_prefix=args.id_prefix,
                         markers=tuple(args.markers), system=not args.no_system, groups=groups,
                         description=args.description)
    synthesizer = None
    if args.synthesizer_model:
        from pytest_ifbench import ResponseCache, make_client

        client = make_client(args.synthesizer_model, api_base=args.api_base,
                             cache=ResponseCache(Path(args.cache)) if args.cache else None)
        synthesizer = LLMSynthesizer(client=client, attempts=args.attempts, temperature=args.temperature,
                                     llm_topic_check=not args.no_llm_topic_check)
    data = build_suite(config, synthesizer)
    header = f"# Generated by: {_command_line(argv)}\n# Do not edit by hand; regenerate with the command above.\n"
    _write(dump_suite(data, header), args.out)
    return 0
