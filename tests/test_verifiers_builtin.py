"""Built-in verifiers, ``evaluate``/``verify_one``, and batched ruff runs."""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import Param, ParamError
from pytest_ifbench._registry import (
    Registry,
    RuffSetting,
    UnknownVerifier,
)
from pytest_ifbench._types import CheckSpec, Verdict
from pytest_ifbench._verify import VerifyContext, evaluate, verify_one
from pytest_ifbench.ruff.check import RuffCheck, Violation, check_code, plan_runs

REG = default_registry()
F = "```"


def verify(verifier_id: str, params: Any, response: str) -> Verdict:
    return verify_one(REG, verifier_id, params, response)


def py(code: str) -> str:
    """A reply that wraps ``code`` in a python fence, with prose around it."""
    return f"Here is the code:\n{F}python\n{textwrap.dedent(code).lstrip()}{F}\nIt works."


# --------------------------------------------------------------------------
# plain-text verifiers
# --------------------------------------------------------------------------


def test_word_count():
    ok = verify("ifbench.word_count", {"min": 3, "max": 5}, "Well-known words don't split.")
    assert ok.passed and ok.evidence == "4 words (required 3..5)"
    too_long = verify("ifbench.word_count", {"max": 3}, "one two three four five")
    assert not too_long.passed and too_long.evidence == "5 words (required 0..3)"
    too_short = verify("ifbench.word_count", {"min": 2}, "  alone  ")
    assert not too_short.passed and "1 words" in too_short.evidence
    assert verify("ifbench.word_count", {"min": 0, "max": 0}, "").passed


def test_keywords():
    ok = verify("ifbench.keywords", {"include": ["Cat", "dog"], "exclude": ["bird"]}, "My cat chased the DOG.")
    assert ok.passed and ok.evidence == "all keyword constraints hold"
    bad = verify("ifbench.keywords", {"include": ["cat", "fish", "owl"], "exclude": ["dog", "emu"]},
                 "The cat and the dog and the emu.")
    assert not bad.passed
    assert bad.evidence == "missing: fish, owl; forbidden present: dog, emu"


def test_keywords_case_sensitive():
    params = {"include": ["Paris"], "case_sensitive": True}
    assert verify("ifbench.keywords", params, "I love Paris.").passed
    low = verify("ifbench.keywords", params, "i love paris.")
    assert not low.passed and low.evidence == "missing: Paris"


def test_keywords_exclude_matches_whole_words():
    verdict = verify("ifbench.keywords", {"exclude": ["car", "taxi"]}, "Visit the Oscar museum; bring a scarf.")
    assert verdict.passed, verdict.evidence


def test_starts_with():
    assert verify("ifbench.starts_with", {"prefix": "Dear"}, "\n  Dear neighbour, ...").passed
    bad = verify("ifbench.starts_with", {"prefix": "Dear"}, "Hello neighbour,\nwe lost our cat.")
    assert not bad.passed
    assert bad.evidence == "reply starts: Hello neighbour,\\nwe lost our cat."
    strict = verify("ifbench.starts_with", {"prefix": "Dear", "strip": False}, "  Dear x")
    assert not strict.passed and "reply starts:" in strict.evidence


def test_starts_with_long_reply_evidence_is_bounded():
    bad = verify("ifbench.starts_with", {"prefix": "Dear"}, "x" * 1000)
    assert not bad.passed and len(bad.evidence) < 120


def test_ends_with():
    assert verify("ifbench.ends_with", {"suffix": "Thanks!"}, "Bye. Thanks!\n\n").passed
    bad = verify("ifbench.ends_with", {"suffix": "Thanks!"}, "Bye. See you soon.")
    assert not bad.passed and bad.evidence == "reply ends: Bye. See you soon."
    assert not verify("ifbench.ends_with", {"suffix": "Thanks!", "strip": False}, "Thanks!\n").passed


def test_json_valid():
    assert verify("ifbench.json", {"required_keys": ["title", "year"]}, '{"title": "X", "year": 1999}').passed
    fenced = f'{F}json\n{{"title": "X", "author": "Y", "year": 1}}\n{F}'
    ok = verify("ifbench.json", {"required_keys": ["title", "author", "year"]}, fenced)
    assert ok.passed and ok.evidence == "valid JSON object"
    assert verify("ifbench.json", {}, f'\n{F}\n{{"a": 1}}\n{F}\n').passed


def test_json_invalid():
    bad = verify("ifbench.json", {}, 'Sure! {"title": "X"}')
    assert not bad.passed
    assert bad.evidence.startswith("not JSON: Expecting value: line 1 column 1")
    assert 'reply: Sure! {"title": "X"}' in bad.evidence


def test_json_missing_keys():
    bad = verify("ifbench.json", {"required_keys": ["title", "author", "year"]}, '{"title": "X"}')
    assert not bad.passed and bad.evidence == "missing keys: author, year"


def test_json_array_with_required_keys():
    bad = verify("ifbench.json", {"required_keys": ["a"]}, "[1, 2]")
    assert not bad.passed and bad.evidence == "JSON is a list, not an object"


@pytest.mark.parametrize("reply", ["[1, 2]", "42", '"text"', "null"])
def test_json_must_be_an_object(reply):
    assert not verify("ifbench.json", {}, reply).passed


def test_case():
    assert verify("ifbench.case", {"mode": "upper"}, "HELLO, WORLD 123!").passed
    assert verify("ifbench.case", {"mode": "lower"}, "hello, world 123!").passed
    bad = verify("ifbench.case", {"mode": "upper"}, "HELLO World")
    assert not bad.passed and bad.evidence == "4 letters in the wrong case, e.g. 'orld'"
    bad = verify("ifbench.case", {"mode": "lower"}, "Hello World")
    assert not bad.passed and bad.evidence == "2 letters in the wrong case, e.g. 'HW'"


def test_regex():
    ok = verify("ifbench.regex", {"pattern": r"^\s*-\s*\S", "flags": "m", "min_count": 3, "max_count": 3},
                "- apple\n- pear\n- plum")
    assert ok.passed
    assert ok.evidence.startswith("3 match(es) of /^\\s*-\\s*\\S/ (required 3..3): ")
    bad = verify("ifbench.regex", {"pattern": ",", "min_count": 0, "max_count": 0}, "a, b, c")
    assert not bad.passed and bad.evidence == "2 match(es) of /,/ (required 0..0): ','; ','"
    none = verify("ifbench.regex", {"pattern": "zebra"}, "no stripes here")
    assert not none.passed and none.evidence == "0 match(es) of /zebra/ (required 1..1000000000)"


def test_regex_flags_and_code_target():
    assert verify("ifbench.regex", {"pattern": "HELLO", "flags": "i"}, "hello").passed
    assert not verify("ifbench.regex", {"pattern": "HELLO"}, "hello").passed
    reply = "I used print in prose.\n" + py("x = 1\n")
    assert not verify("ifbench.regex", {"pattern": "print", "target": "code"}, reply).passed
    assert verify("ifbench.regex", {"pattern": "print"}, reply).passed


def test_ruff_verifier():
    ok = verify("ifbench.ruff", {"select": ["F401"]}, py("import os\n\nprint(os.sep)\n"))
    assert ok.passed and ok.evidence == "no violations"
    bad = verify("ifbench.ruff", {"select": ["F401"]}, py("import os\nimport sys\n"))
    assert not bad.passed
    assert bad.evidence.startswith("line 1: F401 `os` imported but unused\n    import os\nline 2: F401 ")
    assert bad.details == {"violations": ["F401", "F401"]}


def test_ruff_verifier_settings_and_many_violations():
    long_code = "\n".join(f"x{i} = '{'a' * 90}'" for i in range(8)) + "\n"
    bad = verify("ifbench.ruff", {"select": ["E501"], "settings": {"line-length": 79}}, py(long_code))
    assert not bad.passed
    assert "line 1: E501 Line too long (97 > 79)" in bad.evidence
    assert bad.evidence.endswith("(and 3 more)")
    assert verify("ifbench.ruff", {"select": ["E501"], "settings": {"line-length": 100}}, py(long_code)).passed


def test_unit_tests():
    reply = py("def add(a, b):\n    return a + b\n")
    ok = verify("ifbench.unit_tests", {"tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]}, reply)
    assert ok.passed and ok.evidence == "2/2 tests passed"
    assert ok.details == {"failed_tests": [], "tests": 2, "limit": None}
    bad = verify("ifbench.unit_tests", {"tests": ["assert add(2, 3) == 5", "assert add(1, 1) == 3"]}, reply)
    assert not bad.passed
    assert bad.evidence == "1/2 tests passed; test_1: AssertionError: assert add(1, 1) == 3"
    assert bad.details == {"failed_tests": ["test_1"], "tests": 2, "limit": None}


def test_unit_tests_setup_and_load_error():
    setup_ok = verify("ifbench.unit_tests", {"tests": ["assert area(2) == 4"], "setup": "import math"},
                      py("def area(r):\n    return round(math.pi * 0) + r * r\n"))
    assert setup_ok.passed
    broken = verify("ifbench.unit_tests", {"tests": ["assert f() == 1"]}, py("def f(:\n    return 1\n"))
    assert not broken.passed and broken.evidence.startswith("load error: ")
    assert "SyntaxError" in broken.evidence


def test_stdio_tests():
    reply = py("print(input().upper())\n")
    ok = verify("ifbench.stdio_tests", {"cases": [{"input": "hi\n", "output": "HI"},
                                                  {"input": "Mixed Case\n", "output": "MIXED CASE\n"}]}, reply)
    assert ok.passed and ok.evidence == "2/2 tests passed"
    bad = verify("ifbench.stdio_tests", {"cases": [{"input": "a\n", "output": "A"},
                                                   {"input": "b\n", "output": "C"}]}, reply)
    assert not bad.passed
    assert bad.evidence.startswith("1/2 tests passed; case_1: wrong output")
    assert "expected 'C', got 'B'" in bad.evidence
    assert bad.details == {"failed_tests": ["case_1"], "tests": 2, "limit": None}


def test_stdio_runtime_error_evidence():
    bad = verify("ifbench.stdio_tests", {"cases": [{"input": "", "output": "x"}]}, py("raise SystemExit(3)\n"))
    assert not bad.passed and "runtime error (exit code 3)" in bad.evidence


def test_code_verifiers_use_sandbox_limits_from_context():
    check = CheckSpec(id="t", verifier="ifbench.unit_tests",
                      params=REG.get("ifbench.unit_tests").validate({"tests": ["assert True"]}))
    ctx = VerifyContext(registry=REG, sandbox={"timeout": 1.0, "cpu_seconds": 1})
    (outcome,) = evaluate([check], py("while True:\n    pass\n"), ctx)
    assert outcome.error is None and not outcome.passed
    assert "limit" in outcome.verdict.evidence or "timeout" in outcome.verdict.evidence


def test_judge_verifier_reads_judged_verdict():
    verdict = Verdict(passed=True, evidence="[judge] pass: polite")
    assert verify_one(REG, "ifbench.judge", {"criterion": "polite"}, "thanks!", judged=verdict) is verdict
    with pytest.raises(RuntimeError, match="no judge verdict was produced"):
        verify("ifbench.judge", {"criterion": "polite"}, "thanks!")


# --------------------------------------------------------------------------
# verify_one / evaluate
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verifier_id", "params", "field", "message"),
    [
        ("ifbench.word_count", {"mni": 1}, "mni", "unknown parameter (known: max, min)"),
        ("ifbench.word_count", {"min": "3"}, "min", "expected int, got '3'"),
        ("ifbench.word_count", {"min": -1}, "min", "must be >= 0, got -1"),
        ("ifbench.starts_with", {}, "prefix", "required parameter is missing"),
        ("ifbench.case", {"mode": "title"}, "mode", "expected one of upper, lower, got 'title'"),
        ("ifbench.keywords", {"include": "cat"}, "include", "expected list, got 'cat'"),
        ("ifbench.keywords", {"include": ["cat", 1]}, "include[1]", "expected str, got 1"),
        ("ifbench.keywords", {"case_sensitive": 1}, "case_sensitive", "expected bool, got 1"),
        ("ifbench.ruff", {"select": "E501"}, "select", "expected list, got 'E501'"),
        ("ifbench.stdio_tests", {"cases": ["in"]}, "cases[0]", "expected mapping, got 'in'"),
        ("ifbench.regex", {"pattern": "a", "target": "prompt"}, "target",
         "expected one of response, code, got 'prompt'"),
        ("ifbench.word_count", ["min", 1], "params", "expected mapping, got list"),
    ],
)
def test_verify_one_param_errors(verifier_id, params, field, message):
    with pytest.raises(ParamError) as info:
        verify(verifier_id, params, "text")
    assert (info.value.field, info.value.message) == (field, message)
    assert str(info.value) == f"{field}: {message}"


def test_verify_one_unknown_verifier():
    with pytest.raises(UnknownVerifier, match="unknown verifier 'ifbench.wordcount'"):
        verify("ifbench.wordcount", {}, "text")


def test_verify_one_fills_defaults():
    assert verify("ifbench.word_count", None, "any text at all").passed


@pytest.fixture
def boom_registry() -> Registry:
    reg = default_registry()

    @reg.verifier("tmp.boom", params={"n": Param(int, default=0)})
    def boom(text, params, ctx):
        return Verdict(passed=1 / params["n"] > 0)

    return reg


def test_raising_verifier_errors_its_own_check_only(boom_registry):
    reg = boom_registry
    checks = [
        CheckSpec(id="first", verifier="ifbench.case", params={"mode": "lower"}),
        CheckSpec(id="boom", verifier="tmp.boom", params={"n": 0}),
        CheckSpec(id="lint", verifier="ifbench.ruff", params=REG.get("ifbench.ruff").validate({"select": ["F401"]})),
        CheckSpec(id="last", verifier="ifbench.word_count", params={"min": 0, "max": 1}),
    ]
    outcomes = evaluate(checks, "import os", VerifyContext(registry=reg))
    assert [o.check.id for o in outcomes] == ["first", "boom", "lint", "last"]
    first, boom, lint, last = outcomes
    assert first.passed and first.error is None
    assert boom.verdict is None and not boom.passed
    assert boom.error.startswith("verifier tmp.boom raised ZeroDivisionError: division by zero")
    assert boom.to_json()["error"] == boom.error and "verdict" not in boom.to_json()
    assert not lint.passed and lint.error is None and lint.verdict.details == {"violations": ["F401"]}
    assert not last.passed and last.verdict.evidence == "2 words (required 0..1)"
    with pytest.raises(RuntimeError, match="raised ZeroDivisionError"):
        verify_one(reg, "tmp.boom", {"n": 0}, "x")


def test_bad_regex_is_rejected_at_validation():
    with pytest.raises(ParamError, match="flags: unknown regex flag 'q'"):
        REG.get("ifbench.regex").validate({"pattern": "a", "flags": "q"})
    with pytest.raises(ParamError, match="pattern: invalid regular expression"):
        REG.get("ifbench.regex").validate({"pattern": "(unclosed"})


def test_bad_regex_flag_errors_its_own_check_only():
    # Params that bypassed validation (e.g. built in code) still fail only their own check.
    raw = {"pattern": "a", "flags": "q", "min_count": 1, "max_count": 10, "target": "response"}
    checks = [CheckSpec(id="re", verifier="ifbench.regex", params=raw),
              CheckSpec(id="ok", verifier="ifbench.case", params={"mode": "lower"})]
    bad, ok = evaluate(checks, "abc", VerifyContext(registry=REG))
    assert "unknown regex flag 'q'" in bad.error and ok.passed


def _ruff_spec(check_id: str, select: list[str], settings: dict[str, Any] | None = None) -> CheckSpec:
    params = REG.get("ifbench.ruff").validate({"select": select, "settings": settings or {}})
    return CheckSpec(id=check_id, verifier="ifbench.ruff", params=params)


def test_bad_ruff_params_are_rejected_at_validation():
    with pytest.raises(ParamError, match="settings: ruff rejects it: invalid type"):
        _ruff_spec("bad-setting", ["E501"], {"line-length": "wide"})
    with pytest.raises(ParamError, match="select: ruff rejects it: .*XYZ999"):
        _ruff_spec("bad-rule", ["XYZ999"])


def test_broken_ruff_check_errors_its_own_check_only():
    # Params that bypassed validation still fail only their own check.
    checks = [_ruff_spec("good", ["F401"]),
              CheckSpec(id="bad-setting", verifier="ifbench.ruff",
                        params={"select": ["E501"], "settings": {"line-length": "wide"}}),
              CheckSpec(id="bad-rule", verifier="ifbench.ruff", params={"select": ["XYZ999"], "settings": {}})]
    good, bad_setting, bad_rule = evaluate(checks, "import os\n", VerifyContext(registry=REG))
    assert bad_setting.error and bad_rule.error
    assert good.error is None and good.verdict is not None and not good.passed


def test_judge_check_without_verdict_is_an_error():
    check = CheckSpec(id="j", verifier="ifbench.judge", params={"criterion": "x"})
    (outcome,) = evaluate([check], "reply", VerifyContext(registry=REG))
    assert outcome.verdict is None and outcome.error == "no judge verdict was produced for this check"


# --------------------------------------------------------------------------
# ruff: batching must not change any check's violations
# --------------------------------------------------------------------------


def ruff_check(key: str, select: list[str], settings: dict[str, Any] | None = None) -> RuffCheck:
    """A RuffCheck built exactly as evaluate() builds it for an ``ifbench.ruff`` check."""
    verifier = REG.get("ifbench.ruff")
    params = verifier.validate({"select": select, "settings": settings or {}})
    return RuffCheck(key=key, select=verifier.ruff.select(params), settings=verifier.ruff.settings(params))


def _branchy(n: int) -> str:
    lines = ['def classify(x):', '    """Classify x."""']
    for i in range(n):
        lines.append(f"    {'if' if i == 0 else 'elif'} x == {i}:")
        lines.append(f"        return {i}")
    lines.append("    return -1")
    return "\n".join(lines) + "\n"


def _long_lines(lengths: list[int]) -> str:
    return "".join(f"v{i} = '{'x' * (n - 8 - len(str(i)))}'\n" for i, n in enumerate(lengths))


GOOGLE_DOC = '''
"""Module docstring."""


def scale(values, factor):
    """Scale the values.

    Args:
        values: The numbers.
        factor: The multiplier.

    Returns:
        The scaled numbers.
    """
    return [v * factor for v in values]
'''

NUMPY_DOC = '''
"""Module docstring."""


def scale(values, factor):
    """
    Scale the values.

    Parameters
    ----------
    values : list
        The numbers.
    factor : float
        The multiplier.

    Returns
    -------
    list
        The scaled numbers.
    """
    return [v * factor for v in values]
'''

SLOPPY_DOC = '''
def scale(values, factor):
    """ scale the values
    Args:
      values: the numbers
    """
    return [v * factor for v in values]


class Thing:
    """A thing"""
    def method(self):
        """Do it"""
        return 1
'''

PATHY = '''
import os
import os.path


def read(name):
    """Read a file next to this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    full = os.path.join(here, name)
    if os.path.exists(full) and os.path.isfile(full):
        with open(full) as handle:
            return handle.read()
    os.makedirs(here, exist_ok=True)
    return os.getcwd()
'''

ALIASES = '''
import socket
import select


def fetch(sock):
    """Fetch."""
    try:
        return sock.recv(10)
    except (IOError, OSError):
        raise EnvironmentError("io")
    except socket.error:
        return None
    except select.error:
        return b""
'''

SNIPPETS: list[str] = [
    "x = 1\n",
    "",
    "import os\n",
    "import os\nimport sys\nfrom typing import List, Dict\n\nprint(sys.argv)\n",
    "from collections import *\n",
    "import os  # noqa\nimport re  # noqa: F401\n",
    "# ruff: noqa\nimport json\n",
    "def f(:\n    return 1\n",
    "x = (\n",
    "print('unterminated)\n",
    GOOGLE_DOC,
    NUMPY_DOC,
    SLOPPY_DOC,
    PATHY,
    ALIASES,
    GOOGLE_DOC + PATHY + ALIASES,
    "import os\n" + _long_lines([120]) + NUMPY_DOC + _branchy(9),
    '"""Doc."""\n\n' + _branchy(14) + "\n\nimport json\n",
    *[_branchy(n) for n in (1, 3, 4, 5, 7, 13)],
    *[_long_lines(ls) for ls in ([70], [79], [80], [85], [88], [89], [99, 100, 101], [121, 60, 150])],
    _long_lines([95]) + "import os.path\n\n\nprint(os.path.join('a', 'b'))\n",
    'def f():\n    """' + "word " * 30 + '"""\n',
    'def f():\n    """Summary line that is much too long for a narrow doc length setting in this test."""\n',
    "class A:\n    def m(self):\n        pass\n\n    def _private(self):\n        pass\n",
    "try:\n    pass\nexcept IOError as e:\n    print(e)\n",
    "import os\n\n\ndef f(p):\n    return os.path.splitext(os.path.basename(p))[0]\n",
    "def g(x):\n    if x:\n        if x > 1:\n            if x > 2:\n                return 3\n    return 0\n",
    "def h():\n\treturn 1\n",
    "l = 1\nO = 2\nI = 3\n",
    "x = 1;y = 2\nif x == None:\n    pass\n",
    "def f(a, b):\n    return a+b\nlambda_ = lambda: 0\nf = lambda: 1\n",
    "import sys\n\n\ndef main():\n    print(sys.argv)  " + "# " + "c" * 100 + "\n",
    "from os import path as p\nimport os.path as osp\n\n\nprint(p.join('a'), osp.exists('b'))\n",
    '"""Module."""\n\n\ndef documented():\n    """Returns nothing."""\n\n\ndef undocumented():\n    pass\n',
    "'''Single quotes docstring'''\nimport os\n",
    "async def f():\n    try:\n        pass\n    except (OSError, IOError, EnvironmentError):\n        pass\n",
]


def _keys(violations: list[Violation]) -> list[tuple[Any, ...]]:
    return [(v.code, v.row, v.column, v.message) for v in violations]


def _mismatches(checks: list[RuffCheck]) -> list[str]:
    def one(code: str) -> list[str]:
        batched = check_code(code, checks)
        out = []
        for check in checks:
            alone = check_code(code, [check])[check.key]
            if _keys(batched[check.key]) != _keys(alone):
                out.append(f"snippet {SNIPPETS.index(code)} check {check.key}: "
                           f"batched {_keys(batched[check.key])} != alone {_keys(alone)}")
        return out

    with ThreadPoolExecutor(max_workers=4) as pool:
        return [m for found in pool.map(one, SNIPPETS) for m in found]


#: Checks a suite would realistically combine; none overlaps another's rules by accident.
INDEPENDENT_CHECKS = [
    ruff_check("ll79", ["E501"], {"line-length": 79}),
    ruff_check("ll100", ["E501"], {"line-length": 100}),
    ruff_check("e501", ["E501"]),
    ruff_check("f401", ["F401"]),
    ruff_check("pyflakes", ["F"]),
    ruff_check("branches3", ["PLR0912"], {"lint.pylint.max-branches": 3}),
    ruff_check("branches6", ["PLR0912"], {"lint.pylint.max-branches": 6}),
    ruff_check("plr0912", ["PLR0912"]),
    ruff_check("google", ["D"], {"lint.pydocstyle.convention": "google"}),
    ruff_check("numpy", ["D"], {"lint.pydocstyle.convention": "numpy"}),
    ruff_check("pep257", ["D"], {"lint.pydocstyle.convention": "pep257"}),
    ruff_check("missing-docs", ["D100", "D101", "D102", "D103"]),
    ruff_check("pathlib", ["PTH"]),
    ruff_check("up024", ["UP024"]),
    ruff_check("doc-length", ["W505"], {"lint.pycodestyle.max-doc-length": 60}),
    ruff_check("pycodestyle", ["E", "W"]),
    ruff_check("naming", ["N"]),
    ruff_check("complexity", ["C901"], {"lint.mccabe.max-complexity": 2}),
]

#: Realistic combinations that share one ruff process under the current plan but
#: influence each other: a convention or line length leaking into rules another check
#: selects, a setting repeated with different selections, and rule families whose
#: codes start with another family's prefix (PT/PTH, E/ERA).
OVERLAPPING_CHECKS = INDEPENDENT_CHECKS + [
    ruff_check("docs-google", ["D100", "D103"], {"lint.pydocstyle.convention": "google"}),
    ruff_check("doc-punctuation", ["D4"]),
    ruff_check("wide-isort", ["E501", "I001"], {"line-length": 120}),
    ruff_check("isort", ["I001"]),
    ruff_check("pytest-style", ["PT"]),
    ruff_check("eradicate", ["ERA"]),
]


def test_snippet_corpus_is_large_and_varied():
    assert len(SNIPPETS) >= 40
    found: set[str] = set()
    all_checks = [ruff_check("all", ["E501", "F401", "PLR0912", "D", "PTH", "UP024"],
                             {"line-length": 79, "lint.pylint.max-branches": 3})]
    for code in SNIPPETS:
        found.update(v.code or "syntax" for v in check_code(code, all_checks)["all"])
    assert {"E501", "F401", "PLR0912", "D103", "PTH118", "UP024"} <= found


def test_batched_ruff_equals_each_check_alone():
    assert len(plan_runs(INDEPENDENT_CHECKS)) < len(INDEPENDENT_CHECKS)
    mismatches = _mismatches(INDEPENDENT_CHECKS)
    assert not mismatches, "\n".join(mismatches[:20])


def test_batched_ruff_equals_each_check_alone_with_overlapping_checks():
    mismatches = _mismatches(OVERLAPPING_CHECKS)
    assert not mismatches, "\n".join(mismatches[:20])


DOCS = '''
def f(x):
    """Return x doubled"""
    return x * 2
'''


def test_convention_does_not_leak_into_another_docstring_check():
    checks = [ruff_check("missing", ["D100", "D103"], {"lint.pydocstyle.convention": "google"}),
              ruff_check("punctuation", ["D4"])]
    alone = [v.code for v in check_code(DOCS, checks[1:])["punctuation"]]
    assert "D400" in alone
    assert [v.code for v in check_code(DOCS, checks)["punctuation"]] == alone


def test_line_length_does_not_leak_into_isort():
    code = ("from os.path import abspath, basename, dirname, exists, getsize, isdir, isfile, join, "
            "normpath\n\nprint(abspath, basename, dirname, exists, getsize, isdir, isfile, join, normpath)\n")
    checks = [ruff_check("wide", ["E501"], {"line-length": 120}), ruff_check("isort", ["I001"])]
    assert [v.code for v in check_code(code, checks[1:])["isort"]] == ["I001"]
    assert [v.code for v in check_code(code, checks)["isort"]] == ["I001"]


def _raw_check(key: str, select: tuple[str, ...], **settings: Any) -> RuffCheck:
    return RuffCheck(key=key, select=select, settings=tuple(
        RuffSetting(key=k.replace("_", "-"), value=v, scope=select) for k, v in settings.items()))


def test_same_setting_with_different_scopes_is_not_forgotten():
    code = "x = '" + "a" * 80 + "'\n"  # 87 characters: too long at 79, fine at the default 88
    checks = [_raw_check("narrow", ("E501",), line_length=79),
              _raw_check("unused", ("F401",), line_length=79),
              _raw_check("default", ("E501",))]
    assert check_code(code, checks[2:])["default"] == []
    assert len(plan_runs(checks)) == 2
    assert check_code(code, checks)["default"] == []


def test_prefix_of_another_linter_is_not_attributed():
    code = "import os.path\n\n\ndef f(p):\n    return os.path.join(p, 'x')  # old = 1\n# old_code = 2\n"
    checks = [ruff_check("pytest", ["PT"]), ruff_check("pathlib", ["PTH"]),
              ruff_check("pycodestyle", ["E"]), ruff_check("eradicate", ["ERA"])]
    batched = check_code(code, checks)
    assert [v.code for v in batched["pathlib"]] == ["PTH118"]
    assert [v.code for v in batched["eradicate"]] == ["ERA001"]
    assert batched["pytest"] == [] and batched["pycodestyle"] == []


def test_select_all_reports_violations():
    assert [v.code for v in check_code("import os\n", [ruff_check("all", ["ALL"])])["all"]]


# plan_runs -----------------------------------------------------------------


def _groups(checks: list[RuffCheck]) -> list[list[str]]:
    return [[c.key for c in group] for group in plan_runs(checks)]


def test_plan_runs_groups_compatible_checks():
    checks = [ruff_check("f401", ["F401"]), ruff_check("pth", ["PTH"]), ruff_check("up024", ["UP024"]),
              ruff_check("ll79", ["E501"], {"line-length": 79}),
              ruff_check("branches", ["PLR0912"], {"lint.pylint.max-branches": 3}),
              ruff_check("google", ["D"], {"lint.pydocstyle.convention": "google"})]
    assert _groups(checks) == [["f401", "pth", "up024", "ll79", "branches", "google"]]


def test_plan_runs_same_setting_same_value_shares_a_run():
    checks = [ruff_check("a", ["E501"], {"line-length": 79}), ruff_check("b", ["E501", "W505"], {"line-length": 79})]
    assert _groups(checks) == [["a", "b"]]


@pytest.mark.parametrize(
    ("checks", "expected"),
    [
        ([ruff_check("ll79", ["E501"], {"line-length": 79}), ruff_check("ll100", ["E501"], {"line-length": 100})],
         [["ll79"], ["ll100"]]),
        ([ruff_check("ll79", ["E501"], {"line-length": 79}), ruff_check("plain", ["E501"])],
         [["ll79"], ["plain"]]),
        ([ruff_check("plain", ["E"]), ruff_check("ll79", ["E501"], {"line-length": 79})],
         [["plain"], ["ll79"]]),
        ([ruff_check("google", ["D"], {"lint.pydocstyle.convention": "google"}),
          ruff_check("numpy", ["D"], {"lint.pydocstyle.convention": "numpy"}),
          ruff_check("pep257", ["D"], {"lint.pydocstyle.convention": "pep257"})],
         [["google"], ["numpy"], ["pep257"]]),
        ([ruff_check("google", ["D"], {"lint.pydocstyle.convention": "google"}), ruff_check("d103", ["D103"])],
         [["google"], ["d103"]]),
        ([ruff_check("b3", ["PLR0912"], {"lint.pylint.max-branches": 3}), ruff_check("pl", ["PL"])],
         [["b3"], ["pl"]]),
    ],
    ids=["line-length-values", "setting-vs-default", "default-vs-setting", "conventions", "convention-vs-plain",
         "max-branches-vs-pl"],
)
def test_plan_runs_separates_conflicting_settings(checks, expected):
    assert _groups(checks) == expected


def test_plan_runs_is_greedy_and_keeps_every_check_once():
    checks = [ruff_check("ll79", ["E501"], {"line-length": 79}), ruff_check("ll100", ["E501"], {"line-length": 100}),
              ruff_check("f401", ["F401"]), ruff_check("plain", ["E501"]), ruff_check("pth", ["PTH"])]
    assert _groups(checks) == [["ll79", "f401", "pth"], ["ll100"], ["plain"]]
    assert plan_runs([]) == []


# syntax errors and noqa --------------------------------------------------------


BROKEN = ["def f(:\n    return 1\n", "x = (\n", "print('unterminated)\n", "class A\n    pass\n"]


@pytest.mark.parametrize("code", BROKEN)
def test_syntax_error_fails_every_ruff_check(code):
    checks = [ruff_check("f401", ["F401"]), ruff_check("ll79", ["E501"], {"line-length": 79}),
              ruff_check("pth", ["PTH"]), ruff_check("google", ["D"], {"lint.pydocstyle.convention": "google"})]
    found = check_code(code, checks)
    for check in checks:
        assert found[check.key], check.key
        assert all(v.code is None for v in found[check.key])
        assert found[check.key][0].render().startswith("line ")


def test_ruff_verifier_fails_on_syntax_error():
    verdict = verify("ifbench.ruff", {"select": ["F401"]}, py("def f(:\n    return 1\n"))
    assert not verdict.passed
    assert "syntax-error" in verdict.details["violations"]


@pytest.mark.parametrize("code", [
    "import os  # noqa\n",
    "import os  # noqa: F401\n",
    "import os  # NOQA:F401 -- unused on purpose\n",
    "# ruff: noqa\nimport os\n",
    "# ruff: noqa: F401\nimport os\n",
    "# flake8: noqa\nimport os\n",
])
def test_noqa_does_not_hide_violations(code):
    assert [v.code for v in check_code(code, [ruff_check("f401", ["F401"])])["f401"]] == ["F401"]


def test_noqa_does_not_hide_long_lines():
    code = "x = '" + "a" * 100 + "'  # noqa: E501\n"
    assert not verify("ifbench.ruff", {"select": ["E501"], "settings": {"line-length": 79}}, py(code)).passed


def test_violation_render_truncates_long_lines():
    v = Violation(code="E501", message="Line too long", row=3, column=80, line="y" * 200)
    text = v.render()
    assert text.startswith("line 3: E501 Line too long\n    ")
    assert text.endswith("...") and len(text.splitlines()[1]) == 4 + 120
