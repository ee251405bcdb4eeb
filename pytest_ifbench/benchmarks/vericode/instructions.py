"""VeriCode: 30 verifiable code instructions (Vibe Checker, Zhong et al., sections 2-3, appendix B).

Every instruction has an id (``style_1`` ... ``library_2``), a category, a
description, a generation prompt (single-turn: appended to the query) and an
edit prompt (multi-turn: one editing round), typed parameters with defaults
and allowed values, and a deterministic verifier registered as
``vericode.<id>``:

* 27 are ruff-backed: they declare the rule codes they select and the ruff
  settings their parameters imply (``RuffSpec``), so the ruff checks of many
  responses run in one ``ruff`` process (``pytest_ifbench.ruff.batch``) and the
  violations are mapped back to each instruction by exact rule code;
* 3 are response-level (documentation outside the code block) and parse the
  reply: a JSON object, a bullet list or a headed section after the code
  (the checks are in ``checks``).

This module is the declarative taxonomy; ``verifiers.register`` adds each
instruction to the verifier registry.

The five instructions the paper publishes (``style_3`` E501, ``logic_3``
PLR0912, ``doc_3`` pydocstyle, ``error_3`` UP024, ``library_1`` PTH) follow
it exactly (rules, parameters, defaults); the prompts are our own wording.
``docs/vericode.md`` documents every instruction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_ifbench import Param, ParamError, RuffSetting, Verdict, ruff_setting

from .checks import check_bullet_explanation, check_json_explanation, check_section_explanation

CATEGORIES: dict[str, str] = {
    "style": "Coding Style & Conventions",
    "logic": "Logic & Code Patterns",
    "doc": "Documentation & Commenting",
    "error": "Error Handling & Exception Management",
    "library": "Library & API Constraints",
}

#: The paper's category sizes (section 2.3).
CATEGORY_COUNTS = {"style": 9, "logic": 9, "doc": 6, "error": 4, "library": 2}

#: Keys a doc_4 JSON explanation may be asked to carry.
JSON_KEYS = ("summary", "approach", "complexity", "edge_cases", "assumptions", "usage")
#: Headings a doc_6 explanation section may be asked to use.
SECTION_HEADINGS = ("Explanation", "How It Works", "Summary", "Design Notes")
_CONVENTION_NAMES = {"pep257": "PEP 257", "google": "Google", "numpy": "NumPy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Instruction:
    """One VeriCode instruction (the paper's five-element schema plus verifier wiring)."""

    id: str
    category: str
    title: str
    description: str
    generation_prompt: str
    edit_prompt: str
    params: Mapping[str, Param] = field(default_factory=dict)
    #: Values the paper would call "recommended" (what augmentation draws from).
    recommended: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: Human-readable verifier summary, e.g. "ruff E501 (line-length = line_length)".
    rule: str = ""
    #: Ruff-backed: the exact rule selectors and the settings the params imply.
    select: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = None
    settings: Callable[[Mapping[str, Any]], tuple[RuffSetting, ...]] | None = None
    #: Response-level: a check of the whole reply.
    check: Callable[[str, Mapping[str, Any]], Verdict] | None = None
    check_params: Callable[[Mapping[str, Any]], None] | None = None
    #: Instructions this one contradicts (selection keeps at most one of each pair).
    conflicts: frozenset[str] = frozenset()

    @property
    def verifier_id(self) -> str:
        return f"vericode.{self.id}"

    @property
    def ruff_backed(self) -> bool:
        return self.select is not None

    @property
    def category_name(self) -> str:
        return CATEGORIES[self.category]

    def defaults(self) -> dict[str, Any]:
        return {name: spec.default for name, spec in self.params.items()}

    def validate(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Schema validation (raises ParamError), as the registry does at collection."""
        from pytest_ifbench import validate_params

        clean = validate_params(self.params, params)
        if self.check_params is not None:
            self.check_params(clean)
        return clean

    def render(self, which: str, params: Mapping[str, Any] | None = None) -> str:
        """The generation (``which="generation"``) or edit prompt with ``{param}`` filled in."""
        template = self.generation_prompt if which == "generation" else self.edit_prompt
        values = self.defaults() | dict(params or {})
        return template.format(**{name: _show(name, value) for name, value in values.items()})


def _show(name: str, value: Any) -> str:
    if name == "convention":
        return _CONVENTION_NAMES.get(value, str(value))
    if isinstance(value, (list, tuple)):
        return ", ".join(f'"{v}"' for v in value)
    return str(value)


# --------------------------------------------------------------------------- ruff settings

# Settings get their scope (the rules they can influence) from the core table in
# ``_ruff._SCOPES``; the batched-vs-alone equality tests guard it. ``line-length``
# also reaches SIM108 (ruff only suggests a conditional expression that fits the
# line); ``logic_6`` leaves SIM108 out for that reason.


def _codes(*codes: str) -> Callable[[Mapping[str, Any]], tuple[str, ...]]:
    return lambda params: codes


def _setting(key: str, param: str) -> Callable[[Mapping[str, Any]], tuple[RuffSetting, ...]]:
    return lambda params: (ruff_setting(key, params[param]),)


def _quote_settings(params: Mapping[str, Any]) -> tuple[RuffSetting, ...]:
    style = params["quote_style"]
    return (ruff_setting("lint.flake8-quotes.inline-quotes", style),
            ruff_setting("lint.flake8-quotes.multiline-quotes", style))


# --------------------------------------------------------------------------- parameter checks


def _check_json_keys(params: Mapping[str, Any]) -> None:
    keys = params["keys"]
    if not 1 <= len(keys) <= 4:
        raise ParamError("keys", f"give 1 to 4 keys, got {len(keys)}")
    for index, key in enumerate(keys):
        if key not in JSON_KEYS:
            raise ParamError(f"keys[{index}]", f"expected one of {', '.join(JSON_KEYS)}, got {key!r}")
    if len(set(keys)) != len(keys):
        raise ParamError("keys", "keys must be unique")


# --------------------------------------------------------------------------- the taxonomy

_EXPLANATIONS = frozenset({"doc_4", "doc_5", "doc_6"})

INSTRUCTIONS: tuple[Instruction, ...] = (
    # ---------------------------------------------------------------- Coding Style & Conventions (9)
    Instruction(
        id="style_1", category="style", title="PEP 8 naming",
        description="Identifiers follow PEP 8 naming: snake_case functions, arguments and variables, "
                    "CapWords classes, an Error suffix for exception classes.",
        generation_prompt="Follow PEP 8 naming conventions: snake_case for functions, methods, arguments and "
                          "local variables, CapWords for classes, UPPER_CASE only for module-level constants, "
                          "and an `Error` suffix on exception class names.",
        edit_prompt="Rename identifiers so the code follows PEP 8 naming conventions: snake_case for functions, "
                    "methods, arguments and local variables, CapWords for classes, UPPER_CASE only for "
                    "module-level constants, and an `Error` suffix on exception class names.",
        rule="ruff N (pep8-naming)", select=_codes("N"),
    ),
    Instruction(
        id="style_2", category="style", title="Quote style",
        description="String literals use one quote character consistently (flake8-quotes); docstrings are "
                    "not affected.",
        generation_prompt="Write every string literal with {quote_style} quotes, using the other kind only for "
                          "a string that itself contains a {quote_style} quote.",
        edit_prompt="Change every string literal to {quote_style} quotes, except strings that themselves "
                    "contain a {quote_style} quote.",
        params={"quote_style": Param(str, default="double", choices=("double", "single"),
                                     description="the quote character for inline and multi-line strings")},
        recommended={"quote_style": ("double", "single")},
        rule="ruff Q000, Q001 (inline-quotes = multiline-quotes = quote_style)",
        select=_codes("Q000", "Q001"), settings=_quote_settings,
    ),
    Instruction(
        id="style_3", category="style", title="Line length",
        description="Enforce a maximum line length, breaking long lines into shorter ones.",
        generation_prompt="Keep every line of the code at most {line_length} characters long.",
        edit_prompt="Go through the code and break every line longer than {line_length} characters so that all "
                    "lines fit within that limit.",
        params={"line_length": Param(int, default=79, min=40, max=160,
                                     description="maximum characters per line (79 classic, 88 modern)")},
        recommended={"line_length": (79, 88)},
        rule="ruff E501 (line-length = line_length)",
        select=_codes("E501"), settings=_setting("line-length", "line_length"),
    ),
    Instruction(
        id="style_4", category="style", title="Import hygiene",
        description="Imports sit at the top of the module, one module per import statement, with no wildcard "
                    "and no unused imports.",
        generation_prompt="Keep imports clean: put all imports at the top of the module, import one module per "
                          "`import` statement, and use no wildcard (`from x import *`) and no unused imports.",
        edit_prompt="Clean up the imports: move them all to the top of the module, split `import a, b` into one "
                    "statement per module, and remove wildcard and unused imports.",
        rule="ruff E401, E402, F401, F403, F405", select=_codes("E401", "E402", "F401", "F403", "F405"),
    ),
    Instruction(
        id="style_5", category="style", title="Type annotations",
        description="Every function parameter (including *args/**kwargs) and return value carries a precise "
                    "type annotation; typing.Any is not used.",
        generation_prompt="Add type annotations to every function and method: annotate each parameter "
                          "(including `*args` and `**kwargs`) and the return type, and do not use `typing.Any`.",
        edit_prompt="Add the missing type annotations: every parameter of every function and method (including "
                    "`*args` and `**kwargs`) and every return type, replacing any use of `typing.Any` with a "
                    "precise type.",
        rule="ruff ANN (flake8-annotations)", select=_codes("ANN"),
    ),
    Instruction(
        id="style_6", category="style", title="f-strings",
        description="Strings are formatted with f-strings, not printf-style % or str.format().",
        generation_prompt="Format strings with f-strings only; do not use `%` formatting or `str.format()`.",
        edit_prompt="Rewrite every `%`-formatted string and every `str.format()` call as an f-string.",
        rule="ruff UP031, UP032", select=_codes("UP031", "UP032"),
    ),
    Instruction(
        id="style_7", category="style", title="Trailing commas",
        description="Multi-line collections, calls and signatures end with a trailing comma; single-line ones "
                    "and bare tuples do not (flake8-commas).",
        generation_prompt="Use trailing commas consistently: when a call, signature or collection literal spans "
                          "several lines, put a comma after its last item; never put a trailing comma inside a "
                          "single-line one, and never build a tuple with a bare trailing comma.",
        edit_prompt="Fix the trailing commas: add one after the last item of every call, signature or collection "
                    "literal that spans several lines, and remove those inside single-line ones and after bare "
                    "tuples.",
        rule="ruff COM (flake8-commas)", select=_codes("COM"),
    ),
    Instruction(
        id="style_8", category="style", title="No shadowed built-ins",
        description="No variable, argument, attribute, import or lambda parameter shadows a Python built-in.",
        generation_prompt="Do not shadow Python built-ins: no variable, argument, class attribute, import alias "
                          "or lambda parameter may be named like a built-in such as `list`, `id`, `input`, `type`, "
                          "`max` or `sum`.",
        edit_prompt="Rename every variable, argument, class attribute, import alias or lambda parameter that "
                    "shadows a Python built-in (such as `list`, `id`, `input`, `type`, `max` or `sum`).",
        rule="ruff A (flake8-builtins)", select=_codes("A"),
    ),
    Instruction(
        id="style_9", category="style", title="PEP 8 statements and comparisons",
        description="PEP 8 programming recommendations: one statement per line, identity comparisons with None "
                    "and booleans, isinstance() for types, def instead of assigned lambdas, no l/O/I names.",
        generation_prompt="Follow the PEP 8 programming recommendations: one statement per line (no semicolons, "
                          "no bodies on the same line as a colon), compare with `None` using `is`/`is not`, never "
                          "compare to `True`/`False` with `==`, write `not in`/`is not` rather than negating "
                          "`in`/`is`, check types with `isinstance()`, use `def` instead of assigning a lambda, "
                          "and never name anything `l`, `O` or `I`.",
        edit_prompt="Bring the code in line with the PEP 8 programming recommendations: split compound "
                    "statements onto separate lines, compare with `None` using `is`/`is not`, drop `== True`/"
                    "`== False`, use `not in`/`is not`, use `isinstance()` for type checks, turn assigned lambdas "
                    "into `def` functions, and rename anything called `l`, `O` or `I`.",
        rule="ruff E701-E703, E711-E714, E721, E731, E741-E743",
        select=_codes("E701", "E702", "E703", "E711", "E712", "E713", "E714", "E721", "E731", "E741", "E742",
                      "E743"),
    ),
    # ---------------------------------------------------------------- Logic & Code Patterns (9)
    Instruction(
        id="logic_1", category="logic", title="Cyclomatic complexity",
        description="Every function's McCabe cyclomatic complexity stays within a limit.",
        generation_prompt="Keep the cyclomatic complexity of every function and method at most {max_complexity}, "
                          "splitting logic into small helper functions where needed.",
        edit_prompt="Refactor so that no function or method has a cyclomatic complexity above {max_complexity}, "
                    "moving logic into small helper functions where needed.",
        params={"max_complexity": Param(int, default=4, min=1, max=20,
                                        description="highest McCabe complexity allowed per function")},
        recommended={"max_complexity": (3, 4, 5, 6)},
        rule="ruff C901 (lint.mccabe.max-complexity = max_complexity)",
        select=_codes("C901"), settings=_setting("lint.mccabe.max-complexity", "max_complexity"),
    ),
    Instruction(
        id="logic_2", category="logic", title="Return statements",
        description="Every function has at most a given number of return statements.",
        generation_prompt="Use at most {max_returns} `return` statement(s) in each function or method.",
        edit_prompt="Restructure the code so that every function or method has at most {max_returns} `return` "
                    "statement(s).",
        params={"max_returns": Param(int, default=2, min=1, max=10,
                                     description="most return statements allowed per function")},
        recommended={"max_returns": (1, 2, 3)},
        rule="ruff PLR0911 (lint.pylint.max-returns = max_returns)",
        select=_codes("PLR0911"), settings=_setting("lint.pylint.max-returns", "max_returns"),
        conflicts=frozenset({"logic_5"}),
    ),
    Instruction(
        id="logic_3", category="logic", title="Branches per function",
        description="Strict limit on the number of branches within each function, to reduce complexity.",
        generation_prompt="Give every function or method at most {max_branches} branches, where each `if`, "
                          "`elif` and `else`, each `for` or `while` loop, each `try`/`except` clause and each "
                          "`match` case counts as a branch.",
        edit_prompt="Simplify the code so that every function or method has at most {max_branches} branches, "
                    "where each `if`, `elif` and `else`, each `for` or `while` loop, each `try`/`except` clause "
                    "and each `match` case counts as a branch.",
        params={"max_branches": Param(int, default=2, min=1, max=20,
                                      description="most branches allowed per function (recommended 2-4)")},
        recommended={"max_branches": (2, 3, 4)},
        rule="ruff PLR0912 (lint.pylint.max-branches = max_branches)",
        select=_codes("PLR0912"), settings=_setting("lint.pylint.max-branches", "max_branches"),
    ),
    Instruction(
        id="logic_4", category="logic", title="Statements per function",
        description="Every function has at most a given number of statements.",
        generation_prompt="Keep every function or method to at most {max_statements} statements, splitting "
                          "longer ones into helpers.",
        edit_prompt="Split up any function or method that has more than {max_statements} statements so that each "
                    "one stays within that limit.",
        params={"max_statements": Param(int, default=15, min=5, max=60,
                                        description="most statements allowed per function body")},
        recommended={"max_statements": (10, 12, 15, 20)},
        rule="ruff PLR0915 (lint.pylint.max-statements = max_statements)",
        select=_codes("PLR0915"), settings=_setting("lint.pylint.max-statements", "max_statements"),
    ),
    Instruction(
        id="logic_5", category="logic", title="Explicit, flat returns",
        description="Returns are explicit and flat (flake8-return): no else after return/raise/continue/break, "
                    "no variable assigned only to be returned, consistent explicit returns.",
        generation_prompt="Keep function exits explicit and flat: no `else`/`elif` after a branch that ends in "
                          "`return`, `raise`, `continue` or `break`; return an expression directly instead of "
                          "assigning it to a variable first; in a function that returns a value, end every path "
                          "with an explicit `return`; and do not write `return None` in a function that returns "
                          "nothing else.",
        edit_prompt="Flatten and clarify the function exits: remove `else`/`elif` after branches ending in "
                    "`return`, `raise`, `continue` or `break`, return expressions directly instead of through a "
                    "temporary variable, make every path of a value-returning function end in an explicit "
                    "`return`, and drop `return None` from functions that return nothing else.",
        rule="ruff RET (flake8-return)", select=_codes("RET"), conflicts=frozenset({"logic_2"}),
    ),
    Instruction(
        id="logic_6", category="logic", title="Simplified constructs",
        description="Constructs are written in their simplest form (flake8-simplify), e.g. merged ifs, direct "
                    "boolean returns, any()/all(), dict.get(), key in dict, enumerate(), context managers.",
        generation_prompt="Write each construct in its simplest form: merge nested `if` statements and nested "
                          "`with` statements, return boolean expressions directly, use `any()`/`all()` instead of "
                          "loops that return a boolean, `dict.get()` instead of an if/else on a key, `key in d` "
                          "instead of `key in d.keys()`, `enumerate()` instead of a manual counter, and `with` for "
                          "every opened file.",
        edit_prompt="Simplify the code: merge nested `if` and `with` statements, return boolean expressions "
                    "directly, replace boolean-returning loops with `any()`/`all()`, use `dict.get()`, `key in d` "
                    "and `enumerate()`, and open every file in a `with` statement.",
        rule="ruff SIM (flake8-simplify) except SIM108",
        select=_codes("SIM101", "SIM102", "SIM103", "SIM105", "SIM107", "SIM109", "SIM110", "SIM112", "SIM113",
                      "SIM114", "SIM115", "SIM116", "SIM117", "SIM118", "SIM2", "SIM300", "SIM401", "SIM9"),
    ),
    Instruction(
        id="logic_7", category="logic", title="Idiomatic comprehensions",
        description="Comprehensions and collection literals are used idiomatically (flake8-comprehensions).",
        generation_prompt="Use comprehensions and collection literals idiomatically: write `[]`, `{{}}` and `()` "
                          "instead of empty `list()`, `dict()` and `tuple()` calls, use comprehensions instead of "
                          "passing generators to `list()`, `set()` or `dict()` and instead of `map()` with a "
                          "lambda, and avoid redundant calls such as `list(sorted(...))`.",
        edit_prompt="Make the collection code idiomatic: replace empty `list()`, `dict()` and `tuple()` calls "
                    "with literals, generators passed to `list()`/`set()`/`dict()` and `map()` with a lambda "
                    "with comprehensions, and remove redundant calls such as `list(sorted(...))`.",
        rule="ruff C4 (flake8-comprehensions)", select=_codes("C4"),
    ),
    Instruction(
        id="logic_8", category="logic", title="No magic numbers",
        description="Comparisons use named constants instead of magic numbers.",
        generation_prompt="Do not compare against magic numbers: give every numeric constant used in a "
                          "comparison, other than 0, 1 and -1, a descriptive name as a module-level constant.",
        edit_prompt="Replace every magic number used in a comparison (anything but 0, 1 and -1) with a "
                    "descriptively named module-level constant.",
        rule="ruff PLR2004", select=_codes("PLR2004"),
    ),
    Instruction(
        id="logic_9", category="logic", title="Performance idioms",
        description="Loops follow performance idioms (perflint): comprehensions instead of append loops, no "
                    "try/except inside loops, correct dict iterators, no needless list() casts.",
        generation_prompt="Write loops with performance in mind: build lists and dicts with comprehensions rather "
                          "than appending in a loop, copy lists with `list()` or `.copy()`, iterate over "
                          "`.keys()` or `.values()` when only one of them is used, do not wrap an iterable in "
                          "`list()` just to loop over it, and keep `try`/`except` outside of loops.",
        edit_prompt="Tune the loops: turn append-in-a-loop code into comprehensions, copy lists with `list()` or "
                    "`.copy()`, iterate over `.keys()` or `.values()` when only one is used, drop `list()` around "
                    "iterables you only loop over, and move `try`/`except` out of loops.",
        rule="ruff PERF (perflint)", select=_codes("PERF"),
    ),
    # ---------------------------------------------------------------- Documentation & Commenting (6)
    Instruction(
        id="doc_1", category="doc", title="No commented-out code",
        description="Comments are prose: no commented-out code is left in the file.",
        generation_prompt="Leave no commented-out code anywhere: comments must explain, not disable, code.",
        edit_prompt="Delete every piece of commented-out code, keeping only explanatory comments.",
        rule="ruff ERA001 (eradicate)", select=_codes("ERA001"),
    ),
    Instruction(
        id="doc_2", category="doc", title="Comment and docstring width",
        description="Comment and docstring lines stay within a maximum length.",
        generation_prompt="Keep every comment line and every docstring line at most {max_doc_length} characters "
                          "long.",
        edit_prompt="Rewrap comments and docstrings so that none of their lines is longer than {max_doc_length} "
                    "characters.",
        params={"max_doc_length": Param(int, default=72, min=40, max=160,
                                        description="maximum characters per comment/docstring line (PEP 8: 72)")},
        recommended={"max_doc_length": (72, 79)},
        rule="ruff W505 (lint.pycodestyle.max-doc-length = max_doc_length)",
        select=_codes("W505"), settings=_setting("lint.pycodestyle.max-doc-length", "max_doc_length"),
    ),
    Instruction(
        id="doc_3", category="doc", title="Docstring convention",
        description="All docstrings comply with the chosen convention (Google, NumPy or PEP 257) for "
                    "formatting, placement and content.",
        generation_prompt="Fully document the code with docstrings (the module, every class, function and method) "
                          "written in the {convention} docstring convention.",
        edit_prompt="Complete the documentation: add every missing docstring (module, classes, functions, "
                    "methods) and reformat all docstrings to follow the {convention} docstring convention.",
        params={"convention": Param(str, default="pep257", choices=("pep257", "google", "numpy"),
                                    description="pydocstyle convention")},
        recommended={"convention": ("pep257", "google", "numpy")},
        rule="ruff D (lint.pydocstyle.convention = convention)",
        select=_codes("D"), settings=_setting("lint.pydocstyle.convention", "convention"),
    ),
    Instruction(
        id="doc_4", category="doc", title="JSON explanation after the code",
        description="After the code block, a JSON object explains the solution with the required keys.",
        generation_prompt="After the code block, add a JSON object in its own ```json block that explains the "
                          "solution, with the keys {keys}, each mapped to a non-empty string.",
        edit_prompt="Below the code block, append a JSON object in its own ```json block that explains the "
                    "current code, with the keys {keys}, each mapped to a non-empty string.",
        params={"keys": Param(list, items=str, default=["summary", "complexity"],
                              description=f"1-4 keys out of {', '.join(JSON_KEYS)}")},
        recommended={"keys": (["summary", "complexity"], ["approach", "edge_cases"], ["summary", "approach"],
                              ["approach", "complexity", "edge_cases"])},
        rule="reply parsed: JSON object after the code block", check=check_json_explanation,
        check_params=_check_json_keys, conflicts=_EXPLANATIONS - {"doc_4"},
    ),
    Instruction(
        id="doc_5", category="doc", title="Bullet-list explanation after the code",
        description="After the code block, the solution is explained as a bulleted list with an exact number of "
                    "items.",
        generation_prompt="After the code block, explain how the code works as a Markdown bullet list of exactly "
                          "{num_bullets} items (each line starting with `- `).",
        edit_prompt="Below the code block, explain how the current code works as a Markdown bullet list of "
                    "exactly {num_bullets} items (each line starting with `- `).",
        params={"num_bullets": Param(int, default=3, min=1, max=10, description="exact number of bullet items")},
        recommended={"num_bullets": (2, 3, 4, 5)},
        rule="reply parsed: top-level bullet items after the code block", check=check_bullet_explanation,
        conflicts=_EXPLANATIONS - {"doc_5"},
    ),
    Instruction(
        id="doc_6", category="doc", title="Headed explanation section after the code",
        description="After the code block, a Markdown section with the given heading explains the solution in "
                    "at most a given number of words.",
        generation_prompt="After the code block, add a Markdown section headed `## {heading}` that explains the "
                          "solution in at most {max_words} words.",
        edit_prompt="Below the code block, add a Markdown section headed `## {heading}` that explains the current "
                    "code in at most {max_words} words.",
        params={"heading": Param(str, default="Explanation", choices=SECTION_HEADINGS,
                                 description="the section heading"),
                "max_words": Param(int, default=100, min=10, max=500, description="word limit of the section")},
        recommended={"heading": SECTION_HEADINGS, "max_words": (50, 80, 100, 150)},
        rule="reply parsed: heading and word count after the code block", check=check_section_explanation,
        conflicts=_EXPLANATIONS - {"doc_6"},
    ),
    # ---------------------------------------------------------------- Error Handling & Exception Management (4)
    Instruction(
        id="error_1", category="error", title="Specific exception handlers",
        description="Handlers catch specific exceptions: no bare except, no blind except Exception, no handler "
                    "that silently passes or continues.",
        generation_prompt="Catch only specific exception types: no bare `except:`, no `except Exception` or "
                          "`except BaseException` unless the handler re-raises, and no handler whose body only "
                          "does `pass` or `continue`.",
        edit_prompt="Narrow the exception handling: replace bare `except:` and `except Exception`/`except "
                    "BaseException` (unless re-raised) with the specific exceptions expected, and make no handler "
                    "silently `pass` or `continue`.",
        rule="ruff E722, BLE001, S110, S112", select=_codes("E722", "BLE001", "S110", "S112"),
    ),
    Instruction(
        id="error_2", category="error", title="Exception chaining",
        description="An exception raised inside an except block is chained explicitly with from.",
        generation_prompt="Whenever you raise an exception inside an `except` block, chain it explicitly with "
                          "`raise ... from err` (or `from None` to hide the original).",
        edit_prompt="Make every `raise` inside an `except` block chain explicitly with `from err` (or `from None` "
                    "to hide the original exception).",
        rule="ruff B904", select=_codes("B904"),
    ),
    Instruction(
        id="error_3", category="error", title="Canonical OSError",
        description="Legacy aliases of OSError are replaced by OSError itself.",
        generation_prompt="Use the canonical `OSError` exception rather than any of its aliases (`IOError`, "
                          "`EnvironmentError`, `WindowsError`, `socket.error`, `select.error`, `mmap.error`).",
        edit_prompt="Replace every use of an `OSError` alias (`IOError`, `EnvironmentError`, `WindowsError`, "
                    "`socket.error`, `select.error`, `mmap.error`) with `OSError` itself.",
        rule="ruff UP024", select=_codes("UP024"),
    ),
    Instruction(
        id="error_4", category="error", title="Exception messages in variables",
        description="Exception messages are assigned to a variable before raising, never passed as a literal, "
                    "f-string or str.format() call (flake8-errmsg).",
        generation_prompt="Never pass a string literal, an f-string or a `str.format()` call directly to an "
                          "exception: assign the message to a variable first and raise with that variable.",
        edit_prompt="For every exception raised with a literal, f-string or `str.format()` message, assign the "
                    "message to a variable first and pass that variable to the exception.",
        rule="ruff EM (flake8-errmsg)", select=_codes("EM"),
    ),
    # ---------------------------------------------------------------- Library & API Constraints (2)
    Instruction(
        id="library_1", category="library", title="pathlib",
        description="Legacy file-system operations (os, os.path, glob, built-in open) are replaced by their "
                    "pathlib equivalents.",
        generation_prompt="Use `pathlib` instead of functions from `os`, `os.path` and `glob` and instead of the "
                          "built-in `open()`, wrapping a `Path` in `str()` wherever the surrounding code needs a "
                          "string path so that the behaviour stays the same.",
        edit_prompt="Replace every function from `os`, `os.path` and `glob` and every built-in `open()` with its "
                    "`pathlib` equivalent, wrapping a `Path` in `str()` wherever a string path is needed so that "
                    "the behaviour stays the same.",
        rule="ruff PTH (flake8-use-pathlib)", select=_codes("PTH"),
    ),
    Instruction(
        id="library_2", category="library", title="Timezone-aware datetimes",
        description="datetime objects are timezone-aware: no naive constructors, now(), today(), utcnow() or "
                    "strptime() results (flake8-datetimez).",
        generation_prompt="Work with timezone-aware datetimes only: pass an explicit `tz`/`tzinfo` when creating "
                          "datetimes and calling `now()` or `fromtimestamp()`, attach a timezone to `strptime()` "
                          "results, and never use `utcnow()`, `utcfromtimestamp()`, `datetime.today()`, "
                          "`date.today()` or naive `datetime.min`/`datetime.max`.",
        edit_prompt="Make every datetime timezone-aware: pass an explicit `tz`/`tzinfo` to datetime constructors, "
                    "`now()` and `fromtimestamp()`, attach a timezone to `strptime()` results, and replace "
                    "`utcnow()`, `utcfromtimestamp()`, `datetime.today()`, `date.today()` and naive "
                    "`datetime.min`/`datetime.max`.",
        rule="ruff DTZ (flake8-datetimez)", select=_codes("DTZ"),
    ),
)

BY_ID: dict[str, Instruction] = {instruction.id: instruction for instruction in INSTRUCTIONS}


def get(instruction_id: str) -> Instruction:
    return BY_ID[instruction_id]


def conflicting(a: str, b: str) -> bool:
    return b in BY_ID[a].conflicts or a in BY_ID[b].conflicts
