"""The parent-side checks: what leaves the snippet, what the parent evaluates, how values come back."""

from __future__ import annotations

import ast

import pytest

from pytest_ifbench.sandbox._checks import NotTrusted, decode, split_test, trusted_value

NEEDS_SANDBOX = False


def test_expected_values_never_reach_the_child_and_lines_are_kept():
    src = "x = 1\nassert f(x) == [\n    1,\n    2,\n]\ny = 2  # line 6\nassert g(y), 'msg'\n"
    split = split_test(src)
    assert "[" not in split.source and "1,\n" not in split.source.split("_ifb_check_(0")[1].split(")")[0]
    assert split.source.count("\n") == src.count("\n")
    assert split.source.splitlines()[5] == "y = 2  # line 6"
    compile(split.source, "<t>", "exec")
    assert [(c.op, c.expected, c.negate) for c in split.checks] == [("==", [1, 2], False), (None, None, False)]


def test_only_top_level_asserts_with_a_trusted_side_are_taken():
    src = ("def check(c):\n    assert c(1) == 2\n"
           "assert f(1) == g(2)\n"        # both sides computed: stays in the child
           "assert 3 in f()\n"            # expected on the left
           "assert f() is None\n"
           "assert f() is SOME\n"
           "import json as _j\nassert f() == _j.loads('[1, 2]')\n")
    split = split_test(src)
    assert [(c.op, c.expected, c.value_left) for c in split.checks] == [
        ("in", 3, False), ("is", None, True), ("==", [1, 2], True)]
    assert "c(1) == 2" in split.source and "f(1) == g(2)" in split.source and "SOME" in split.source


@pytest.mark.parametrize("text", ["x", "sorted(x)", "[1] * 10", "2 ** 10000", "str(x)", "len([1])", "f'{1}'",
                                  "{**a}", "[*a]", "json.loads('1')"])
def test_untrusted_expressions_are_refused(text):
    with pytest.raises(NotTrusted):
        trusted_value(ast.parse(text, mode="eval").body, set())


@pytest.mark.parametrize(("text", "value"), [("-1.5", -1.5), ("set([1, 2])", {1, 2}), ("float('inf')", float("inf")),
                                             ("sorted([3, 1])", [1, 3]), ("(1, 'a', b'x', None)", (1, "a", b"x", None)),
                                             ("{'a': [1]}", {"a": [1]}), ("1 + 2j", 1 + 2j), ("1 / 3", 1 / 3)])
def test_trusted_expressions(text, value):
    assert trusted_value(ast.parse(text, mode="eval").body, set()) == value


def test_decode_builds_plain_values_and_refuses_forgeries():
    assert decode(["l", [["i", "0x2a"], ["s", "a"], ["S", [["T", 0]]], ["d", [[["t", []], ["f", "nan"]]]]]])[:3] == [
        42, "a", {True}]
    for bad in (None, ["x", 1], ["S", [["l", []]]], ["s", 5], ["i", "zz"], ["l", "notalist"], ["d", [[1]]]):
        with pytest.raises(ValueError):
            decode(bad)


def test_verdicts():
    split = split_test("assert f() == 3\nassert not g()\nassert h() < 1e-6\n")
    eq, neg, lt = split.checks
    assert eq.verdict(3) is None and "left:  4" in eq.verdict(4)
    assert eq.verdict(3.0) is None  # Python's own semantics: 3.0 == 3
    assert neg.verdict(0) is None and neg.verdict([1]) == "AssertionError: assert not g()"
    assert lt.verdict(0.0) is None and lt.verdict(1.0) is not None
    assert lt.verdict("a").startswith("AssertionError: assert h() < 1e-06\n  TypeError")
