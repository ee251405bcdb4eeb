"""EvolIF generator, surface realisation: a script turn as a user message.

``TemplateRealiser`` writes each turn with templates (no model: offline and
reproducible); ``LLMSynthesizer`` rewrites the template draft in the persona's
voice with a model and keeps its message only when it passes the topic and
constraint checkers (``topic_checker``, ``constraint_checker``) within its
attempts, else the draft is used and the turn is flagged.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import counted, min_upper_fraction
from .sampling import MARK_NAMES, word_tokens
from .tracking import Operation, ScriptTurn

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
    words = word_tokens(query)
    text = " ".join(words)
    for keyword in topic["keywords"]:
        if " ".join(word_tokens(keyword)) in text:
            return True
    return any(w in words for w in word_tokens(topic["title"]) if w not in _STOP and len(w) >= 4)


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

    client: Any  # pytest_ifbench.models.client.ModelClient
    attempts: int = 3
    temperature: float = 1.0
    llm_topic_check: bool = True
    calls: int = 0

    async def _ask(self, messages: list[dict[str, Any]], seed: int, fmt: dict[str, Any]) -> str:
        from pytest_ifbench import GenerationParams

        self.calls += 1
        reply = await self.client.complete(
            messages, GenerationParams(temperature=self.temperature, max_tokens=400, seed=seed), response_format=fmt)
        return reply.text

    async def _related(self, query: str, topic: Mapping[str, Any], seed: int) -> bool:
        import json

        from pytest_ifbench import first_json_object

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

        from pytest_ifbench import first_json_object

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
