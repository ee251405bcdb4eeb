"""The ``ifbench`` console script: verify single texts, score recorded responses, list verifiers.

Subcommands:

* ``ifbench verify --in cases.jsonl``: run one verifier per JSONL line and
  print one JSON verdict per line. Judged verifiers call the judge panel.
* ``ifbench score --suite X.yaml --responses R.jsonl``: score pre-generated
  responses by running pytest in-process (same items, metrics and results
  file as a normal run) without calling the model under test.
* ``ifbench verifiers [--json]``: list every registered verifier.
* ``ifbench agents install [NAME ...] [--dir DIR]`` / ``ifbench agents status [--dir DIR]``: install
  the pinned real agent CLIs with npm, or show whether each one is installed.

Imports stay lazy: litellm is imported only when a judged case is verified.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from .._registry import Registry
    from .._types import Verdict
    from ..models.client import ModelClient

#: Exit code for a bad command line or an unusable input (argparse's convention).
USAGE_ERROR = 2
#: Exit code when ifbench itself fails (a bug): never confused with "a case errored" (1).
INTERNAL_ERROR = 3

_VERIFY_DESCRIPTION = """\
Verify single texts against one verifier each, without a suite.

Each non-blank input line is a JSON object
  {"verifier": "<id>", "params": {...}, "response": "<text>"}
("params" is optional; "task" optionally gives judged verifiers the task
the response answers; "id" is echoed back). One JSON line is written per
case, in input order:
  {"passed": true|false, "evidence": "...", "details": {...}}
or, when the case cannot be verified (malformed line, unknown verifier,
invalid params, verifier or judge failure):
  {"passed": null, "error": "line N: ..."}
"""

_VERIFY_EPILOG = """\
A line that cannot be read (not UTF-8, not JSON, an integer over 4,300
digits, nesting too deep for the parser) gets its own error line; the
other lines are still verified.
exit status: 0 when every case was verified (passed or failed),
1 when at least one case errored, 2 on a usage error, 3 on an internal
error (a bug in ifbench or a plugin: please report it)."""

_SCORE_DESCRIPTION = """\
Score pre-generated responses against suites without calling the model
under test. Runs pytest in-process with --ifbench-responses, so items,
subtests, metrics and the results file are those of a normal run.
Responses are JSONL lines {"id": "<instance id>", "response": "..."}
(or "responses": [...] with one reply per turn). A line that cannot be
used (not UTF-8, not JSON, not such an object, a repeated id) is reported
on stderr as "FILE:LINE: ..." and left out; the other lines are scored.
An instance without a recorded response errors with "no recorded
response for instance ...".
Judged checks still call the judge (--judge-model after "--")."""

_SCORE_EPILOG = """\
Arguments after "--" are passed to pytest unchanged (e.g. -- -q -k name).
exit status: pytest's, unchanged: 0 all instances passed, 1 some checks
failed or some instances errored, 2 interrupted, 3 internal error (also
when ifbench itself fails before pytest runs), 4 usage error (e.g. an
unreadable responses file, or one without a usable line), 5 no instances
collected."""


class _Usage(Exception):
    """A command-line or input problem reported as ``ifbench <cmd>: error: ...`` (exit 2)."""


# --------------------------------------------------------------------------- parser


class _TopFormatter(argparse.HelpFormatter):
    """Leaves room for the longest subcommand name (argparse undercounts indented subcommands)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog)
        self._action_max_length = len("    verifiers")


def _parser(generator_names: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ifbench", description="pytest-ifbench command-line tools.",
        formatter_class=_TopFormatter,
    )
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", required=True)

    verify = commands.add_parser(
        "verify", help="verify JSONL cases (one verifier per text)",
        description=_VERIFY_DESCRIPTION, epilog=_VERIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verify.add_argument("--in", dest="input", required=True, metavar="FILE",
                        help="JSONL cases to verify ('-' reads standard input)")
    verify.add_argument("--out", dest="output", default=None, metavar="FILE",
                        help="write the JSONL verdicts here (default: standard output)")
    verify.add_argument("--judge-model", dest="judge_models", action="append", default=None, metavar="MODEL",
                        help="litellm model for judged verifiers; repeat for a panel (default: local/smollm2)")
    verify.add_argument("--api-base", dest="api_base", default=None, metavar="URL",
                        help="base URL of an OpenAI-compatible server for the judges")
    _plugin_argument(verify)

    score = commands.add_parser(
        "score", help="score pre-generated responses against suites (runs pytest)",
        usage="ifbench score [-h] --suite FILE [--suite FILE ...] (--responses JSONL | --trajectories PATH ...)\n"
              "                     [--results FILE] [-- PYTEST_ARGS ...]",
        description=_SCORE_DESCRIPTION, epilog=_SCORE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    score.add_argument("--suite", dest="suites", action="append", required=True, metavar="FILE",
                       help="suite file (or directory of suites); repeatable")
    score.add_argument("--responses", default=None, metavar="JSONL",
                       help="pre-generated responses, one JSON object per line")
    score.add_argument("--trajectories", action="append", default=[], metavar="PATH",
                       help="recorded agent trajectories for agent instances (files or folders: ours, normalized "
                            "JSONL, or raw proxy logs, the authors' included); repeatable; no agent is run")
    score.add_argument("--results", default="ifbench-results.json", metavar="FILE",
                       help="results JSON file (default: ifbench-results.json; '' to skip)")

    listing = commands.add_parser(
        "verifiers", help="list the registered verifiers",
        description="List every registered verifier with its kind, version and parameter schema.",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON array of Verifier.describe() objects")
    _plugin_argument(listing)

    generate = commands.add_parser(
        "generate", help="generate or import benchmark suites (ifbench generate BENCHMARK --help)",
        description="Generate suites for a benchmark, or import its official files. Each benchmark has "
                    f"its own options: ifbench generate BENCHMARK --help. Benchmarks: {', '.join(generator_names)}.",
    )
    generate.add_argument("benchmark", choices=list(generator_names), metavar="BENCHMARK")
    generate.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark generator's own arguments")
    _agents_parser(commands)
    return parser


def _agents_parser(commands: Any) -> None:
    agents = commands.add_parser(
        "agents", help="install or check the real agent CLIs (ifbench agents install|status)",
        description="Install the pinned agent CLIs that agent runners drive (npm install into one directory: "
                    "$IFBENCH_AGENTS_DIR, else .ifbench-agents in the current directory), or show their state.",
    )
    actions = agents.add_subparsers(dest="action", title="actions", metavar="ACTION", required=True)
    install = actions.add_parser("install", help="npm install the pinned versions (all when no NAME is given)",
                                 epilog="exit status: npm's (127 when npm is missing).")
    install.add_argument("names", nargs="*", metavar="NAME", help="claude_code, kilo or droid")
    status = actions.add_parser("status", help="show each CLI's pinned version and whether it is installed",
                                epilog="exit status: 0 when every CLI is installed at its pinned version, else 1.")
    for action in (install, status):
        action.add_argument("--dir", default=None, metavar="DIR", help="the install directory")


def _generators() -> dict[str, Any]:
    """``ifbench generate`` commands of the installed benchmark plugins, by name."""
    from .._composition import command_plugin_manager, generators

    return generators(command_plugin_manager().hook)


def _plugin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                        help="import MODULE and call its pytest_ifbench_register_verifiers(registry); repeatable")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, extra = args_list[:cut], args_list[cut + 1:]
    generators = _generators()
    parser = _parser(list(generators))
    try:
        args = parser.parse_args(args_list)
        if extra and args.command != "score":
            parser.error(f"unrecognized arguments: -- {' '.join(extra)}")
    except SystemExit as exc:  # --help and usage errors: return, never exit, from main()
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else USAGE_ERROR)
    try:
        if args.command == "verify":
            return _verify(args)
        if args.command == "score":
            return _score(args, extra)
        if args.command == "generate":
            return int(generators[args.benchmark](args.args) or 0)
        if args.command == "agents":
            return _agents(args)
        return _list_verifiers(args)
    except _Usage as exc:
        print(f"ifbench {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # e.g. `ifbench verifiers | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: say so, with the traceback to report, and exit 3
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(f"ifbench {args.command}: internal error: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
        return INTERNAL_ERROR


# --------------------------------------------------------------------------- registry


def _registry(plugins: Sequence[str]) -> Registry:
    """The core's and the installed benchmarks' verifiers, plus those of each ``--plugin`` module."""
    from importlib import import_module

    from .._composition import build_registry, command_plugin_manager

    modules = []
    for name in plugins:
        try:
            module = import_module(name)
        except ImportError as exc:
            raise _Usage(f"--plugin {name}: cannot import: {exc}") from None
        if not callable(getattr(module, "pytest_ifbench_register_verifiers", None)):
            raise _Usage(f"--plugin {name}: the module has no pytest_ifbench_register_verifiers(registry) function")
        modules.append(module)
    try:
        return build_registry(command_plugin_manager(modules).hook)
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error
        raise _Usage(f"registering verifiers failed: {type(exc).__name__}: {exc}") from None


# --------------------------------------------------------------------------- verify


class _CaseError(Exception):
    """One case could not be verified; the message is reported after ``line N: ``."""


class _Judges:
    """The judge panel, built on the first judged case; one event loop for all judge calls."""

    def __init__(self, models: Sequence[str], api_base: str | None) -> None:
        self.models = list(models)
        self.api_base = api_base
        self._clients: list[ModelClient] | None = None
        self._runner: asyncio.Runner | None = None

    def clients(self) -> list[ModelClient]:
        if self._clients is None:
            import os

            from ..models.client import ModelClient

            if any(m.startswith("local/") for m in self.models):
                from ..models.local import local_model_problem

                problem = local_model_problem()
                if problem:
                    raise _CaseError(f"judge {self.models[0]!r} cannot run: {problem}")
            clients = []
            for model in self.models:
                extra: dict[str, Any] = {}
                if self.api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
                    extra["api_key"] = "no-key"  # self-hosted OpenAI-compatible servers rarely need one
                clients.append(ModelClient(
                    model=model, api_base=None if model.startswith("local/") else self.api_base, extra=extra,
                ))
            self._clients = clients
        return self._clients

    def verdict(self, registry: Registry, verifier_id: str, params: dict[str, Any], task: str,
                response: str) -> Verdict:
        import asyncio

        from .._types import CheckSpec
        from ..judges.checklist import JudgeError, judge_checks
        from ..models.client import ModelCallError

        clients = self.clients()
        check = CheckSpec(id="case", verifier=verifier_id, params=params)
        if self._runner is None:
            self._runner = asyncio.Runner()
        try:
            verdicts, _ = self._runner.run(judge_checks(clients, registry, task, response, [check]))
        except (JudgeError, ModelCallError) as exc:
            raise _CaseError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
            raise _CaseError(f"judging failed: {type(exc).__name__}: {exc}") from None
        return verdicts["case"]

    def close(self) -> None:
        if self._runner is not None:
            from ..models.openai_compat import close_sessions

            self._runner.run(close_sessions())  # the direct path's connections live on this loop
            self._runner.close()
            self._runner = None


def _verify_case(line: str, registry: Registry, judges: _Judges) -> tuple[dict[str, Any], Verdict]:
    """Parse and verify one input line; raise :class:`_CaseError` when it cannot be verified."""
    from .._params import ParamError
    from .._registry import UnknownVerifier
    from .._verify import verify_one

    case = _json_line(line)
    if not isinstance(case, dict):
        raise _CaseError(f'expected a JSON object with "verifier" and "response", got {type(case).__name__}')
    echo = {"id": case["id"]} if "id" in case else {}
    for key in ("verifier", "response"):
        if key not in case:
            raise _CaseError(f'"{key}" is missing')
        if not isinstance(case[key], str):
            raise _CaseError(f'"{key}" must be a string, got {type(case[key]).__name__}')
    task = case.get("task", "(not given: judge the response on its own)")
    if not isinstance(task, str):
        raise _CaseError(f'"task" must be a string, got {type(task).__name__}')
    try:
        verifier = registry.get(case["verifier"])
        params = verifier.validate(case.get("params"))
    except UnknownVerifier as exc:
        raise _CaseError(str(exc)) from None
    except ParamError as exc:
        where = "params" if exc.field == "params" else f"params.{exc.field}"
        raise _CaseError(f"{where}: {exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - a verifier's validator choking on odd values
        raise _CaseError(f"params: rejected by {case['verifier']}: {type(exc).__name__}: {str(exc)[:300]}") from None
    judged = None
    if verifier.kind == "judge":
        judged = judges.verdict(registry, verifier.id, params, task, case["response"])
    try:
        return echo, verify_one(registry, verifier.id, params, case["response"], judged=judged)
    except RuntimeError as exc:  # the verifier raised (message ends with its traceback), or ruff failed
        raise _CaseError(str(exc).strip()) from None
    except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
        raise _CaseError(f"verifying failed: {type(exc).__name__}: {exc}") from None


def _verify(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    registry = _registry(args.plugins)
    judges = _Judges(args.judge_models or _default_judges(), args.api_base)
    errored = False
    with ExitStack() as stack:
        stack.callback(judges.close)
        source: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: a bad byte errors its line only
        if args.input != "-":
            try:
                source = stack.enter_context(open(args.input, "rb"))
            except OSError as exc:
                raise _Usage(f"--in {args.input}: cannot read: {exc.strerror or exc}") from None
        sink: IO[str] = sys.stdout
        if args.output:
            try:
                sink = stack.enter_context(open(args.output, "w", encoding="utf-8"))
            except OSError as exc:
                raise _Usage(f"--out {args.output}: cannot write: {exc.strerror or exc}") from None
        from ..ruff.batch import batch_verify_cases

        number = 0
        # Read ahead a chunk at a time: the ruff-backed cases of a chunk share ruff processes, memory
        # stays bounded and results stream out chunk by chunk.
        while chunk := list(itertools.islice(source, VERIFY_CHUNK_LINES)):
            with batch_verify_cases(registry, chunk):
                for line in chunk:
                    number += 1
                    if not line.strip():
                        continue
                    try:
                        echo, verdict = _verify_case(_text_line(line), registry, judges)
                        result = _result_line(echo | verdict.to_json())
                    except _CaseError as exc:
                        errored = True
                        result = json.dumps({"passed": None, "error": f"line {number}: {exc}"}, ensure_ascii=False)
                    sink.write(result + "\n")
                    sink.flush()
    return 1 if errored else 0


#: ``ifbench verify`` reads its input this many lines at a time (one ruff batch per chunk).
VERIFY_CHUNK_LINES = 1000


def _text_line(line: str | bytes) -> str:
    """One input line as text: bytes are decoded strictly, so a bad byte errors its own line only."""
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _CaseError(f"not UTF-8: byte {line[exc.start]:#04x} at column {exc.start + 1}") from None


def _json_line(line: str) -> Any:
    """``json.loads(line)``; whatever the decoder refuses is a :class:`_CaseError` for this line."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise _CaseError(f"not JSON: {exc}") from None
    except ValueError as exc:  # e.g. an integer over 4,300 digits
        raise _CaseError(f"unreadable JSON: {str(exc)[:200]}") from None
    except RecursionError:
        raise _CaseError("unreadable JSON: nested too deeply") from None


def _result_line(result: dict[str, Any]) -> str:
    """The verdict as one JSON line; an echoed ``id`` JSON cannot write back errors this case alone."""
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (ValueError, RecursionError) as exc:
        raise _CaseError(f'the result cannot be written as JSON ("id" too deep or too large?): {exc}') from None


def _default_judges() -> list[str]:
    from ..models.local import DEFAULT_LOCAL_MODEL

    return [DEFAULT_LOCAL_MODEL]


# --------------------------------------------------------------------------- score


def _score(args: argparse.Namespace, extra: list[str]) -> int:
    from pathlib import Path
    from tempfile import TemporaryDirectory

    import pytest

    from ..models.recorded import ResponsesError, load_responses

    if args.responses is None and not args.trajectories:
        print("ifbench score: error: give --responses, --trajectories or both", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    usable = None
    if args.responses is not None:
        try:  # fail early, one line per unusable line, rather than inside pytest's configure
            usable = _screen_responses(Path(args.responses))
        except ResponsesError as exc:
            print(f"ifbench score: error: {exc}", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    for path in args.trajectories:
        if not Path(path).exists():
            print(f"ifbench score: error: --trajectories {path}: no such file or folder", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    with TemporaryDirectory(prefix="ifbench-score-") as scratch:
        recorded: list[str] = []
        if args.responses is not None:
            responses = args.responses
            if usable is not None:  # some lines were left out: pytest reads the usable ones
                clean = Path(scratch) / Path(args.responses).name
                clean.write_text("".join(line.rstrip("\r\n") + "\n" for line in usable), encoding="utf-8")
                load_responses(clean)  # pytest's own rules; disagreeing with the screen is a bug (exit 3)
                responses = str(clean)
            recorded += ["--ifbench-responses", responses]
        for path in args.trajectories:
            recorded += ["--ifbench-recorded-trajectories", path]
        code = pytest.main([*args.suites, *recorded, "--ifbench-results", args.results, "-p", "no:cacheprovider",
                            *extra])
    return int(code)


def _screen_responses(path: Any) -> list[str] | None:
    """None when every line of the responses file is usable, else the usable lines, each
    unusable one reported on stderr as ``FILE:LINE: reason``. Raises ``ResponsesError``
    when the file cannot be read or no line is usable (then nothing could be scored)."""
    from ..models.recorded import ResponsesError

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResponsesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    usable: list[str] = []
    seen: set[str] = set()
    bad = 0
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            text = _text_line(line)
            replies_id = _response_id(_json_line(text))
            if replies_id in seen:
                raise _CaseError(f"duplicate id {replies_id!r} (the first one is kept)")
        except _CaseError as exc:
            bad += 1
            print(f"ifbench score: error: {path}:{number}: {exc}", file=sys.stderr)
            continue
        seen.add(replies_id)
        usable.append(text)
    if not usable:
        raise ResponsesError(f"{path}: no usable line" + (f" ({bad} unusable, reported above)" if bad else ""))
    return usable if bad else None


def _response_id(entry: Any) -> str:
    """The instance id of one responses line, or :class:`_CaseError` saying what is wrong with it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise _CaseError('expected an object with a string "id"')
    if "responses" in entry:
        replies = entry["responses"]
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            raise _CaseError('"responses" must be a list of strings')
    elif not isinstance(entry.get("response"), str):
        raise _CaseError('needs "response" (string) or "responses" (list)')
    return entry["id"]


# --------------------------------------------------------------------------- verifiers


def _describe_param(name: str, spec: dict[str, Any]) -> str:
    parts = [spec["type"]]
    if "choices" in spec:
        parts.append("one of " + ", ".join(map(str, spec["choices"])))
    if "min" in spec:
        parts.append(f">= {spec['min']}")
    if "max" in spec:
        parts.append(f"<= {spec['max']}")
    parts.append(f"default {json.dumps(spec['default'])}" if "default" in spec else "required")
    text = f"{name}: {', '.join(parts)}"
    if spec.get("description"):
        text += f" -- {spec['description']}"
    return text


def _list_verifiers(args: argparse.Namespace) -> int:
    registry = _registry(args.plugins)
    described = [verifier.describe() for verifier in registry]
    if args.json:
        print(json.dumps(described, indent=1, ensure_ascii=False, default=str))
        return 0
    for entry in described:
        target = "" if entry["target"] == "response" else f", target {entry['target']}"
        print(f"{entry['id']}  ({entry['kind']}, v{entry['version']}{target})")
        if entry["description"]:
            print(f"    {entry['description']}")
        for name, spec in entry["params"].items():
            print(f"    - {_describe_param(name, spec)}")
        if not entry["params"]:
            print("    (no parameters)")
    return 0


# --------------------------------------------------------------------------- agents


def _agents(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..agents.cli import AGENT_CLIS, agents_dir, cli_problem, install

    directory = Path(args.dir).absolute() if args.dir else agents_dir()
    if args.action == "install":
        unknown = [name for name in args.names if name not in AGENT_CLIS]
        if unknown:
            raise _Usage(f"unknown agent CLI(s): {', '.join(unknown)} (known: {', '.join(AGENT_CLIS)})")
        return install(args.names, directory)
    problems = 0
    for name, (package, version, _binary) in AGENT_CLIS.items():
        problem = cli_problem(name, directory)
        problems += problem is not None
        print(f"{name}: {package}@{version}: {'installed' if problem is None else problem}")
    return 1 if problems else 0
