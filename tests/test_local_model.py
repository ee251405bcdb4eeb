"""The embedded model for real: SmolLM2-135M-Instruct through llama.cpp and litellm."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests._support import write_suite

pytest.importorskip("llama_cpp", reason="the embedded model needs the [local] extra")

from pytest_ifbench._composition import default_registry  # noqa: E402
from pytest_ifbench._types import CheckSpec, GenerationParams, Verdict  # noqa: E402
from pytest_ifbench.judges.checklist import judge_checks  # noqa: E402
from pytest_ifbench.models.client import ModelClient  # noqa: E402


def test_local_provider_through_litellm():
    client = ModelClient(model="local/smollm2")
    result = asyncio.run(client.complete([{"role": "user", "content": "Say hi."}], GenerationParams(max_tokens=8)))
    assert result.text.strip()
    assert 1 <= result.completion_tokens <= 8, "max_tokens must reach llama.cpp"
    assert result.prompt_tokens > 0 and result.model == "local/smollm2"


@pytest.mark.slow
def test_local_judge_returns_schema_valid_json():
    """Constrained decoding makes even a 135M model a well-formed (if weak) judge."""
    checks = [CheckSpec(id=f"c{i}", verifier="ifbench.judge", params={"criterion": text})
              for i, text in enumerate(["The reply is a greeting.", "The reply mentions a colour."])]
    verdicts, completions = asyncio.run(judge_checks(
        [ModelClient(model="local/smollm2")], default_registry(), "Greet me.", "Hello! I like blue.", checks))
    assert set(verdicts) == {"c0", "c1"}
    assert all(isinstance(v, Verdict) for v in verdicts.values()), "the schema asks for every check"
    assert json.loads(completions[0].text)["checks"]


def test_suite_runs_on_the_embedded_model_by_default(pytester):
    write_suite(pytester.path, "suites/tiny.yaml", """
        ifbench: 1
        benchmark: tiny
        defaults: {generation: {max_tokens: 16}}
        instances:
          - id: say-hi
            prompt: Say hello.
            checks: [{id: words, verifier: ifbench.word_count, params: {min: 1}}]
    """)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*model: local/smollm2*", "*tiny*"])
