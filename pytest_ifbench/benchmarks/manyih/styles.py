"""ManyIH-Bench coding subset: the 12 style groups, 41 style ids and their conflicts.

Style ids are exactly those of the paper's Table 5 (appendix G). The
instruction texts are this project's own wording; each one states what its
checker (``_manyih_checks``) verifies. Two styles conflict only inside their
own group; ``conflicts(a, b)`` is symmetric. Styles of one group that do not
conflict can be satisfied together (e.g. ``line_79`` and ``line_120``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations


@dataclass(frozen=True, slots=True, kw_only=True)
class Style:
    id: str
    group: str
    #: The Table 5 meaning, in a few words.
    summary: str
    #: The instruction shown to the model (this project's wording).
    instruction: str


def _s(group: str, style_id: str, summary: str, instruction: str) -> Style:
    return Style(id=style_id, group=group, summary=summary, instruction=instruction)


_STYLES: tuple[Style, ...] = (
    _s("indent", "indent_2", "indent with exactly 2 spaces",
       "Indent each nested block by exactly two spaces (never use tab characters)."),
    _s("indent", "indent_4", "indent with exactly 4 spaces",
       "Indent each nested block by exactly four spaces (never use tab characters)."),
    _s("indent", "indent_tab", "indent with tabs",
       "Indent each nested block by exactly one tab character."),
    _s("indent", "indent_spaces", "indent with spaces, not tabs",
       "Indent with space characters only; tab characters may not appear in indentation."),
    _s("quotes", "quotes_single", "single quotes for strings",
       "Write every string literal other than docstrings with single quotes ('...')."),
    _s("quotes", "quotes_double", "double quotes for strings",
       'Write every string literal other than docstrings with double quotes ("...").'),
    _s("quotes", "quotes_docstring_triple_double", "triple double quotes for docstrings",
       'Delimit every docstring with triple double quotes (""").'),
    _s("naming_convention", "naming_snake", "snake_case variables",
       "Name every variable and function parameter in snake_case."),
    _s("naming_convention", "naming_camel", "camelCase variables",
       "Name every variable and function parameter in camelCase (lower-case first letter, no underscores)."),
    _s("naming_convention", "naming_consonant_start", "variable names start with a consonant",
       "Every variable and function parameter name must begin with a consonant letter "
       "(not a vowel, a digit or an underscore)."),
    _s("operator_spacing", "op_space_around", "spaces around all operators",
       "Put a space on both sides of every binary operator, comparison and assignment (total = price * count)."),
    _s("operator_spacing", "op_space_none", "no spaces around operators",
       "Write binary operators, comparisons and assignments with no spaces around them (total=price*count)."),
    _s("operator_spacing", "op_space_minimal", "spaces around = only",
       "Put spaces around assignment operators only; write arithmetic and comparison operators "
       "without spaces (total = price*count)."),
    _s("operator_spacing", "op_space_arithmetic", "spaces around arithmetic/comparison operators only",
       "Put a space on both sides of every arithmetic, bitwise and comparison operator (a + b, a < b); "
       "spacing around assignments is not prescribed."),
    _s("type_hints", "types_full", "full type hints on arguments and return",
       "Annotate the type of every function parameter and the return type of every function."),
    _s("type_hints", "types_none", "no type hints",
       "Do not write any type annotations (no parameter, return or variable annotations)."),
    _s("type_hints", "types_args_only", "type hints on arguments only",
       "Annotate the type of every function parameter, but never annotate return types."),
    _s("type_hints", "types_args_required", "type hints on arguments, return optional",
       "Annotate the type of every function parameter; return annotations are optional."),
    _s("variable_name_length", "var_min3", "variable names of 3+ characters",
       "Every variable and function parameter name must be at least three characters long."),
    _s("variable_name_length", "var_single", "single-letter variable names only",
       "Every variable and function parameter name must be exactly one character long."),
    _s("variable_name_length", "var_min5", "variable names of 5+ characters",
       "Every variable and function parameter name must be at least five characters long."),
    _s("variable_name_length", "var_max2", "variable names of at most 2 characters",
       "Every variable and function parameter name must be at most two characters long."),
    _s("license", "license_mit", "include an MIT License notice",
       "Include an MIT License notice in the file, as a comment or docstring."),
    _s("license", "license_apache", "include an Apache 2.0 License notice",
       "Include an Apache License 2.0 notice in the file, as a comment or docstring."),
    _s("license", "license_none", "no license notice",
       "Do not include any license or copyright notice in the file."),
    _s("function_doc", "doc_required", "a docstring in every function",
       "Give every function a docstring."),
    _s("function_doc", "doc_none", "no docstrings",
       "Do not write any docstrings (module, class or function)."),
    _s("function_doc", "doc_online", "single-line docstrings only",
       "Any docstring you write must fit on a single line."),
    _s("internal_blank_lines", "blank_internal_none", "no blank lines in function bodies",
       "Do not leave any blank line inside a function body."),
    _s("internal_blank_lines", "blank_internal_one", "exactly one blank line in function bodies",
       "Leave exactly one blank line inside every function body."),
    _s("internal_blank_lines", "blank_internal_required", "at least one blank line in function bodies",
       "Leave at least one blank line inside every function body."),
    _s("return_style", "return_variable", "store the result in a variable, then return it",
       "Store each result in a variable and return that variable: every return statement returns "
       "a plain name (or None)."),
    _s("return_style", "return_direct", "return expressions directly",
       "Return expressions directly: never return a name that the function assigned with =, += or :=."),
    _s("return_style", "return_explicit_none", "explicit return None",
       "A function that returns no value must say so with an explicit `return None` "
       "(no bare `return`, no falling off the end)."),
    _s("singleton", "singleton_is", "is / is not for singleton comparisons",
       "Compare with None, True and False using `is` / `is not`, never `==` / `!=`."),
    _s("singleton", "singleton_eq", "== / != for singleton comparisons",
       "Compare with None, True and False using `==` / `!=`, never `is` / `is not`."),
    _s("singleton", "singleton_variable_first", "variable before the singleton (x is None)",
       "In comparisons with None, True or False, write the variable first (`value is None`)."),
    _s("singleton", "singleton_yoda", "singleton before the variable (None is x)",
       "In comparisons with None, True or False, write the constant first (`None is value`)."),
    _s("line_length", "line_79", "at most 79 characters per line",
       "Keep every line at most 79 characters long."),
    _s("line_length", "line_120", "at most 120 characters per line",
       "Keep every line at most 120 characters long."),
    _s("line_length", "line_unlimited", "no line length limit",
       "Lines may be as long as you like; do not wrap code only to shorten lines."),
)

STYLES: dict[str, Style] = {s.id: s for s in _STYLES}
GROUPS: dict[str, tuple[str, ...]] = {}
for _style in _STYLES:
    GROUPS.setdefault(_style.group, ())
    GROUPS[_style.group] += (_style.id,)

#: Style ids the official data spells differently from Table 5.
ALIASES: dict[str, str] = {"doc_oneline": "doc_online"}

#: Conflicting pairs, group by group (everything else is compatible).
_CONFLICT_PAIRS: tuple[tuple[str, str], ...] = (
    ("indent_2", "indent_4"), ("indent_2", "indent_tab"), ("indent_4", "indent_tab"),
    ("indent_tab", "indent_spaces"),
    ("quotes_single", "quotes_double"),
    ("naming_snake", "naming_camel"),
    ("op_space_around", "op_space_none"), ("op_space_around", "op_space_minimal"),
    ("op_space_arithmetic", "op_space_none"), ("op_space_arithmetic", "op_space_minimal"),
    ("op_space_none", "op_space_minimal"),
    ("types_full", "types_none"), ("types_full", "types_args_only"),
    ("types_none", "types_args_only"), ("types_none", "types_args_required"),
    ("var_min3", "var_single"), ("var_min3", "var_max2"),
    ("var_min5", "var_single"), ("var_min5", "var_max2"),
    ("license_mit", "license_apache"), ("license_mit", "license_none"), ("license_apache", "license_none"),
    ("doc_required", "doc_none"),
    ("blank_internal_none", "blank_internal_one"), ("blank_internal_none", "blank_internal_required"),
    ("return_variable", "return_direct"),
    ("singleton_is", "singleton_eq"),
    ("singleton_variable_first", "singleton_yoda"),
)
CONFLICTS: frozenset[frozenset[str]] = frozenset(frozenset(pair) for pair in _CONFLICT_PAIRS)


def canonical(style_id: str) -> str:
    """The Table 5 id for ``style_id`` (maps the official data's spellings)."""
    return ALIASES.get(style_id, style_id)


def conflicts(a: str, b: str) -> bool:
    """Whether two style ids conflict (symmetric; never across groups)."""
    return frozenset((canonical(a), canonical(b))) in CONFLICTS


def compatible_sets(group: str) -> list[tuple[str, ...]]:
    """Every non-empty set of pairwise compatible styles of ``group``, in table order."""
    ids = GROUPS[group]
    out = []
    for size in range(1, len(ids) + 1):
        for combo in combinations(ids, size):
            if not any(conflicts(a, b) for a, b in combinations(combo, 2)):
                out.append(combo)
    return out


assert len(STYLES) == 41 and len(GROUPS) == 12
assert all(STYLES[a].group == STYLES[b].group for a, b in _CONFLICT_PAIRS)
