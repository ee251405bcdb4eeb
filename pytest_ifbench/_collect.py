"""Collection: suite files become pytest files, instances become items.

Each instance is a :class:`InstanceItem` (a ``pytest.Function`` made with
``callobj``, so fixtures such as ``subtests`` and ``request`` work); its node
id reads ``suites/x.yaml::<instance-id>``. Setup waits for the instance's
episode from the background generator, so a model call that failed for good
is reported as an *error*; the call phase verifies, one subtest per check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pytest

from ._benchmark import marker_names
from ._protocols import Episode, TurnRecord, run_samples
from ._state import STATE_KEY, IfbenchState
from ._subtests import subtest_reporter
from ._types import CheckSpec, Instance, Verdict
from ._verify import CheckOutcome, VerifyContext, evaluate
from .agents.session import AgentHarnessError
from .judges.checklist import JudgeError
from .models.client import ModelCallError
from .reports.records import episode_record, error_record, errored_after_run
from .suite.errors import NotASuite, SuiteError
from .suite.format import marker_name

_MARKER_HELP = {
    "ifbench": "every pytest-ifbench instance",
    "category": "instances of category '{}'",
    "scaffold": "instances run in the '{}' agent scaffold",
    "tier": "instances with {} privilege tiers",
    "protocol": "instances run with the '{}' protocol",
}


def register_marker(state: IfbenchState, name: str, help_text: str) -> None:
    if name not in state.registered_markers:
        state.registered_markers[name] = None
        if name not in marker_names(state.config):  # a benchmark's own, declared at start-up
            state.config.addinivalue_line("markers", f"{name}: {help_text}")


def shared_mark(state: IfbenchState, name: str, help_text: str) -> pytest.MarkDecorator:
    """The marker ``name``, registered, as one decorator for the session: every item carrying it
    shares the same (immutable) mark instead of ~180 bytes of its own. Made at collection, when
    pytest's mark generator knows this session's markers."""
    register_marker(state, name, help_text)
    mark = state.registered_markers[name]
    if mark is None:
        mark = state.registered_markers[name] = getattr(pytest.mark, name)
    return mark


def instance_markers(instance: Instance) -> list[tuple[str, str]]:
    """(marker, help) pairs: benchmark, category_*, scaffold_*, tier_*, protocol_*, extras."""
    out = [("ifbench", _MARKER_HELP["ifbench"]), (instance.benchmark, f"{instance.benchmark} benchmark instances")]
    for key in ("category", "scaffold", "tier"):
        value = getattr(instance, key)
        if value is not None:
            out.append((marker_name(key, value), _MARKER_HELP[key].format(value)))
    out.append((marker_name("protocol", instance.protocol), _MARKER_HELP["protocol"].format(instance.protocol)))
    out.extend((m, f"instances marked '{m}' in their suite") for m in instance.markers)
    return out


class NotASuiteWarning(pytest.PytestWarning):
    """A YAML file mentions an ``ifbench`` key but is not a suite; it was not collected."""


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        state = self.config.stash[STATE_KEY]
        try:
            suite = state.load(self.path)
        except NotASuite as exc:  # say why nothing is collected from it, without failing the run
            if not exc.quiet:
                self.warn(NotASuiteWarning(str(exc)))
            return
        # Every instance runs the same function in the same file, so pytest's fixture closure is the same
        # for each: the first item's is shared, as pytest shares one between a parametrized function's items
        # (~0.4 KB and a closure computation per instance; markers added below are never read for it). Each
        # item keeps a list of its own fixture names: conftests append to `item.fixturenames` for every item.
        fixtureinfo = None
        for instance in suite.instances:
            item = InstanceItem.from_parent(self, name=instance.id, callobj=_instance_test, instance=instance,
                                            fixtureinfo=fixtureinfo)
            fixtureinfo = getattr(item, "_fixtureinfo", None)
            item.fixturenames = list(item.fixturenames)
            for name, help_text in instance_markers(instance):
                item.add_marker(shared_mark(state, name, help_text))
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SuiteError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class CheckFailed(AssertionError):
    """A checklist item was not met; the message is the whole story."""


class CheckUndecided(Exception):
    """A checklist item could not be decided (its verifier raised, its judges left it out): the instance's
    error, never the model's failure. Not an ``AssertionError``, so Allure shows it broken, not failed; its
    reports are filed as errors (``pytest_report_teststatus``), as the summary counts the instance."""


class InstanceError(Exception):
    """The instance could not be run (model, judge or protocol failure)."""


def _instance_test(request: pytest.FixtureRequest) -> None:
    request.node.verify_checks(request)


def failure_message(outcome: CheckOutcome) -> str:
    check = outcome.check
    how = "could not be decided" if outcome.error else "failed"
    lines = [f"check {check.id!r} {how}: {check.description}".rstrip(": ")]
    params = ", ".join(f"{k}={v!r}" for k, v in check.params.items())
    lines.append(f"  verifier: {check.verifier}({params})")
    if outcome.error:
        lines.append(f"  error: {outcome.error}")
    elif outcome.verdict is not None and outcome.verdict.evidence:
        evidence = outcome.verdict.evidence.replace("\n", "\n    ")
        lines.append(f"  evidence:\n    {evidence}")
    return "\n".join(lines)


def combine_samples(per_sample: list[list[tuple[int, CheckOutcome]]]) -> list[tuple[int, CheckOutcome]]:
    """One outcome per check across samples: passes when it passed in at least half of the
    samples that reached it; the pass rate and per-sample verdicts go into the details. A sample
    that left the check undecided (its verifier raised, a judge left it out) counts for neither:
    when its verdict could have changed the outcome, the check is undecided too."""
    by_id: dict[str, list[CheckOutcome]] = {}
    for outcomes in per_sample:
        for _, outcome in outcomes:
            by_id.setdefault(outcome.check.id, []).append(outcome)
    combined = []
    for turn, first in per_sample[0]:
        runs = by_id[first.check.id]
        judged = [o for o in runs if o.error is None]
        if not judged:
            combined.append((turn, first))
            continue
        passed = sum(o.passed for o in judged)
        rate = passed / len(judged)
        undecided = [o for o in runs if o.error is not None]
        failing = next((o for o in judged if not o.passed), None)
        evidence = f"passed in {passed}/{len(judged)} samples"
        if undecided:
            evidence += f" ({len(undecided)} more left it undecided: {undecided[0].error.splitlines()[0]})"
            if 2 * passed < len(runs) <= 2 * (passed + len(undecided)):  # they could have tipped it either way
                combined.append((turn, CheckOutcome(check=first.check, verdict=None, error=f"undecided: {evidence}",
                                                    duration=sum(o.duration for o in runs))))
                continue
        if failing is not None and failing.verdict is not None and failing.verdict.evidence:
            evidence += f"; a failing sample: {failing.verdict.evidence}"
        verdict = Verdict(passed=2 * passed >= len(runs), evidence=evidence,
                          details={"pass_rate": rate, "samples": [o.passed for o in judged],
                                   **({"undecided": len(undecided)} if undecided else {})})
        combined.append((turn, CheckOutcome(check=first.check, verdict=verdict,
                                            duration=sum(o.duration for o in runs))))
    return combined


@pytest.hookimpl(trylast=True)
def pytest_ifbench_report_check(item: pytest.Item, name: str, outcomes: list[CheckOutcome]) -> bool:
    applicable = [o for o in outcomes if getattr(o, "applicable", True)]
    if not applicable:  # a conditional requirement whose condition never arose: neither passed nor failed
        reasons = "; ".join(o.verdict.evidence for o in outcomes if o.verdict is not None and o.verdict.evidence)
        pytest.skip(f"not applicable{': ' + reasons if reasons else ''}")
    failed = [o for o in applicable if not o.passed]
    if failed:
        unmet = [o for o in failed if o.error is None]
        undecided = [o for o in failed if o.error is not None]
        kind = CheckFailed if unmet else CheckUndecided  # one check the model failed is a failure
        if len(outcomes) > 1:
            header = "; ".join(f"{len(these)} of {len(outcomes)} checks {how}: {', '.join(o.check.id for o in these)}"
                               for these, how in ((unmet, "unmet"), (undecided, "undecided")) if these)
            raise kind(f"{name}: {header}\n" + "\n".join(failure_message(o) for o in failed))
        raise kind(failure_message(failed[0]))
    return True


class InstanceItem(pytest.Function):
    """One benchmark instance."""

    def __init__(self, *, instance: Instance, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = instance
        self.episode: Episode | None = None
        #: One episode per sample (``generation.samples``); ``episode`` is sample 0.
        self.episodes: Sequence[Episode] = ()
        self.ifbench_record: dict[str, Any] | None = None
        #: Names of the subtests that failed, and how many ran (for the instance's own report).
        self.failed_subtests: Sequence[str] = ()
        #: Those of them that failed for a check nothing decided (:class:`CheckUndecided`).
        self.undecided_subtests: Sequence[str] = ()
        self.subtest_count = 0
        #: The instance's real generation time (its episodes', samples concurrently: the longest), None when
        #: it never ran; and how long setup waited for it (generation ran in the background meanwhile).
        self.generation_seconds: float | None = None
        self.generation_waited = 0.0
        self.job_started = False

    @property
    def state(self) -> IfbenchState:
        return self.config.stash[STATE_KEY]

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # The node id already reads "suites/x.yaml::<id>". The domain is the failure
        # headline; it must not be a suffix of the node id, or verbose output rewrites
        # its dots into "::" (it assumes a Python dotted path).
        return self.path, None, f"{self.spec.id} ({self.parent.name})"

    def start_job(self, priority: int) -> None:
        """Start generating this instance's episodes in the background (once: later calls do nothing)."""
        if self.job_started:
            return
        self.job_started = True
        state = self.state
        protocol = state.protocols[self.spec.protocol]
        runtime = state.runtime
        batcher = state.ruff_batch()

        async def generate() -> list[Episode]:
            episodes = await run_samples(protocol, self.spec, runtime)
            for episode in episodes:  # queued before the item can ask for the verdicts
                for record, _, pending in self._turn_checks(episode):
                    batcher.queue(pending, record.completion.text)
            return episodes

        state.generation().submit(self.nodeid, priority, generate)

    def setup(self) -> None:
        super().setup()
        state = self.state
        generator = state.generation()
        if not generator.submitted(self.nodeid):  # never started, or run again (its job was taken)
            self.job_started = False
            self.start_job(0)
        job = generator.pop(self.nodeid)
        assert job is not None
        waiting = time.perf_counter()
        try:
            try:
                self.episodes = job.result()
            finally:
                self.generation_waited = time.perf_counter() - waiting
            self.episode = self.episodes[0]
            self.generation_seconds = max(e.duration for e in self.episodes)
        except (ModelCallError, JudgeError, LookupError, AgentHarnessError) as exc:
            kind = ("judge" if isinstance(exc, JudgeError) else
                    "harness" if isinstance(exc, AgentHarnessError) else "model")
            episode = getattr(exc, "episode", None)
            if episode is None:
                self.ifbench_record = error_record(self.nodeid, self.spec, state.model_name, state.judge_names,
                                                   str(exc), kind, paid=getattr(exc, "paid", ()),
                                                   paid_judges=getattr(exc, "paid_judges", ()))
                raise InstanceError(str(exc)) from None
            self.generation_seconds = episode.duration
            try:  # the checks that need no judge read the agent's final workspace: closed after them
                self.ifbench_record = self._record_after_run(episode, str(exc), kind, getattr(exc, "paid", ()),
                                                             getattr(exc, "paid_judges", ()))
            finally:
                if episode.agent is not None:
                    episode.agent.close(keep=state.keep_workspaces)
            raise InstanceError(str(exc)) from None

    def _record_after_run(self, episode: Episode, error: str, kind: str, paid: Sequence[Any],
                          paid_judges: Sequence[Any]) -> dict[str, Any]:
        """The record of an instance that ran and then errored: what the run produced and paid (with ``paid``,
        the calls of its other samples, ``paid_judges`` the judge calls among them), every check decided
        without the failed judge, and the undecided ones marked with ``error``."""
        state = self.state
        start = time.perf_counter()
        judged = {c.id for c in self.spec.all_checks() if state.registry.get(c.verifier).kind == "judge"}
        outcomes = [(turn, o if o.verdict is not None or o.check.id not in judged else
                     CheckOutcome(check=o.check, verdict=None, error=f"undecided: {error}", duration=o.duration))
                    for turn, o in self._episode_outcomes(episode)]
        record = episode_record(self.nodeid, self.spec, state.model_name, state.judge_names, [episode],
                                outcomes, state.registry, time.perf_counter() - start)
        return errored_after_run(record, error, kind, paid, paid_judges)

    def _outcomes(self) -> list[tuple[int, CheckOutcome]]:
        per_sample = [self._episode_outcomes(episode) for episode in self.episodes]
        return per_sample[0] if len(per_sample) == 1 else combine_samples(per_sample)

    def _turn_checks(self, episode: Episode) -> Iterator[tuple[TurnRecord, list[CheckSpec], list[CheckSpec]]]:
        """Each turn's record, the checks on its reply, and those its protocol has not evaluated."""
        instance = self.spec
        last = episode.turns[-1].index
        turn_checks = {i: list(t.checks) for i, t in enumerate(instance.turns, start=1)}
        for record in episode.turns:
            done = {o.check.id for o in record.outcomes or []}
            checks: list[CheckSpec] = turn_checks.get(record.index, []) + [
                c for c in instance.checks
                if c.turn == record.index or (c.turn is None and record.index == last)
            ]
            yield record, checks, [c for c in checks if c.id not in done]

    def _episode_outcomes(self, episode: Episode) -> list[tuple[int, CheckOutcome]]:
        instance = self.spec
        state = self.state
        out: list[tuple[int, CheckOutcome]] = []
        for record, checks, pending in self._turn_checks(episode):
            done = {o.check.id: o for o in record.outcomes or []}
            agent = episode.agent
            ctx = VerifyContext(registry=state.registry, instance=instance, judged=record.judged,
                                messages=record.messages + [{"role": "assistant", "content": record.completion.text}],
                                sandbox=state.sandbox, trajectory=agent.trajectory if agent else None,
                                workspace=agent.workspace if agent else None)
            fresh = ({o.check.id: o for o in evaluate(pending, record.completion.text, ctx, ruff=state.ruff_batch())}
                     if pending else {})
            out.extend((record.index, done.get(c.id) or fresh[c.id]) for c in checks)
        return out

    def verify_checks(self, request: pytest.FixtureRequest) -> None:
        """Verify the episodes, then report each check (or turn) as a subtest of this item."""
        start = time.perf_counter()
        outcomes = self._outcomes()
        state = self.state
        record = episode_record(
            self.nodeid, self.spec, state.model_name, state.judge_names, self.episodes, outcomes,
            state.registry, time.perf_counter() - start,
        )
        self.ihook.pytest_ifbench_instance_verified(item=self, record=record)
        if self.episode is not None and self.episode.agent is not None:
            self.add_report_section("call", "agent run", agent_summary(self.episode.agent, state.keep_workspaces))
        groups = self._subtest_groups(outcomes)
        failed: list[str] = []
        undecided: list[str] = []
        reporter = subtest_reporter(self)
        if reporter is not None:  # pytest's subtest reports, without a new capture per check
            with reporter:
                for name, group in groups:
                    report_check = partial(self.ihook.pytest_ifbench_report_check, item=self, name=name,
                                           outcomes=group)
                    raised = reporter.run(name, report_check)
                    if raised is not None:
                        failed.append(name)
                        if isinstance(raised, CheckUndecided):
                            undecided.append(name)
        else:  # pytest's own subtests fixture, set up only here
            subtests = request.getfixturevalue("subtests")
            for name, group in groups:
                with subtests.test(msg=name):
                    try:
                        self.ihook.pytest_ifbench_report_check(item=self, name=name, outcomes=group)
                    except Exception as exc:
                        failed.append(name)
                        if isinstance(exc, CheckUndecided):
                            undecided.append(name)
                        raise
        # Set after the loop so the subtests' own reports carry neither (records are big,
        # and under xdist every report travels to the controller).
        self.failed_subtests, self.undecided_subtests, self.subtest_count = tuple(failed), tuple(undecided), len(groups)
        self.ifbench_record = record
        if record["status"] == "not_applicable":  # no scored check applied: neither passed nor failed
            pytest.skip("not applicable: none of this instance's checks applied")

    def close_workspaces(self) -> None:
        """Remove the agent runs' workspaces (kept with ``--ifbench-keep-workspaces``)."""
        for episode in self.episodes:
            if episode.agent is not None:
                episode.agent.close(keep=self.state.keep_workspaces)

    def failure_summary(self) -> str:
        unit = "turns" if self.spec.protocol_options.get("subtests") == "turn" else "checks"
        unmet = [name for name in self.failed_subtests if name not in self.undecided_subtests]
        return "; ".join(f"{len(names)} of {self.subtest_count} {unit} {how}: {', '.join(names)}" for names, how in (
            (unmet, "failed"), (self.undecided_subtests, "could not be decided (an error: the instance is left "
                                                          "out of ISR and CSR)")) if names)

    def _subtest_groups(self, outcomes: list[tuple[int, CheckOutcome]]) -> list[tuple[str, list[CheckOutcome]]]:
        """One subtest per scored check, or per turn with ``protocol_options.subtests: turn``."""
        scored = [(turn, o) for turn, o in outcomes if o.check.scored]
        if self.spec.protocol_options.get("subtests") != "turn":
            return [(o.check.id, [o]) for _, o in scored]
        groups: dict[int, list[CheckOutcome]] = {}
        for turn, outcome in scored:
            groups.setdefault(turn, []).append(outcome)
        return [(f"turn{turn}", group) for turn, group in groups.items()]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CheckFailed, CheckUndecided, InstanceError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """An instance's setup lasts its real generation time, not the wait for it: generation runs in the
    background, so the wait is near zero for every instance but the first ones, and JUnit (which sums the
    phases) would show an agent that ran for 30 s as its 81 ms of verification."""
    report = yield
    if call.when == "setup" and isinstance(item, InstanceItem) and item.generation_seconds is not None:
        report.duration = max(0.0, report.duration - item.generation_waited) + item.generation_seconds
    return report


def agent_summary(run: Any, kept: bool) -> str:
    """The report section of an agent run: how it ended, where the time went, where to look."""
    lines = [f"runner: {run.runner}    stopped: {run.stop_reason}    steps: {run.steps}",
             f"time: {run.duration:.1f} s (model {run.model_seconds:.1f} s, tools {run.tool_seconds:.1f} s)"]
    rewrites = [r for t in run.trajectory.walk() for r in t.meta.get("history_rewrites") or ()]
    if rewrites:  # the agent edited the CLI's saved conversation (agents/normalize.py put what was sent back)
        outputs = sum("tool_result" in r for r in rewrites)
        replies = len(rewrites) - outputs
        what = [f"{replies} earlier repl{'y' if replies == 1 else 'ies'} of the model"] if replies else []
        what += [f"{outputs} tool output{'' if outputs == 1 else 's'}"] if outputs else []
        lines.append(f"history: {' and '.join(what)} rewritten in the CLI's saved conversation; the trajectory "
                     "keeps what the relay saw (meta.history_rewrites)")
    if kept and run.workspace is not None:
        lines.append(f"workspace (kept): {run.workspace.path}")
    if run.trajectory_path is not None:
        lines.append(f"trajectory: {run.trajectory_path}")
    return "\n".join(lines)
