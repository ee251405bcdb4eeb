"""Allure reporting: every instance an Allure test result, every checklist item a step.

Registered by ``_plugin.py`` as the pytest plugin ``ifbench_allure`` (``-p
no:ifbench_allure`` disables it). It does nothing unless allure-pytest's own
``--alluredir`` is given; then, in every process that runs tests (each xdist
worker included, each writing into the shared directory):

* labels: ``epic`` = benchmark, ``feature`` = category, ``story`` = scaffold
  and/or ``tier <n>`` (allure-pytest adds a ``tag`` for every marker);
  parameters: ``model``, ``judges`` (left out of Allure's history id when the
  instance has no judged check) and ``protocol``;
* one step per scored check (or per turn, with a sub-step per check, for
  ``protocol_options.subtests: turn``), opened inside the check's subtest by
  wrapping ``pytest_ifbench_report_check``, so a failed check is a failed step
  (a broken one when its verifier or judge errored) with its evidence attached;
* text attachments: the messages sent and the reply (or the whole trajectory),
  the extracted code when a check verifies code, the judges' reasoning; for an
  errored instance the error text and the prompt. Passing checks get no
  attachment, so large runs stay fast (``--ifbench-allure-attachments=failed``:
  passing instances get none either).
* the test's status message starts with a category tag (``[check failed]``,
  ``[sandbox timeout]``, ``[verifier error]``, ``[judge error]``,
  ``[model error]``) that the categories match; at session end the controller
  writes ``environment.properties``, ``categories.json`` (Allure 2) and
  ``allurerc.json`` (Allure 3 reads categories from its config only:
  ``npx allure generate --config DIR/allurerc.json DIR``) into the directory.

The texts themselves are rendered by ``_allure_render``; everything written
goes through :func:`pytest_ifbench._redact.redact`.
allure itself is imported only when ``--alluredir`` is given.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._redact import redact
from .._text import utf8_safe
from .allure_render import (
    allurerc,
    categories,
    check_title,
    environment_properties,
    render_evidence,
    render_judges,
    render_messages,
    render_response,
    render_trajectory,
    spec_prompt,
    step_title,
    timing_steps,
)

if TYPE_CHECKING:
    from .._verify import CheckOutcome

#: syrupy's session-wide autouse fixture: instances never use it, and Allure would list it in every
#: instance's Set up.
_SYRUPY_IDE_PATCHES = "_syrupy_apply_ide_patches"
_TIMEOUT = re.compile(r"\(limit: timeout\)|\btimeout: |wall-clock timeout", re.IGNORECASE)
_ERROR_MAX = 20_000


_SEPARATOR = "\x00\x1f\x00"  # no secret value or redaction pattern spans it


def redact_all(texts: Sequence[str]) -> list[str]:
    """:func:`redact` many texts in one call (it scans the environment on every call)."""
    if not texts:
        return []
    out = redact(_SEPARATOR.join(texts)).split(_SEPARATOR)
    assert len(out) == len(texts)
    return out


def _enabled(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "allure_report_dir", None))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("ifbench").addoption(
        "--ifbench-allure-attachments", dest="ifbench_allure_attachments", choices=("all", "failed"),
        default="all", help="with --alluredir: attach the messages, reply and code of every instance (all, "
                            "the default) or only of failed and errored ones (failed: fewer files in big runs)")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if _enabled(config) and not config.pluginmanager.has_plugin("ifbench-allure-reporter"):
        config.pluginmanager.register(AllureReporter(config), "ifbench-allure-reporter")


# -- the reporter ---------------------------------------------------------------------


class AllureReporter:
    """Hooks active only with ``--alluredir`` (registered by :func:`pytest_configure`)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: nodeid -> [(subtest name, failed outcomes, message)] of subtests whose report failed.
        self.failures: dict[str, list[tuple[str, list[Any], str]]] = {}
        #: nodeid -> check id -> the step's redacted "verifier" parameter, prepared per instance.
        self.verifier_params: dict[str, dict[str, str]] = {}
        #: Controller side: what environment.properties needs from the records.
        self.suites: set[str] = set()
        self.verifier_versions: dict[str, str] = {}
        self.models: dict[str, None] = {}
        self.judges: dict[str, None] = {}

    # allure-pytest's objects, looked up lazily (its pytest_configure may run after ours).
    @property
    def logger(self) -> Any:
        listener = self.config.pluginmanager.get_plugin("allure_listener")
        return getattr(listener, "allure_logger", None)

    def _test(self) -> Any:
        logger = self.logger
        return logger.get_test(None) if logger is not None else None

    @staticmethod
    def _attach(text: str, name: str, extension: str = "txt", *, redacted: bool = False) -> None:
        import allure

        allure.attach(utf8_safe(text if redacted else redact(text)), name=name,  # Allure encodes strictly
                      attachment_type="text/plain", extension=extension)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from .._collect import InstanceItem

        for item in items:
            if isinstance(item, InstanceItem) and _SYRUPY_IDE_PATCHES in item.fixturenames:
                item.fixturenames.remove(_SYRUPY_IDE_PATCHES)

    # -- labels and parameters: at setup, so errored instances carry them too --------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        from .._collect import InstanceItem

        if not isinstance(item, InstanceItem):
            return
        self.failures.pop(item.nodeid, None)
        self.verifier_params.pop(item.nodeid, None)
        test = self._test()
        if test is None:
            return
        from allure_commons.model2 import Label, Parameter
        from allure_commons.types import LabelType

        spec = item.spec
        labels = [(LabelType.EPIC, spec.benchmark)]
        if spec.category is not None:
            labels.append((LabelType.FEATURE, spec.category))
        if spec.scaffold is not None:
            labels.append((LabelType.STORY, spec.scaffold))
        if spec.tier is not None:
            labels.append((LabelType.STORY, f"tier {spec.tier}"))
        test.labels.extend(Label(name=name, value=str(value)) for name, value in labels)
        state = item.state
        judged = any(self._verifier(item, c.verifier, "kind") == "judge" for c in spec.all_checks())
        model, judges = redact_all([str(state.model_name), ", ".join(state.judge_names)])
        test.parameters.extend([
            Parameter(name="model", value=model),
            # Judges of an instance without judged checks must not split its history.
            Parameter(name="judges", value=judges, excluded=None if judged else True),
            Parameter(name="protocol", value=spec.protocol),
        ])
        if spec.generation.samples > 1:
            test.parameters.append(Parameter(name="samples", value=str(spec.generation.samples)))

    @staticmethod
    def _verifier(item: Any, verifier_id: str, attribute: str) -> Any:
        try:
            return getattr(item.state.registry.get(verifier_id), attribute)
        except Exception:
            return None

    # -- attachments of a verified instance ----------------------------------------

    def pytest_ifbench_instance_verified(self, item: pytest.Item, record: dict[str, Any]) -> None:
        if self._test() is None:
            return
        checks = record.get("checks") or []
        light = record.get("status") == "passed" and self.config.option.ifbench_allure_attachments == "failed"
        attachments = [] if light else self._attachments(item, record)
        # One redaction pass for the attachments and every step's verifier parameter.
        params = [f"{c.get('verifier')}({', '.join(f'{k}={v!r}' for k, v in (c.get('params') or {}).items())})"
                  for c in checks]
        texts = redact_all([text for _, text, _ in attachments] + params)
        self.verifier_params[item.nodeid] = {c.get("id"): text for c, text in zip(checks, texts[len(attachments):])}
        for (name, _, extension), text in zip(attachments, texts):
            self._attach(text, name, extension, redacted=True)

    def _attachments(self, item: pytest.Item, record: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """(name, text, extension) of every attachment of a verified instance, not yet redacted."""
        from .._text import extract_code

        out: list[tuple[str, str, str]] = []
        turns = record.get("turns") or []
        if len(turns) == 1:
            out.append(("messages sent", render_messages(turns[0].get("messages") or []), "txt"))
            out.append(("model reply", render_response(turns[0].get("response") or {}), "txt"))
        elif turns:
            out.append(("trajectory", render_trajectory(turns), "txt"))
        agent = record.get("agent")
        if agent and agent.get("trajectory"):  # the agent's run, step by step, as the judge read it
            from ..agents.trajectory import Trajectory
            from ..agents.transcript import render_transcript

            header = (f"runner: {agent.get('runner')}  stopped: {agent.get('stop_reason')}  "
                      f"steps: {agent.get('steps')}\n\n")
            transcript = render_transcript(Trajectory.from_json(agent["trajectory"]))
            out.append(("agent transcript", header + transcript, "txt"))
        others = record.get("sample_responses") or []
        if others:
            text = "\n\n".join(f"══ sample {i} ══\n" + "\n\n".join(f"── turn {t} ──\n{reply}"
                                                                   for t, reply in enumerate(sample, start=1))
                               for i, sample in enumerate(others, start=1))
            out.append(("other samples", text, "txt"))
        checks = record.get("checks") or []
        by_turn = {t.get("index"): t for t in turns}
        code_turns = sorted({c.get("turn_ran") for c in checks if self._targets_code(item, c)},
                            key=lambda t: (t is None, t))
        for turn in code_turns:
            response = (by_turn.get(turn) or {}).get("response") or {}
            name = "extracted code" if len(turns) <= 1 else f"extracted code (turn {turn})"
            out.append((name, extract_code(response.get("text") or ""), "py"))
        judged = render_judges(checks)
        if judged:
            out.append(("judge reasoning", judged, "txt"))
        return out

    def _targets_code(self, item: Any, check: Mapping[str, Any]) -> bool:
        params = check.get("params") or {}
        return self._verifier(item, check.get("verifier", ""), "target") == "code" or params.get("target") == "code"

    # -- one step per check, opened inside the subtest -------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_ifbench_report_check(self, item: pytest.Item, name: str, outcomes: list[CheckOutcome]):
        logger = self.logger
        if logger is None or self._test() is None:
            return (yield)
        import allure
        from allure_commons.model2 import Parameter, StatusDetails

        grouped = len(outcomes) > 1 or outcomes[0].check.id != name
        context = allure.step(step_title(name, outcomes, grouped))
        step = None
        failure: tuple[list[Any], str] | None = None
        try:
            with context:
                step = logger.get_item(context.uuid)
                if step is not None and not grouped:
                    self._describe(item, step, outcomes[0])
                if grouped:
                    for outcome in outcomes:
                        self._substep(item, logger, outcome)
                try:
                    result = yield
                    if step is not None and not grouped and not outcomes[0].passed:
                        # Another implementation (e.g. the baseline) let a failed check pass.
                        step.parameters.append(Parameter(name="verdict", value="not met, accepted"))
                    return result
                except (pytest.skip.Exception, pytest.xfail.Exception, KeyboardInterrupt):
                    raise  # a plugin skipped or xfailed the check: not a failure
                except BaseException as exc:
                    failed = [o for o in outcomes if not o.passed]
                    if not grouped:
                        for outcome in failed:
                            self._attach(render_evidence(outcome), "evidence")
                    failure = (failed, str(exc))
                    self.failures.setdefault(item.nodeid, []).append((name, failed, str(exc)))
                    raise
        finally:
            if failure is not None and step is not None:
                # allure took the message from the exception (class name first) and a pluggy
                # traceback: keep the failure text only; a check whose verifier errored is broken.
                failed, text = failure
                step.statusDetails = StatusDetails(message=redact(text))
                if failed and all(o.error for o in failed):
                    step.status = "broken"

    def _describe(self, item: pytest.Item, step: Any, outcome: CheckOutcome) -> None:
        from allure_commons.model2 import Parameter

        check = outcome.check
        value = self.verifier_params.get(item.nodeid, {}).get(check.id)
        if value is None:
            params = ", ".join(f"{k}={v!r}" for k, v in check.params.items())
            value = redact(f"{check.verifier}({params})")
        step.parameters.append(Parameter(name="verifier", value=value))

    def _substep(self, item: pytest.Item, logger: Any, outcome: CheckOutcome) -> None:
        """A finished sub-step for one check of a per-turn subtest, with its own status."""
        import allure
        from allure_commons.model2 import StatusDetails

        context = allure.step(check_title(outcome))
        with context:
            step = logger.get_item(context.uuid)
            if step is not None:
                self._describe(item, step, outcome)
            if not outcome.passed:
                self._attach(render_evidence(outcome), "evidence")
        if step is not None and not outcome.passed:
            step.status = "broken" if outcome.error else "failed"
            step.statusDetails = StatusDetails(message=redact(render_evidence(outcome)))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report = yield
        if call.when == "setup" and report.failed:
            self._errored(item)
        return report

    def _errored(self, item: pytest.Item) -> None:
        from allure_commons.model2 import StatusDetails

        record = getattr(item, "ifbench_record", None)
        test = self._test()
        if test is None or not record or record.get("status") != "error":
            return
        error = redact(str(record.get("error") or ""))[:_ERROR_MAX]
        kind = "judge error" if record.get("error_kind") == "judge" else "model error"
        test.statusDetails = StatusDetails(message=f"[{kind}] {error}")
        # No call phase: the test lasts from its start to now, or its real generation time when it ran.
        from allure_commons.utils import now

        test.stop = max(test.stop or 0, now())
        self._real_time(item, test, record, test.stop)
        self._attach(error, "error")
        spec = getattr(item, "spec", None)
        if spec is not None:
            self._attach(spec_prompt(spec), "messages (not sent: the instance errored)")

    # -- per-step statuses and the test's message, once every subtest reported ----------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        try:
            return (yield)
        finally:
            self._finish_call(item)

    def _finish_call(self, item: pytest.Item) -> None:
        from allure_commons.model2 import StatusDetails

        logger = self.logger
        test = self._test()
        failures = self.failures.pop(item.nodeid, [])
        self.verifier_params.pop(item.nodeid, None)
        if test is None or logger is None:
            return
        record = getattr(item, "ifbench_record", None) or {}
        self._unscored_steps(logger, record)
        self._real_time(item, test, record, test.start)
        if not failures:
            return
        failed = [o for _, group, _ in failures for o in group]
        scored = sum(1 for c in record.get("checks") or [] if c.get("scored", True))
        split = {"failed": [o.check.id for o in failed if not o.error] if failed else [n for n, _, _ in failures],
                 "could not be decided": [o.check.id for o in failed if o.error]}
        message = "; ".join(f"{len(ids)}{f' of {scored}' if scored else ''} checks {how}: {', '.join(ids)}"
                            for how, ids in split.items() if ids)
        # No trace: every failed step carries its own failure text (a trace would repeat them all).
        test.statusDetails = StatusDetails(message=redact(f"[{self._kind(item, failed)}] {message}"))

    @staticmethod
    def _real_time(item: pytest.Item, test: Any, record: Mapping[str, Any], verified_at: int | None) -> None:
        """The test starts when its generation would have had to start to end at ``verified_at`` (ms), so
        its duration is the instance's real time (generation or agent run + verification, not the verification
        alone); the split goes into the first steps."""
        from allure_commons.model2 import Parameter, TestStepResult

        generation = getattr(item, "generation_seconds", None)
        if generation is None or verified_at is None:
            return
        start = verified_at - round(1000 * generation)
        test.start = min(test.start or start, start)
        steps, at = [], start
        for name, seconds, params in timing_steps(record, generation):
            stop = at + round(1000 * seconds)
            steps.append(TestStepResult(name=name, status="passed", start=at, stop=stop,
                                        parameters=[Parameter(name=k, value=v) for k, v in params]))
            at = stop
        test.steps[0:0] = steps

    def _kind(self, item: pytest.Item, failed: Sequence[CheckOutcome]) -> str:
        def is_timeout(o: CheckOutcome) -> bool:
            if self._verifier(item, o.check.verifier, "kind") != "unittest":
                return False
            details = o.verdict.details if o.verdict is not None else {}
            text = (o.verdict.evidence if o.verdict is not None else "") + " " + (o.error or "")
            return details.get("limit") == "timeout" or bool(_TIMEOUT.search(text))

        if any(is_timeout(o) for o in failed):
            return "sandbox timeout"
        if any(o.error and self._verifier(item, o.check.verifier, "kind") == "judge" for o in failed):
            return "judge error"
        if any(o.error for o in failed):
            return "verifier error"
        return "check failed"

    def _unscored_steps(self, logger: Any, record: Mapping[str, Any]) -> None:
        """Unscored checks (``scored: false``) are no subtests; show them as skipped steps."""
        import allure
        from allure_commons.model2 import StatusDetails

        unscored = [c for c in record.get("checks") or [] if not c.get("scored", True)]
        messages = redact_all([f"not scored; {'met' if c.get('passed') else 'not met'}: "
                               f"{(c.get('verdict') or {}).get('evidence', '') or c.get('error') or ''}"
                               for c in unscored])
        for check, message in zip(unscored, messages):
            context = allure.step(f"{check['id']} (not scored)")
            with context:
                step = logger.get_item(context.uuid)
            if step is not None:
                step.status = "skipped"
                step.statusDetails = StatusDetails(message=message)

    # -- controller: environment.properties and categories.json --------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "ifbench_record", None)
        if record is None or hasattr(report, "context") or _is_worker(self.config):
            return
        self.suites.add(record.get("suite") or "")
        self.verifier_versions.update(record.get("verifier_versions") or {})
        if record.get("model"):
            self.models[str(record["model"])] = None
        for judge in record.get("judges") or []:
            self.judges[str(judge)] = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = self.config
        if _is_worker(config) or config.option.collectonly:
            return
        directory = Path(config.option.allure_report_dir)
        if not directory.is_absolute():
            directory = Path(config.invocation_params.dir) / directory
        directory.mkdir(parents=True, exist_ok=True)
        environment = self._environment()
        (directory / "environment.properties").write_text(redact(environment_properties(environment)),
                                                          encoding="utf-8")
        (directory / "categories.json").write_text(json.dumps(categories(), indent=2) + "\n", encoding="utf-8")
        # Allure 3 reads categories from its config only: `allure generate --config <dir>/allurerc.json <dir>`.
        (directory / "allurerc.json").write_text(
            redact(json.dumps(allurerc(environment["model"]), indent=2)) + "\n", encoding="utf-8")

    def _environment(self) -> dict[str, str]:
        from importlib.metadata import PackageNotFoundError, version

        from .._version import __version__

        config = self.config
        state = config.stash.get(_state_key(), None)
        models = list(self.models) or ([state.model_name] if state is not None else [])
        judges = list(self.judges) or (list(state.judge_names) if state is not None else [])
        values = {"model": ", ".join(models), "judges": ", ".join(judges), "pytest-ifbench": __version__,
                  "python": platform.python_version()}
        for package in ("pytest", "allure-pytest", "litellm", "ruff"):
            try:
                values[package] = version(package)
            except PackageNotFoundError:
                pass
        workers = getattr(config.option, "numprocesses", None)
        if workers:
            values["xdist workers"] = str(workers)
        for verifier, number in sorted(self.verifier_versions.items()):
            values[f"verifier {verifier}"] = str(number)
        root = Path(config.rootpath)
        for suite in sorted(s for s in self.suites if s):
            path = Path(suite) if Path(suite).is_absolute() else root / suite
            try:
                values[f"suite {suite}"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                values[f"suite {suite}"] = "(unreadable)"
        return values


def _state_key() -> Any:
    from .._state import STATE_KEY

    return STATE_KEY
