"""Inputs of the style conformance corpus: replies designed to hit the edge cases of the
authors' checkers (see README.md). Deterministic; no authors' code here."""

from __future__ import annotations

import random

_SNIPPETS = [
    "def add(a, b):\n    return a + b\n",
    "def add(a, b):\n  return a+b\n",
    "def add(a,b):\n\treturn a+b\n",
    "def f(x):\n    s = \"a + b\"  # x=1\n    return s\n",
    "def f(x):\n    s = 'well-known'\n    return x\n",
    "def f(x):\n    if x == None:\n        return True\n    return x is not None\n",
    "def f(x):\n    if None is x:\n        return\n    return False != x\n",
    "def f(x):\n    # this None value\n    return x\n",
    "def f(key=1, *args, **kw):\n    return g(key=key)\n",
    "def f(x, /, y, *, z):\n    return x**2 + y//3 - z%2\n",
    "async def fetch(url: str) -> str:\n    data = await get(url)\n    return data\n",
    "@decorator\ndef f(a: int, b: int) -> int:\n    \"\"\"Add.\"\"\"\n    return a + b\n",
    "def f(a: int, b):\n    '''Doc.'''\n    return a\n",
    "def f():\n    \"\"\"\n    Multi\n    line.\n    \"\"\"\n    return None\n",
    "def f():\n    \"\"\"First line\n    second.\"\"\"\n    return 1\n",
    "class Point:\n    \"\"\"A point.\"\"\"\n\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "class Box:\n    def area(self):\n        result = self.w * self.h\n        return result\n",
    "def f(values):\n    total = 0\n    for v in values:\n        total += v\n    return total\n",
    "def f(values):\n    result = sum(values)\n\n    return result\n",
    "def f(values):\n    result = sum(values)\n\n\n    return result\n",
    "def outer(n):\n    def inner(m):\n\n        return m\n    return inner(n)\n",
    "f = lambda x=1: x*2\n",
    "square = lambda n: n ** 2\nitems = [i*i for i in range(10)]\n",
    "def f(x):\n    if (y := x + 1) > 2:\n        return y\n    return 0\n",
    "def f(x):\n    try:\n        return 1 / x\n    except ZeroDivisionError as err:\n        return None\n",
    "def f(matrix):\n    return [[row[i] for row in matrix] for i in range(len(matrix[0]))]\n",
    "def f(a, b):\n    a, b = b, a\n    return a\n",
    "def f(n):\n    x: int = n\n    return x\n",
    "def f(n):\n    with open(n) as fh:\n        return fh.read()\n",
    "def camelCase(myValue, otherValue):\n    resultValue = myValue + otherValue\n    return resultValue\n",
    "def f(AB, _private, __dunder__):\n    CONSTANT_VALUE = 1\n    _ = 2\n    return AB\n",
    "def f(ünïcode, 名前):\n    ärger = ünïcode\n    return ärger\n",
    "def f(item, output):\n    apple = item\n    return apple\n",
    "# MIT License\n# Copyright (c) 2024\ndef f():\n    return 1\n",
    "# Licensed under the Apache License, Version 2.0\ndef f():\n    return 1\n",
    "# SPDX-License-Identifier: mit\nlicense_count = 1\n",
    "# apache kafka client\ndef f():\n    return 'MIT license'\n",
    "def f(x):\n    return x if x else None\n",
    "def f(x):\n    y = x <= 3 and x >= 1 or x != 2\n    return y\n",
    "def f(x):\n    x <<= 1\n    x >>= 2\n    x **= 3\n    x //= 4\n    return x | 1 & 2 ^ 3\n",
    "def f(x):\n    return f\"{x!r:>10}\" + f'{x}'\n",
    "def f(x):\n    return rb'raw' + b\"bytes\" + u'text'\n",
    "def f(x):\n    return '''triple single''' + r\"\"\"raw triple\"\"\"\n",
    "x = 1\nif x:\n    pass\n",
    "def broken(:\n    return 1\n",
    "def f(x):\n    return (x +\n        1)\n",
    "def f(x):\n  if x:\n      return 1\n  return 2\n",
    "def f(x):\n      return x\n",
    "def f(x):\n    if x:\n  return 1\n",
    "def f(x):\n    s = \"\"\"unterminated\n    return s\n",
    "def f(x):\n    return x  # " + "y" * 90 + "\n",
    "def f(x):\n    return x" + " + x" * 28 + "\n",
    "def f(x):\n    return x\n\n\nif __name__ == '__main__':\n    print(f(1))\n",
    "def f(x) -> None:\n    print(x)\n    return\n",
    "def f(x):\n    def g():\n        return\n    return g\n",
    "def f(x):\n    \"\"\"Return x.\"\"\"\n    return x\n\ndef g(y=()):\n    return y\n",
    "def f(x):\n    '''\n    doc\n    '''\n    return x\n",
    "def f(x):\n\n    return x\n",
    "def f(x):\r\n    y = x\r\n\r\n    return y\r\n",
    "def f(x):\r    return x\r",
    "def f(x):\n    return x\x0c\n",
    "def f(x):\n \t return x\n",
    "def f(x):\n\u00a0   return x\n",
    "def f(x):\n    return x\x00\n",
    "def f(x):\n    match x:\n        case [a, b]:\n            return a\n        case _:\n            return None\n",
    "def f(*, key):\n    return key\n",
    "def f():\n    return\n",
    "class A:\n    '''Doc.'''\n    value = 1\n",
    "import os\nfrom typing import List\n\ndef f(items: List[int]) -> int:\n    return len(items)\n",
    "def f(a,b):return a==b\n",
    "def f(a, b): return a == b  # True == 1\n",
    "def f(x):\n    return x is True or x is not False\n",
    "def f(x):\n    return True if x else False\n",
    "def f(d):\n    return {k: v for k, v in d.items() if v != None}\n",
    "def f(n):\n    global counter\n    counter = n\n    del counter\n    return n\n",
    "for i in range(3):\n    print(i)\n",
    "while True:\n    break\n",
    "def f(x):\n    return -x + (+x) - ~x\n",
    "def f(*args, **kwargs):\n    return [*args, *kwargs]\n",
    "def f(x):\n    return x @ x\n",
]

_WRAPPERS = [
    "```python\n{code}```",
    "Here is my solution:\n\n```python\n{code}```\n\nIt works.",
    "```\n{code}```",
    "```py\n{code}```",
    "```python3\n{code}```",
    "```Python\n{code}```",
    "{code}",
    "<think>Let me think x==None.</think>\n```python\n{code}```",
    "<think>unclosed reasoning ```python\n{code}```",
    "```python\n{code}```\n\n```python\nx=1\n```",
    "```text\nnot code\n```\n```\n{code}```",
    "```python\n{code}",
    "  ```python\n{code}  ```",
    "```python \n{code}```",
]

_SPECIAL = ["", "   \n\t", "```python\n```", "```python\n\n```", "no code at all, just prose with x == None",
            "```python\n" + "def f(x):\n    return x + 1\n" * 400 + "```"]


def replies() -> list[str]:
    """Every reply of the corpus, in a fixed order."""
    rng = random.Random(20261124)
    out = list(_SPECIAL)
    for index, code in enumerate(_SNIPPETS):
        out.append("```python\n" + code + "```")
        out.append(_WRAPPERS[1 + index % (len(_WRAPPERS) - 1)].format(code=code))
    for _ in range(160):
        parts = rng.sample(_SNIPPETS, 2)
        out.append(rng.choice(_WRAPPERS).format(code="\n".join(parts)))
    return out
