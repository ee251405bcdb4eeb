"""Every class of difference between ``paper`` and ``reference`` (docs/manyih.md, "paper vs
reference"): one minimal reply per class, both verdicts, through the registered verifiers."""

from __future__ import annotations

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._verify import verify_one


def _py(code: str) -> str:
    return f"```python\n{code}```"


# (class, verifier, reply, extra params, paper verdict, reference verdict)
DIFFERENCES = [
    ("fence", "types_full", "```py\ndef f(x):\n    return x\n```", {}, False, True),
    ("no fence", "naming_snake", "Sure! myValue = 1 is how I would do it.", {}, False, True),
    ("unparsable", "naming_snake", _py("def broken(:\n    myVar = 1\n"), {}, False, True),
    ("operators in strings", "op_space_around", _py('s = "well-known"\n'), {}, True, False),
    ("comparison read as =", "op_space_minimal", _py("ok = a==b\n"), {}, True, False),
    ("keyword argument", "op_space_around", _py("f(key=1)\n"), {}, True, False),
    ("names: parameters", "naming_snake", _py("def f(*, myKey):\n    return myKey\n"), {}, False, True),
    ("names: consonant", "naming_consonant_start", _py("def f(item):\n    return item\n"), {}, False, True),
    ("names: underscore", "var_min3", _py("_a = 1\n"), {}, False, True),
    ("names: ALL_CAPS constants", "naming_snake", _py("MAX_SIZE = 10\n"), {}, False, True),
    ("operator scan: < and >", "op_space_none", _py("def f(a, b):\n    return a < b\n"), {}, False, True),
    ("return scope", "return_direct", _py("def f(x):\n    if x:\n        y = 1\n        return y\n    return 0\n"),
     {}, False, True),
    ("return None", "return_variable", _py("def f(x):\n    return None\n"), {}, True, False),
    ("falling off the end", "return_explicit_none", _py("def f(x):\n    print(x)\n"), {}, False, True),
    ("indent: every line", "indent_4", _py("x = (1,\n      2)\n"), {}, True, False),
    ("indent: mixed 2/4 blocks", "indent_2", _py("def f(a):\n  if a:\n      return 1\n  return 2\n"), {}, False, True),
    ("indent: strings", "indent_2", _py('def f():\n  s = """\n   x"""\n  return s\n'), {}, True, False),
    ("triple quotes", "quotes_single", _py('x = """text"""\n'), {}, False, True),
    ("triple single quotes", "quotes_docstring_triple_double", _py("x = '''text'''\n"), {}, True, False),
    ("docstring regex: header", "doc_required", _py("def f(x=()):\n    return x\n"), {}, False, True),
    ("docstring regex: quotes", "doc_required", _py('def f():\n    "Doc."\n    return 1\n'), {}, True, False),
    ("docstring regex: module", "doc_none", _py('"""Module."""\nx = 1\n'), {}, False, True),
    ("docstring regex: any string", "doc_online", _py('x = """a\nb"""\n'), {}, True, False),
    ("license substring", "license_none", _py("license_count = 1\n"), {}, True, False),
    ("license case", "license_mit", _py("# mit license\nx = 1\n"), {}, True, False),
    ("license word", "license_apache", _py("# apache kafka client\nx = 1\n"), {}, False, True),
    ("singleton regex", "singleton_is", _py("x = 1  # never write x == None\n"), {}, True, False),
    ("singleton regex: 'is' in a word", "singleton_yoda", _py("# this None\nok = None is x\n"), {}, True, False),
    ("type hints: no parameters", "types_full", _py("def f() -> int:\n    return 1\n"), {}, True, False),
    ("type hints: variables", "types_none", _py("x: int = 1\n"), {}, False, True),
    ("blank lines in strings", "blank_internal_none", _py('def f():\n    s = """a\n\nb"""\n    return s\n'),
     {}, True, False),
    ("unit tests: setup line", "unit_tests", _py("def area(r):\n    return 3.141592653589793 * r * r\n"),
     {"tests": ["assert area(1) == math.pi"], "setup": "import math"}, True, False),
    ("unit tests: fresh run per assert", "unit_tests",
     _py("calls = []\n\ndef f():\n    calls.append(1)\n    return len(calls)\n"),
     {"tests": ["assert f() == 1", "assert f() == 1"]}, False, True),
    ("IF: top-level helper", "if_code", "a short reply",
     {"code": "def _n(t):\n    return len(t.split())\n\ndef check_following(response):\n    return _n(response) < 9\n"},
     True, None),
    ("IF: evaluator globals", "if_code", "Hi Marco",
     {"code": "def check_following(response):\n    return re.search('Marco', response) is not None\n"}, False, True),
    ("IF: empty reply", "if_code", "", {"code": "def check_following(response):\n    return not response\n"},
     True, None),
    ("IF: non-bool return", "if_code", "three words here",
     {"code": "def check_following(response):\n    return len(response.split())\n"}, False, True),
]


@pytest.mark.parametrize(("kind", "style", "reply", "params", "paper", "reference"), DIFFERENCES,
                         ids=[row[0] for row in DIFFERENCES])
def test_paper_and_reference_verdicts(kind, style, reply, params, paper, reference):
    registry = default_registry()
    got = verify_one(registry, f"manyih.{style}", params | {"compat": "paper"}, reply)
    assert got.passed is paper and got.applicable, got.evidence
    got = verify_one(registry, f"manyih.{style}", params | {"compat": "reference"}, reply)
    if reference is None:  # the authors exclude the constraint
        assert got.applicable is False, got.evidence
    else:
        assert got.passed is reference and got.applicable, got.evidence


def test_no_code_fails_every_style_in_both_modes():
    registry = default_registry()
    for reply in ("", "```python\n```"):
        for compat in ("paper", "reference"):
            assert not verify_one(registry, "manyih.line_unlimited", {"compat": compat}, reply).passed
