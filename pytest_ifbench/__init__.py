"""pytest-ifbench: instruction-following benchmarks as ordinary pytest suites.

This module is the public API for benchmark authors: the types a verifier,
a protocol, a metric or an importer receives or returns. Everything else is
private (``_*`` modules and the core's sub-packages, except
``pytest_ifbench.sandbox`` and ``pytest_ifbench.testing``) and may change
without notice. A benchmark is a :class:`Benchmark` declaration in a module
published under the ``pytest_ifbench.benchmarks`` entry-point group; other
hooks are specified in ``pytest_ifbench._hookspecs`` (see docs/architecture.md).
Names of the judge, model-client and agent helpers are imported on first use
(``__getattr__``), so ``import pytest_ifbench`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from ._benchmark import Benchmark, Compat, ReadOptions
from ._params import Param, ParamError, validate_params
from ._protocols import PROTOCOLS, Episode, ProtocolRegistry, Runtime, TurnRecord
from ._registry import Registry, RuffSetting, RuffSpec, Verifier, VerifyContext
from ._text import code_block, extract_code, first_json_object, strip_reasoning
from ._types import CheckSpec, GenerationParams, Instance, JudgeOmission, Verdict
from ._user_cache import user_cache_dir
from ._verify import CheckOutcome, evaluate
from ._version import __version__
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
    "Benchmark", "CheckOutcome", "CheckSpec", "Compat", "Completion", "Episode", "Estimate", "GenerationParams",
    "Instance", "JUDGE_PARAMS", "JsonlError", "JudgeError", "JudgeOmission", "MetricTable", "ModelClient", "PROTOCOLS",
    "Param", "ParamError", "ProtocolRegistry", "Provider", "ReadOptions", "Registry", "ResponseCache", "RuffSetting",
    "RuffSpec", "Runtime", "SuiteError", "ToolRegistry", "TurnRecord", "Verdict", "Verifier", "VerifyContext",
    "__version__", "ask_with_repair", "call_judge", "chat_reply", "code_block", "evaluate", "extract_code",
    "first_json_object", "iter_jsonl", "make_client", "reply_entries", "ruff_setting", "set_check_param", "stats",
    "strip_reasoning", "suite_yaml_or_none", "user_cache_dir", "validate_params",
]


def __getattr__(name: str) -> Any:
    """The heavier names (judge, model-client and agent helpers), imported on first use."""
    if name in ("JUDGE_PARAMS", "JudgeError", "ask_with_repair", "call_judge", "reply_entries"):
        from .judges import checklist as module
    elif name in ("Completion", "ModelClient"):
        from .models import client as module
    elif name == "ResponseCache":
        from .models import cache as module
    elif name == "ToolRegistry":
        from .agents import profiles as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value
