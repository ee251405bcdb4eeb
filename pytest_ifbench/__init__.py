"""pytest-ifbench: instruction-following benchmarks as ordinary pytest suites.

This module is the public API for benchmark authors: the types a verifier,
a protocol, a metric or an importer receives or returns. Everything else is
private (``_*`` modules) and may change without notice. A benchmark is a
pluggy plugin published under the ``pytest_ifbench.benchmarks`` entry-point
group; its hooks are specified in ``pytest_ifbench._hookspecs`` (see
docs/architecture.md).
"""

from __future__ import annotations

from ._params import Param, ParamError
from ._protocols import Episode, ProtocolRegistry, Runtime, TurnRecord
from ._registry import Registry, RuffSetting, RuffSpec, Verifier, VerifyContext
from ._text import extract_code, strip_reasoning
from ._types import CheckSpec, GenerationParams, Instance, Verdict
from ._verify import CheckOutcome
from ._version import __version__
from .models.provider_api import Provider
from .models.providers import chat_reply, make_client
from .reports.metrics import MetricTable
from .ruff.check import ruff_setting
from .suite.detect import suite_yaml_or_none
from .suite.errors import SuiteError
from .suite.format import set_check_param

__all__ = [
    "CheckOutcome", "CheckSpec", "Episode", "GenerationParams", "Instance", "MetricTable", "Param", "ParamError",
    "ProtocolRegistry", "Provider", "Registry", "RuffSetting", "RuffSpec", "Runtime", "SuiteError", "TurnRecord",
    "Verdict", "Verifier", "VerifyContext", "__version__", "chat_reply", "extract_code", "make_client", "ruff_setting",
    "set_check_param", "strip_reasoning", "suite_yaml_or_none",
]
