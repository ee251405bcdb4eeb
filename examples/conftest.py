"""How a third party adds a verifier: implement the registration hook.

Put this in your own ``conftest.py`` (or in a plugin module registered through
the ``pytest11`` entry point) and reference the verifier by id from YAML.
Run it: ``pytest examples/`` (embedded model) or with ``--model=...``.
"""

from __future__ import annotations

import re

from pytest_ifbench import Param, Verdict


def pytest_ifbench_register_verifiers(registry):
    @registry.verifier(
        "example.sentence_count",
        params={"min": Param(int, default=1, min=0), "max": Param(int, default=1000, min=0)},
        version="1",
        description="The reply has between min and max sentences.",
    )
    def sentence_count(text, params, ctx):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
        n = len(sentences)
        return Verdict(
            passed=params["min"] <= n <= params["max"],
            evidence=f"{n} sentence(s) (required {params['min']}..{params['max']})",
        )
