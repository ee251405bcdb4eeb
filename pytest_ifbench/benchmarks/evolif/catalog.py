"""The EvolIF constraint catalogue: groups, official ids and plain-language requirements.

Shared by the verifiers (check descriptions, judge criteria), the metrics
(group of a check) and the generator. Ids are the official ones, so an
official dialogue's ``{"id": "format", "args": {...}}`` maps to the verifier
``evolif.format`` with ``params`` = ``args``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: official id -> (group abbreviation used by the paper, group name)
GROUPS: dict[str, tuple[str, str]] = {
    "startwith": ("SW", "StartWith"),
    "endwith": ("EW", "EndWith"),
    "format": ("FMT", "Format"),
    "case": ("CS", "Case"),
    "punctuation": ("PTT", "Punctuation"),
    "countableItems": ("CTI", "CountableItems"),
    "length": ("LEN", "Length"),
    "existence": ("EXT", "Existence"),
    "forbidden": ("FBD", "Forbidden"),
    "emotion": ("EMO", "Emotion"),
    "style": ("STL", "Style"),
    "reader_age": ("AGE", "Age"),
    # Not among the paper's 12 groups; present (disabled) in the authors' code.
    "language": ("LANG", "Language"),
}
PAPER_GROUPS = tuple(k for k in GROUPS if k != "language")
SUBJECTIVE = ("emotion", "style", "reader_age")
OBJECTIVE = tuple(k for k in GROUPS if k not in SUBJECTIVE)

EDGE_MODES = ("letter", "emoji", "keyword", "quotation")
FORMAT_MODES = ("json", "html", "xml", "csv", "markdown")
CASE_MODES = ("all_upper", "all_lower", "min_upper")
PUNCTUATION_MODES = ("must_include", "must_not_include")
LENGTH_MODES = ("word", "paragraph", "characters", "sentence")
LENGTH_RELATIONS = ("less_than", "more_than", "exactly")

EMOTIONS = ("happy", "sad", "neutral", "angry", "excited", "frustrated")
STYLES = ("formal", "informal", "active voice", "passive voice")
READER_AGES = ("child", "youth", "adult", "senior")

_STYLE_TEXT = {
    "formal": "a formal style: complete sentences and a professional register, without slang or chatty asides",
    "informal": "an informal, conversational style: relaxed everyday wording, contractions and a casual tone",
    "active voice": "the active voice: sentences name the actor as their subject, passive constructions are rare",
    "passive voice": "mostly the passive voice (e.g. 'the plan was drafted by the team') rather than the active voice",
}
_AGE_TEXT = {
    "child": "children (about 6 to 12 years old): simple words, short sentences and concrete, friendly examples",
    "youth": "teenagers and young readers (about 13 to 19): engaging, relatable and not condescending",
    "adult": "adult readers: a mature, general-audience register with appropriate depth",
    "senior": "senior readers (older adults): clear, respectful and unhurried wording, no youth slang",
}
_FORMAT_TEXT = {
    "json": "valid JSON (an object or an array) and nothing else",
    "html": "syntactically valid HTML with properly nested, closed tags and no text outside the elements",
    "xml": "well-formed XML with a single root element",
    "csv": "valid CSV: at least two rows and two columns, the same number of fields in every row, "
           "fields with commas or quotes quoted",
    "markdown": "formatted with Markdown syntax (headings, lists, bold text, links, quotes, code or tables)",
}
_UNITS = {"word": "words", "paragraph": "paragraphs", "characters": "characters", "sentence": "sentences"}
_RELATIONS = {"less_than": "fewer than", "more_than": "more than", "exactly": "exactly"}


def group_of(verifier_id: str) -> str | None:
    """``evolif.format`` -> ``FMT``; None for a verifier outside the catalogue."""
    name = verifier_id.split(".", 1)[1] if verifier_id.startswith("evolif.") else None
    return GROUPS[name][0] if name in GROUPS else None


def subjective_value(name: str, params: Mapping[str, Any]) -> str:
    """The target of a judged constraint: ``args[<id>]`` (official) or ``args["value"]``."""
    value = params.get(name)
    if value is None:
        value = params.get("value")
    return str(value or "").strip()


def normalise_style(value: str) -> str:
    return " ".join(value.lower().replace("_", " ").replace("-", " ").split())


def judge_criterion(name: str, params: Mapping[str, Any]) -> str:
    value = subjective_value(name, params)
    if name == "emotion":
        return (f"The response's tone clearly and consistently conveys the emotion '{value}' "
                f"(rate how strongly '{value}' comes through).")
    if name == "style":
        text = _STYLE_TEXT.get(normalise_style(value), f"a '{value}' style")
        return f"The response is written in {text}."
    if name == "reader_age":
        text = _AGE_TEXT.get(value.lower(), f"'{value}' readers")
        return f"The response is tailored for {text}."
    raise KeyError(name)


def _quoted(value: Any) -> str:
    return f"'{value}'"


def _edge(verb: str, params: Mapping[str, Any]) -> str:
    mode = params.get("mode")
    if mode == "letter":
        return f"The response {verb} the letter {_quoted(params.get('value'))}."
    if mode == "emoji":
        return f"The response {verb} the emoji {params.get('value')}."
    if mode == "keyword":
        return f"The response {verb} the word {_quoted(params.get('value'))}."
    left, right = params.get("left") or '"', params.get("right") or '"'
    return f"The response {verb} a quotation enclosed in {left} and {right}."


def counted(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def requirement(name: str, params: Mapping[str, Any]) -> str:
    """A one-sentence statement of what the constraint requires (shown in failure messages)."""
    if name == "startwith":
        return _edge("starts with", params)
    if name == "endwith":
        return _edge("ends with", params)
    if name == "format":
        return f"The response is {_FORMAT_TEXT.get(params.get('mode'), params.get('mode'))}."
    if name == "case":
        mode = params.get("mode")
        if mode == "all_upper":
            return "Every letter of the response is upper case."
        if mode == "all_lower":
            return "Every letter of the response is lower case."
        if type(params.get("min")) is int:
            return f"About {params['min']}% (± 3 points) of the response's letters are upper case."
        return f"At least {min_upper_fraction(params.get('min')):.0%} of the response's letters are upper case."
    if name == "punctuation":
        verb = "contains" if params.get("mode") == "must_include" else "does not contain"
        return f"The response {verb} the punctuation mark {_quoted(params.get('value'))}."
    if name == "countableItems":
        return f"The response has exactly {params.get('num')} bullet points (lines starting with * or -)."
    if name == "length":
        unit = _UNITS.get(params.get("mode"), params.get("mode"))
        return f"The response has {_RELATIONS.get(params.get('relation'), params.get('relation'))} " \
               f"{params.get('number')} {unit}."
    if name == "existence":
        parts = [f"{_quoted(k)} exactly {counted(v)}" for k, v in params.items() if k != "compat"]
        return "The response contains " + ", ".join(parts) + "."
    if name == "forbidden":
        return "The response never uses " + ", ".join(_quoted(k) for k in params.get("keywords", [])) + "."
    if name == "language":
        from .lang import language_name

        return f"The response is written in {language_name(str(params.get('lang')))}."
    return judge_criterion(name, params)


def min_upper_fraction(value: Any) -> float:
    """``min`` of ``case/min_upper``: an int is a percentage (the official args), a float a fraction
    when <= 1, else a percentage."""
    number = float(value or 0)
    return number / 100 if number > 1 or type(value) is int else number
