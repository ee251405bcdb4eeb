"""The built-in loop's tools: one generic set, every call executed inside the sandbox.

A :class:`Tool` is a name, a description, the JSON schema of its arguments (OpenAI ``tools``
form, :meth:`Tool.spec`) and an async executor taking already validated arguments and a
:class:`ToolContext`. The generic set (:data:`GENERIC_TOOLS`):

* ``bash`` {command, timeout?}: ``bash -c COMMAND`` in the workspace, under the run's limits; a command
  the sandbox cannot start (a NUL character, over :data:`MAX_COMMAND_BYTES`: the command line is the
  only way in) or a negative timeout is answered as invalid arguments;
* ``read_file`` {path, offset?, limit?}: numbered lines (``cat -n``), ``limit`` lines from ``offset``;
* ``write_file`` {path, content}: creates or replaces a file (and its parent directories);
* ``edit_file`` {path, old, new, replace_all?}: an exact-string edit; no match, or several
  matches without ``replace_all``, is an error message;
* ``list_files`` {path?, pattern?}: a directory's entries, or the files below it matching a glob;
* ``grep`` {pattern, path?, glob?}: a regular-expression search, ``path:line:text``;
* ``finish`` {answer}: ends the run, ``answer`` being its final text.

Nothing runs in the calling process: ``bash`` is a sandboxed command, and the file tools run
:mod:`._tool_runner` (standard library only, bound read-only) with the sandbox's own Python,
a JSON request on stdin and a JSON reply on stdout -- so a symlink the agent created resolves
as the sandbox sees it and cannot make the host read or write outside the workspace. Paths
are relative to the workspace (``/workspace`` inside the sandbox); absolute paths are taken as
the sandbox sees them.

Tool output must be deterministic for a run to replay from the response cache: no timings
or host paths appear in it.
"""

from __future__ import annotations

import asyncio
import json
import math
import shlex
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.backend import SandboxBackend, sandbox_python
from .options import AgentOptions
from .workspace import CommandResult, Limits, SandboxUnavailable, Workspace

#: The sandbox-side script of the file tools.
RUNNER = Path(__file__).resolve().with_name("_tool_runner.py")
#: The interpreter tried first inside the sandbox; the running interpreter's prefix is bound otherwise.
SANDBOX_PYTHON = "/usr/bin/python3"
_PYTHON_FLAGS = ("-I", "-S", "-B")
_runner_python: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # (argv prefix, extra read-only binds)
_probe_lock = threading.Lock()
#: The least time a command gets from the run's deadline: a call started just before ``max_seconds`` may run
#: this long past it (the loop starts no call once the deadline has passed).
DEADLINE_GRACE = 1.0
#: The longest ``bash`` command in UTF-8 bytes: the kernel's limit on one argument (``MAX_ARG_STRLEN``,
#: 128 KiB with its terminating NUL), as the command is passed to ``bash -c``.
MAX_COMMAND_BYTES = (128 << 10) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """What a tool call gives back to the model."""

    content: str
    is_error: bool = False
    #: Set by ``finish``: the run's final text.
    finish: str | None = None
    #: The sandbox limit that stopped a command (``CommandResult.limit``), if any.
    limit: str | None = None


@dataclass(kw_only=True)
class ToolContext:
    """What executors work with: the workspace, the run's options and per-run state (e.g. a todo list)."""

    workspace: Workspace
    options: AgentOptions = field(default_factory=AgentOptions)
    #: ``time.monotonic()`` past which commands get no more time (the run's ``max_seconds``); None = none.
    deadline: float | None = None
    state: dict[str, Any] = field(default_factory=dict)

    def limits(self, timeout: float | None = None) -> Limits:
        """The sandbox limits of one command: ``timeout`` (when positive) capped by ``command_timeout`` and by
        the time left to the deadline, but never cut below :data:`DEADLINE_GRACE` by the deadline."""
        seconds = self.options.command_timeout
        if timeout is not None and 0 < timeout < seconds:  # False for NaN
            seconds = timeout
        if self.deadline is not None:
            seconds = min(seconds, max(self.deadline - time.monotonic(), DEADLINE_GRACE))
        return Limits(timeout=seconds, memory_mb=self.options.memory_mb, max_processes=self.options.max_processes,
                      max_output_bytes=max(4 * self.options.max_output_chars, 1 << 16))

    async def command(self, argv: Sequence[str], *, stdin: str | None = None, timeout: float | None = None,
                      extra_ro: Sequence[str] = ()) -> CommandResult:
        return await self.workspace.arun(list(argv), limits=self.limits(timeout), stdin=stdin, extra_ro=extra_ro)

    async def file_op(self, request: Mapping[str, Any]) -> ToolResult:
        """Run one :mod:`._tool_runner` request in the sandbox."""
        prefix, extra = await _python(self)
        result = await self.command([*prefix, str(RUNNER)], stdin=json.dumps(dict(request), ensure_ascii=False),
                                    extra_ro=(*extra, str(RUNNER)))
        try:
            reply = json.loads(_text(result.stdout))
            return ToolResult(content=str(reply["output"]), is_error=not reply["ok"])
        except (ValueError, KeyError, TypeError):
            return ToolResult(content=f"the file tool failed: {describe(result, self.limits())}", is_error=True,
                              limit=result.limit)


Executor = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """One tool the model can call."""

    name: str
    description: str
    #: JSON schema of the arguments (an ``object`` schema).
    parameters: Mapping[str, Any]
    run: Executor
    #: The generic capability behind it (its own name for a generic tool).
    capability: str = ""

    def spec(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": json.loads(json.dumps(self.parameters))}}

    def check(self, arguments: Any) -> str | None:
        """Why ``arguments`` do not fit the schema (one message per problem), or None."""
        problems = schema_errors(self.parameters, arguments, "arguments")
        return "; ".join(problems) if problems else None


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer(),
    "number": lambda v: isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and math.isfinite(v),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def schema_errors(schema: Mapping[str, Any], value: Any, where: str) -> list[str]:
    """The subset of JSON schema tools use: type, required, properties, additionalProperties: false,
    items, enum, minLength. Unknown keywords are ignored."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_TYPES.get(k, lambda v: True)(value) for k in kinds):
            return [f"{where} must be {' or '.join(kinds)}, got {type(value).__name__} {json.dumps(value)[:60]}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where} must be one of {', '.join(json.dumps(v) for v in schema['enum'])}"]
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return [f"{where} must have at least {schema['minLength']} characters"]
    problems: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        problems += [f"{where}.{k} is required" for k in schema.get("required") or () if k not in value]
        if schema.get("additionalProperties") is False:
            problems += [f"{where}.{k} is not a known argument (known: {', '.join(properties)})"
                         for k in value if k not in properties]
        for key, sub in properties.items():
            if key in value and not (value[key] is None and key not in (schema.get("required") or ())):
                problems += schema_errors(sub, value[key], f"{where}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems += schema_errors(schema["items"], item, f"{where}[{index}]")
    return problems


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail around a marked elision."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n… [{len(text) - head - tail} characters elided] …\n{text[len(text) - tail:]}"


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data or ""


#: How a stopped command is explained to the model, by ``CommandResult.limit``.
LIMIT_TEXT = {
    "timeout": "the time limit of {timeout:g}s was reached; the command and its processes were killed",
    "memory": "the memory limit of {memory_mb} MiB per process was reached",
    "processes": "the limit of {max_processes} processes was reached",
    "cpu": "the CPU time limit was reached",
    "output": "the output limit was reached; the command was killed and the rest of its output discarded",
    "disk": "the disk limit was reached (file size or workspace size)",
}


def describe(result: CommandResult, limits: Limits) -> str:
    """A command's outcome as text: stdout, stderr, the limit that stopped it, the exit status."""
    parts = [_text(result.stdout).rstrip("\n")]
    if _text(result.stderr).strip():
        parts.append("[stderr]\n" + _text(result.stderr).rstrip("\n"))
    if result.limit:
        values = {name: getattr(limits, name) for name in ("timeout", "memory_mb", "max_processes")}
        text = LIMIT_TEXT.get(result.limit, "the {limit} limit was reached").format(limit=result.limit, **values)
        parts.append(f"[stopped by the sandbox: {text}]")
    parts.append("[killed: no exit code]" if result.returncode is None else f"[exit code {result.returncode}]")
    return "\n".join(p for p in parts if p)


async def _python(ctx: ToolContext) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sandbox's interpreter for the runner: ``/usr/bin/python3`` when it starts there, else the
    running interpreter with its installation prefix bound read-only (probed once per process)."""
    if _runner_python is None:
        return await asyncio.to_thread(_probe, ctx.workspace.backend)
    return _runner_python


def _probe(backend: SandboxBackend) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Decide :func:`_python` in a fresh empty workspace of the backend, never in an agent's: what an agent did
    to its own (``chmod 000 /workspace``, filling its disk) must not choose the interpreter -- and the host
    paths bound in -- for every later run of the process. Only a clear answer is kept."""
    global _runner_python
    default = (SANDBOX_PYTHON, *_PYTHON_FLAGS), ()
    with _probe_lock:
        if _runner_python is not None:
            return _runner_python
        try:
            with Workspace.create(None, backend=backend) as neutral:
                probe = neutral.run([SANDBOX_PYTHON, *_PYTHON_FLAGS, "-c", "import json"],
                                    limits=Limits(timeout=30.0, memory_mb=512, max_processes=64))
        except (OSError, SandboxUnavailable):  # no room for a workspace now: decide on a later call
            return default
        if probe.ok:
            _runner_python = default
        elif probe.limit is not None:  # a passing shortage (e.g. processes): decide on a later call
            return default
        else:
            executable, extra = sandbox_python()
            _runner_python = ((executable, *_PYTHON_FLAGS), tuple(extra))
        return _runner_python


# --- the generic tools ---------------------------------------------------------------------------

def _object(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(required),
            "additionalProperties": False}


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


def _integer(description: str) -> dict[str, str]:
    return {"type": "integer", "description": description}


def command_problem(command: str, timeout: Any = None) -> str | None:
    """Why the sandbox cannot run ``bash -c command`` with this ``timeout`` (the agent's mistake), or None."""
    if "\0" in command:
        return "the command contains a NUL character (\\0), which a command line cannot hold"
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_COMMAND_BYTES:
        return (f"the command is {size:,} bytes, over the {MAX_COMMAND_BYTES:,} a command line can hold; "
                "write a long script to a file and run that file")
    if timeout is not None and not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout >= 0):
        return f"the timeout must be a positive number of seconds, got {timeout!r}"  # 0: the default
    return None


async def run_bash(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    problem = command_problem(args["command"], args.get("timeout"))
    if problem is not None:
        return ToolResult(content=f"Error: invalid arguments: {problem}.", is_error=True)
    limits = ctx.limits(args.get("timeout"))
    result = await ctx.command(["bash", "-c", args["command"]], timeout=args.get("timeout"))
    return ToolResult(content=describe(result, limits), is_error=result.returncode != 0 or bool(result.limit),
                      limit=result.limit)


async def run_read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    return await ctx.file_op({"op": "read", "path": args["path"], "offset": args.get("offset"),
                              "limit": args.get("limit"), "separator": args.get("separator")})


async def run_write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    return await ctx.file_op({"op": "write", "path": args["path"], "content": args["content"]})


async def run_edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """One edit ({old, new, replace_all}) or several in order (``edits``, all or nothing)."""
    edits = args.get("edits") or [{"old": args["old"], "new": args["new"], "replace_all": args.get("replace_all")}]
    return await ctx.file_op({"op": "edit", "path": args["path"], "edits": list(edits)})


async def run_list(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    return await ctx.file_op({"op": "list", "path": args.get("path"), "pattern": args.get("pattern")})


async def run_grep(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Besides {pattern, path, glob}: ``ignore_case``, ``mode`` (content|files|count), ``before``,
    ``after`` and ``limit`` (profiles map their own options onto these)."""
    keys = ("path", "glob", "ignore_case", "mode", "before", "after", "limit")
    return await ctx.file_op({"op": "grep", "pattern": args["pattern"], **{k: args.get(k) for k in keys}})


async def run_finish(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(content="The run is finished.", finish=str(args["answer"]))


async def run_todo(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Keeps the latest todo list (``todos``: a list of items or a text checklist) in the run's state."""
    ctx.state["todos"] = args["todos"]
    count = len(args["todos"]) if isinstance(args["todos"], list) else len(str(args["todos"]).splitlines())
    return ToolResult(content=f"The todo list was updated ({count} items). Keep working on the task.")


def unavailable(reason: str) -> Executor:
    """An executor that answers every call with ``reason`` as an error (e.g. web access offline)."""
    async def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(content=reason, is_error=True)
    return run


def generic(name: str, description: str, parameters: Mapping[str, Any], run: Executor) -> Tool:
    return Tool(name=name, description=description, parameters=parameters, run=run, capability=name)


BASH = generic("bash", "Run a shell command (bash -c) in the workspace directory and return its output and exit "
               "code. Commands run in a sandbox without network access.",
               _object({"command": _string("The shell command to run."),
                        "timeout": {"type": "number", "description": "Seconds before the command is killed."}},
                       "command"), run_bash)
READ_FILE = generic("read_file", "Read a text file; lines come numbered like `cat -n`.",
                    _object({"path": _string("File path, relative to the workspace or absolute."),
                             "offset": _integer("First line to read (1-based)."),
                             "limit": _integer("How many lines to read.")}, "path"), run_read)
WRITE_FILE = generic("write_file", "Create a file or replace its whole content; parent directories are created.",
                     _object({"path": _string("File path, relative to the workspace or absolute."),
                              "content": _string("The complete new content.")}, "path", "content"), run_write)
EDIT_FILE = generic("edit_file", "Replace an exact piece of text in a file. `old` must occur exactly once "
                    "unless `replace_all` is true.",
                    _object({"path": _string("File path, relative to the workspace or absolute."),
                             "old": _string("The exact text to replace."),
                             "new": _string("The text to put in its place."),
                             "replace_all": {"type": "boolean", "description": "Replace every occurrence."}},
                            "path", "old", "new"), run_edit)
LIST_FILES = generic("list_files", "List a directory, or with `pattern` the files below it matching a glob "
                     "(`**` matches any depth).",
                     _object({"path": _string("Directory (default: the workspace)."),
                              "pattern": _string("Glob such as `**/*.py`.")}), run_list)
GREP = generic("grep", "Search file contents for a regular expression; prints `path:line:text` for each match.",
               _object({"pattern": _string("Python regular expression."),
                        "path": _string("File or directory to search (default: the workspace)."),
                        "glob": _string("Only files whose name matches this glob, e.g. `*.py`.")}, "pattern"),
               run_grep)
FINISH = generic("finish", "Finish the task and give your final answer.",
                 _object({"answer": _string("The final answer to the user.")}, "answer"), run_finish)

#: The generic tool set, in the order the model sees it.
GENERIC_TOOLS: tuple[Tool, ...] = (BASH, READ_FILE, WRITE_FILE, EDIT_FILE, LIST_FILES, GREP, FINISH)


def command_line(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """A one-line summary of a call for progress lines (``bash ls -la``, ``read_file a.py``)."""
    main = next((arguments[k] for k in ("command", "path", "file_path", "pattern", "answer", "url", "query")
                 if isinstance(arguments.get(k), str)), None)
    text = main if main is not None else shlex.join(f"{k}={v}" for k, v in arguments.items())
    text = " ".join(text.split())
    return f"{tool.name} {text[:80]}{'…' if len(text) > 80 else ''}".rstrip()
