"""pytest-ifbench: instruction-following benchmarks as ordinary pytest suites."""

from __future__ import annotations

__version__ = "0.1.0"

from ._metrics import MetricTable
from ._model_types import CheckSpec, GenerationParams, Instance, Verdict
from ._params import Param
from ._registry import Registry, RuffSetting, RuffSpec, Verifier
from ._text import extract_code, strip_reasoning

__all__ = [
    "CheckSpec", "GenerationParams", "Instance", "MetricTable", "Param", "Registry", "RuffSetting", "RuffSpec",
    "Verdict", "Verifier", "__version__", "extract_code", "strip_reasoning",
]
