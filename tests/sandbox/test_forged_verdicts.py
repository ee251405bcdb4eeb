"""Verdicts the candidate cannot forge by patching the interpreter, and truthiness as Python has it."""

from __future__ import annotations

import pytest

from pytest_ifbench.sandbox import run_assert_tests
from tests.sandbox._support import FAST

PATCHERS = {
    "sorted": "import builtins\nbuiltins.sorted = lambda *a, **k: [1, 2, 3]\n",
    "len": "import builtins\nbuiltins.len = lambda *a: 5\n",
    "len-in-call": "def _patch():\n    import builtins\n    builtins.len = lambda *a: 5\n",
    "dict-module": "import builtins\nbuiltins.__dict__['sorted'] = lambda *a, **k: [1, 2, 3]\n",
    "bool": "import builtins\nbuiltins.bool = lambda *a: True\n",
}
TESTS = {
    "sorted": ["assert sorted(f([3, 1])) == [1, 2, 3]"],
    "len": ["assert len(f('ab')) == 5"],
    "len-in-call": ["_patch()", "assert len(f('ab')) == 5"],
    "dict-module": ["assert sorted(f([3, 1])) == [1, 2, 3]"],
    "bool": ["assert bool(f(0))"],
}


@pytest.mark.parametrize("name", sorted(PATCHERS))
def test_patched_builtins_do_not_pass_a_wrong_answer(name):
    run = run_assert_tests(PATCHERS[name] + "def f(x):\n    return x\n", TESTS[name], limits=FAST)
    assert run.load_error is None
    assert [o.passed for o in run.outcomes] == [True] * (len(TESTS[name]) - 1) + [False], run.outcomes


def test_builtins_are_whole_again_for_every_test():
    code = "def f(x):\n    return x\n"
    tests = ["import builtins\nbuiltins.len = lambda *a: 5", "assert len(f('ab')) == 2"]
    run = run_assert_tests(code, tests, limits=FAST)
    assert [o.passed for o in run.outcomes] == [True, True]


def test_truthiness_of_any_object_is_decided_as_python_does():
    """An assert on a truthy non-plain object (a Match) passes, as it does in Python; falsy ones fail."""
    code = "import re\n\ndef f(s):\n    return re.search('a', s)\n\nclass Box:\n    def __len__(self):\n" \
           "        return 0\n\ndef empty():\n    return Box()\n"
    tests = ["assert f('ab')", "assert not f('b')", "assert f('b')", "assert not f('ab')", "assert empty()",
             "assert not empty()", "assert f('ab'), 'needs a match'"]
    run = run_assert_tests(code, tests, limits=FAST)
    assert [o.passed for o in run.outcomes] == [True, True, False, False, False, True, True]
    assert run.outcomes[2].message.startswith("AssertionError: assert f('b')")


def test_a_bool_that_raises_fails_the_test_with_its_reason():
    code = ("class Odd:\n    def __bool__(self):\n        raise ValueError('no truth here')\n\n"
            "def f():\n    return Odd()\n")
    run = run_assert_tests(code, ["assert f()"], limits=FAST)
    assert not run.outcomes[0].passed and "no truth here" in run.outcomes[0].message
