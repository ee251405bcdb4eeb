"""EvolIF checkers: every constraint with passing and failing texts, official args as params."""

from __future__ import annotations

import json
import re

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import ParamError
from pytest_ifbench._verify import verify_one
from pytest_ifbench.benchmarks.evolif import text as T
from pytest_ifbench.benchmarks.evolif.catalog import GROUPS, group_of
from pytest_ifbench.benchmarks.evolif.lang import detect

REGISTRY = default_registry()


def passes(constraint: str, args, text: str) -> bool:
    return verify_one(REGISTRY, f"evolif.{constraint}", args, text).passed


def test_every_official_id_is_registered():
    for name in GROUPS:
        assert f"evolif.{name}" in REGISTRY
    assert [v.id for v in REGISTRY if v.id.startswith("evolif.") and v.kind == "judge"] == [
        "evolif.emotion", "evolif.reader_age", "evolif.style"]
    assert group_of("evolif.countableItems") == "CTI" and group_of("ifbench.case") is None


@pytest.mark.parametrize(("args", "good", "bad"), [
    ({"mode": "letter", "value": "B"}, "Bananas are great.", "Apples are great."),
    ({"mode": "letter", "value": "b"}, "## **Bold** start", "A bold start"),
    ({"mode": "emoji", "value": "😴"}, "  😴 sleepy time", "Sleepy 😴"),
    ({"mode": "emoji", "value": "☕"}, "☕️ coffee first", "coffee ☕"),
    ({"mode": "keyword", "value": "inclusive"}, "Inclusive spaces matter.", "Inclusiveness matters."),
    ({"mode": "keyword", "value": "rail pass"}, "Rail   pass holders save.", "A rail pass helps."),
    ({"mode": "quotation", "left": "（", "right": "）"}, "（A quote）and more", "Text （quote）"),
    ({"mode": "quotation"}, '"Hello," she said.', "Hello, she said."),
])
def test_startwith(args, good, bad):
    assert passes("startwith", args, good)
    assert not passes("startwith", args, bad)


@pytest.mark.parametrize(("args", "good", "bad"), [
    ({"mode": "letter", "value": "s"}, "It ends with yes.", "It ends with no."),
    ({"mode": "emoji", "value": "😚"}, "Bye 😚\n", "Bye 😚."),
    ({"mode": "keyword", "value": "peace"}, "All we want is **peace**!", "All we want is peaceful"),
    ({"mode": "keyword", "value": "good luck"}, "Study hard and good   luck.", "Good luck with it"),
    ({"mode": "quotation", "left": "«", "right": "»"}, "He said «au revoir»", "He said au revoir»"),
])
def test_endwith(args, good, bad):
    assert passes("endwith", args, good)
    assert not passes("endwith", args, bad)


@pytest.mark.parametrize(("mode", "good", "bad"), [
    ("json", '```json\n{"a": [1, 2]}\n```', 'Here you go: {"a": 1}'),
    ("json", "[1, 2, 3]", '"just a string"'),
    ("xml", "<?xml version='1.0'?><notes><n id='1'>x</n></notes>", "<a><b></a></b>"),
    ("xml", "<root/>", "<a>1</a><b>2</b>"),
    ("html", "<!DOCTYPE html><html><body><p>Hi<br>there</p><img src=x /></body></html>", "<p><b>bold</p></b>"),
    ("html", "<ul>\n  <li>one</li>\n</ul>", "Intro text <p>hello</p>"),
    ("html", "<div><p>a</p></div>", "<div><p>never closed</div>"),
    ("csv", 'name,quote\nAda,"says ""hi"", then leaves"\n', "name,age\nAda,36,extra"),
    ("csv", "a,b\r\n1,2\r\n", 'a,b\n1,x"y'),
    ("csv", "a,b\n1,2", "just one line, with commas"),
    ("markdown", "# Title\n\nSome **bold** text.", "Plain text with no markup at all."),
    ("markdown", "| a | b |\n|---|---|\n| 1 | 2 |", "```python\nprint(1)\n"),
])
def test_format(mode, good, bad):
    assert passes("format", {"mode": mode}, good)
    assert not passes("format", {"mode": mode}, bad)


def test_format_evidence_names_the_problem():
    verdict = verify_one(REGISTRY, "evolif.format", {"mode": "html"}, "<p><b>x</p></b>")
    assert "not properly nested" in verdict.evidence
    verdict = verify_one(REGISTRY, "evolif.format", {"mode": "csv"}, "a,b\n1,2,3")
    assert "row 2 has 3 field(s)" in verdict.evidence


@pytest.mark.parametrize(("args", "good", "bad"), [
    ({"mode": "all_upper"}, "HELLO WORLD 123!", "HELLO World"),
    ({"mode": "all_lower"}, "hello world, ça va?", "hello World"),
    ({"mode": "min_upper", "min": 0.5}, "ABCd", "Abcd"),
    ({"mode": "min_upper", "min": 50}, "ABcd", "ABCd"),  # an official percentage: about 50% (± 3 points)
    ({"mode": "min_upper", "min": 1}, "A" + "b" * 99, "ABCDE" + "f" * 45),  # 1 means 1%, not 100%
])
def test_case(args, good, bad):
    assert passes("case", args, good)
    assert not passes("case", args, bad)


def test_case_needs_letters_and_min():
    assert not passes("case", {"mode": "all_upper"}, "1234 !!")
    with pytest.raises(ParamError, match="min > 0"):
        REGISTRY.get("evolif.case").validate({"mode": "min_upper"})


@pytest.mark.parametrize(("args", "good", "bad"), [
    ({"mode": "must_include", "value": "!"}, "Wow!", "Wow."),
    ({"mode": "must_not_include", "value": ","}, "No commas here.", "One, two."),
    ({"mode": "must_not_include", "value": "—"}, "A - B", "A — B"),
])
def test_punctuation(args, good, bad):
    assert passes("punctuation", args, good)
    assert not passes("punctuation", args, bad)


def test_countable_items():
    text = "Intro\n* one\n- two\n  + three\n• four\n**bold** not a bullet\n---\n```\n- inside code\n```\n"
    assert T.count_bullets(text) == 4
    assert passes("countableItems", {"num": 4}, text)
    assert not passes("countableItems", {"num": 3}, text)
    assert not passes("countableItems", {"num": 2}, "1. numbered\n2. list")


SENTENCES = [
    ("Hello there. How are you? Fine!", 3),
    ("Dr. Smith met J. Doe at 3.5 p.m. today. They talked.", 2),
    ("We bought apples, pears, etc. Then we left.", 2),
    ("We bought apples, pears, etc. and left.", 1),
    ('"Go home." She said it twice... Then nothing.', 3),
    ("Intro line\n\n- first item\n- second item\n# Heading\nBody text.", 5),
    ("你好。你好吗？好！", 3),
    ("No terminal punctuation at all", 1),
    ("", 0),
    ("🙂 🙂", 0),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCES)
def test_sentence_counting_is_offline_and_rule_based(text, expected):
    assert T.count_sentences(text) == expected, T.split_sentences(text)


@pytest.mark.parametrize(("args", "good", "bad"), [
    ({"mode": "word", "relation": "less_than", "number": 5}, "one two three four", "one two three four five"),
    ({"mode": "word", "relation": "more_than", "number": 3}, "don't stop well-known 3.5 words", "one two three"),
    ({"mode": "word", "relation": "exactly", "number": 3}, "one, two — three!", "one two"),
    ({"mode": "paragraph", "relation": "exactly", "number": 3}, "a\n\nb\n\n***\nc", "a\nb\n\nc"),
    ({"mode": "paragraph", "relation": "more_than", "number": 1}, "a\n \nb", "a\nb"),
    ({"mode": "characters", "relation": "less_than", "number": 6}, "  hello  ", "hello!"),
    ({"mode": "characters", "relation": "more_than", "number": 4}, "hello", "hell"),
    ({"mode": "sentence", "relation": "exactly", "number": 2}, "One. Two!", "One. Two. Three."),
    ({"mode": "sentence", "relation": "less_than", "number": 2}, "Only one sentence here.", "One. Two."),
])
def test_length(args, good, bad):
    assert passes("length", args, good)
    assert not passes("length", args, bad)


def test_length_counts_sentences_without_nltk():
    # The authors' NLTK route counts every text as one sentence when its data is missing.
    text = "First sentence. Second sentence. Third sentence."
    assert passes("length", {"mode": "sentence", "relation": "exactly", "number": 3}, text)
    assert not passes("length", {"mode": "sentence", "relation": "exactly", "number": 1}, text)


def test_existence_needs_exact_counts():
    args = {"cognitive development": 2, "risk factors": 1}
    good = "Cognitive development matters; cognitive\ndevelopment again. Risk factors too."
    assert passes("existence", args, good)
    assert not passes("existence", args, good + " Risk factors!")  # 2 instead of 1
    assert not passes("existence", args, "cognitive developments, cognitive development, risk factors")
    verdict = verify_one(REGISTRY, "evolif.existence", args, good)
    assert verdict.details["counts"] == {"cognitive development": 2, "risk factors": 1}
    with pytest.raises(ParamError):
        REGISTRY.get("evolif.existence").validate({"x": -1})
    with pytest.raises(ParamError):
        REGISTRY.get("evolif.existence").validate({})


def test_forbidden_accepts_the_official_bare_list():
    official = ["attention deficit hyperactivity disorder", "mental health"]
    assert passes("forbidden", official, "Healthy minds and mentally strong.")
    assert not passes("forbidden", official, "Good MENTAL   health matters.")
    assert passes("forbidden", {"keywords": official}, "Nothing banned.")
    assert REGISTRY.get("evolif.forbidden").validate(official) == {"keywords": official, "compat": "paper"}
    with pytest.raises(ParamError):
        REGISTRY.get("evolif.forbidden").validate([])


@pytest.mark.parametrize(("lang", "good", "bad"), [
    ("en", "The weather is nice and the children are playing in the park.", "Le temps est beau et les enfants jouent."),
    ("fr", "Le temps est beau et les enfants jouent dans le parc.", "The weather is nice today and it is warm."),
    ("de", "Das Wetter ist schön und die Kinder spielen im Park.", "El tiempo es bueno y los niños juegan."),
    ("es", "El tiempo es bueno y los niños juegan en el parque.", "Il tempo è bello e i bambini giocano nel parco."),
    ("zh-CN", "今天天气很好，孩子们在公园里玩。", "今日は天気がいいですね。"),
    ("ja", "今日は天気がいいですね。", "오늘 날씨가 좋네요."),
    ("ru", "Сегодня хорошая погода, и дети играют в парке.", "Today the weather is good."),
])
def test_language(lang, good, bad):
    assert passes("language", {"lang": lang}, good)
    assert not passes("language", {"lang": lang}, bad)


def test_language_detector_declines_short_or_mixed_text():
    assert detect("ok")[0] is None
    assert detect("12345 !!!")[0] is None


@pytest.mark.parametrize("name", ["emotion", "style", "reader_age"])
def test_subjective_constraints_are_scored_judged_checks(name):
    verifier = REGISTRY.get(f"evolif.{name}")
    assert verifier.kind == "judge" and verifier.judge_scale == 10
    official = {name: "child" if name == "reader_age" else "formal" if name == "style" else "happy"}
    params = verifier.validate(official)
    assert params["threshold"] == 6.0
    assert verifier.validate({"value": official[name]})[name] == ""
    criterion = verifier.criterion(params)
    assert official[name] in criterion
    with pytest.raises(ParamError):
        verifier.validate({})
    with pytest.raises(ParamError, match="disagree"):
        verifier.validate({name: "a", "value": "b"})


def test_edge_params_are_validated():
    verifier = REGISTRY.get("evolif.startwith")
    with pytest.raises(ParamError, match="single letter"):
        verifier.validate({"mode": "letter", "value": "ab"})
    with pytest.raises(ParamError, match="required"):
        verifier.validate({"mode": "keyword"})
    with pytest.raises(ParamError):
        verifier.validate({"mode": "word", "value": "x"})


def test_descriptions_render_the_params():
    check = REGISTRY.get("evolif.length")
    assert check.criterion({"mode": "word", "relation": "less_than", "number": 80}) == \
        "The response has fewer than 80 words."
    assert "'kids'" in REGISTRY.get("evolif.startwith").criterion({"mode": "keyword", "value": "kids"})


def test_ifbench_verify_takes_official_args_unchanged(tmp_path, capsys):
    from pytest_ifbench.cli.main import main

    cases = [
        {"verifier": "evolif.forbidden", "params": ["mental health"], "response": "mental health"},
        {"verifier": "evolif.existence", "params": {"risk factors": 1}, "response": "risk factors"},
        {"verifier": "evolif.startwith", "params": {"mode": "quotation", "left": "（", "right": "）"},
         "response": "（quote）rest"},
        {"verifier": "evolif.countableItems", "params": {"num": 2}, "response": "- a\n- b"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases), encoding="utf-8")
    assert main(["verify", "--in", str(path)]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [v["passed"] for v in verdicts] == [False, True, True, True]


def test_subjective_constraint_through_ifbench_verify_passes_above_six(stub_env, tmp_path, capsys):
    from pytest_ifbench.cli.main import main
    from pytest_ifbench.testing import Reply

    def judge(body):
        prompt = body["messages"][-1]["content"]
        score = 7 if re.search(r"<<<RESPONSE \w+>>>\nYay", prompt) else 6
        assert "(give a score from 1 to 10)" in prompt
        return Reply(content=json.dumps({"checks": [{"id": "case", "verdict": "pass", "score": score,
                                                     "reasoning": "tone"}]}))

    stub_env.add_rule("", judge)
    cases = [{"verifier": "evolif.emotion", "params": {"emotion": "happy"}, "response": "Yay, sunshine!"},
             {"verifier": "evolif.reader_age", "params": {"reader_age": "child"}, "response": "Meh."},
             {"verifier": "evolif.style", "params": {"style": "passive voice"}, "response": "Yay, it was done."}]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases), encoding="utf-8")
    assert main(["verify", "--in", str(path), "--judge-model", "openai/stub", "--api-base", stub_env.url]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [v["passed"] for v in verdicts] == [True, False, True]
    assert "score 6 (passes above 6)" in verdicts[1]["evidence"]
    prompts = [r.body["messages"][-1]["content"] for r in stub_env.requests]
    assert "children (about 6 to 12 years old)" in prompts[1] and "mostly the passive voice" in prompts[2]
