"""Real agent CLIs as runners: install them, check them, run one in a workspace behind the proxy.

Each CLI is declared in a registry (:class:`~.clis.AgentClis`: the shipped ones in :mod:`.clis`,
others through the ``pytest_ifbench_agent_clis`` hook) as an npm package pinned to one version,
installed by ``ifbench agents install`` into one directory (:func:`~.install.agents_dir`, the per-user cache
by default; other versions side by side there, see :mod:`.install`) that every sandboxed
run sees read-only. Every function here takes that registry as ``clis`` (default: the shipped CLIs).
A run (:func:`run_cli`):

1. starts the :class:`~pytest_ifbench.agents.proxy.RecordingProxy` on a Unix socket in the run's
   private directory (``workspace.root``, never visible inside the sandbox), recording to ``log_path``
   and serving the wire format the CLI declares;
2. writes the CLI's own configuration into the run's private ``HOME`` (:meth:`AgentCli.configure`), so
   the workspace the agent sees is exactly the environment it was copied from;
3. runs each query as one sandboxed command (:meth:`Workspace.arun`) whose only way out is the proxy
   (``127.0.0.1:<PROXY_PORT>`` inside), later queries continuing the same conversation;
4. stops the proxy and normalizes the raw log into trajectories (the main one, sub-agents as children).
   Each query's answer is the main conversation's last assistant text as its command left it (the log
   up to the next command, normalized): :attr:`CliResult.turn_texts`, and the trajectory's
   ``meta["turn_answers"]``, which ``ifbench score --trajectories`` scores each user turn on.

Who is to blame when a run ends badly (``docs/agents.md``, "Failures of the agent, errors of the
harness"). The agent, when the run ended while a tool call the model asked for was running -- the
last recorded reply asked for tools and no model call was in flight: its own commands hit a sandbox
limit (disk, memory, processes, output, time), killed the CLI (``kill -9 -1``) or otherwise took the run
down; or the CLI was killed by a signal only another process sends while its model call ran, once the
agent's commands had run (:func:`_killed`: in the sandbox only the CLI's own user can send it; the call
is waited for and counted, paid as it is); or a sandbox limit stopped the CLI outside a tool call once the
agent's commands had run (a process they left running filled the disk during a model call) -- unless the
model's final answer had been received, which is then scored, as the built-in loop scores the answer
after a tool command hit a limit; or, in a later user turn, the CLI made no model call at all (its settings
pointed elsewhere), whatever else it sent the relay; or, before a later user turn, its commands had changed what
the CLI loads into its own process or prompt, or starts, when it starts (:attr:`AgentCli.loads_at_start`,
:meth:`AgentCli.startup_state`, :mod:`.startup_files`). That sets :attr:`CliResult.agent_fault`: the instance
**fails**, with the reason recorded. The
harness, otherwise: a failed model call (the proxy's failures; a request it could not translate when the
CLI then gave no answer), the sandbox being unavailable, a sandbox limit before the agent ran any command
(the CLI too big for it), the CLI crashing or exiting non-zero without a final answer (or making no model
call at all, in the first user turn) while no tool of the agent ran, the run's time running out during a
model call. That sets
:attr:`CliResult.harness_error`: the caller reports the instance as an error, never as failed checks.
Each command is judged as it ends and the run stops at the first of either. (A failed model call
reaches the CLI as a non-retryable error; Claude Code, Kilo and Droid then give up within seconds.)

Only the CLI's own requests reach the model: the proxy runs with ``relay_only`` (see
:mod:`.proxy`), and the requests it refused (a tool command calling the relay, a body out of bounds)
are in the trajectory's ``meta["refused_requests"]``, never counted as the agent's calls. No secret is
handed to the CLI for this: its identity is checked by the sandbox's relay from the process that owns
each connection, so nothing a tool command can read (environment, config files, ``/proc``) helps it.
"""

from __future__ import annotations

import asyncio
import functools
import re
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._types import GenerationParams
from ..models.client import ModelClient
from .accounting import Meter, Usage
from .clis import BUILTIN_CLIS, AgentCli, AgentClis
from .install import agents_dir, cli_problem, install, installed_version, resolve_version
from .normalize import load_raw, normalize
from .options import AgentOptions
from .proxy import RecordingProxy, Submit
from .startup_files import changed, snapshot
from .trajectory import Trajectory
from .workspace import CommandResult, Limits, ProxyRoute, SandboxUnavailable, Workspace

__all__ = ["AGENT_CLIS", "PROXY_PORT", "CliResult", "agents_dir", "cli_problem", "install", "installed_version",
           "run_cli"]

#: The shipped CLIs: name -> (npm package, pinned version, executable in ``node_modules/.bin``), read
#: from their declarations (:data:`~.clis.BUILTIN_CLIS`); a registry also holds the plugins' CLIs.
AGENT_CLIS: dict[str, tuple[str, str, str]] = {cli.name: (cli.package, cli.version, cli.binary)
                                               for cli in BUILTIN_CLIS}
#: The port the CLI reaches the proxy on, inside the sandbox (its own network namespace).
PROXY_PORT = 41777
#: Address space for each process of a CLI run: Node and Bun reserve far more than they use.
CLI_MEMORY_MB = 32768
#: Processes and threads of a CLI run (``RLIMIT_NPROC``): runtimes start dozens of threads each.
CLI_PROCESSES = 1024


def _registry(clis: AgentClis | None) -> AgentClis:
    return AgentClis() if clis is None else clis


@dataclass(frozen=True, slots=True, kw_only=True)
class CliResult:
    """What one CLI run did. ``trajectory`` is the main conversation (sub-agents as children; empty when
    no call was recorded), ``final_text`` its last assistant text, ``turn_texts`` each query's answer
    (see :func:`_turn_answers`; ``meta["turn_answers"]`` too), ``stop_reason`` why the run ended
    (the last reply's stop reason, ``"timeout"``, ``"error"``, ``"agent_fault"``),
    ``returncode``/``stdout``/``stderr`` those of the last command, ``raw_log`` the proxy's JSONL,
    ``harness_error`` a one-line reason when the run failed for reasons that are not the model's,
    ``agent_fault`` one when the agent's own actions ended it (see the module doc)."""

    trajectory: Trajectory
    final_text: str
    stop_reason: str
    returncode: int | None
    stdout: str
    stderr: str
    raw_log: Path
    harness_error: str | None = None
    #: A one-line reason when the agent's own actions ended the run (see the module doc): a failure.
    agent_fault: str | None = None
    #: The run's model calls, counted as the loop counts its own (None: the CLI never started).
    usage: Usage | None = None
    #: Each user turn's answer, one per command run (a turn never started has none), at least one.
    turn_texts: tuple[str, ...] = ()


#: A terminal's escape sequences (colours, cursor moves) and the other control characters a CLI prints.
_TERMINAL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def _last_line(text: str) -> str:
    """The last line of a CLI's output that says something, without its terminal escapes (a reason for a
    report: Kilo colours its errors)."""
    lines = [clean for line in text.splitlines() if (clean := _TERMINAL.sub("", line).strip())]
    return lines[-1][:300] if lines else ""


async def run_cli(name: str, *, workspace: Workspace, queries: Sequence[str], system: str | None, model_name: str,
                  client: ModelClient, submit: Submit | None, options: AgentOptions, log_path: Path,
                  session_id: str | None = None, params: GenerationParams = GenerationParams(),
                  max_tokens_cap: int | None = None, clis: AgentClis | None = None,
                  version: str | None = None, replace_system: bool = False,
                  progress: Callable[[str], None] | None = None) -> CliResult:
    """Run the CLI ``name`` on ``queries`` (one user turn each) in ``workspace`` (see the module doc).

    ``system`` is appended to the CLI's own system prompt, or replaces it with ``replace_system`` where
    the CLI can (:attr:`~.clis.AgentCli.replaces_system`; elsewhere it is appended and the trajectory's
    ``meta["system_prompt"]`` says so); ``version`` is the version to run where it is installed (else
    the pinned one; ``meta["runner_version"]`` is the one that ran); ``model_name`` is the model id the CLI is
    told (every call goes to ``client`` whatever it is); ``submit`` runs model calls (None: the proxy's
    own loop); ``options.max_seconds`` bounds the whole run. ``log_path`` is truncated first; its
    records carry ``session_id`` (default: ``name``), which becomes the trajectory's id. ``params``
    supply what the CLI's requests leave out (temperature, top_p, seed); ``max_tokens_cap`` bounds
    the ``max_tokens`` they ask for (a small local model's context cannot hold 32,000 more). ``clis``:
    the registry ``name`` is looked up in (default: the shipped CLIs). Every call is counted and capped by
    ``options``' ``max_steps``, ``max_tokens``, ``max_cost`` and ``max_seconds`` (:mod:`.accounting`):
    past one the CLI is refused and ended, the stop reason is the limit's, and the run is no error;
    ``progress`` gets one line per call."""
    if not queries:
        raise ValueError("run_cli needs at least one query")
    clis = _registry(clis)
    directory = agents_dir()
    log_path.unlink(missing_ok=True)
    session = session_id or name
    problem = cli_problem(name, directory, clis)
    scaffold = clis.get(name) if problem is None else None
    if scaffold is not None and len(queries) > 1 and not scaffold.multi_turn:
        problem = f"agent CLI {name} cannot continue a conversation offline: it runs single-turn instances only"
    if scaffold is not None and scaffold.wire not in clis.wire_formats():
        problem = (f"agent CLI {name} speaks the wire format {scaffold.wire!r}, which is not registered "
                   f"(known: {', '.join(clis.wire_formats())})")
    if scaffold is None or problem is not None:
        return _result(name, session, log_path, None, problem, (), clis)
    root, running = resolve_version(name, version, directory, clis)
    scaffold = scaffold.for_version(running)
    binary = str(root / "node_modules" / ".bin" / scaffold.binary)
    replacing = bool(system) and replace_system and scaffold.replaces_system
    system_note = None if not system else ("replaced" if replacing else "appended")
    route = ProxyRoute(socket=workspace.root / "proxy.sock", port=PROXY_PORT, launcher=scaffold.launcher)
    meter = Meter(options, progress=progress, who=name)
    proxy = RecordingProxy(client, log_path=log_path, session_id=session, socket_path=route.socket, submit=submit,
                           defaults=params, max_tokens_cap=max_tokens_cap,
                           wire_formats=(clis.wire_format(scaffold.wire),), relay_only=True, meter=meter)
    deadline = meter.deadline
    done: CommandResult | None = None
    starts: list[int] = []  # per command run: the raw log's records before it (its turn's answer is its own)
    limited: list[dict[str, object]] = []  # turns a sandbox limit stopped after their answer (scored all the same)
    error: str | None = None
    fault: str | None = None
    with proxy:
        try:
            try:
                env = scaffold.configure(workspace, url=route.url, model=model_name, system=system)
            except OSError as exc:  # the harness's own files (Droid's overlay in the agents directory)
                raise _NotConfigured(f"{name} could not be configured: {exc}") from None
            startup = functools.partial(_startup, scaffold, workspace)
            loaded = startup()
            for turn, query in enumerate(queries):
                left = deadline - time.monotonic()
                if left < 1:
                    meter.stop("max_seconds")
                    break
                if turn and (touched := changed(loaded, startup())):
                    fault = (f"the agent's commands changed what {name} loads into its own process or prompt when "
                             f"it starts ({', '.join(touched)}): its run ends before {name} would load it")
                    break
                call = scaffold.invocation(binary, query, turn=turn, model=model_name, system=system,
                                           **({"replace_system": True} if replacing else {}))
                limits = Limits(timeout=left, memory_mb=max(options.memory_mb, CLI_MEMORY_MB),
                                max_processes=max(options.max_processes, CLI_PROCESSES))
                before, acted, refused = proxy.calls, meter.tool_replies > 0, len(proxy.untranslatable)
                starts.append(_records_in(log_path))
                done = await workspace.arun(call.argv, limits=limits, env={**env, **call.env}, stdin=call.stdin,
                                            route=route, extra_ro=[directory])
                ran = meter.tool_replies > 0  # the agent's commands had run (a call in flight not counted yet)
                in_flight = proxy.answering > 0
                if in_flight:  # the CLI ended during a model call: paid for all the same, so counted when done
                    await asyncio.to_thread(proxy.settle, meter.seconds_left())
                if done.limit == "timeout" and proxy.calls:  # the deadline, once the agent is at work
                    meter.stop("max_seconds")
                if meter.stop_reason is not None and not proxy.failures:  # a limit: the run ends, scored as it is
                    break
                # (a model call that failed -- the provider, the run's spending limit -- is the harness's error
                # even when a limit was reached too: the refused call took the last step, and the run was
                # scored as a max_steps stop, passed, with the limit reached)
                error = _classify(name, done, proxy, before, options)
                if error is not None and not proxy.failures:
                    error, fault = _blame(error, name, turn, done, proxy, before=before, acted=acted, ran=ran,
                                          in_flight=in_flight, refused=refused)
                    if error is None and fault is None and done.limit is not None:
                        limited.append({"turn": turn + 1, "limit": done.limit})
                if error is not None or fault is not None:
                    break
        except SandboxUnavailable as exc:
            error = f"sandbox unavailable: {exc}"
        except _NotConfigured as exc:
            error = str(exc)
    usage = meter.usage()
    return _result(name, session, log_path, done, error, proxy.notes, clis, fault, usage=usage, starts=starts,
                   meta={"runner_version": running, "version_named": version, "system_prompt": system_note,
                         "limits": options.to_json(), "sandbox_limits": limited, **usage.to_meta()})


def _startup(scaffold: AgentCli, workspace: Workspace) -> dict[str, str]:
    """What the CLI loads or starts when it starts, as the run left it (see the module doc)."""
    return {**snapshot(scaffold.loads_at_start, workspace=workspace.path, home=workspace.home),
            **scaffold.startup_state(workspace=workspace.path, home=workspace.home)}


class _NotConfigured(Exception):
    """The CLI's configuration could not be written (a harness error: outside the agent's reach)."""


_DENIED = ("EACCES", "EPERM", "Permission denied", "Operation not permitted", "ECONNREFUSED")


def _classify(name: str, done: CommandResult, proxy: RecordingProxy, before: int,
              options: AgentOptions) -> str | None:
    """The harness error one command shows, or None."""
    if proxy.failures:
        return f"model call through the proxy failed: {proxy.failures[0]}"
    if done.limit == "timeout":
        return f"{name} did not finish within the run's {options.max_seconds:g}s"
    if done.limit is not None:
        return f"{name} hit the sandbox's {done.limit} limit: {_last_line(done.stderr)}"
    said = _last_line(done.stderr) or _last_line(done.stdout) or "no output"
    denied = "sandbox denied access? " if any(word in done.stderr for word in _DENIED) else ""
    if proxy.calls == before:
        return f"{denied}{name} made no model call (exit {done.returncode}): {said}"
    if done.returncode != 0 and not _answered(proxy):
        return f"{denied}{name} exited with {done.returncode} without a final answer: {said}"
    return None


def _answered(proxy: RecordingProxy) -> bool:
    """Whether the last recorded reply is a final answer: text, asking for no tool."""
    last = proxy.last_response
    return last.get("stop_reason") != "tool_use" and any(
        block.get("type") == "text" and block.get("text") for block in last.get("content") or ())


def _blame(error: str, name: str, turn: int, done: CommandResult, proxy: RecordingProxy, *, before: int,
           acted: bool, ran: bool, in_flight: bool, refused: int) -> tuple[str | None, str | None]:
    """(harness error, agent fault) of a command ``_classify`` found an ``error`` in, no model call having
    failed: the agent's own doing is looked for first (see the module doc), so that a request the agent
    made its CLI send (an MCP server it pointed at the relay: untranslatable) cannot turn its failure into
    an error. ``acted``: the agent's commands had run before this command; ``ran``: by the time it ended
    (a reply in flight then not counted); ``refused``: the untranslatable requests before it."""
    if in_flight and ran and _killed(done):
        return None, _killed_in_call(name, done)
    if _tool_was_running(proxy):
        return None, _fault(name, done)
    if done.limit not in (None, "timeout") and ran:  # a process the agent left running, or what it left behind
        if proxy.calls > before and _answered(proxy):  # the final answer was received: scored on it
            return None, None
        return None, _limited(name, done)
    if acted and proxy.calls == before:  # the CLI that reached the model in the turns before cannot now
        return None, _unreachable(name, turn, done)
    if len(proxy.untranslatable) > refused:  # and no answer: a gap of the translation
        return f"model call through the proxy failed: {proxy.untranslatable[-1]}", None
    return error, None


def _tool_was_running(proxy: RecordingProxy) -> bool:
    """Whether the run ended inside the agent's own tool call: the model's last recorded reply asked
    for tools and no model call was in flight (see the module doc)."""
    return proxy.pending_calls == 0 and proxy.last_response.get("stop_reason") == "tool_use" and not proxy.failures


def _fault(name: str, done: CommandResult) -> str:
    """The agent-fault reason for a run that ended while the agent's tool call ran, with the CLI's last word
    (Kilo says why it stopped: a permission it rejected) unless a signal ended it."""
    said = _last_line(done.stderr)
    if done.limit is not None:
        return f"the agent's commands hit the sandbox's {done.limit} limit" + (f": {said}" if said else "")
    status = done.returncode
    killed = status is not None and status > 128  # a kill: what the CLI printed last is not why
    how = f"killed by signal {status - 128}" if killed else f"exit {status}"  # type: ignore[operator]
    return (f"{name} ended ({how}) while the agent's tool call was running, without a final answer"
            + (f": {said}" if said and not killed else ""))


#: Signals a process gets from another (``kill``), never from its own crash (SIGSEGV, SIGABRT...).
_SENT = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})


def _killed(done: CommandResult) -> bool:
    """Whether the command was killed by a signal that only another process sends, no sandbox limit
    involved: inside its sandbox only the CLI's own user -- the agent's tool commands -- can send it."""
    status = done.returncode
    return done.limit is None and status is not None and status > 128 and status - 128 in _SENT


def _killed_in_call(name: str, done: CommandResult) -> str:
    """The agent-fault reason for a CLI killed while its model call ran, after the agent's commands ran."""
    status = done.returncode or 0
    return (f"{name} was killed (signal {status - 128}) while its model call ran, after the agent's own commands "
            "had run in its sandbox")


def _limited(name: str, done: CommandResult) -> str:
    """The agent-fault reason for a CLI a sandbox limit stopped outside the agent's tool call (a process
    the agent's command left running, a workspace it left over budget), without a final answer."""
    return (f"the sandbox's {done.limit} limit stopped {name} without a final answer, after the agent's own "
            "commands had run in its sandbox")


def _unreachable(name: str, turn: int, done: CommandResult) -> str:
    """The agent-fault reason for a later user turn whose command made no model call: the same CLI, set up
    the same way, reached the model in the turns before, and the agent's commands have run in its sandbox
    since (a settings file of the CLI pointed elsewhere, its home removed), so the agent broke it."""
    said = _last_line(done.stderr) or _last_line(done.stdout) or "no output"
    return (f"{name} made no model call in user turn {turn + 1} (exit {done.returncode}: {said}), after the "
            "agent's own commands had run in its sandbox in the turns before")


def _result(name: str, session: str, log_path: Path, done: CommandResult | None, error: str | None,
            notes: Sequence[str], clis: AgentClis, fault: str | None = None,
            meta: dict[str, object] | None = None, usage: Usage | None = None,
            starts: Sequence[int] = ()) -> CliResult:
    try:
        records = load_raw(log_path) if log_path.exists() else []
        trajectories = normalize(records)
    except ValueError as exc:  # TrajectoryFileError included: the proxy wrote something it cannot read
        records, trajectories = [], []
        error = error or f"the raw log {log_path} cannot be normalized: {exc}"
    main = trajectories[0] if trajectories else Trajectory(id=session)
    calls = [r for r in records if "refused" not in r]
    if usage is not None and usage.stop_reason is not None:
        stop = usage.stop_reason
    elif fault is not None:
        stop = "agent_fault"
    elif done is not None and done.limit == "timeout":
        stop = "timeout"
    elif error is not None:
        stop = "error"
    else:
        stop = str(((calls[-1] if calls else {}).get("response_body") or {}).get("stop_reason") or "end_turn")
    version = installed_version(name, clis=clis) if name in clis else None
    answers = _turn_answers(records, starts, main)
    main = replace(main, meta={**main.meta, "runner": name, "runner_version": version, "stop_reason": stop,
                               "harness_error": error, "agent_fault": fault, "proxy_notes": list(notes),
                               "turn_answers": answers, **(meta or {})})
    return CliResult(trajectory=main, final_text=main.final_text(), stop_reason=stop, turn_texts=tuple(answers),
                     returncode=None if done is None else done.returncode, stdout="" if done is None else done.stdout,
                     stderr="" if done is None else done.stderr, raw_log=log_path, harness_error=error,
                     agent_fault=fault, usage=usage)


def _records_in(log_path: Path) -> int:
    """How many records the raw log holds now (one a line)."""
    try:
        return log_path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _turn_answers(records: Sequence[dict[str, Any]], starts: Sequence[int], main: Trajectory) -> list[str]:
    """Each command's answer (one user turn each; ``starts``: the log's records before each), as the built-in
    loop keeps each turn's final text: the last assistant text of the main conversation as the command left
    it -- the log up to the next command's start, normalized; the last command's is ``main``'s final text --
    or "" when the command added no assistant message to it (cut short before a reply). With one command, or
    none run, the one answer is ``main``'s final text, as a single-turn run always had."""
    answers: list[str] = []
    replies = 0  # the main conversation's assistant messages after the previous command
    for end in [*starts[1:], None]:
        left = main if end is None else next(iter(normalize(records[:end])), Trajectory(id=main.id))
        said = left.assistant_turns()
        answers.append(said[-1].content if len(said) > replies else "")
        replies = max(replies, len(said))
    return answers
