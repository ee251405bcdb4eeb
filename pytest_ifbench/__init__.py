"""pytest-ifbench: instruction-following benchmarks as ordinary pytest suites.

This module is the public API for benchmark authors: the types a verifier,
a protocol, a metric or an importer receives or returns. Everything else is
private (``_*`` modules and the core's sub-packages, except
``pytest_ifbench.sandbox`` and ``pytest_ifbench.testing``) and may change
without notice. A benchmark is a :class:`Benchmark` declaration in a module
published under the ``pytest_ifbench.benchmarks`` entry-point group; other
hooks are specified in ``pytest_ifbench._hookspecs`` (see docs/architecture.md).
Every name but ``__version__`` is imported on first use (``__getattr__``), so
``import pytest_ifbench`` -- and with it the ``ifbench`` command and every
benchmark's ``plugin.py`` -- stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:  # what the names below are; each is imported on first use (``__getattr__``)
    from ._benchmark import Benchmark, Compat, ReadOptions
    from ._params import Param, ParamError, validate_params
    from ._protocols import PROTOCOLS, Episode, ProtocolRegistry, Runtime, TurnRecord
    from ._registry import Registry, RuffSetting, RuffSpec, Verifier, VerifyContext
    from ._text import code_block, extract_code, first_json_object, printable, strip_reasoning, utf8_safe
    from ._types import CheckSpec, GenerationParams, Instance, JudgeOmission, Verdict
    from ._user_cache import user_cache_dir
    from ._verify import CheckOutcome, evaluate
    from .judges.quoting import neutralise
    from .models.provider_api import Provider
    from .models.providers import chat_reply, make_client
    from .reports import stats
    from .reports.metrics import MetricTable
    from .reports.stats import Estimate
    from .ruff.check import ruff_setting
    from .suite.detect import suite_yaml_or_none
    from .suite.errors import SuiteError
    from .suite.format import set_check_param
    from .suite.jsonl import JsonlError, iter_jsonl

__all__ = [
    "AgentHarnessError", "Benchmark", "CheckOutcome", "CheckSpec", "Compat", "Completion", "Episode", "Estimate",
    "GenerationParams",
    "errored",
    "Instance", "JUDGE_PARAMS", "JsonlError", "JudgeError", "JudgeOmission", "MetricTable", "ModelClient", "PROTOCOLS",
    "Param", "ParamError", "ProtocolRegistry", "Provider", "ReadOptions", "Registry", "ResponseCache", "RuffSetting",
    "RuffSpec", "Runtime", "SuiteError", "ToolRegistry", "TurnRecord", "Verdict", "Verifier", "VerifyContext",
    "__version__", "ask_with_repair", "call_judge", "chat_reply", "close_sessions", "code_block", "evaluate",
    "extract_code",
    "first_json_object", "iter_jsonl", "make_client", "neutralise", "printable", "raise_failed", "reply_entries",
    "ruff_setting",
    "set_check_param", "stats",
    "strip_reasoning", "suite_yaml_or_none", "user_cache_dir", "utf8_safe", "validate_params",
]

#: Where each public name lives (relative to this package). Nothing is imported until a name is
#: first used, so ``import pytest_ifbench.cli`` (the ``ifbench`` command) or a benchmark's
#: ``plugin.py`` importing :class:`Benchmark` loads only what it touches, not pytest and asyncio.
_HOMES: dict[str, str] = {
    **dict.fromkeys(("Benchmark", "Compat", "ReadOptions"), "._benchmark"),
    **dict.fromkeys(("Param", "ParamError", "validate_params"), "._params"),
    **dict.fromkeys(("PROTOCOLS", "Episode", "ProtocolRegistry", "Runtime", "TurnRecord"), "._protocols"),
    **dict.fromkeys(("Registry", "RuffSetting", "RuffSpec", "Verifier", "VerifyContext"), "._registry"),
    **dict.fromkeys(("code_block", "extract_code", "first_json_object", "printable", "strip_reasoning",
                     "utf8_safe"), "._text"),
    **dict.fromkeys(("CheckSpec", "GenerationParams", "Instance", "JudgeOmission", "Verdict"), "._types"),
    "user_cache_dir": "._user_cache",
    **dict.fromkeys(("CheckOutcome", "evaluate"), "._verify"),
    "Provider": ".models.provider_api",
    **dict.fromkeys(("chat_reply", "make_client"), ".models.providers"),
    "close_sessions": ".models.openai_compat",
    **dict.fromkeys(("MetricTable", "errored"), ".reports.metrics"),
    "Estimate": ".reports.stats",
    "ruff_setting": ".ruff.check",
    "suite_yaml_or_none": ".suite.detect",
    "SuiteError": ".suite.errors",
    "set_check_param": ".suite.format",
    **dict.fromkeys(("JsonlError", "iter_jsonl"), ".suite.jsonl"),
    **dict.fromkeys(("JUDGE_PARAMS", "JudgeError", "ask_with_repair", "call_judge", "raise_failed", "reply_entries"),
                    ".judges.checklist"),
    **dict.fromkeys(("Completion", "ModelClient"), ".models.client"),
    "neutralise": ".judges.quoting",
    "ResponseCache": ".models.cache",
    "ToolRegistry": ".agents.profiles",
    "AgentHarnessError": ".agents.session",
}
#: Public names that are modules themselves.
_MODULES = {"stats": ".reports.stats"}


def __getattr__(name: str) -> Any:
    """A public name, imported from its home module on first use (then kept in this module)."""
    if name in _MODULES:
        value: Any = import_module(_MODULES[name], __name__)
    elif name in _HOMES:
        value = getattr(import_module(_HOMES[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
