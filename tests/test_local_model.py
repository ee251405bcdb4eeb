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


@pytest.mark.slow
def test_the_local_judge_answers_each_check_once():
    """"N entries, each naming one of N ids" let SmolLM2 answer smoke's ``polite`` twice (pass, then fail) at
    every try, and the judge refuses that: every judged instance of the main job errored. The grammar now
    has one entry per id, in order."""
    checks = [CheckSpec(id="polite", verifier="ifbench.judge", params={"criterion": "The reply is polite in tone."}),
              CheckSpec(id="offers-credit", verifier="ifbench.judge",
                        params={"criterion": "The reply offers store credit."})]
    prompt = ("A customer asks for a refund after the 30-day window. Write a short, polite reply that declines but "
              "offers store credit.")
    verdicts, completions = asyncio.run(judge_checks(
        [ModelClient(model="local/smollm2")], default_registry(), prompt,
        "We are sorry, but we can offer you store credit.", checks))
    assert all(isinstance(v, Verdict) for v in verdicts.values()), verdicts
    assert [entry["id"] for entry in json.loads(completions[0].text)["checks"]] == ["polite", "offers-credit"]


def test_one_entry_per_id_only_where_the_ids_are_as_many_as_the_entries():
    from pytest_ifbench.judges import trajectory
    from pytest_ifbench.judges.checklist import response_format
    from pytest_ifbench.models.local import one_entry_per_id

    for fmt in (response_format(["a", "b"], 5, conditional=True), trajectory.response_format(["a", "b"])):
        schema = fmt["json_schema"]["schema"]
        array = one_entry_per_id(schema)["properties"]["checks"]
        assert "items" not in array and [e["properties"]["id"] for e in array["prefixItems"]] == [
            {"const": "a"}, {"const": "b"}]
        rest = {k: v for k, v in array["prefixItems"][1]["properties"].items() if k != "id"}
        assert rest == {k: v for k, v in schema["properties"]["checks"]["items"]["properties"].items() if k != "id"}
    loose = {"type": "array", "minItems": 1, "maxItems": 3,
             "items": {"type": "object", "properties": {"id": {"enum": ["a", "b", "c"]}}}}
    assert one_entry_per_id(loose) == loose
    assert one_entry_per_id({"type": "string"}) == {"type": "string"}


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
