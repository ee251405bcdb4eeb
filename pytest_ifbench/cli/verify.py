"""``ifbench verify --in cases.jsonl``: one verifier per JSONL line, one JSON verdict per line.

Judged verifiers call the judge panel, built on the first judged case; litellm is
imported only then.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .errors import CaseError, UsageError
from .lines import bounded_lines, json_line, text_line
from .plugin_option import add_plugin_option, registry_with_plugins

if TYPE_CHECKING:
    import asyncio

    from .._registry import Registry, Verifier
    from .._types import Verdict
    from ..models.client import ModelClient

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


def add_parser(commands: Any) -> None:
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
    add_plugin_option(verify)
    verify.set_defaults(run=run)


class _Judges:
    """The judge panel, built on the first judged case; one event loop for all judge calls."""

    def __init__(self, models: Sequence[str] | None, api_base: str | None) -> None:
        self._models = list(models) if models else None  # None: the default, looked up when first judged
        self.api_base = api_base
        self._clients: list[ModelClient] | None = None
        self._runner: asyncio.Runner | None = None

    @property
    def models(self) -> list[str]:
        if self._models is None:
            from ..models.local import DEFAULT_LOCAL_MODEL  # imports asyncio: only when a case is judged

            self._models = [DEFAULT_LOCAL_MODEL]
        return self._models

    def clients(self) -> list[ModelClient]:
        if self._clients is None:
            from .._composition import command_plugin_manager
            from ..models.providers import ProviderTable, make_client

            providers = ProviderTable.from_hook(command_plugin_manager().hook)  # the installed plugins' too
            found = providers.unavailable(self.models, self.api_base)
            if found:
                raise CaseError(f"judge {self.models[0]!r} cannot run: {found[2]}")
            from ..models.credentials import key_needed, missing_key

            for model in self.models:  # as a run's start-up check: every call would fail alike, after retries
                if missing := missing_key(model, self.api_base, providers):
                    raise CaseError(f"judge {key_needed(model, missing)}")
            self._clients = [make_client(model, api_base=self.api_base, providers=providers) for model in self.models]
        return self._clients

    def verdict(self, registry: Registry, verifier_id: str, params: dict[str, Any], task: str,
                response: str) -> Verdict:
        import asyncio

        from .._types import CheckSpec, JudgeOmission
        from ..judges.checklist import JudgeError, judge_checks
        from ..models.client import ModelCallError

        clients = self.clients()
        check = CheckSpec(id="case", verifier=verifier_id, params=params)
        if self._runner is None:
            self._runner = asyncio.Runner()
        try:
            verdicts, _ = self._runner.run(judge_checks(clients, registry, task, response, [check]))
        except (JudgeError, ModelCallError) as exc:
            raise CaseError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
            raise CaseError(f"judging failed: {type(exc).__name__}: {exc}") from None
        verdict = verdicts["case"]
        if isinstance(verdict, JudgeOmission):
            raise CaseError(verdict.reason)
        return verdict

    def close(self) -> None:
        if self._runner is not None:
            from ..models.openai_compat import close_sessions

            self._runner.run(close_sessions())  # the direct path's connections live on this loop
            self._runner.close()
            self._runner = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Case:
    """One input line, parsed and its params validated: ready to verify."""

    echo: dict[str, Any]
    verifier: Verifier
    params: dict[str, Any]
    task: str
    response: str


def _read_case(line: str, registry: Registry) -> _Case:
    """Parse and validate one input line; raise :class:`CaseError` when it cannot be verified."""
    from .._params import ParamError
    from .._registry import UnknownVerifier

    case = json_line(line)
    if not isinstance(case, dict):
        raise CaseError(f'expected a JSON object with "verifier" and "response", got {type(case).__name__}')
    echo = {"id": case["id"]} if "id" in case else {}
    for key in ("verifier", "response"):
        if key not in case:
            raise CaseError(f'"{key}" is missing')
        if not isinstance(case[key], str):
            raise CaseError(f'"{key}" must be a string, got {type(case[key]).__name__}')
    task = case.get("task", "(not given: judge the response on its own)")
    if not isinstance(task, str):
        raise CaseError(f'"task" must be a string, got {type(task).__name__}')
    try:
        verifier = registry.get(case["verifier"])
        params = verifier.validate(case.get("params"))
    except (UnknownVerifier, UsageError):  # UsageError: an installed plugin failed as it was loaded
        raise
    except ParamError as exc:
        where = "params" if exc.field == "params" else f"params.{exc.field}"
        raise CaseError(f"{where}: {exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - a verifier's validator choking on odd values
        raise CaseError(f"params: rejected by {case['verifier']}: {type(exc).__name__}: {str(exc)[:300]}") from None
    return _Case(echo=echo, verifier=verifier, params=params, task=task, response=case["response"])


def _verify_case(case: _Case, registry: Registry, judges: _Judges) -> Verdict:
    """The verdict of one read case; raise :class:`CaseError` when it cannot be verified."""
    from .._verify import verify_validated

    judged = None
    if case.verifier.kind == "judge":
        judged = judges.verdict(registry, case.verifier.id, case.params, case.task, case.response)
    try:
        return verify_validated(registry, case.verifier, case.params, case.response, judged=judged)
    except RuntimeError as exc:  # the verifier raised (message ends with its traceback), or ruff failed
        raise CaseError(str(exc).strip()) from None
    except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
        raise CaseError(f"verifying failed: {type(exc).__name__}: {exc}") from None


def _read_chunk(chunk: list[Any], registry: Registry) -> list[_Case | CaseError | None]:
    """Each line of ``chunk`` read (None for a blank line), every line parsed once."""
    from .._registry import UnknownVerifier

    read: list[_Case | CaseError | None] = []
    for line in chunk:
        try:
            if isinstance(line, CaseError):
                raise line
            read.append(_read_case(text_line(line), registry) if line.strip() else None)
        except UnknownVerifier as exc:
            read.append(CaseError(str(exc)))
        except CaseError as exc:
            read.append(exc)
    return read


def _ruff_verdicts(cases: list[_Case | CaseError | None], registry: Registry) -> dict[int, Verdict | CaseError]:
    """The verdicts of a chunk's ruff-backed cases (by index in ``cases``), worked out together.

    Lines that check the same response are one reply with several checks (each line's check under
    its own id), and every reply of the chunk goes to ruff in one batch: 5 instructions on each of
    200 replies are 200 files for ruff, not 1,000 (a group of checks enables the union of their
    rules, which cannot change any one's verdict; a check that breaks ruff is retried alone). A
    chunk without ruff-backed cases does not even import ruff's modules.
    """
    by_response: dict[str, list[int]] = {}
    for index, case in enumerate(cases):
        if isinstance(case, _Case) and case.verifier.kind == "ruff":
            by_response.setdefault(case.response, []).append(index)
    if not by_response:
        return {}
    from .._registry import VerifyContext
    from .._types import CheckSpec
    from .._verify import evaluate
    from ..ruff.batch import RuffBatcher

    batcher = RuffBatcher(registry, max_replies=max(1, len(by_response)))
    replies = []
    for response, indexes in by_response.items():
        checks = []
        for index in indexes:
            case = cases[index]
            assert isinstance(case, _Case)
            checks.append(CheckSpec(id=str(index), verifier=case.verifier.id, params=case.params))
        batcher.queue(checks, response)
        replies.append((response, checks))
    context = VerifyContext(registry=registry)
    done: dict[int, Verdict | CaseError] = {}
    for response, checks in replies:
        try:
            outcomes = evaluate(checks, response, context, ruff=batcher)
        except Exception as exc:  # noqa: BLE001 - one broken reply must not stop the run
            done.update((int(check.id), CaseError(f"verifying failed: {type(exc).__name__}: {exc}"))
                        for check in checks)
            continue
        for outcome in outcomes:  # as verify_one words it: the error (ruff's, or the verifier's traceback)
            done[int(outcome.check.id)] = (CaseError(outcome.error.strip()) if outcome.error
                                           else outcome.verdict or CaseError("no verdict"))
    return done


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Verify every case of ``--in``; 1 when a case errored (``extra`` is always empty here)."""
    from contextlib import ExitStack

    registry = registry_with_plugins(args.plugins, on_demand=True)  # a benchmark's verifiers when named
    judges = _Judges(args.judge_models, args.api_base)
    errored = False
    with ExitStack() as stack:
        stack.callback(judges.close)
        source: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: a bad byte errors its line only
        if args.input != "-":
            try:
                source = stack.enter_context(open(args.input, "rb"))
            except OSError as exc:
                raise UsageError(f"--in {args.input}: cannot read: {exc.strerror or exc}") from None
        sink: IO[str] = sys.stdout
        if args.output:
            try:
                sink = stack.enter_context(open(args.output, "w", encoding="utf-8"))
            except OSError as exc:
                raise UsageError(f"--out {args.output}: cannot write: {exc.strerror or exc}") from None
        number = 0
        # Read ahead a chunk at a time: the ruff-backed cases of a chunk share ruff processes, memory
        # stays bounded and results stream out chunk by chunk.
        lines = bounded_lines(source, f"--in {args.input}")
        while chunk := list(itertools.islice(lines, VERIFY_CHUNK_LINES)):
            cases = _read_chunk(chunk, registry)
            checked = _ruff_verdicts(cases, registry)
            for index, case in enumerate(cases):
                number += 1
                if case is None:
                    continue
                try:
                    if isinstance(case, CaseError):
                        raise case
                    verdict = checked[index] if index in checked else _verify_case(case, registry, judges)
                    if isinstance(verdict, CaseError):
                        raise verdict
                    result = _result_line(case.echo | verdict.to_json())
                except CaseError as exc:
                    errored = True
                    result = json.dumps({"passed": None, "error": f"line {number}: {exc}"}, ensure_ascii=False)
                sink.write(result + "\n")
                sink.flush()
    return 1 if errored else 0


#: ``ifbench verify`` reads its input this many lines at a time (one ruff batch per chunk).
VERIFY_CHUNK_LINES = 1000


def _result_line(result: dict[str, Any]) -> str:
    """The verdict as one JSON line; an echoed ``id`` JSON cannot write back errors this case alone."""
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (ValueError, RecursionError) as exc:
        raise CaseError(f'the result cannot be written as JSON ("id" too deep or too large?): {exc}') from None
