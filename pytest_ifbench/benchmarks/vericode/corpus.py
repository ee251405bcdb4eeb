"""A seeded corpus of code replies for testing and benchmarking the VeriCode verifiers.

Each reply is one of the bundled tasks' reference solutions with a random
handful of small, original snippets mixed in, each of which violates (or
deliberately almost violates) rules the VeriCode instructions select, plus
optionally some explanation text after the code. Used by
``tests/benchmarks/vericode/test_batching.py`` and ``test_ruff_many.py``
(batched verdicts equal the verdicts of one ruff process per instruction) and
``perf/bench_vericode_ruff.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from importlib import resources
from typing import Any

#: Snippets appended after the reference solution. Each is valid Python on its own.
SNIPPETS: tuple[str, ...] = (
    # naming, None comparison, needless bool, else after return, missing annotations
    "def helperCheck(value):\n    if value == None:\n        return True\n    else:\n        return False\n",
    # bare except that passes, late import
    "try:\n    import json\nexcept:\n    pass\n",
    # lambda assignment, ambiguous name
    "square = lambda v: v * v\nl = [square(n) for n in range(3)]\n",
    # IOError alias, raise without from, literal message, printf formatting, builtin open
    "def read_text(path):\n    try:\n        with open(path) as fh:\n            return fh.read()\n"
    "    except IOError as exc:\n        raise ValueError(\"cannot read %s\" % path)\n",
    # os.path instead of pathlib, os.path.join, glob
    "import os\nimport glob\n\n\ndef list_python(folder: str) -> list:\n"
    "    return [os.path.basename(p) for p in glob.glob(os.path.join(folder, '*.py'))]\n",
    # naive datetimes
    "from datetime import datetime, date\n\nSTAMP = datetime.now()\nTODAY = date.today()\n",
    # commented-out code and a TODO
    "# result = compute(1, 2)\n# TODO: handle the empty case\nREADY = True\n",
    # builtin shadowing (argument and variable)
    "def pick(list, id=0):\n    input = list[id]\n    return input\n",
    # unnecessary collection calls
    "EMPTY = dict()\nVALUES = list([v for v in range(3)])\nPAIRS = list(sorted({3, 1, 2}))\n",
    # append in a loop, try in a loop, wrong dict iterator
    "def doubled(items: list) -> list:\n    out = []\n    for item in items:\n        out.append(item * 2)\n"
    "    return out\n\n\ndef parse_all(texts: list) -> list:\n    values = []\n    for text in texts:\n"
    "        try:\n            values.append(int(text))\n        except ValueError:\n            continue\n"
    "    return values\n\n\ndef values_only(mapping: dict) -> list:\n"
    "    return [v for k, v in mapping.items()]\n",
    # magic numbers, many branches and returns, high complexity
    "def grade(score: int) -> str:\n    if score > 90:\n        return 'A'\n    elif score > 80:\n        return 'B'\n"
    "    elif score > 70:\n        return 'C'\n    elif score > 60:\n        return 'D'\n    for _ in range(3):\n"
    "        if score < 0:\n            raise ValueError(f'bad score {score}')\n    return 'F'\n",
    # long code line, long comment and docstring lines
    "def describe() -> str:\n    \"\"\"Return a description that is intentionally written to be far longer than "
    "any reasonable documentation width.\"\"\"\n    # This comment is deliberately long so that it runs well past "
    "seventy-two characters.\n    return \"a string literal that makes this particular line of code much "
    "longer than the usual limits\"\n",
    # compound statements, isinstance, not in
    "a = 1; b = 2\nif type(a) == type(b): print(a)\nok = not a in [1, 2]\n",
    # multi-line literal without trailing comma, single-line with one
    "SETTINGS = {\n    \"name\": \"demo\",\n    \"size\": 3\n}\nPAIR = (1, 2,)\n",
    # single-quoted strings
    "GREETING = 'hello'\nFAREWELL = 'good' + 'bye'\n",
    # if/else that could be a conditional expression (SIM108 depends on line-length)
    "def choose(flag: bool, first_candidate_value: int, second_candidate_value: int) -> int:\n    if flag:\n"
    "        chosen_value = first_candidate_value + second_candidate_value\n    else:\n"
    "        chosen_value = second_candidate_value - first_candidate_value\n    return chosen_value\n",
    # blind except, f-string message, str.format
    "def safe_div(a: float, b: float) -> float:\n    try:\n        return a / b\n    except Exception:\n"
    "        raise ZeroDivisionError(f'cannot divide {a} by {b}')\n\n\nLABEL = '{} items'.format(3)\n",
    # wildcard import, unused import, multiple imports on one line
    "from math import *\nimport sys, re\n\nRADIUS = sqrt(2)\n",
    # Any annotations, *args without annotation
    "from typing import Any\n\n\ndef collect(*args, **kwargs) -> Any:\n    return args, kwargs\n",
    # nested ifs, key in dict.keys(), manual counter
    "def count_keys(d: dict, keys: list) -> int:\n    n = 0\n    for key in keys:\n        if key in d.keys():\n"
    "            if d[key]:\n                n += 1\n    return n\n",
    # a docstring with google-style sections
    "def area(width: float, height: float) -> float:\n    \"\"\"Compute the area.\n\n    Args:\n"
    "        width: the width.\n        height: the height.\n\n    Returns:\n        The area.\n    \"\"\"\n"
    "    return width * height\n",
)

#: Text that may follow the code block (exercises the response-level verifiers).
AFTER_TEXT: tuple[str, ...] = (
    "",
    "\n\n```json\n{\"summary\": \"Reads the data.\", \"complexity\": \"O(n)\"}\n```\n",
    "\n\n- reads the input\n- computes the result\n- returns it\n",
    "\n\n## Explanation\n\nThe function walks over the input once and keeps a running total.\n",
    "\n\nThis solution is straightforward.\n",
)


def reference_solutions() -> list[str]:
    """The reference solutions of the bundled task set."""
    path = resources.files(__package__) / "data" / "tasks.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["reference_solution"] for line in handle if line.strip()]


def add_docstrings(code: str) -> str:
    """``code`` with a one-line docstring added to the module and to every undocumented def/class."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines = code.splitlines(keepends=True)
    inserts = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(node) is None:
            first = node.body[0]
            if first.lineno > node.lineno:
                inserts.append((first.lineno - 1, " " * first.col_offset + '"""Do one step of the work."""\n'))
    for index, text in sorted(inserts, reverse=True):
        lines.insert(index, text)
    return '"""Solve the task."""\n\n' + "".join(lines)


def build_corpus(n: int, seed: int = 0) -> list[str]:
    """``n`` model-like replies, reproducible for a given seed."""
    rng = random.Random(f"vericode-corpus:{seed}")
    references = reference_solutions()
    out = []
    for index in range(n):
        code = references[index % len(references)].rstrip("\n") + "\n"
        if rng.random() < 0.3:
            code = add_docstrings(code)
        for snippet in rng.sample(SNIPPETS, rng.randint(0, 5)):
            code += "\n\n" + snippet
        if rng.random() < 0.03:  # a reply cut off mid-statement: does not parse
            code = code[: len(code) * 2 // 3]
        if rng.random() < 0.1:
            out.append(code)  # raw code, no fence
            continue
        out.append(f"Here is the solution.\n\n```python\n{code}```{rng.choice(AFTER_TEXT)}")
    return out


def random_params(instruction: Any, rng: random.Random, *, full_range: bool = True) -> dict[str, Any]:
    """A parameter assignment drawn from the recommended values; with ``full_range``, 30% of the
    integers are drawn from the whole allowed range instead (stresses the verifiers more)."""
    params: dict[str, Any] = {}
    for name, spec in instruction.params.items():
        recommended = instruction.recommended.get(name)
        if spec.choices:
            params[name] = rng.choice(spec.choices)
        elif (full_range and spec.type is int and spec.min is not None and spec.max is not None
              and rng.random() < 0.3):
            params[name] = rng.randint(int(spec.min), int(spec.max))
        elif recommended:
            value = rng.choice(recommended)
            params[name] = list(value) if isinstance(value, (list, tuple)) else value
    return params


def instruction_sets(n: int, k: int, seed: int = 0, *, ruff_only: bool = True,
                     full_range: bool = True) -> list[list[tuple[str, Mapping]]]:
    """``n`` random sets of ``k`` distinct instructions with parameters (see :func:`random_params`)."""
    from .instructions import INSTRUCTIONS

    pool = [i for i in INSTRUCTIONS if i.ruff_backed or not ruff_only]
    rng = random.Random(f"vericode-sets:{seed}")
    return [[(i.id, random_params(i, rng, full_range=full_range)) for i in rng.sample(pool, k)] for _ in range(n)]
