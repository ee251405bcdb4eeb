"""EvolIF dialogue generator and importer: ``ifbench generate evolif synth|import ...``.

``synth`` builds multi-topic dialogues with the three-layer tracking of
Jia et al. §3.2: a topic layer (continue the current topic, open a new one, or
backtrack to one from the topic history), an instruction layer (each topic
keeps its own constraint set, evolved by adding, modifying or removing one
constraint per turn) and a constraint layer (a modified constraint gets new
parameters in its own group). A topic holds at most one constraint per group
and never a combination the checkers could not satisfy together. Every turn is
then written as a user message, by a template realiser (no model: offline and
reproducible) or by an LLM synthesizer (``--synthesizer-model``) whose output
must pass the topic and constraint checkers within ``--attempts`` tries (else
the template message is used and the turn is flagged). A persona colours every
message of a dialogue. The same seed gives the same file, byte for byte.

``import`` turns official EvolIF dialogue files (JSONL, one line per turn)
into a suite YAML file; ``pytest official.jsonl`` runs them without it.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import (
    EMOTIONS,
    FORMAT_MODES,
    GROUPS,
    PAPER_GROUPS,
    READER_AGES,
    STYLES,
    counted,
    min_upper_fraction,
)

#: The system prompt of generated and imported suites: it states the task's rules (cf. the paper's appendix F).
SYSTEM_PROMPT = (
    "You are a helpful assistant in a long conversation with one user. The user may discuss several topics, "
    "switch between them and come back to earlier ones. Each topic has its own requirements for your replies "
    "(format, length, wording, tone and so on). A requirement the user sets for a topic stays in force for "
    "every later reply on that topic until the user changes or removes it; requirements of other topics do "
    "not apply. When the user returns to an earlier topic, that topic's requirements apply again. Follow every "
    "requirement in force exactly, in every reply."
)

# --------------------------------------------------------------------------- seed data


def load_data(name: str) -> list[dict[str, Any]]:
    import yaml

    path = Path(__file__).resolve().parent / "data" / name
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=yaml.CSafeLoader)


# --------------------------------------------------------------------------- the constraint layer

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


def _words(text: str) -> list[str]:
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
    wa, wb = _words(a), _words(b)
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
        needed_words = sum(len(_words(k)) * n for k, n in (constraints.get("existence") or {}).items())
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


# --------------------------------------------------------------------------- instruction and topic layers


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One instruction-layer change: ``kind`` add | modify | remove of constraint ``name``."""

    kind: str
    name: str
    before: Any = None
    after: Any = None

    def label(self) -> str:
        return {"add": "+", "modify": "~", "remove": "-"}[self.kind] + self.name


@dataclass(kw_only=True)
class TopicState:
    topic: Mapping[str, Any]
    #: The instruction state I_T: official constraint id -> args, at most one per group.
    constraints: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    questions_used: list[str] = field(default_factory=list)
    follow_ups_used: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ScriptTurn:
    """A turn of the dialogue script: the structured intention U_t before realisation."""

    index: int
    move: str  # new | continue | backtrack
    state: TopicState
    previous_topic: Mapping[str, Any] | None
    operations: list[Operation]
    #: The constraints in force after this turn's operations (the checks of the turn).
    constraints: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class TrackerConfig:
    groups: tuple[str, ...] = PAPER_GROUPS
    #: Turns spent on a topic before a switch may happen, and the chance of switching after that.
    min_stay: int = 2
    switch_probability: float = 0.3
    backtrack_probability: float = 0.55
    #: Weights of add / modify / remove on a topic that has constraints.
    operation_weights: tuple[float, float, float] = (0.45, 0.35, 0.2)
    max_constraints: int = 7
    initial_constraints: tuple[int, int] = (1, 2)


class Tracker:
    """Three-layer tracking: topics, per-topic instruction states, constraint parameters."""

    def __init__(self, rng: random.Random, topics: Sequence[Mapping[str, Any]],
                 config: TrackerConfig = TrackerConfig()) -> None:
        self.rng = rng
        self.pool = list(topics)
        self.config = config
        self.history: list[TopicState] = []
        self.active: TopicState | None = None
        self.turn = 0

    # -- topic layer
    def _move(self) -> str:
        if self.active is None:
            return "new"
        if self.active.turns < self.config.min_stay or self.rng.random() >= self.config.switch_probability:
            return "continue"
        others = [s for s in self.history if s is not self.active]
        if others and self.rng.random() < self.config.backtrack_probability:
            return "backtrack"
        return "new" if len(self.history) < len(self.pool) else "backtrack"

    def step(self) -> ScriptTurn:
        self.turn += 1
        previous = self.active
        move = self._move()
        if move == "new":
            used = {s.topic["id"] for s in self.history}
            topic = self.rng.choice([t for t in self.pool if t["id"] not in used])
            state = TopicState(topic=topic)
            self.history.append(state)
            operations = self._initial(state)
        else:
            if move == "backtrack":
                state = self.rng.choice([s for s in self.history if s is not previous])
            else:
                assert previous is not None
                state = previous
            operations = [self._evolve(state)]
        state.turns += 1
        self.active = state
        return ScriptTurn(index=self.turn, move=move, state=state,
                          previous_topic=previous.topic if previous is not None else None,
                          operations=[op for op in operations if op is not None],
                          constraints=dict(state.constraints))

    # -- instruction layer
    def _initial(self, state: TopicState) -> list[Operation | None]:
        low, high = self.config.initial_constraints
        return [self._add(state) for _ in range(self.rng.randint(low, high))]

    def _evolve(self, state: TopicState) -> Operation | None:
        count = len(state.constraints)
        free = [g for g in self.config.groups if g not in state.constraints]
        if count == 0:
            kinds = ["add"]
        elif count == 1:
            kinds = ["add", "modify"] if free else ["modify"]
        elif count >= self.config.max_constraints or not free:
            kinds = ["modify", "remove"]
        else:
            kinds = ["add", "modify", "remove"]
        weights = {"add": self.config.operation_weights[0], "modify": self.config.operation_weights[1],
                   "remove": self.config.operation_weights[2]}
        order = self.rng.choices(kinds, weights=[weights[k] for k in kinds], k=1) + kinds
        for kind in dict.fromkeys(order):
            op = {"add": self._add, "modify": self._modify, "remove": self._remove}[kind](state)
            if op is not None:
                return op
        return None

    def _add(self, state: TopicState) -> Operation | None:
        free = [g for g in self.config.groups if g not in state.constraints]
        self.rng.shuffle(free)
        for name in free:
            for _ in range(5):
                args = sample_args(name, self.rng, state.topic, state.constraints)
                if conflict({**state.constraints, name: args}) is None:
                    state.constraints[name] = args
                    return Operation(kind="add", name=name, after=args)
        return None

    def _modify(self, state: TopicState) -> Operation | None:
        names = list(state.constraints)
        self.rng.shuffle(names)
        for name in names:
            before = state.constraints[name]
            others = {k: v for k, v in state.constraints.items() if k != name}
            for _ in range(8):
                after = evolve_args(name, before, self.rng, state.topic, others)
                if after != before and conflict({**others, name: after}) is None:
                    state.constraints[name] = after
                    return Operation(kind="modify", name=name, before=before, after=after)
        return None

    def _remove(self, state: TopicState) -> Operation | None:
        if not state.constraints:
            return None
        name = self.rng.choice(list(state.constraints))
        return Operation(kind="remove", name=name, before=state.constraints.pop(name))


def build_script(rng: random.Random, topics: Sequence[Mapping[str, Any]], turns: int,
                 config: TrackerConfig = TrackerConfig()) -> list[ScriptTurn]:
    tracker = Tracker(rng, topics, config)
    return [tracker.step() for _ in range(turns)]


# --------------------------------------------------------------------------- surface realisation

_AGE_WORDS = {"child": ("children", "child"), "youth": ("teenagers", "youth"), "adult": ("grown-ups", "adult"),
              "senior": ("older people", "senior")}


def request(name: str, args: Any, variant: int = 0) -> str:
    """The constraint as an imperative request (variant picks one of the phrasings)."""
    from .lang import language_name

    def pick(options: Sequence[str]) -> str:
        return options[variant % len(options)]

    if name in ("startwith", "endwith"):
        verb = ("start", "begin") if name == "startwith" else ("end", "finish")
        where = "first" if name == "startwith" else "last"
        mode = args["mode"]
        if mode == "letter":
            return pick((f"{verb[0]} your response with the letter '{args['value']}'",
                         f"make the very {where} character of your reply the letter '{args['value']}'"))
        if mode == "emoji":
            return pick((f"{verb[1]} your reply with the emoji {args['value']}",
                         f"{verb[0]} the response with {args['value']} (that emoji)"))
        if mode == "keyword":
            return pick((f"{verb[0]} your response with the word '{args['value']}'",
                         f"make '{args['value']}' the very {where} word of your reply"))
        left, right = args.get("left") or '"', args.get("right") or '"'
        return pick((f"{verb[1]} your reply with a quotation enclosed in {left} and {right}",
                     f"{verb[0]} the response with a short quote wrapped in {left} and {right}"))
    if name == "format":
        return pick({
            "json": ("format the whole reply as valid JSON, with nothing outside the JSON",
                     "give me the answer as a JSON object and nothing else"),
            "html": ("write the reply as valid HTML with every tag properly nested and closed",
                     "return the answer as well-formed HTML markup only"),
            "xml": ("return the answer as well-formed XML with a single root element",
                    "format your reply as valid XML, nothing else"),
            "csv": ("give the answer as CSV with a header row, the same number of columns in every row, and quotes "
                    "around any field that contains a comma",
                    "format the reply as a valid CSV table with consistent columns and proper quoting"),
            "markdown": ("format the reply in Markdown, with headings or bullet lists",
                         "use Markdown formatting (headings, bold text or lists) in your answer"),
        }[args["mode"]])
    if name == "case":
        if args["mode"] == "all_upper":
            return pick(("write the entire reply in capital letters", "use only uppercase letters, no lowercase"))
        if args["mode"] == "all_lower":
            return pick(("write everything in lowercase letters, with no capitals at all",
                         "keep every single letter lowercase"))
        pct = round(min_upper_fraction(args["min"]) * 100)
        return pick((f"make at least {pct}% of all the letters uppercase",
                     f"make sure no less than {pct}% of the letters are capital letters"))
    if name == "punctuation":
        mark, label = args["value"], MARK_NAMES.get(args["value"], "character")
        if args["mode"] == "must_include":
            return pick((f"include at least one '{mark}' ({label}) somewhere in the reply",
                         f"make sure the reply contains the {label} '{mark}'"))
        return pick((f"do not use the {label} '{mark}' anywhere", f"avoid the {label} '{mark}' completely"))
    if name == "countableItems":
        num = args["num"]
        return pick((f"include exactly {num} bullet points, each on its own line starting with '* ' or '- '",
                     f"structure it as exactly {num} bullet points marked with * or -"))
    if name == "length":
        unit = {"word": "words", "sentence": "sentences", "paragraph": "paragraphs (separated by blank lines)",
                "characters": "characters"}[args["mode"]]
        n, relation = args["number"], args["relation"]
        if relation == "less_than":
            return pick((f"keep the reply under {n} {unit}", f"use fewer than {n} {unit}"))
        if relation == "more_than":
            return pick((f"write more than {n} {unit}", f"make the reply longer than {n} {unit}"))
        return pick((f"use exactly {n} {unit}", f"make the reply exactly {n} {unit} long"))
    if name == "existence":
        parts = [f"'{k}' exactly {counted(v)}" for k, v in args.items()]
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return pick((f"use {listed}", f"mention {listed}"))
    if name == "forbidden":
        words = [f"'{k}'" for k in args["keywords"]]
        listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
        return pick((f"do not use the word{'s' if len(words) > 1 else ''} {listed}",
                     f"avoid {listed} entirely"))
    if name == "emotion":
        return pick((f"give the reply a clearly {args['emotion']} emotional tone",
                     f"make it sound {args['emotion']} throughout"))
    if name == "style":
        style = args["style"]
        if style in ("active voice", "passive voice"):
            return pick((f"write it in the {style}", f"use the {style} throughout"))
        article = "an" if style[:1] in "aeiou" else "a"
        return pick((f"write it in {article} {style} style", f"keep the style {style}"))
    if name == "reader_age":
        plural, word = _AGE_WORDS[args["reader_age"]]
        return pick((f"tailor it for {plural} (the {word} age group)", f"make it suitable for {word} readers"))
    if name == "language":
        return pick((f"answer in {language_name(args['lang'])}",
                     f"write the whole reply in {language_name(args['lang'])}"))
    raise KeyError(name)


_STOP = set("a an the and or of to in on for with by at from my your our their is are be how what which "
            "between about into over before after without some few".split())


def topic_clue(topic: Mapping[str, Any]) -> str:
    title = topic["title"]
    return title[0].lower() + title[1:]


def topic_checker(query: str, topic: Mapping[str, Any]) -> bool:
    """The message points at the topic: it contains one of its keywords or a content word of its title."""
    words = _words(query)
    text = " ".join(words)
    for keyword in topic["keywords"]:
        if " ".join(_words(keyword)) in text:
            return True
    return any(w in words for w in _words(topic["title"]) if w not in _STOP and len(w) >= 4)


_NUMBER_WORDS = {1: ("one", "once", "single"), 2: ("two", "twice", "pair"), 3: ("three", "thrice"), 4: ("four",),
                 5: ("five",), 6: ("six",), 7: ("seven",), 8: ("eight",), 9: ("nine",), 10: ("ten",),
                 12: ("twelve",), 20: ("twenty",)}
_MODE_WORDS = {
    "json": ("json",), "html": ("html",), "xml": ("xml",), "csv": ("csv",), "markdown": ("markdown",),
    "all_upper": ("upper", "capital", "caps"), "all_lower": ("lower",), "min_upper": ("upper", "capital"),
    "word": ("word",), "sentence": ("sentence",), "paragraph": ("paragraph",), "characters": ("character",),
}
_VALUE_WORDS = {
    "child": ("child", "kid"), "youth": ("youth", "teen", "young"), "adult": ("adult", "grown"),
    "senior": ("senior", "older", "elderly"), "active voice": ("active",), "passive voice": ("passive",),
}


def _mentions_number(query: str, number: int) -> bool:
    if re.search(rf"(?<!\d){number}(?!\d)", query):
        return True
    lowered = query.lower()
    return any(re.search(rf"\b{w}\b", lowered) for w in _NUMBER_WORDS.get(number, ()))


def _mentions(query: str, *options: str) -> bool:
    lowered = query.casefold()
    return any(o.casefold() in lowered for o in options)


def constraint_checker(query: str, operations: Sequence[Operation]) -> bool:
    """Every added or modified constraint's key values appear in the message (removals pass)."""
    from .lang import language_name

    for op in operations:
        if op.kind == "remove":
            continue
        args, name = op.after, op.name
        if name in ("startwith", "endwith"):
            mode = args["mode"]
            if mode == "quotation":
                ok = _mentions(query, args.get("left") or '"') and _mentions(query, args.get("right") or '"')
            elif mode == "letter":
                ok = re.search(rf"(?<![^\W_]){re.escape(args['value'])}(?![^\W_])", query, re.IGNORECASE) is not None
            else:
                ok = _mentions(query, args["value"])
            ok = ok and _mentions(query, *(("start", "begin", "open", "first", "kick")
                                            if name == "startwith" else ("end", "finish", "close", "last", "wrap")))
        elif name in ("format", "case"):
            ok = _mentions(query, *_MODE_WORDS[args["mode"]])
            if args["mode"] == "min_upper":
                ok = ok and _mentions_number(query, round(min_upper_fraction(args["min"]) * 100))
        elif name == "punctuation":
            ok = _mentions(query, args["value"], MARK_NAMES.get(args["value"], args["value"]))
        elif name == "countableItems":
            ok = _mentions_number(query, args["num"]) and _mentions(query, "bullet", "point", "item")
        elif name == "length":
            ok = _mentions_number(query, args["number"]) and _mentions(query, *_MODE_WORDS[args["mode"]])
        elif name == "existence":
            ok = all(_mentions(query, k) and _mentions_number(query, n) for k, n in args.items())
        elif name == "forbidden":
            ok = all(_mentions(query, k) for k in args["keywords"])
        elif name == "language":
            ok = _mentions(query, language_name(args["lang"]))
        else:
            value = args.get(name) or args.get("value")
            ok = _mentions(query, *_VALUE_WORDS.get(value, (value,)))
        if not ok:
            return False
    return True


_CONNECTORS = ("Also, please {r}.", "One more thing: please {r}.", "Additionally, {r}.",
               "On top of that, please {r}.")
_MODIFIERS = ("Let's change one requirement: instead of {old}, please {new}.",
              "Small update: forget {old} and {new} instead.",
              "Please replace my earlier request ({old}) with this one: {new}.")
_REMOVERS = ("You no longer need to follow this earlier request: {old}.",
             "Drop the earlier requirement {old}; it no longer applies.",
             "Forget what I said before about this: {old}.")
_SOFT_LENGTH = re.compile(r"short|concise|brief|fluff|tl;dr|quick", re.IGNORECASE)
_SWITCHES = ("New question:", "Something different now.", "Changing the subject:", "Another thing I wanted to ask:")
_SWITCHES_NAMED = ("New question, about {clue}:", "Changing the subject to {clue}:",
                   "Something different now, about {clue}.")
_REVISE = ("Please revise your answer accordingly.", "Update your last answer to match.",
           "Give me the answer again with that change.")


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _quote(text: str) -> str:
    """Quote an earlier request with marks it does not contain itself."""
    for left, right in (('"', '"'), ("“", "”"), ("‘", "’")):
        if left not in text and right not in text:
            return f"{left}{text}{right}"
    return f"[{text}]"


def describe_operation(op: Operation, variant: int) -> str:
    if op.kind == "add":
        return _CONNECTORS[variant % len(_CONNECTORS)].format(r=request(op.name, op.after, variant))
    if op.kind == "modify":
        return _MODIFIERS[variant % len(_MODIFIERS)].format(old=_quote(request(op.name, op.before, 0)),
                                                            new=request(op.name, op.after, variant))
    return _REMOVERS[variant % len(_REMOVERS)].format(old=_quote(request(op.name, op.before, 0)))


def _fresh(rng: random.Random, options: Sequence[str], used: list[str]) -> str | None:
    unused = [o for o in options if o not in used]
    if not unused:
        return None
    choice = rng.choice(unused)
    used.append(choice)
    return choice


class TemplateRealiser:
    """Writes a script turn as a user message with templates; needs no model."""

    def __init__(self, rng: random.Random, persona: Mapping[str, Any]) -> None:
        self.rng = rng
        self.persona = persona

    def realise(self, turn: ScriptTurn) -> str:
        rng, state = self.rng, turn.state
        styles = set(self.persona.get("styles", ()))
        parts: list[str] = []
        if turn.move == "new":
            question = _fresh(rng, state.topic["questions"], state.questions_used) or state.topic["questions"][0]
            if turn.index > 1:  # a topic switch names its topic (the paper's topic checker)
                lead = rng.choice(_SWITCHES)
                if not topic_checker(question, state.topic):
                    lead = rng.choice(_SWITCHES_NAMED).format(clue=topic_clue(state.topic))
                question = f"{lead} {question}"
            parts.append(question)
            requests = [request(op.name, op.after, rng.randrange(4)) for op in turn.operations]
            if requests:
                listed = requests[0] if len(requests) == 1 else ", ".join(requests[:-1]) + ", and " + requests[-1]
                parts.append(f"Please {listed}.")
        else:
            follow = _fresh(rng, state.topic["follow_ups"], state.follow_ups_used) if rng.random() < 0.6 else None
            if turn.move == "backtrack":
                lead = f"Going back to our earlier topic, {topic_clue(state.topic)}"
                parts.append(f"{lead}: {follow}" if follow else f"{lead}.")
            elif follow:
                parts.append(follow)
            parts.extend(describe_operation(op, rng.randrange(6)) for op in turn.operations)
            if not follow:
                parts.append(rng.choice(_REVISE))
        text = " ".join(parts)
        if "enthusiastic" in styles:
            text = text[:-1] + "!" if text.endswith(".") else text
        if "hesitant" in styles and rng.random() < 0.3:
            text = "If it's okay, " + text[:1].lower() + text[1:]
        openers, closers = self.persona.get("openers") or [], self.persona.get("closers") or []
        if (turn.constraints.get("length") or {}).get("relation") in ("more_than", "exactly"):
            # a persona's "keep it short" must not read as a second, conflicting length requirement
            openers = [o for o in openers if not _SOFT_LENGTH.search(o)]
            closers = [c for c in closers if not _SOFT_LENGTH.search(c)]
        if openers and "terse" not in styles and rng.random() < (0.6 if turn.move == "new" else 0.15):
            text = f"{rng.choice(openers)} {text}"
        if closers and rng.random() < 0.35:
            text = f"{text} {rng.choice(closers)}"
        return _capitalise(text)


# --------------------------------------------------------------------------- the LLM synthesizer

_SYNTH_SYSTEM = (
    "You write the next message that a user sends to an AI assistant in an ongoing chat. Write it in the "
    "user's own voice and speaking style. Output only JSON of the form {\"user_query\": \"<the message>\"}."
)


def synthesis_prompt(turn: ScriptTurn, persona: Mapping[str, Any], draft: str) -> str:
    topic = turn.state.topic
    if turn.move == "new":
        situation = (f"The user opens a new topic: {topic['title']}. The message must ask for this: "
                     f"{draft.split(' Please ')[0]}")
    elif turn.move == "backtrack":
        situation = (f"The user goes back to an earlier topic of the chat: {topic['title']}. The message must "
                     "name that topic concretely (a generic 'the earlier topic' is not enough).")
    else:
        situation = "The user continues the current topic."
    changes = []
    for op in turn.operations:
        if op.kind == "add":
            changes.append(f"- new requirement: {request(op.name, op.after)}")
        elif op.kind == "modify":
            changes.append(f"- change the requirement \"{request(op.name, op.before)}\" into: "
                           f"{request(op.name, op.after)}")
        else:
            changes.append(f"- drop the requirement: {request(op.name, op.before)}")
    return (
        f"User persona: {persona['persona']}\n"
        f"Speaking style: {', '.join(persona.get('styles', ()))}\n"
        f"Situation: {situation}\n"
        "Requirement changes the message must state precisely (keep every number, word, letter, emoji and "
        "symbol exactly as given):\n" + "\n".join(changes) + "\n"
        f"A plain version of the message, for reference: {draft}\n"
        "Do not add any other requirement and do not answer the request yourself."
    )


def _schema(name: str, key: str, kind: str) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": {
        "type": "object", "properties": {key: {"type": kind}}, "required": [key]}}}


@dataclass(kw_only=True)
class LLMSynthesizer:
    """Rewrites template drafts in the persona's voice with a model; checked, retried, else the draft."""

    client: Any  # pytest_ifbench._client.ModelClient
    attempts: int = 3
    temperature: float = 1.0
    llm_topic_check: bool = True
    calls: int = 0

    async def _ask(self, messages: list[dict[str, Any]], seed: int, fmt: dict[str, Any]) -> str:
        from ..._model_types import GenerationParams

        self.calls += 1
        reply = await self.client.complete(
            messages, GenerationParams(temperature=self.temperature, max_tokens=400, seed=seed), response_format=fmt)
        return reply.text

    async def _related(self, query: str, topic: Mapping[str, Any], seed: int) -> bool:
        import json

        from ..._text import first_json_object

        prompt = (f"Message: {query}\nTopic: {topic['title']}\nDoes the message contain a concrete reference to "
                  "the topic (a paraphrase or a specific keyword of it)? A generic reference such as 'the earlier "
                  'topic\' does not count. Answer JSON only: {"related": true or false}')
        fmt = _schema("topic_check", "related", "boolean")
        text = await self._ask([{"role": "user", "content": prompt}], seed, fmt)
        try:
            return bool(json.loads(first_json_object(text) or "{}").get("related") is True)
        except ValueError:
            return False

    async def realise(self, turn: ScriptTurn, persona: Mapping[str, Any], draft: str,
                      seed: int) -> tuple[str, dict[str, Any]]:
        import json

        from ..._text import first_json_object

        messages = [{"role": "system", "content": _SYNTH_SYSTEM},
                    {"role": "user", "content": synthesis_prompt(turn, persona, draft)}]
        needs_topic = turn.move in ("new", "backtrack") and turn.index > 1
        for attempt in range(1, self.attempts + 1):
            text = await self._ask(messages, seed + attempt, _schema("user_query", "user_query", "string"))
            try:
                query = str(json.loads(first_json_object(text) or "{}").get("user_query", "")).strip()
            except ValueError:
                query = ""
            if not query or not constraint_checker(query, turn.operations):
                continue
            if needs_topic and not topic_checker(query, turn.state.topic):
                if not (self.llm_topic_check and await self._related(query, turn.state.topic, seed + attempt)):
                    continue
            return query, {"attempts": attempt}
        return draft, {"attempts": self.attempts, "flagged": True}


# --------------------------------------------------------------------------- suites


@dataclass(kw_only=True)
class SynthConfig:
    seed: int = 0
    dialogues: int = 30
    start: int = 1
    turns: int = 50
    patience: int = 3
    max_tokens: int | None = 1024
    id_prefix: str = "evolif"
    markers: tuple[str, ...] = ()
    system: bool = True
    groups: tuple[str, ...] = PAPER_GROUPS
    min_average_constraints: float = 2.0
    description: str = ""


def _check(name: str, args: Any) -> dict[str, Any]:
    return {"id": name, "verifier": f"evolif.{name}", "params": args}


def dialogue_rng(seed: int, index: int, attempt: int = 0) -> random.Random:
    return random.Random(f"evolif:{seed}:{index}:{attempt}")


def plan_dialogue(config: SynthConfig, index: int, topics: Sequence[Mapping[str, Any]],
                  personas: Sequence[Mapping[str, Any]]) -> tuple[random.Random, Mapping[str, Any], list[ScriptTurn]]:
    """The script of dialogue ``index``: the first attempt whose first 20 turns average
    ``min_average_constraints`` or more (the paper's triviality filter)."""
    tracker_config = TrackerConfig(groups=config.groups)
    for attempt in range(50):
        rng = dialogue_rng(config.seed, index, attempt)
        persona = rng.choice(list(personas))
        script = build_script(rng, topics, config.turns, tracker_config)
        head = script[:20]
        if sum(len(t.constraints) for t in head) / len(head) >= config.min_average_constraints:
            return rng, persona, script
    return rng, persona, script


def build_instance(config: SynthConfig, index: int, topics: Sequence[Mapping[str, Any]],
                   personas: Sequence[Mapping[str, Any]], synthesizer: LLMSynthesizer | None = None,
                   runner: Any = None) -> dict[str, Any]:
    rng, persona, script = plan_dialogue(config, index, topics, personas)
    realiser = TemplateRealiser(rng, persona)
    turns, flagged = [], []
    for turn in script:
        text = realiser.realise(turn)
        if synthesizer is not None:
            text, info = runner.run(synthesizer.realise(turn, persona, text, seed=config.seed * 100_000 + index * 100
                                                        + turn.index))
            if info.get("flagged"):
                flagged.append(turn.index)
        turns.append({"user": text, "checks": [_check(n, _params(n, a)) for n, a in turn.constraints.items()]})
    metadata: dict[str, Any] = {
        "patience": config.patience, "seed": config.seed, "persona": persona["id"],
        "topics": list(dict.fromkeys(t.state.topic["id"] for t in script)),
        "script": [f"{t.move} {t.state.topic['id']} {' '.join(op.label() for op in t.operations)}".strip()
                   for t in script],
    }
    if synthesizer is not None:
        metadata["synthesizer"] = getattr(synthesizer.client, "model", "llm")
        metadata["flagged_turns"] = flagged
    return {"id": f"{config.id_prefix}-{index:03d}", "metadata": metadata, "turns": turns}


def _params(name: str, args: Any) -> Any:
    return {"keywords": list(args)} if isinstance(args, list) else args


def suite_defaults(*, patience: int, max_tokens: int | None, system: bool, markers: Sequence[str]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    if system:
        defaults["system"] = SYSTEM_PROMPT
    defaults["protocol"] = "multi_turn"
    defaults["protocol_options"] = {"patience": patience, "subtests": "turn"}
    defaults["generation"] = {"temperature": 0.0, "max_tokens": max_tokens}
    if markers:
        defaults["markers"] = list(markers)
    return defaults


def build_suite(config: SynthConfig, synthesizer: LLMSynthesizer | None = None) -> dict[str, Any]:
    import asyncio

    topics, personas = load_data("topics.yaml"), load_data("personas.yaml")
    description = config.description or (
        f"{config.dialogues} EvolIF-style dialogues of {config.turns} scripted turns (seed {config.seed}): "
        "topics are continued, opened and revisited, each topic's constraints evolve turn by turn, and the "
        "dialogue ends when the model exhausts the user's patience.")
    runner = asyncio.Runner() if synthesizer is not None else None
    try:
        instances = [build_instance(config, index, topics, personas, synthesizer, runner)
                     for index in range(config.start, config.start + config.dialogues)]
    finally:
        if runner is not None:
            runner.close()
    return {
        "ifbench": 1, "benchmark": "evolif", "description": description,
        "defaults": suite_defaults(patience=config.patience, max_tokens=config.max_tokens, system=config.system,
                                   markers=config.markers),
        "instances": instances,
    }


class _Flow(dict):
    """A mapping written in YAML flow style (one line)."""


def dump_suite(data: Mapping[str, Any], header: str = "") -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(_Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(),
                                                                   flow_style=True))

    def flow(value: Any, depth: int = 0) -> Any:
        if isinstance(value, dict):
            if {"id", "verifier"} <= set(value) or depth and all(not isinstance(v, (dict, list))
                                                                 for v in value.values()):
                return _Flow({k: flow(v, depth + 1) for k, v in value.items()})
            return {k: flow(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [flow(v, depth + 1) for v in value]
        return value

    body = yaml.dump(flow(dict(data)), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=110,
                     default_flow_style=False)
    return header + body


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifbench generate evolif",
                                     description="Generate EvolIF dialogue suites, or import official EvolIF files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    synth = commands.add_parser("synth", help="generate dialogues (three-layer tracking + realisation)",
                                description="Generate seeded EvolIF dialogues as a suite YAML file.")
    synth.add_argument("--out", required=True, metavar="FILE", help="suite file to write ('-' for stdout)")
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--dialogues", type=int, default=30, metavar="N")
    synth.add_argument("--start", type=int, default=1, metavar="K",
                       help="index of the first dialogue (ids <prefix>-<K>...; lets one seed span several files)")
    synth.add_argument("--turns", type=int, default=50, metavar="T", help="scripted turns per dialogue")
    _common(synth)
    synth.add_argument("--id-prefix", default="evolif", metavar="PREFIX")
    synth.add_argument("--groups", default=",".join(PAPER_GROUPS), metavar="IDS",
                       help="comma-separated constraint ids to draw from (default: the paper's 12 groups; "
                            "'language' is also available)")
    synth.add_argument("--description", default="")
    synth.add_argument("--synthesizer-model", default=None, metavar="MODEL",
                       help="litellm model that rewrites each turn in the persona's voice (default: templates only)")
    synth.add_argument("--api-base", default=None, metavar="URL")
    synth.add_argument("--attempts", type=int, default=3, help="synthesizer tries per turn before the template is used")
    synth.add_argument("--temperature", type=float, default=1.0, help="synthesizer sampling temperature")
    synth.add_argument("--no-llm-topic-check", action="store_true",
                       help="only the keyword topic checker (no LLM fallback)")
    synth.add_argument("--cache", default=None, metavar="DIR", help="response cache for synthesizer calls")

    importer = commands.add_parser("import", help="convert official EvolIF dialogue files to a suite",
                                   description="Convert official EvolIF dialogue files (JSONL, one line per "
                                               "turn) into one suite YAML file.")
    importer.add_argument("files", nargs="+", metavar="FILE")
    importer.add_argument("--out", required=True, metavar="FILE", help="suite file to write ('-' for stdout)")
    _common(importer)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--patience", type=int, default=3, metavar="P", help="user patience (default 3)")
    parser.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                        help="max_tokens of each reply (0: the provider's default)")
    parser.add_argument("--marker", dest="markers", action="append", default=[], metavar="NAME",
                        help="marker for every instance, e.g. full; repeatable")
    parser.add_argument("--no-system", action="store_true", help="no system prompt")


def _write(text: str, out: str) -> None:
    if out == "-":
        sys.stdout.write(text)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _command_line(argv: Sequence[str]) -> str:
    """The command that wrote a file, without its ``--out`` (so regenerating gives the same bytes)."""
    import shlex

    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--out":
            skip = True
            continue
        if arg.startswith("--out="):
            continue
        kept.append(arg)
    return "ifbench generate evolif " + " ".join(shlex.quote(a) for a in kept) + " --out FILE"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.patience < 1:
        print(f"ifbench generate evolif {args.command}: error: --patience must be >= 1", file=sys.stderr)
        return 2
    max_tokens = args.max_tokens or None
    if args.command == "import":
        from .official import EvolifFormatError, suite_from_files

        try:
            data = suite_from_files([Path(f) for f in args.files], patience=args.patience, max_tokens=max_tokens,
                                    system=not args.no_system, markers=args.markers)
        except (OSError, EvolifFormatError) as exc:
            print(f"ifbench generate evolif import: error: {exc}", file=sys.stderr)
            return 2
        _write(dump_suite(data, f"# Imported by: {_command_line(argv)}\n"), args.out)
        return 0
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        print(f"ifbench generate evolif synth: error: unknown constraint id(s) {unknown} "
              f"(known: {', '.join(GROUPS)})", file=sys.stderr)
        return 2
    config = SynthConfig(seed=args.seed, dialogues=args.dialogues, start=args.start, turns=args.turns,
                         patience=args.patience, max_tokens=max_tokens, id_prefix=args.id_prefix,
                         markers=tuple(args.markers), system=not args.no_system, groups=groups,
                         description=args.description)
    synthesizer = None
    if args.synthesizer_model:
        from ..._cache import ResponseCache
        from ..._client import ModelClient

        client = ModelClient(model=args.synthesizer_model, api_base=args.api_base,
                             cache=ResponseCache(Path(args.cache)) if args.cache else None)
        synthesizer = LLMSynthesizer(client=client, attempts=args.attempts, temperature=args.temperature,
                                     llm_topic_check=not args.no_llm_topic_check)
    data = build_suite(config, synthesizer)
    header = f"# Generated by: {_command_line(argv)}\n# Do not edit by hand; regenerate with the command above.\n"
    _write(dump_suite(data, header), args.out)
    return 0
