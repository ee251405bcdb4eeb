"""ManyIH coding subset: the 41 style checkers, both compat modes, code extraction."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._verify import verify_one
from pytest_ifbench.benchmarks.manyih.checks import CHECKERS, check_style
from pytest_ifbench.benchmarks.manyih.ppi import extract
from pytest_ifbench.benchmarks.manyih.reference_styles import REFERENCE_CHECKERS, reference_code
from pytest_ifbench.benchmarks.manyih.styles import GROUPS, STYLES, conflicts

T = "\t"
LONG = "x = '" + "a" * 100 + "'\n"  # 106 characters

# style id -> (code that follows the instruction, code that does not)
CASES: dict[str, tuple[str, str]] = {
    "indent_2": ("def f(x):\n  if x:\n    return 1\n  return 2\n", "def f(x):\n    return x\n"),
    "indent_4": ("def f(x):\n    if x:\n        return 1\n    return 2\n", "def f(x):\n  return x\n"),
    "indent_tab": (f"def f(x):\n{T}if x:\n{T}{T}return 1\n{T}return 2\n", "def f(x):\n    return x\n"),
    "indent_spaces": ("def f(x):\n  return x\n", f"def f(x):\n{T}return x\n"),
    "quotes_single": ("x = 'a'\ny = ''\n", "x = 'a'\ny = \"b\"\n"),
    "quotes_double": ('x = "a"\n', "x = 'a'\n"),
    "quotes_docstring_triple_double": ('def f():\n    """Doc."""\n    return 1\n',
                                       "def f():\n    '''Doc.'''\n    return 1\n"),
    "naming_snake": ("def f(my_arg):\n    total_sum = my_arg\n    return total_sum\n",
                     "def f(myArg):\n    return myArg\n"),
    "naming_camel": ("def f(myArg):\n    totalSum = myArg\n    return totalSum\n",
                     "def f(my_arg):\n    return my_arg\n"),
    "naming_consonant_start": ("def f(num):\n    total = num\n    return total\n",
                               "def f(item):\n    return item\n"),
    "op_space_around": ("x = a + b\nx += 1\nok = a <= b\n", "x = a+b\n"),
    "op_space_none": ("x=a+b\nx+=1\nok=a<=b\n", "x = a + b\n"),
    "op_space_minimal": ("x = a+b\nx += 1\nok = a<=b\n", "x = a + b\n"),
    "op_space_arithmetic": ("x=a + b\nok = a <= b\n", "x = a+b\n"),
    "types_full": ("def f(x: int, *rest: int) -> int:\n    return x\n", "def f(x: int):\n    return x\n"),
    "types_none": ("def f(x):\n    return x\n", "def f(x) -> int:\n    return x\n"),
    "types_args_only": ("def f(x: int):\n    return x\n", "def f(x: int) -> int:\n    return x\n"),
    "types_args_required": ("def f(x: int) -> int:\n    return x\n", "def f(x, y: int):\n    return x\n"),
    "var_min3": ("def f(num):\n    total = num\n    return total\n", "def f(n):\n    return n\n"),
    "var_single": ("def f(n):\n    t = n\n    return t\n", "def f(num):\n    return num\n"),
    "var_min5": ("def f(number):\n    total = number\n    return total\n", "def f(num):\n    return num\n"),
    "var_max2": ("def f(n):\n    tt = n\n    return tt\n", "def f(num):\n    return num\n"),
    "license_mit": ("# MIT License\n# Copyright (c) 2025 Ada\nx = 1\n", "x = 1\n"),
    "license_apache": ("# Licensed under the Apache License, Version 2.0\nx = 1\n", "# MIT License\nx = 1\n"),
    "license_none": ("x = 1\n", "# MIT License\nx = 1\n"),
    "doc_required": ('def f():\n    """Doc."""\n    return 1\n', "def f():\n    return 1\n"),
    "doc_none": ("def f():\n    return 1\n", '"""Module."""\ndef f():\n    return 1\n'),
    "doc_online": ('def f():\n    """Doc."""\n    return 1\n',
                   'def f():\n    """Doc.\n\n    More.\n    """\n    return 1\n'),
    "blank_internal_none": ("def f():\n    x = 1\n    return x\n", "def f():\n    x = 1\n\n    return x\n"),
    "blank_internal_one": ("def f():\n    x = 1\n\n    return x\n", "def f():\n    x = 1\n\n\n    return x\n"),
    "blank_internal_required": ("def f():\n    x = 1\n\n    return x\n", "def f():\n    x = 1\n    return x\n"),
    "return_variable": ("def f(x):\n    y = x + 1\n    return y\n", "def f(x):\n    return x + 1\n"),
    "return_direct": ("def f(x):\n    return x + 1\n", "def f(x):\n    y = x + 1\n    return y\n"),
    "return_explicit_none": ("def f(x):\n    print(x)\n    return None\n", "def f(x):\n    print(x)\n"),
    "singleton_is": ("def f(x):\n    return x is None\n", "def f(x):\n    return x == None\n"),
    "singleton_eq": ("def f(x):\n    return x == None\n", "def f(x):\n    return x is None\n"),
    "singleton_variable_first": ("def f(x):\n    return x is None\n", "def f(x):\n    return None is x\n"),
    "singleton_yoda": ("def f(x):\n    return None is x\n", "def f(x):\n    return x is None\n"),
    "line_79": ("x = 1\n", "x = '" + "a" * 80 + "'\n"),
    "line_120": (LONG, "x = '" + "a" * 120 + "'\n"),
    "line_unlimited": (LONG, "def f(:\n"),  # only code that does not parse fails it
}


def test_table_5():
    assert len(STYLES) == 41 and len(GROUPS) == 12
    assert set(CHECKERS) == set(STYLES) == set(CASES)
    ids = ["indent_2", "quotes_single", "naming_snake", "op_space_around", "types_full", "var_min3",
           "license_mit", "doc_required", "blank_internal_none", "return_variable", "singleton_is", "line_79"]
    assert all(i in STYLES for i in ids)
    assert conflicts("indent_2", "indent_4") and conflicts("indent_4", "indent_2")
    assert not conflicts("line_79", "line_120") and not conflicts("var_min3", "var_min5")
    assert not any(conflicts(a, b) for a in STYLES for b in STYLES if STYLES[a].group != STYLES[b].group)


@pytest.mark.parametrize("style", sorted(CASES))
def test_each_checker_passes_and_fails(style):
    good, bad = CASES[style]
    passed, evidence = check_style(style, good)
    assert passed, (style, evidence)
    passed, evidence = check_style(style, bad)
    assert not passed, (style, evidence)
    assert evidence


@pytest.mark.parametrize("style", sorted(CASES))
def test_unparsable_code_fails_in_paper_mode(style):
    passed, evidence = check_style(style, "def broken(:\n    return 1\n")
    assert not passed and "does not parse" in evidence


def test_no_code_fails():
    assert not check_style("line_unlimited", "  \n")[0]


# ---------------------------------------------------------------------------- strings, comments, f-strings


def test_strings_and_comments_are_not_code():
    code = 'x=a+b  # spaced: a + b == None\ns="a + b == None is x"\n'
    for style in ("op_space_none", "singleton_is", "singleton_eq", "singleton_variable_first"):
        assert check_style(style, code)[0], style


def test_multiline_strings_do_not_count_as_indentation_or_blank_lines():
    code = 'def f():\n  text = """\n        indented\n\n    """\n  return text\n'
    assert check_style("indent_2", code)[0]
    assert check_style("blank_internal_none", code)[0]


def test_fstrings_are_checked_by_their_delimiter():
    assert not check_style("quotes_single", 'x = f"{1}"\n')[0]
    assert check_style("quotes_single", "x = f'{d[\"k\"]}'\n")[0], "strings nested in replacement fields are skipped"
    assert check_style("op_space_none", "x=f'{a + b}'\n")[0], "operators inside f-strings are not checked"


def test_license_identifiers_do_not_count():
    assert check_style("license_none", "license_count = 1\nlicensed = True\n")[0]
    assert not check_style("license_none", "# Copyright 2025 Ada Lovelace\nx = 1\n")[0]
    assert check_style("license_mit", '"""MIT License\n\nCopyright (c) 2025 Ada"""\nx = 1\n')[0]
    assert not check_style("license_mit", "# Copyright 2025 Ada\nx = 1\n")[0]
    assert not check_style("license_apache", "# Apache\nx = 1\n")[0]


def test_comparisons_and_keywords_are_not_assignments():
    assert check_style("op_space_minimal", "x = a+b\nok = a==b\nf(key=1)\n")[0]
    assert check_style("op_space_around", "x = a + b\nf(key=1)\ndef g(n=2):\n    return n\n")[0]
    assert check_style("op_space_none", "f = lambda n=1: n*2\n")[0] is False  # statement '='
    assert check_style("op_space_none", "f=lambda n = 1: n*2\n")[0]


def test_unary_and_star_are_not_binary_operators():
    code = "x = -1\ny = [*a]\nz = f(*args, **kw)\nw = a[1:-1]\n@dec\ndef g(*, k):\n    return -k\n"
    assert check_style("op_space_around", code)[0]
    assert check_style("op_space_none", code.replace(" = ", "="))[0]


def test_line_breaks_around_operators_are_neutral():
    code = "total = (first\n         + second)\n"
    assert check_style("op_space_around", code)[0]
    assert check_style("op_space_minimal", "total = (first+\n         second)\n")[0]


def test_names_cover_parameters_and_bindings_but_not_functions():
    code = ("class Box:\n    def put(self, v):\n        for i in v:\n            pass\n        with open(v) as h:\n"
            "            pass\n        try:\n            pass\n        except ValueError as e:\n            pass\n"
            "        _ = [k for k in v]\n        return lambda q: q\n")
    assert check_style("var_single", code)[0], "self is exempt, '_' is exempt, function names are not variables"
    assert not check_style("var_single", code.replace("as e", "as err"))[0]
    assert check_style("naming_snake", "def MyFunc(x):\n    return x\n")[0]


def test_type_hints_rules():
    method = "class A:\n    def m(self, x: int) -> int:\n        return x\n"
    assert check_style("types_full", method)[0], "self needs no annotation"
    assert not check_style("types_none", "x: int = 1\n")[0]
    assert check_style("types_args_only", "x: int = 1\ndef f(a: int):\n    return a\n")[0]
    assert check_style("types_full", "x = 1\n")[0], "no function: nothing to annotate"


def test_blank_lines_count_inside_bodies_only():
    code = "def f(\n    a,\n\n    b):\n    return a\n\n\ndef g():\n    return 1\n"
    assert check_style("blank_internal_none", code)[0]
    nested = "def f():\n    def g():\n        x = 1\n\n        return x\n    return g\n"
    assert not check_style("blank_internal_none", nested)[0]


def test_return_rules():
    assert check_style("return_direct", "def f(xs):\n    for item in xs:\n        return item\n    return xs\n")[0]
    assert not check_style("return_direct", "def f(xs):\n    total = 0\n    total += 1\n    return total\n")[0]
    assert check_style("return_variable", "def f(x):\n    if x:\n        return None\n    return x\n")[0]
    terminates = "def f(x):\n    if x:\n        return 1\n    else:\n        raise ValueError\n"
    assert check_style("return_explicit_none", terminates)[0]
    assert not check_style("return_explicit_none", "def f(x):\n    if x:\n        return\n    return None\n")[0]
    assert check_style("return_explicit_none", "def gen():\n    yield 1\n")[0], "generators are exempt"
    assert check_style("return_explicit_none", "def f():\n    while True:\n        pass\n")[0]


def test_docstrings_of_modules_and_classes():
    assert not check_style("doc_none", 'class A:\n    """Doc."""\n')[0]
    assert check_style("doc_online", "x = 1\n")[0]
    assert check_style("quotes_docstring_triple_double", "def f():\n    return 'a'\n")[0]
    assert check_style("doc_required", 'class A:\n    def m(self):\n        """Doc."""\n')[0]


def test_non_ascii_code():
    code = 'def f():\n    """Grüße — ünïcode."""\n    naïve = "é"\n    return naïve\n'
    assert check_style("doc_online", code)[0]
    assert check_style("quotes_double", code)[0]
    assert check_style("doc_required", code)[0]


# ---------------------------------------------------------------------------- reference mode
# (every paper/reference difference: test_paper_vs_reference.py; the authors' verdicts: test_conformance.py)


def test_reference_checkers_cover_table_5():
    assert set(REFERENCE_CHECKERS) == set(STYLES)


def test_reference_mode_agrees_on_the_plain_examples():
    skip = {"line_unlimited", "naming_consonant_start", "var_min3", "var_min5", "var_max2", "var_single",
            "op_space_minimal", "types_none", "types_args_only", "types_full", "types_args_required",
            "return_direct", "return_explicit_none", "return_variable", "license_mit", "license_apache",
            "doc_none", "indent_tab", "indent_2", "indent_4", "blank_internal_one", "blank_internal_required",
            "op_space_around", "doc_online"}
    for style, (good, bad) in CASES.items():
        if style in skip:  # their examples hit a documented difference
            continue
        assert REFERENCE_CHECKERS[style](good)[0] is True, style
        assert REFERENCE_CHECKERS[style](bad)[0] is False, style


def test_extraction():
    body = "def f():\n    return 1\n"
    for fence in ("python", "py", "python3", ""):
        reply = f"Here you go:\n```{fence}\n{body}```\nDone."
        assert extract(reply) == body, fence
    assert extract(body) == body
    assert extract("```js\nlet x = 1\n```\n```\nx = 2\n```") == "x = 2\n"
    assert reference_code(f"```py\n{body}```") == f"```py\n{body}```".strip(), "the authors skip ```py"
    assert reference_code(f"```python\n{body}```") == body.strip()
    assert reference_code(f"text\n```\n{body}```") == body.strip()
    assert reference_code(f"```python\n{body}") == f"```python\n{body}".strip(), "an unclosed fence is no block"
    assert reference_code(f"```python3\n{body}```") == f"```python3\n{body}```", "python3 is not python"
    assert reference_code(f"<think>```python\nx = 1\n```</think>```python\n{body}```") == body.strip()
    assert extract(f"```python\n{body}") == body


def test_verifiers_registered_with_compat_param():
    registry = default_registry()
    for style in STYLES:
        verifier = registry.get(f"manyih.{style}")
        assert verifier.params["compat"].default == "paper"
    reply = "```py\ndef f():\n  return 1\n```"
    assert verify_one(registry, "manyih.indent_2", {}, reply).passed
    verdict = verify_one(registry, "manyih.license_none", {"compat": "reference"}, "```python\nlicense = 1\n```")
    assert not verdict.passed and verdict.details["compat"] == "reference"
    with pytest.raises(ValueError):
        registry.get("manyih.indent_2").validate({"compat": "authors"})


def test_think_blocks_are_stripped_by_the_core():
    from pytest_ifbench import strip_reasoning

    visible, _ = strip_reasoning("<think>x=1</think>```python\nx = 1\n```")
    assert check_style("op_space_around", extract(visible))[0]


def test_unit_tests_setup_and_the_reference_assert_filter():
    registry = default_registry()
    reply = "```python\ndef area(r):\n    return 3.141592653589793 * r * r\n```"
    params = {"tests": ["assert area(1) == math.pi", "assert area(0) == 0"], "setup": "import math"}
    assert verify_one(registry, "manyih.unit_tests", params, reply).passed
    verdict = verify_one(registry, "manyih.unit_tests", params | {"compat": "reference"}, reply)
    assert not verdict.passed and "math" in verdict.evidence, "the authors drop the import line"
    assert verify_one(registry, "manyih.unit_tests", {"tests": [], "compat": "reference"}, reply).passed
    assert not verify_one(registry, "manyih.unit_tests", {"tests": []}, reply).passed
    broken = verify_one(registry, "manyih.unit_tests", {"tests": ["assert area(1) > 3"]}, "```python\nimport sys\n"
                        "sys.exit(0)\n```")
    assert not broken.passed, "a model's sys.exit cannot end the run: it is a load error in the sandbox"


def test_ifbench_verify_checks_any_style_on_any_code(tmp_path):
    from pytest_ifbench.cli.main import main

    reply = "```python\ndef f(x):\n    return x\n```"
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": s, "verifier": f"manyih.{s}", "response": reply,
                                         "params": {"compat": "reference" if i % 2 else "paper"}}) + "\n"
                             for i, s in enumerate(sorted(STYLES))))
    out = tmp_path / "out.jsonl"
    assert main(["verify", "--in", str(cases), "--out", str(out)]) == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == 41 and all(isinstance(r["passed"], bool) for r in results)
    assert {r["id"]: r["passed"] for r in results}["indent_4"] is True
