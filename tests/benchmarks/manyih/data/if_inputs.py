"""Inputs of the IF code-check conformance corpus: ``check_following`` sources in the shapes the
official data uses (word/sentence/paragraph counts, keywords, regexes, JSON, markdown, casing,
start/end markers) plus the shapes that hit the authors' execution quirks. No authors' code."""

from __future__ import annotations

_CHECKS = [
    # plain shapes
    "def check_following(response):\n    return len(response.split()) < 50\n",
    "def check_following(response):\n    return len(response.split()) >= 20\n",
    "def check_following(response):\n    return 'refund' in response.lower()\n",
    "def check_following(response):\n    return 'sorry' not in response.lower()\n",
    "import re\ndef check_following(response):\n    return re.search(r'\\$\\d', response) is None\n",
    "import re\n\ndef check_following(response):\n    return len(re.findall(r'^- ', response, re.M)) >= 3\n",
    "import json\ndef check_following(response):\n    try:\n        json.loads(response)\n        return True\n"
    "    except Exception:\n        return False\n",
    "def check_following(response):\n    return response.strip().endswith('- Ava')\n",
    "def check_following(response):\n    return response.startswith('Hello')\n",
    "def check_following(response):\n    return response.isupper()\n",
    "def check_following(response):\n    return response == response.lower()\n",
    "def check_following(response):\n    return len([p for p in response.split('\\n\\n') if p.strip()]) == 2\n",
    "def check_following(response):\n    return response.count('#') >= 1\n",
    "def check_following(response):\n    return '```' in response\n",
    "def check_following(response):\n    return sum(c.isdigit() for c in response) == 0\n",
    # evaluator globals: re / json / os used without importing them
    "def check_following(response):\n    return re.search(r'\\bMarco\\b', response) is not None\n",
    "def check_following(response):\n    return isinstance(json.loads('[1]'), list) and 'a' in response\n",
    "def check_following(response):\n    return os.sep == '/' and len(response) > 3\n",
    "def check_following(response):\n    return string.punctuation[0] in response\n",
    # imports the pattern finds (and misses)
    "import string\ndef check_following(response):\n    return not any(c in string.punctuation for c in response)\n",
    "from collections import Counter\ndef check_following(response):\n"
    "    return max(Counter(response.split()).values()) <= 3\n",
    "import re, json\ndef check_following(response):\n    return True\n",
    "from re import search, findall\ndef check_following(response):\n    return search('a', response) is not None\n",
    "import statistics as st\ndef check_following(response):\n    return st.mean([1, 2]) > 1\n",
    "import math as m\ndef check_following(response):\n    return m.sqrt(4) == 2 and 'a' in response\n",
    "def check_following(response):\n    import unicodedata\n"
    "    return all(unicodedata.category(c) != 'So' for c in response)\n",
    "def check_following(response):\n    from textwrap import dedent\n    return dedent(response) == response\n",
    # top-level helpers and constants are invisible to check_following
    "def _words(text):\n    return text.split()\n\n"
    "def check_following(response):\n    return len(_words(response)) < 40\n",
    "LIMIT = 30\ndef check_following(response):\n    return len(response.split()) < LIMIT\n",
    "import re\nPATTERN = re.compile(r'\\d+')\ndef check_following(response):\n"
    "    return PATTERN.search(response) is None\n",
    "def check_following(response):\n    def inner(t):\n        return t.split()\n"
    "    return len(inner(response)) > 5\n",
    # non-bool returns
    "def check_following(response):\n    return None\n",
    "def check_following(response):\n    return len(response.split())\n",
    "def check_following(response):\n    return response.count('zzz')\n",
    "def check_following(response):\n    return 'YES' if 'ok' in response else 'NO'\n",
    "def check_following(response):\n    return 'maybe'\n",
    "import re\ndef check_following(response):\n    return re.search(r'[A-Z]{3}', response)\n",
    "def check_following(response):\n    return [w for w in response.split() if w.istitle()]\n",
    "def check_following(response):\n    return 1 if response else 0\n",
    # checkers that fail
    "def check_following(response):\n    return response.splitlines()[5].startswith('-')\n",
    "def check_following(response):\n    raise ValueError('broken checker')\n",
    "def check_following(response)\n    return True\n",
    "def check(response):\n    return True\n",
    "def check_following(response):\n    return undefined_name in response\n",
    "def check_following(response):\n    return int(response.split()[0]) > 2\n",
    "import nonexistent_module_xyz\ndef check_following(response):\n    return True\n",
    "check_following = lambda response: 'a' in response\n",
    "def check_following(text):\n    return text.endswith('.')\n",
    "def check_following(response, strict=True):\n    return strict and response.endswith('?')\n",
]

_RESPONSES = [
    "",
    "   ",
    "Hello Marco! Your refund request for order #55812 is being processed.\n\n- Step one\n- Step two\n- Step three"
    "\n\n- Ava",
    "ok",
    "HELLO WORLD",
    "plain lower case text without digits or punctuation",
    '{"answer": 42, "items": [1, 2]}',
    "<think>I should say YES</think>Hello there. The answer is 7.",
    "<think>a</think>middle<think>b</think>tail",
    "# Title\n\nSome text with a $5 fee, sorry.\n\n```python\nprint(1)\n```",
    "Über café — naïve 日本語 🎉 text?",
    "3 apples and 2 pears. Is that right?",
    "- one\n- two\n- three\n- four\nend.",
    "word " * 60,
]


def cases() -> list[tuple[str, str]]:
    """(checker source, reply) pairs in a fixed order: every checker against a rotating subset of replies."""
    out = []
    for index, code in enumerate(_CHECKS):
        for shift in range(7):
            out.append((code, _RESPONSES[(index + shift * 2) % len(_RESPONSES)]))
    return out
