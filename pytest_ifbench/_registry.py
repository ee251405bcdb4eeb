"""The verifier registry: stable ids, parameter schemas, versions.

Verifiers register by decorator into a :class:`Registry`. The core's live in
``pytest_ifbench.verifiers``, each benchmark's in its own package; all of them
arrive through the ``pytest_ifbench_register_verifiers`` hook, assembled by
``_plugins.build_registry``. :class:`VerifyContext` is what a verifier sees
besides its text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ._params import Param, validate_params
from ._types import Instance, Verdict

VerifierKind = Literal["python", "regex", "ruff", "judge", "unittest"]
Target = Literal["response", "code"]
VerifyFunc = Callable[[str, Mapping[str, Any], "VerifyContext"], Verdict]

_ID = re.compile(r"^[a-z][a-z0-9_]*\.[A-Za-z][A-Za-z0-9_]*$")


@dataclass(kw_only=True)
class VerifyContext:
    """What a verifier may look at besides the text it receives."""

    registry: Registry
    instance: Instance | None = None
    #: The conversation so far, ending with the reply under test.
    messages: Sequence[Mapping[str, Any]] = ()
    #: Judged verdicts by check id (filled by the judge panel).
    judged: Mapping[str, Verdict] = field(default_factory=dict)
    #: Sandbox limits for verifiers that execute code.
    sandbox: Mapping[str, Any] = field(default_factory=dict)
    #: For agent runs: the run's trajectory (``agents.trajectory.Trajectory``), else None.
    trajectory: Any = None
    #: For agent runs: the final workspace (``agents.workspace.Workspace``; commands run sandboxed), else None.
    workspace: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffSetting:
    """A ruff configuration value a check needs, and the rules it influences.

    ``scope`` lets the batch runner share one ruff process between checks:
    two checks conflict only if one sets a value that influences rules the
    other selects.
    """

    key: str
    value: Any
    scope: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffSpec:
    """How a ruff-backed verifier turns its params into rule selections."""

    select: Callable[[Mapping[str, Any]], tuple[str, ...]]
    settings: Callable[[Mapping[str, Any]], tuple[RuffSetting, ...]] = lambda params: ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Verifier:
    """A registered verifier. ``func`` receives the text named by ``target``."""

    id: str
    func: VerifyFunc | None
    params: Mapping[str, Param] = field(default_factory=dict)
    version: str = "1"
    description: str = ""
    kind: VerifierKind = "python"
    target: Target = "response"
    allow_extra_params: bool = False
    ruff: RuffSpec | None = None
    #: For judged verifiers: renders the criterion the judge decides from params.
    criterion: Callable[[Mapping[str, Any]], str] | None = None
    #: For judged verifiers that score instead of pass/fail: the top of the 1..N scale.
    #: The check passes when the score exceeds ``params["threshold"]``.
    judge_scale: int | None = None
    #: For judged verifiers whose requirement holds only under a condition: the condition's
    #: text for these params, or None. The judge may then answer ``not_applicable``, and a
    #: check the judges find not applicable is left out of every rate (``Verdict.applicable``).
    condition: Callable[[Mapping[str, Any]], str | None] | None = None
    #: Extra validation beyond the schema (raise ParamError), run at collection.
    check_params: Callable[[Mapping[str, Any]], None] | None = None
    #: Turns other accepted shapes into the params mapping before validation (e.g. an
    #: official format's bare keyword list into ``{"keywords": [...]}``).
    coerce_params: Callable[[Any], Any] | None = None
    #: Reads the agent's final workspace (``ctx.workspace``): a re-score of a run whose workspace was not
    #: kept cannot decide it again, and errors the instance instead of failing the check.
    reads_workspace: bool = False

    def validate(self, params: Any) -> dict[str, Any]:
        if self.coerce_params is not None:
            params = self.coerce_params(params)
        clean = validate_params(self.params, params, allow_extra=self.allow_extra_params)
        if self.check_params is not None:
            self.check_params(clean)
        return clean

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "version": self.version, "target": self.target,
            "description": self.description,
            "params": {name: spec.describe() for name, spec in self.params.items()},
        }


class UnknownVerifier(KeyError):
    def __init__(self, verifier_id: str, known: list[str]) -> None:
        close = [k for k in known if k.split(".")[-1] == verifier_id.split(".")[-1]]
        prefix = verifier_id.split(".")[0]
        if close:
            hint = f" (did you mean {', '.join(close)}?)"
        elif not any(k.startswith(prefix + ".") for k in known):
            hint = (f" (no verifier of {prefix!r} is registered: is its benchmark package installed, "
                    f"or switched off with -p no:{prefix}?)")
        else:
            hint = ""
        super().__init__(f"unknown verifier {verifier_id!r}{hint}")
        self.verifier_id = verifier_id

    def __str__(self) -> str:
        return str(self.args[0])


#: ``loader(verifier_id)`` registers more verifiers -- those that may define ``verifier_id``, or all
#: when it is None -- and returns whether it loaded anything new (False: nothing left to load).
Loader = Callable[[str | None], bool]


class Registry:
    """Verifiers by id. Registering an id twice is an error unless ``replace``.

    With a ``loader`` the registry fills itself on demand: an id it does not hold yet makes it call
    ``loader(id)`` until the id is there or the loader has nothing left; listing it (``iter``,
    ``len``) loads everything first. The ``ifbench verify`` command uses this so that checking
    ``<name>.*`` cases imports that benchmark's verifiers only, not every installed benchmark's.
    """

    def __init__(self, *, loader: Loader | None = None) -> None:
        self._verifiers: dict[str, Verifier] = {}
        self._loader = loader

    def add(self, verifier: Verifier, *, replace: bool = False) -> Verifier:
        if not _ID.match(verifier.id):
            raise ValueError(f"verifier id {verifier.id!r} must look like '<benchmark>.<name>'")
        if verifier.id in self._verifiers and not replace:
            raise ValueError(f"verifier {verifier.id!r} is already registered")
        self._verifiers[verifier.id] = verifier
        return verifier

    def alias(self, name: str, target: str, params: Mapping[str, Any] | None = None) -> Verifier:
        """Register ``name`` as a second id of the already registered ``target``.

        For ids an official data format spells differently from the registered one. The
        alias is a full registry entry (listed, validated, recorded under its own id) that
        runs ``target``'s function; ``params`` are defaults the caller's params override.
        """
        base = self.get(target)
        defaults = dict(params or {})
        coerce = base.coerce_params

        def with_defaults(given: Any) -> Any:
            if coerce is not None:
                given = coerce(given)
            if given is None:
                given = {}
            return {**defaults, **given} if isinstance(given, Mapping) else given

        return self.add(replace(
            base, id=name, description=f"{base.description} (alias of {target})".strip(),
            coerce_params=with_defaults if defaults or coerce is not None else None,
        ))

    def verifier(
        self,
        id: str,
        *,
        params: Mapping[str, Param] | None = None,
        version: str = "1",
        description: str = "",
        kind: VerifierKind = "python",
        target: Target = "response",
        allow_extra_params: bool = False,
        check_params: Callable[[Mapping[str, Any]], None] | None = None,
        reads_workspace: bool = False,
    ) -> Callable[[VerifyFunc], VerifyFunc]:
        """Decorator registering ``func(text, params, context) -> Verdict``."""

        def register(func: VerifyFunc) -> VerifyFunc:
            self.add(Verifier(
                id=id, func=func, params=dict(params or {}), version=version,
                description=description or (func.__doc__ or "").strip().split("\n")[0],
                kind=kind, target=target, allow_extra_params=allow_extra_params, check_params=check_params,
                reads_workspace=reads_workspace,
            ))
            return func

        return register

    def get(self, verifier_id: str) -> Verifier:
        try:
            return self._verifiers[verifier_id]
        except KeyError:
            if self._load(verifier_id):
                return self._verifiers[verifier_id]
            raise UnknownVerifier(verifier_id, sorted(self._verifiers)) from None

    def __contains__(self, verifier_id: object) -> bool:
        return verifier_id in self._verifiers or (isinstance(verifier_id, str) and self._load(verifier_id))

    def __iter__(self) -> Iterator[Verifier]:
        self._load(None)
        return iter(sorted(self._verifiers.values(), key=lambda v: v.id))

    def __len__(self) -> int:
        self._load(None)
        return len(self._verifiers)

    def _load(self, verifier_id: str | None) -> bool:
        """Ask the loader until ``verifier_id`` is registered (None: until it has loaded everything)."""
        while self._loader is not None and (verifier_id is None or verifier_id not in self._verifiers):
            if not self._loader(verifier_id):
                self._loader = None  # everything is loaded: plain dictionary look-ups from now on
        return verifier_id is not None and verifier_id in self._verifiers

