"""EvolIF generator, the constraint layer: seeded parameters for each constraint.

``sample_args`` draws fresh parameters for a constraint (from the topic's
keywords and fixed vocabularies), ``evolve_args`` gives a constraint new
parameters in its own group (a "modify" of the instruction layer) and
``conflict`` names the cross-group combinations that the checkers could not
satisfy together. Every draw comes from the ``random.Random`` passed in, so
the same seed gives the same parameters.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from .catalog import EMOTIONS, FORMAT_MODES, READER_AGES, STYLES

EMOJIS = ("😊", "🚀", "🌟", "🎉", "🌈", "📚", "💡", "🌿", "🎵", "😴", "🤔", "🔥", "🍀", "🐢", "🎯")
START_LETTERS = "ABCDEFGHILMNOPRSTW"
END_LETTERS = "adeklnrsty"
QUOTES = (('"', '"'), ("“", "”"), ("«", "»"), ("「", "」"))
OPENING_WORDS = ("Sure", "Certainly", "Absolutely", "Okay", "Here", "First", "Imagine", "Honestly", "Ready", "Well")
CLOSING_WORDS = ("Thanks", "Cheers", "Goodbye", "Enjoy", "Done", "Onward", "Peace", "Together", "Tomorrow")
FILLER_WORDS = ("really", "very", "basically", "actually", "honestly", "simply", "literally", "definitely",
                "things", "stuff", "important", "great")
INCLUDE_MARKS = ("!", "?", ";", ":")
EXCLUDE_MARKS = (",", "!", "?", ";", ":", "-")
MARK_NAMES = {",": "comma", "!": "exclamation mark", "?": "question mark", ";": "semicolon", ":": "colon",
              "-": "hyphen", ".": "period"}
LANGUAGES = ("en", "fr", "de", "es", "it", "pt")
_LENGTH_NUMBERS = {
    ("word", "less_than"): (80, 100, 120, 150, 200, 250, 300),
    ("word", "more_than"): (50, 80, 100, 150, 200, 300),
    ("word", "exactly"): (50, 60, 80, 100),
    ("sentence", "less_than"): (3, 4, 5, 6, 8, 10),
    ("sentence", "more_than"): (2, 3, 4, 5, 6, 8),
    ("sentence", "exactly"): (2, 3, 4, 5, 6),
    ("paragraph", "less_than"): (2, 3, 4, 5),
    ("paragraph", "more_than"): (1, 2, 3, 4),
    ("paragraph", "exactly"): (1, 2, 3, 4, 5),
    ("characters", "less_than"): (300, 500, 800, 1000, 1500),
    ("characters", "more_than"): (200, 300, 500, 800, 1000),
}


def word_tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def required_keywords(constraints: Mapping[str, Any]) -> list[str]:
    out = []
    for name in ("startwith", "endwith"):
        args = constraints.get(name)
        if args and args.get("mode") == "keyword":
            out.append(args["value"])
    out.extend((constraints.get("existence") or {}).keys())
    return out


def forbidden_keywords(constraints: Mapping[str, Any]) -> list[str]:
    return list((constraints.get("forbidden") or {}).get("keywords", []))


def _overlap(a: str, b: str) -> bool:
    """Whether forbidding one phrase would forbid (part of) the other."""
    wa, wb = word_tokens(a), word_tokens(b)
    if not wa or not wb:
        return False
    short, long_ = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return any(long_[i:i + len(short)] == short for i in range(len(long_) - len(short) + 1))


def conflict(constraints: Mapping[str, Any]) -> str | None:
    """Why a set of constraints (one per group) cannot be satisfied together, or None.

    Groups are exclusive by construction (a dict keyed by group); these are the
    cross-group combinations the checkers make impossible or near impossible.
    """
    fmt = (constraints.get("format") or {}).get("mode")
    structured = fmt in ("json", "xml", "csv", "html")
    if structured:
        for name in ("startwith", "endwith"):
            if name in constraints:
                return f"format {fmt} fixes how the reply starts and ends ({name})"
        if "countableItems" in constraints:
            return f"bullet lines do not fit format {fmt}"
        length = constraints.get("length") or {}
        if length.get("mode") in ("paragraph", "sentence"):
            return f"{length['mode']} counts do not fit format {fmt}"
    punct = constraints.get("punctuation") or {}
    if punct.get("mode") == "must_not_include":
        if punct.get("value") == "," and fmt in ("csv", "json"):
            return f"format {fmt} needs commas"
        if punct.get("value") == ":" and fmt == "json":
            return "JSON objects need colons"
        if any(punct.get("value", "") in keyword for keyword in required_keywords(constraints)):
            return f"a required keyword contains the banned {punct.get('value')!r}"
    lang = (constraints.get("language") or {}).get("lang")
    if lang and lang != "en":
        if "existence" in constraints or any((constraints.get(n) or {}).get("mode") == "keyword"
                                             for n in ("startwith", "endwith")):
            return "English keywords in a reply required in another language"
    for banned in forbidden_keywords(constraints):
        for needed in required_keywords(constraints):
            if _overlap(banned, needed):
                return f"{banned!r} is both forbidden and required"
    bullets = (constraints.get("countableItems") or {}).get("num")
    length = constraints.get("length") or {}
    if bullets is not None and length.get("mode") == "sentence" and length.get("relation") != "more_than" \
            and length.get("number", 0) <= bullets:
        return "every bullet point counts as a sentence"
    if length.get("mode") == "word" and length.get("relation") != "more_than":
        needed_words = sum(len(word_tokens(k)) * n for k, n in (constraints.get("existence") or {}).items())
        if needed_words * 3 >= length.get("number", 0):
            return "required keywords leave too few words"
    return None


def _topic_words(topic: Mapping[str, Any]) -> list[str]:
    return list(topic["keywords"])


def sample_args(name: str, rng: random.Random, topic: Mapping[str, Any], others: Mapping[str, Any],
                avoid: Any = None) -> Any:
    """Fresh parameters for constraint ``name`` (different from ``avoid``)."""
    for _ in range(50):
        args = _sample(name, rng, topic, others)
        if args != avoid:
            return args
    return args


def _sample(name: str, rng: random.Random, topic: Mapping[str, Any], others: Mapping[str, Any]) -> Any:
    if name in ("startwith", "endwith"):
        mode = rng.choice(("letter", "emoji", "keyword", "quotation"))
        return _edge_args(name, mode, rng, topic, others)
    if name == "format":
        return {"mode": rng.choice(FORMAT_MODES)}
    if name == "case":
        mode = rng.choices(("all_upper", "all_lower", "min_upper"), weights=(2, 2, 1))[0]
        return {"mode": mode, "min": rng.choice((0.2, 0.3, 0.5))} if mode == "min_upper" else {"mode": mode}
    if name == "punctuation":
        mode = rng.choice(("must_include", "must_not_include"))
        return {"mode": mode, "value": rng.choice(INCLUDE_MARKS if mode == "must_include" else EXCLUDE_MARKS)}
    if name == "countableItems":
        return {"num": rng.randint(2, 9)}
    if name == "length":
        mode = rng.choices(("word", "sentence", "paragraph", "characters"), weights=(3, 2, 2, 2))[0]
        return _length_args(mode, rng)
    if name == "existence":
        allowed = [k for k in _topic_words(topic)
                   if not any(_overlap(k, banned) for banned in forbidden_keywords(others))]
        chosen = rng.sample(allowed, k=min(len(allowed), rng.randint(1, 3))) or [rng.choice(_topic_words(topic))]
        return {k: rng.randint(1, 3) for k in chosen}
    if name == "forbidden":
        needed = required_keywords(others)
        pool = [k for k in _topic_words(topic) + list(FILLER_WORDS) if not any(_overlap(k, n) for n in needed)]
        topical = [k for k in _topic_words(topic) if k in pool]
        first = [rng.choice(topical)] if topical else []
        rest = rng.sample([k for k in pool if k not in first], k=rng.randint(0, 2))
        return {"keywords": first + rest or [rng.choice(FILLER_WORDS)]}
    if name == "emotion":
        return {"emotion": rng.choice(EMOTIONS)}
    if name == "style":
        return {"style": rng.choice(STYLES)}
    if name == "reader_age":
        return {"reader_age": rng.choice(READER_AGES)}
    if name == "language":
        return {"lang": rng.choice(LANGUAGES)}
    raise KeyError(name)


def _edge_args(name: str, mode: str, rng: random.Random, topic: Mapping[str, Any],
               others: Mapping[str, Any]) -> dict[str, Any]:
    if mode == "letter":
        return {"mode": "letter", "value": rng.choice(START_LETTERS if name == "startwith" else END_LETTERS)}
    if mode == "emoji":
        return {"mode": "emoji", "value": rng.choice(EMOJIS)}
    if mode == "keyword":
        banned = forbidden_keywords(others)
        words = [k for k in _topic_words(topic) if len(k.split()) == 1]
        pool = [w for w in words + list(OPENING_WORDS if name == "startwith" else CLOSING_WORDS)
                if not any(_overlap(w, b) for b in banned)]
        return {"mode": "keyword", "value": rng.choice(pool)}
    left, right = rng.choice(QUOTES)
    return {"mode": "quotation", "left": left, "right": right}


def _length_args(mode: str, rng: random.Random, relation: str | None = None) -> dict[str, Any]:
    relations = [r for r in ("less_than", "more_than", "exactly") if (mode, r) in _LENGTH_NUMBERS]
    relation = relation if relation in relations else rng.choices(relations, weights=[2, 2, 1][:len(relations)])[0]
    return {"mode": mode, "relation": relation, "number": rng.choice(_LENGTH_NUMBERS[(mode, relation)])}


def evolve_args(name: str, args: Any, rng: random.Random, topic: Mapping[str, Any],
                others: Mapping[str, Any]) -> Any:
    """Parameter evolution (the constraint layer): new parameters for the same constraint."""
    if name in ("startwith", "endwith") and rng.random() < 0.5:
        return _edge_args(name, args["mode"], rng, topic, others)
    if name == "case" and args["mode"] == "min_upper" and rng.random() < 0.5:
        return {"mode": "min_upper", "min": rng.choice([m for m in (0.2, 0.3, 0.5) if m != args.get("min")])}
    if name == "punctuation" and rng.random() < 0.5:
        marks = INCLUDE_MARKS if args["mode"] == "must_include" else EXCLUDE_MARKS
        return {"mode": args["mode"], "value": rng.choice([m for m in marks if m != args["value"]])}
    if name == "length":
        roll = rng.random()
        if roll < 0.6:
            numbers = [n for n in _LENGTH_NUMBERS[(args["mode"], args["relation"])] if n != args["number"]]
            return {**args, "number": rng.choice(numbers)}
        if roll < 0.8:
            return _length_args(args["mode"], rng, rng.choice(
                [r for r in ("less_than", "more_than", "exactly")
                 if r != args["relation"] and (args["mode"], r) in _LENGTH_NUMBERS]))
        return _length_args(rng.choice([m for m in ("word", "sentence", "paragraph", "characters")
                                        if m != args["mode"]]), rng)
    if name == "existence":
        changed = dict(args)
        keyword = rng.choice(list(changed))
        changed[keyword] = rng.choice([n for n in (1, 2, 3) if n != changed[keyword]])
        return changed
    if name == "forbidden":
        fresh = sample_args(name, rng, topic, others, avoid=args)
        kept = [k for k in args["keywords"] if k not in fresh["keywords"]][:1]
        return {"keywords": kept + fresh["keywords"]} if rng.random() < 0.5 else fresh
    return sample_args(name, rng, topic, others, avoid=args)
