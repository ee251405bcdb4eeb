"""Text helpers: code extraction, reasoning stripping, JSON finding."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench._text import extract_code, first_json_object, strip_reasoning

F = "```"  # a fence, to keep the cases readable


# --------------------------------------------------------------------------
# extract_code
# --------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["python", "py", "python3", "Python", "PY", "PYTHON3"])
def test_python_tags(tag):
    assert extract_code(f"Here you go:\n{F}{tag}\nx = 1\n{F}\nDone.") == "x = 1\n"


def test_python_fence_wins_even_after_a_bare_fence():
    text = f"Usage:\n{F}\n$ run it\n{F}\nCode:\n{F}python\ndef f():\n    return 1\n{F}\n"
    assert extract_code(text) == "def f():\n    return 1\n"


def test_first_python_fence_wins():
    text = f"{F}py\nfirst = 1\n{F}\n\n{F}python\nsecond = 2\n{F}\n"
    assert extract_code(text) == "first = 1\n"


def test_first_bare_fence_when_no_python_fence():
    text = f"{F}\nfirst = 1\n{F}\nand\n{F}\nsecond = 2\n{F}\n"
    assert extract_code(text) == "first = 1\n"


def test_whole_reply_without_fences():
    text = "def f():\n    return 1\n"
    assert extract_code(text) == text


@pytest.mark.parametrize("tag", ["bash", "json", "text", "pycon", "javascript", "c++", "sh"])
def test_other_language_fences_are_ignored(tag):
    only_other = f"Run:\n{F}{tag}\nnot python\n{F}\n"
    assert extract_code(only_other) == only_other  # falls back to the whole reply
    assert extract_code(f"{F}{tag}\nnope\n{F}\n{F}\nbare = 1\n{F}\n") == "bare = 1\n"
    assert extract_code(f"{F}{tag}\nnope\n{F}\n{F}python\npy = 1\n{F}\n") == "py = 1\n"


def test_python_fence_inside_other_language_text_is_not_confused():
    # The first fence's closing line must not be taken as an opening fence.
    text = f"{F}bash\necho hi\n{F}\nthen\n{F}python\nok = True\n{F}\n"
    assert extract_code(text) == "ok = True\n"


def test_fence_with_info_string_after_tag():
    assert extract_code(f'{F}python title="a.py"\nz = 3\n{F}') == "z = 3\n"
    assert extract_code(f"{F} python\nz = 4\n{F}") == "z = 4\n"


def test_multiline_code_is_kept_verbatim():
    code = "import os\n\n\nclass A:\n    '''Doc.'''\n\n    x = 1\n"
    assert extract_code(f"Sure!\n{F}python\n{code}{F}\nHope it helps.") == code


def test_empty_fence():
    assert extract_code(f"{F}python\n{F}\n") == ""


def test_crlf_fence():
    assert extract_code(f"{F}python\r\nx = 1\r\n{F}\r\n") == "x = 1\r\n"


def test_inline_triple_backticks_are_not_fences():
    text = f"use {F}python\nx = 1\n{F}"  # the opening fence is not at the start of a line
    assert extract_code(text) == text


def test_indented_fence_is_found():
    text = f"1. Write this:\n   {F}python\n   x = 1\n   {F}\n2. Done.\n"
    assert extract_code(text).strip() == "x = 1"


def test_indented_fence_with_tabs_is_found():
    text = f"\t{F}python\n\tx = 1\n\t{F}\n"
    assert extract_code(text).strip() == "x = 1"


def test_indented_fence_content_is_dedented():
    text = f"1. Write this:\n   {F}python\n   def f():\n       return 1\n   {F}\n"
    code = extract_code(text)
    assert code == "def f():\n    return 1\n"
    compile(code, "<candidate>", "exec")


# --------------------------------------------------------------------------
# strip_reasoning
# --------------------------------------------------------------------------


def test_no_reasoning():
    assert strip_reasoning("  just the answer \n") == ("just the answer", "")


def test_one_block_removed():
    assert strip_reasoning("<think>let me see</think>\n\nThe answer is 4.") == ("The answer is 4.", "let me see")


def test_multiple_blocks_removed():
    text = "<think>first</think>Part one. <think>second\nthought</think>Part two."
    visible, reasoning = strip_reasoning(text)
    assert visible == "Part one. Part two."
    assert reasoning == "first\nsecond\nthought"


def test_block_in_the_middle():
    assert strip_reasoning("Intro\n<think>x</think>\nOutro") == ("Intro\n\nOutro", "x")


def test_only_closing_tag_keeps_what_follows():
    # The chat template ate "<think>": everything before "</think>" is reasoning.
    assert strip_reasoning("hmm, let me think\nstill thinking</think>\nFinal.") == (
        "Final.", "hmm, let me think\nstill thinking")


def test_only_closing_tag_uses_the_last_one():
    visible, reasoning = strip_reasoning("a</think>b</think>answer")
    assert visible == "answer"
    assert "a" in reasoning and "b" in reasoning


def test_unclosed_opening_tag_hides_the_rest():
    assert strip_reasoning("Answer first. <think>but then I kept going") == (
        "Answer first.", "but then I kept going")


def test_unclosed_opening_tag_at_start_hides_everything():
    assert strip_reasoning("<think>ran out of tokens mid-thought") == ("", "ran out of tokens mid-thought")


@pytest.mark.parametrize(("open_tag", "close_tag"), [("<THINK>", "</THINK>"), ("<Think>", "</think>"),
                                                     ("<think>", "</Think>")])
def test_tags_are_case_insensitive(open_tag, close_tag):
    assert strip_reasoning(f"{open_tag}secret{close_tag}Shown") == ("Shown", "secret")


def test_only_closing_tag_case_insensitive():
    assert strip_reasoning("reasoning</THINK>shown") == ("shown", "reasoning")


def test_multiline_block():
    text = "<think>\nline 1\nline 2\n</think>\n```python\nx = 1\n```"
    assert strip_reasoning(text) == ("```python\nx = 1\n```", "line 1\nline 2")


def test_think_word_without_tags_is_kept():
    assert strip_reasoning("I think the answer is think.") == ("I think the answer is think.", "")


# --------------------------------------------------------------------------
# first_json_object
# --------------------------------------------------------------------------


def test_plain_object():
    assert first_json_object('{"a": 1}') == '{"a": 1}'


def test_nested_braces():
    blob = '{"checks": [{"id": "a", "x": {"y": {}}}], "n": 2}'
    assert first_json_object(f"before {blob} after") == blob


def test_braces_inside_strings():
    blob = '{"reasoning": "uses } and { and {{", "ok": true}'
    assert first_json_object(f"Verdict: {blob} -- end") == blob
    assert json.loads(first_json_object(blob))["ok"] is True


def test_escaped_quotes_inside_strings():
    blob = r'{"text": "she said \"}\" loudly", "n": 1}'
    found = first_json_object("x " + blob + " y")
    assert found == blob
    assert json.loads(found) == {"text": 'she said "}" loudly', "n": 1}


def test_escaped_backslash_before_closing_quote():
    blob = r'{"path": "C:\\", "n": {"m": 2}}'
    assert first_json_object(blob + " trailing }") == blob


def test_prose_around_and_fences():
    text = 'Sure! Here is my evaluation:\n```json\n{"checks": []}\n```\nLet me know.'
    assert first_json_object(text) == '{"checks": []}'


def test_first_of_several_objects():
    assert first_json_object('{"first": 1} and {"second": 2}') == '{"first": 1}'


def test_unbalanced_prefix_is_skipped():
    assert first_json_object('oops { not closed {"a": 1}') == '{"a": 1}'


def test_stray_closing_brace_before_object():
    assert first_json_object('} ) {"a": [1, {"b": 2}]} }') == '{"a": [1, {"b": 2}]}'


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '{"never": "closed"', '"{"'])
def test_no_object(text):
    assert first_json_object(text) is None
