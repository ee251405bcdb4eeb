"""EvolIF constraints (Jia et al., Table 6) under their official ids: ``evolif.<id>``.

``params`` is the official ``args`` value unchanged, so official dialogues run
as they are. The nine objective groups (and the authors' extra ``language``
constraint) are deterministic, offline Python checks; ``emotion``, ``style``
and ``reader_age`` are judged on a 1-10 scale and pass above 6 (appendix C.2),
batched with every other judged check of the same turn. The exact rules are
in docs/evolif.md; the text measurements live in ``text``.

Every verifier takes ``compat``: ``paper`` (default: the paper and the
instruction text the model is shown) or ``reference`` (the authors' released
checkers verdict for verdict, ``reference.py``). Judged constraints take it
too and are judged the same way in both modes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_ifbench import Param, ParamError, Verdict, Verifier

from . import text as T
from .catalog import (
    CASE_MODES,
    EDGE_MODES,
    FORMAT_MODES,
    LENGTH_MODES,
    LENGTH_RELATIONS,
    PUNCTUATION_MODES,
    judge_criterion,
    min_upper_fraction,
    requirement,
)

VERSION = "2"
#: The two rule sets (docs/evolif.md, "paper vs reference").
COMPAT = ("paper", "reference")
_COMPAT_PARAM = Param(str, default="paper", choices=COMPAT,
                      description="paper (the paper and the shown instruction) or reference (the authors' checkers)")


def _keyword_list(params: Any) -> Any:
    """The official ``forbidden`` args are a bare list: validate it as ``{"keywords": [...]}``."""
    return {"keywords": list(params)} if isinstance(params, (list, tuple)) else params


def _show(text: str, limit: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# --------------------------------------------------------------------------- start / end


def _check_edge(params: Mapping[str, Any]) -> None:
    mode = params["mode"]
    if mode in ("letter", "emoji", "keyword"):
        value = params.get("value")
        if not isinstance(value, str) or not value.strip():
            raise ParamError("value", f"required for mode {mode!r}")
        if mode == "letter" and not (len(value) == 1 and value.isalpha()):
            raise ParamError("value", f"mode 'letter' needs a single letter, got {value!r}")


def _edge_params() -> dict[str, Param]:
    return {
        "mode": Param(str, choices=EDGE_MODES),
        "value": Param(str, default="", description="the letter, emoji or keyword (modes letter/emoji/keyword)"),
        "left": Param(str, default="", description="opening quotation mark (mode quotation; default \")"),
        "right": Param(str, default="", description="closing quotation mark (mode quotation; default \")"),
    }


def startwith(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply starts with the letter, emoji, keyword or quotation (mode)."""
    body = T.lead(text)
    mode = params["mode"]
    head = _show(body[:30])
    if mode == "letter":
        ok = bool(body) and body[0].casefold() == params["value"].casefold()
    elif mode == "emoji":
        ok = T.no_variation_selectors(body).startswith(T.no_variation_selectors(params["value"]))
    elif mode == "keyword":
        keyword = params["value"].strip()
        ok = T.keyword_pattern(keyword).match(body) is not None
    else:
        left, right = params.get("left") or '"', params.get("right") or '"'
        ok = body.startswith(left) and body.find(right, len(left)) != -1
    return Verdict(passed=ok, evidence=f"the response begins {head}")


def endwith(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply ends with the letter, emoji, keyword or quotation (mode)."""
    mode = params["mode"]
    if mode == "letter":
        body = T.trail(text, punctuation=True)
        ok = bool(body) and body[-1].casefold() == params["value"].casefold()
    elif mode == "emoji":
        body = T.trail(text)
        ok = T.no_variation_selectors(body).endswith(T.no_variation_selectors(params["value"]))
    elif mode == "keyword":
        body = T.trail(text, punctuation=True)
        keyword = params["value"].strip()
        ok = any(m.end() == len(body) for m in T.keyword_pattern(keyword).finditer(body))
    else:
        body = T.trail(text)
        left, right = params.get("left") or '"', params.get("right") or '"'
        ok = body.endswith(right) and body.rfind(left, 0, len(body) - len(right)) != -1
    return Verdict(passed=ok, evidence=f"the response ends {_show(body[-30:])}")


# --------------------------------------------------------------------------- format, case, punctuation


def fmt(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply is valid JSON, HTML, XML, CSV or Markdown (mode)."""
    ok, evidence = T.FORMAT_CHECKS[params["mode"]](text)
    return Verdict(passed=ok, evidence=evidence)


def _check_case(params: Mapping[str, Any]) -> None:
    if params["mode"] == "min_upper" and not params["min"] > 0:
        raise ParamError("min", "mode 'min_upper' needs min > 0 (a fraction 0..1, or a percentage above 1)")


def case(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Every letter upper case, every letter lower case, or a minimum share upper case (mode)."""
    upper = sum(1 for c in text if c.isupper())
    lower = sum(1 for c in text if c.islower())
    letters = upper + lower
    mode = params["mode"]
    if not letters:
        return Verdict(passed=False, evidence="the response has no cased letters")
    if mode == "all_upper":
        ok = lower == 0
        evidence = f"{lower} lower-case letter(s)" + (f", e.g. in {_show(_first_word(text, str.islower))}"
                                                      if lower else "")
    elif mode == "all_lower":
        ok = upper == 0
        evidence = f"{upper} upper-case letter(s)" + (f", e.g. in {_show(_first_word(text, str.isupper))}"
                                                      if upper else "")
    elif type(params["min"]) is int:  # an official percentage: "Approximately n% ... uppercase"
        share = 100 * upper / letters
        ok = abs(share - params["min"]) <= MIN_UPPER_TOLERANCE
        evidence = (f"{upper} of {letters} letters upper case ({share:.1f}%; required about {params['min']}% "
                    f"± {MIN_UPPER_TOLERANCE})")
    else:  # a generated fraction, shown as "at least n%"
        need = min_upper_fraction(params["min"])
        ratio = upper / letters
        ok = ratio >= need
        evidence = f"{upper} of {letters} letters upper case ({ratio:.1%}; required at least {need:.1%})"
    return Verdict(passed=ok, evidence=evidence)


#: "Approximately n%" in percentage points, the tolerance the authors' checker applies.
MIN_UPPER_TOLERANCE = 3


def _first_word(text: str, test) -> str:
    for word in text.split():
        if any(test(c) for c in word):
            return word
    return ""


def punctuation(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply contains (or never contains) the punctuation mark."""
    value = params["value"]
    count = text.count(value)
    ok = count > 0 if params["mode"] == "must_include" else count == 0
    return Verdict(passed=ok, evidence=f"{value!r} occurs {count} time(s)")


# --------------------------------------------------------------------------- counts


def countable_items(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply has exactly num bullet points (lines starting with *, -, + or a bullet)."""
    count = T.count_bullets(text)
    return Verdict(passed=count == params["num"], evidence=f"{count} bullet point(s), required {params['num']}")


_MEASURES = {
    "word": T.count_words,
    "paragraph": lambda text: len(T.paragraphs(text)),
    "characters": lambda text: len(text.strip()),
    "sentence": T.count_sentences,
}


def length(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply's words, paragraphs, characters or sentences are less than, more than or exactly number."""
    count = _MEASURES[params["mode"]](text)
    number, relation = params["number"], params["relation"]
    ok = count < number if relation == "less_than" else count > number if relation == "more_than" else count == number
    unit = {"word": "words", "paragraph": "paragraphs", "characters": "characters", "sentence": "sentences"}
    return Verdict(passed=ok, evidence=f"{count} {unit[params['mode']]} (required {relation} {number})")


def _keywords(params: Mapping[str, Any]) -> dict[str, Any]:
    """``existence`` params are ``{keyword: count}``; ``compat`` is the one reserved key."""
    return {k: v for k, v in params.items() if k != "compat"}


def _check_existence(params: Mapping[str, Any]) -> None:
    if not _keywords(params):
        raise ParamError("params", "expected at least one {keyword: exact count} entry")
    for keyword, count in _keywords(params).items():
        if not isinstance(keyword, str) or not keyword.strip():
            raise ParamError(str(keyword), "keywords must be non-empty strings")
        if type(count) is not int or count < 0:
            raise ParamError(keyword, f"expected a count (int >= 0), got {count!r}")


def existence(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Each keyword (the params' keys) occurs exactly its count of times (whole words, any case)."""
    counts = {keyword: T.count_keyword(text, keyword) for keyword in _keywords(params)}
    wrong = {k: c for k, c in counts.items() if c != params[k]}
    shown = ", ".join(f"{k!r}: {c} (required {params[k]})" for k, c in counts.items())
    return Verdict(passed=not wrong, evidence=shown, details={"counts": counts})


def _check_forbidden(params: Mapping[str, Any]) -> None:
    if not params["keywords"] or not all(k.strip() for k in params["keywords"]):
        raise ParamError("keywords", "expected at least one non-empty keyword")


def forbidden(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """No keyword occurs (whole words, any case); params may be the official bare list."""
    present = {k: n for k in params["keywords"] if (n := T.count_keyword(text, k))}
    if present:
        return Verdict(passed=False, evidence="forbidden: " + ", ".join(f"{k!r} x{n}" for k, n in present.items()))
    return Verdict(passed=True, evidence="none of the forbidden keywords occurs")


def language(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The reply is written in the language lang (offline script and function-word detector)."""
    from .lang import detect, normalise

    found, why = detect(text)
    want = normalise(params["lang"])
    return Verdict(passed=found == want, evidence=f"detected {found or 'undetermined'} ({why}); required {want}")


# --------------------------------------------------------------------------- registration


def _with_compat(name: str, func):
    """``func`` under ``compat: paper``, the authors' checker (``reference.CHECKS[name]``) under ``reference``."""
    def verify(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
        if params.get("compat") == "reference":
            from .reference import CHECKS

            clean = {k: v for k, v in params.items() if k != "compat"}
            ok, evidence = CHECKS[name](text, clean)
            return Verdict(passed=ok, evidence=f"{evidence} [authors' checker]", details={"compat": "reference"})
        return func(text, params, ctx)

    verify.__doc__ = func.__doc__
    return verify


def _python(id_: str, func, params: Mapping[str, Param], *, check=None, extra=False,
            coerce=None) -> Verifier:
    name = id_.split(".", 1)[1]
    return Verifier(
        id=id_, func=_with_compat(name, func), params=dict(params) | {"compat": _COMPAT_PARAM}, version=VERSION,
        kind="python",
        description=(func.__doc__ or "").strip(),
        allow_extra_params=extra, check_params=check, coerce_params=coerce,
        criterion=lambda p, _n=name: requirement(_n, p),
    )


def _subjective(name: str) -> Verifier:
    def check(params: Mapping[str, Any]) -> None:
        values = {v.strip() for v in (params.get(name), params.get("value")) if v and v.strip()}
        if not values:
            raise ParamError(name, f"required: the target {name.replace('_', ' ')} (as {name!r} or 'value')")
        if len(values) > 1:
            raise ParamError("value", f"{name!r} and 'value' disagree: {sorted(values)}")

    return Verifier(
        id=f"evolif.{name}", func=None, kind="judge", version=VERSION, judge_scale=10,
        params={
            name: Param(str, default="", description=f"the target {name.replace('_', ' ')} (official key)"),
            "value": Param(str, default="", description=f"the target {name.replace('_', ' ')} (alternative key)"),
            "threshold": Param(float, default=6.0, min=0, max=10, description="passes when the score is above it"),
            "compat": _COMPAT_PARAM,
        },
        check_params=check,
        description=f"An LLM judge rates 1-10 how well the reply meets the {name.replace('_', ' ')} "
                    "requirement; passes above 6.",
        criterion=lambda p: judge_criterion(name, p),
    )


def register(registry) -> None:
    edge = _edge_params()
    registry.add(_python("evolif.startwith", startwith, edge, check=_check_edge))
    registry.add(_python("evolif.endwith", endwith, edge, check=_check_edge))
    registry.add(_python("evolif.format", fmt, {"mode": Param(str, choices=FORMAT_MODES)}))
    registry.add(_python("evolif.case", case, {
        "mode": Param(str, choices=CASE_MODES),
        "min": Param(float, default=0.0, min=0, max=100,
                     description="mode min_upper: minimum upper-case share (0..1, or a percentage above 1)"),
    }, check=_check_case))
    registry.add(_python("evolif.punctuation", punctuation, {
        "mode": Param(str, choices=PUNCTUATION_MODES),
        "value": Param(str, description="the punctuation mark (any string)"),
    }))
    registry.add(_python("evolif.countableItems", countable_items, {"num": Param(int, min=0)}))
    registry.add(_python("evolif.length", length, {
        "mode": Param(str, choices=LENGTH_MODES),
        "relation": Param(str, choices=LENGTH_RELATIONS),
        "number": Param(int, min=0),
    }))
    registry.add(_python("evolif.existence", existence, {}, check=_check_existence, extra=True))
    registry.add(_python("evolif.forbidden", forbidden, {"keywords": Param(list, items=str)},
                         check=_check_forbidden, coerce=_keyword_list))
    registry.add(_python("evolif.language", language, {
        "lang": Param(str, description="ISO 639-1 code, e.g. en, fr, zh"),
    }))
    for name in ("emotion", "style", "reader_age"):
        registry.add(_subjective(name))
