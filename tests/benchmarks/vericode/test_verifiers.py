"""VeriCode taxonomy and verifiers: every one of the 30 instructions on passing and failing replies."""

from __future__ import annotations

import io
import json
import re

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import ParamError
from pytest_ifbench._verify import verify_one
from pytest_ifbench.benchmarks.vericode.checks import text_after_code
from pytest_ifbench.benchmarks.vericode.instructions import (
    BY_ID,
    CATEGORIES,
    CATEGORY_COUNTS,
    INSTRUCTIONS,
)

REGISTRY = default_registry()


def fenced(code: str, after: str = "") -> str:
    return f"Here is the code.\n\n```python\n{code}```{after}"


# (instruction, params, passing code, failing code); replies are the code in a python fence.
RUFF_CASES = [
    ("style_1", {}, "def compute_total(values):\n    return sum(values)\n",
     "def computeTotal(values):\n    return sum(values)\n"),
    ("style_2", {}, 'x = "a"\n', "x = 'a'\n"),
    ("style_2", {"quote_style": "single"}, "x = 'a'\ny = 'it\"s'\n", 'x = "a"\n'),
    ("style_3", {}, "x = 1\n", f"x = '{'a' * 80}'\n"),
    ("style_3", {"line_length": 100}, f"x = '{'a' * 80}'\n", f"x = '{'a' * 100}'\n"),
    ("style_4", {}, "import os\n\nprint(os.sep)\n", "import os, sys\n\nprint(os.sep, sys.argv)\n"),
    ("style_5", {}, "def f(x: int, *args: str) -> int:\n    return x\n", "def f(x, *args) -> int:\n    return x\n"),
    ("style_6", {}, 'name = "a"\ntext = f"hi {name}"\n', 'name = "a"\ntext = "hi %s" % name\n'),
    ("style_7", {}, "x = [\n    1,\n    2,\n]\n", "x = [\n    1,\n    2\n]\n"),
    ("style_8", {}, "def f(items):\n    return items\n", "def f(list):\n    return list\n"),
    ("style_9", {}, "def f(x):\n    return x is None\n", "def f(x):\n    return x == None\n"),
    ("logic_1", {"max_complexity": 2}, "def f(x):\n    if x:\n        return 1\n    return 2\n",
     "def f(x, y):\n    if x:\n        return 1\n    if y:\n        return 2\n    return 3\n"),
    ("logic_2", {"max_returns": 1}, "def f(x):\n    y = 1 if x else 2\n    return y\n",
     "def f(x):\n    if x:\n        return 1\n    return 2\n"),
    ("logic_3", {}, "def f(x):\n    if x:\n        y = 1\n    else:\n        y = 2\n    return y\n",
     "def f(x):\n    if x > 1:\n        y = 1\n    elif x < 0:\n        y = 2\n    else:\n        y = 3\n"
     "    return y\n"),
    ("logic_4", {"max_statements": 5}, "def f():\n    a = 1\n    return a\n",
     "def f():\n" + "".join(f"    a{i} = {i}\n" for i in range(7)) + "    return a0\n"),
    ("logic_5", {}, "def f(x):\n    if x:\n        return 1\n    return 2\n",
     "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n"),
    ("logic_6", {}, "def f(d, k):\n    return k in d\n", "def f(d, k):\n    return k in d.keys()\n"),
    ("logic_7", {}, "x = []\n", "x = list()\n"),
    ("logic_8", {}, "LIMIT = 10\n\n\ndef f(x):\n    return x > LIMIT\n", "def f(x):\n    return x > 10\n"),
    ("logic_9", {}, "def f(xs):\n    return [x * 2 for x in xs]\n",
     "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"),
    ("doc_1", {}, "# Compute the total of the order.\nx = 1\n", "# x = compute(1, 2)\nx = 1\n"),
    ("doc_2", {}, "# A short comment.\nx = 1\n", "# " + "word " * 16 + "\nx = 1\n"),
    ("doc_2", {"max_doc_length": 100}, "# " + "word " * 16 + "\nx = 1\n", "# " + "word " * 22 + "\nx = 1\n"),
    ("doc_3", {}, '"""Tools."""\n\n\ndef f():\n    """Return one."""\n    return 1\n', "def f():\n    return 1\n"),
    ("doc_3", {"convention": "google"},
     '"""Tools."""\n\n\ndef f(x):\n    """Return x.\n\n    Args:\n        x: The value.\n\n    Returns:\n'
     '        The value.\n    """\n    return x\n',
     '"""Tools."""\n\n\ndef f(x):\n    """Return x.\n\n    Args:\n        x: The value.\n    Returns:\n'
     '        The value.\n    """\n    return x\n'),
    ("doc_3", {"convention": "numpy"},
     '"""Tools."""\n\n\ndef f(x):\n    """Return x.\n\n    Parameters\n    ----------\n    x : int\n'
     '        The value.\n\n    Returns\n    -------\n    int\n        The value.\n    """\n    return x\n',
     '"""Tools."""\n\n\ndef f(x):\n    """Return x.\n\n    Parameters\n    x : int\n        The value.\n    """\n'
     '    return x\n'),
    ("error_1", {}, "try:\n    x = int('1')\nexcept ValueError:\n    x = 0\n",
     "try:\n    x = int('1')\nexcept:\n    x = 0\n"),
    ("error_2", {}, "def f(s):\n    try:\n        return int(s)\n    except ValueError as err:\n"
                    "        raise TypeError(s) from err\n",
     "def f(s):\n    try:\n        return int(s)\n    except ValueError:\n        raise TypeError(s)\n"),
    ("error_3", {}, "try:\n    pass\nexcept OSError:\n    pass\n", "try:\n    pass\nexcept IOError:\n    pass\n"),
    ("error_4", {}, 'msg = "bad value"\nraise ValueError(msg)\n', 'raise ValueError("bad value")\n'),
    ("library_1", {}, "from pathlib import Path\n\ntext = Path('a.txt').read_text()\n",
     "with open('a.txt') as fh:\n    text = fh.read()\n"),
    ("library_2", {}, "import datetime\n\nnow = datetime.datetime.now(tz=datetime.UTC)\n",
     "import datetime\n\nnow = datetime.datetime.now()\n"),
]

_JSON = '\n\n```json\n{"summary": "Adds numbers.", "complexity": "O(1)"}\n```\n'
_CODE = "def add(a, b):\n    return a + b\n"

# (instruction, params, passing reply, failing reply): the response-level instructions read the whole reply.
RESPONSE_CASES = [
    ("doc_4", {}, fenced(_CODE, _JSON), fenced(_CODE, '\n\n```json\n{"summary": "Adds numbers."}\n```\n')),
    ("doc_4", {}, fenced(_CODE, '\n\nExplanation: {"summary": "x", "complexity": "O(1)"}'),
     fenced(_CODE, '\n\n```json\n{"summary": "", "complexity": "O(1)"}\n```\n')),
    ("doc_4", {"keys": ["approach"]}, fenced(_CODE, '\n\n```json\n{"approach": "add"}\n```'),
     '```json\n{"approach": "add"}\n```\n\n' + fenced(_CODE)),
    ("doc_5", {}, fenced(_CODE, "\n\n- adds a\n- adds b\n- returns the sum\n"),
     "- one\n- two\n- three\n\n" + fenced(_CODE, "\n\n- adds a\n- returns\n")),
    ("doc_5", {"num_bullets": 2}, fenced(_CODE, "\n\n* first\n    - nested, not counted\n* second\n"),
     _CODE + "\n- one\n- two\n"),
    ("doc_6", {}, fenced(_CODE, "\n\n## Explanation\n\nThe function adds its two arguments.\n"),
     fenced(_CODE, "\n\n## How it works\n\nThe function adds its two arguments.\n")),
    ("doc_6", {"heading": "Summary", "max_words": 10},
     fenced(_CODE, "\n\n### Summary:\n\nIt adds two numbers.\n\n## Other\n" + "word " * 50),
     fenced(_CODE, "\n\n## Summary\n\n" + "word " * 11)),
]


def _case_id(case) -> str:
    return f"{case[0]}-{'-'.join(f'{k}={v}' for k, v in case[1].items()) or 'default'}"


def test_taxonomy_shape():
    assert len(INSTRUCTIONS) == 30
    for category, count in CATEGORY_COUNTS.items():
        ids = [i.id for i in INSTRUCTIONS if i.category == category]
        assert ids == [f"{category}_{n}" for n in range(1, count + 1)]
    assert set(CATEGORY_COUNTS) == set(CATEGORIES)
    assert sum(i.ruff_backed for i in INSTRUCTIONS) == 27
    assert [i.id for i in INSTRUCTIONS if not i.ruff_backed] == ["doc_4", "doc_5", "doc_6"]
    for instruction in INSTRUCTIONS:
        assert instruction.description and instruction.title and instruction.rule
        for template in (instruction.generation_prompt, instruction.edit_prompt):
            placeholders = set(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", template))
            assert placeholders == set(instruction.params), instruction.id
        for name, values in instruction.recommended.items():
            for value in values:  # every recommended value is valid
                instruction.validate({name: list(value) if isinstance(value, tuple) else value})
        for other in instruction.conflicts:
            assert instruction.id in BY_ID[other].conflicts, (instruction.id, other)


def test_the_five_published_instructions_match_the_paper():
    from pytest_ifbench.ruff.check import enabled_codes

    style_3 = BY_ID["style_3"]
    assert style_3.category == "style" and style_3.select({}) == ("E501",)
    assert style_3.params["line_length"].default == 79
    assert [(s.key, s.value) for s in style_3.settings({"line_length": 79})] == [("line-length", 79)]
    logic_3 = BY_ID["logic_3"]
    assert logic_3.category == "logic" and logic_3.select({}) == ("PLR0912",)
    assert logic_3.params["max_branches"].default == 2
    assert [(s.key, s.value) for s in logic_3.settings({"max_branches": 2})] == [("lint.pylint.max-branches", 2)]
    doc_3 = BY_ID["doc_3"]
    assert doc_3.category == "doc" and doc_3.select({}) == ("D",)
    assert doc_3.params["convention"].default == "pep257"
    assert set(doc_3.params["convention"].choices) == {"pep257", "google", "numpy"}
    assert [(s.key, s.value) for s in doc_3.settings({"convention": "numpy"})] == [
        ("lint.pydocstyle.convention", "numpy")]
    for instruction_id, code in (("error_3", "UP024"), ("library_1", "PTH")):
        assert BY_ID[instruction_id].select({}) == (code,) and not BY_ID[instruction_id].params
    assert BY_ID["error_3"].category == "error" and BY_ID["library_1"].category == "library"
    assert "PTH123" in enabled_codes(("PTH",))  # the built-in open() is covered


def test_registered_as_vericode_verifiers():
    for instruction in INSTRUCTIONS:
        verifier = REGISTRY.get(f"vericode.{instruction.id}")
        assert verifier.kind == ("ruff" if instruction.ruff_backed else "python")
        assert verifier.target == ("code" if instruction.ruff_backed else "response")
        assert verifier.validate(None) == instruction.defaults()


@pytest.mark.parametrize("case", RUFF_CASES + RESPONSE_CASES, ids=[_case_id(c) for c in RUFF_CASES + RESPONSE_CASES])
def test_pass_and_fail(case):
    instruction_id, params, good, bad = case
    if BY_ID[instruction_id].ruff_backed:  # code cases: the reply is the code in a python fence
        good, bad = fenced(good), fenced(bad)
    verifier = f"vericode.{instruction_id}"
    passed = verify_one(REGISTRY, verifier, params, good)
    assert passed.passed, passed.evidence
    failed = verify_one(REGISTRY, verifier, params, bad)
    assert not failed.passed, failed.evidence


def test_every_instruction_has_cases():
    covered = {c[0] for c in RUFF_CASES + RESPONSE_CASES}
    assert covered == set(BY_ID)


def test_code_that_does_not_parse_fails_every_ruff_instruction():
    reply = fenced("def f(:\n    return\n")
    for instruction in INSTRUCTIONS:
        if instruction.ruff_backed:
            verdict = verify_one(REGISTRY, instruction.verifier_id, {}, reply)
            assert not verdict.passed and "syntax-error" in verdict.evidence, instruction.id


def test_violations_are_mapped_by_exact_rule_code():
    # logic_6 must not see SIM108 (left out), style_9 must not see E722 (that is error_1's).
    code = ("def f(flag: bool) -> int:\n    if flag:\n        value = 1\n    else:\n        value = 2\n"
            "    try:\n        value += 1\n    except:\n        value = 3\n    return value\n")
    assert verify_one(REGISTRY, "vericode.logic_6", {}, fenced(code)).passed
    assert verify_one(REGISTRY, "vericode.style_9", {}, fenced(code)).passed
    assert not verify_one(REGISTRY, "vericode.error_1", {}, fenced(code)).passed


def test_response_level_reads_the_code_block_extract_code_takes():
    reply = "```text\nnot code\n```\n\n```python\nx = 1\n```\n\n- a\n"
    assert text_after_code(reply) == "\n\n- a\n"
    assert text_after_code("x = 1\n") is None
    assert text_after_code("```\nx = 1\n```\nafter") == "\nafter"
    assert text_after_code("```python\nx = 1\n") is None  # never closed: nothing follows the code


@pytest.mark.parametrize(("verifier", "params", "field"), [
    ("vericode.style_3", {"line_length": 500}, "line_length"),
    ("vericode.style_3", {"line_length": "79"}, "line_length"),
    ("vericode.doc_3", {"convention": "pep8"}, "convention"),
    ("vericode.doc_4", {"keys": ["summary", "bogus"]}, "keys[1]"),
    ("vericode.doc_4", {"keys": []}, "keys"),
    ("vericode.doc_6", {"heading": "Notes"}, "heading"),
    ("vericode.error_3", {"strict": True}, "strict"),
])
def test_invalid_params_are_rejected(verifier, params, field):
    with pytest.raises(ParamError) as info:
        REGISTRY.get(verifier).validate(params)
    assert info.value.field == field


def test_ifbench_verify_checks_one_instruction(monkeypatch, capsys):
    from pytest_ifbench.cli.main import main

    lines = [
        {"id": "ok", "verifier": "vericode.style_3", "params": {"line_length": 79}, "response": fenced("x = 1\n")},
        {"id": "long", "verifier": "vericode.style_3", "response": "x = '" + "a" * 90 + "'\n"},
        {"id": "json", "verifier": "vericode.doc_4", "response": fenced(_CODE, _JSON)},
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(json.dumps(line) for line in lines) + "\n"))
    assert main(["verify", "--in", "-"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["id"], o["passed"]) for o in out] == [("ok", True), ("long", False), ("json", True)]
    assert "E501" in out[1]["evidence"]


def test_prompts_render_parameters():
    assert BY_ID["style_3"].render("generation", {"line_length": 88}).endswith("at most 88 characters long.")
    assert "NumPy" in BY_ID["doc_3"].render("edit", {"convention": "numpy"})
    assert '"summary", "approach"' in BY_ID["doc_4"].render("generation", {"keys": ["summary", "approach"]})
    assert "`[]`, `{}` and `()`" in BY_ID["logic_7"].render("generation")


def test_docs_list_every_instruction():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "vericode.md").read_text(encoding="utf-8")
    for instruction in INSTRUCTIONS:
        start = f"| `{instruction.id}` | {instruction.category_name} |"
        row = next((line for line in doc.splitlines() if line.startswith(start)), "")
        assert instruction.rule in row, instruction.id
        assert instruction.generation_prompt.replace("|", "\\|").replace("{{}}", "{}") in row, instruction.id
