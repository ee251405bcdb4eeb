"""OctoBench's vocabularies: the seven instruction sources (Table 7), the six check types (Table 8),
the scaffolds, and the conflict pairs and scenarios (appendix E).

The released files spell sources several ways (checklist keys ``SP``, ``System reminder``,
``User query``, ``Agents.md``, ``Tool schema``; instance categories ``Skill``, ``Claude.md``,
``AGENTS.md``, ``memory``, ``SP``, ``User Query``). :func:`source` maps every spelling to one slug;
the slug names the checklist category and the ``category_<slug>`` marker.
"""

from __future__ import annotations

import re

#: slug -> the paper's name (Table 7), in the paper's order.
SOURCES: dict[str, str] = {
    "system_prompt": "System Prompt",
    "system_reminder": "System Reminder",
    "user_query": "User Query",
    "agents_md": "Agents.md/Claude.md",
    "skill_md": "Skill.md",
    "memory": "Memory",
    "tool_schema": "Tool schema",
}

#: Spellings seen in the released instances and judge outputs (compared case-, space- and
#: punctuation-insensitively), by slug.
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "system_prompt": ("sp", "system prompt", "system_prompt", "systemprompt", "system"),
    "system_reminder": ("system reminder", "system_reminder", "systemreminder", "reminder"),
    "user_query": ("user query", "user_query", "userquery", "uq", "user"),
    "agents_md": ("agents.md", "agents md", "agents_md", "agentsmd", "claude.md", "claude md", "claudemd",
                  "agents.md/claude.md", "md", "agents"),
    "skill_md": ("skill", "skill.md", "skill md", "skill_md", "skillmd", "skills"),
    "memory": ("memory", "memory bank", "mem"),
    "tool_schema": ("tool schema", "tool_schema", "toolschema", "tools", "tool"),
}
_INDEX = {re.sub(r"[\s_\-/.]+", "", s): slug for slug, spellings in _SPELLINGS.items() for s in spellings}

#: Table 8, in the paper's order.
CHECK_TYPES: tuple[str, ...] = ("compliance", "implementation", "understanding", "testing", "modification",
                                "configuration")

#: Scaffold slug -> (runner, tool profile). The spellings the authors' harness uses map onto them.
SCAFFOLDS: dict[str, tuple[str, str]] = {
    "claude_code": ("claude_code", "claude_code"),
    "kilo": ("kilo", "kilo"),
    "droid": ("droid", "droid"),
}
_SCAFFOLD_SPELLINGS = {"claudecode": "claude_code", "claude": "claude_code", "kilodev": "kilo", "kilocli": "kilo",
                       "kilocode": "kilo", "kilo": "kilo", "droid": "droid", "factorydroid": "droid"}

#: Conflict pairs (appendix E.1) -> the two sources, A first.
CONFLICT_PAIRS: dict[str, tuple[str, str]] = {
    "UQ vs SP": ("user_query", "system_prompt"),
    "SP vs MD": ("system_prompt", "agents_md"),
    "UQ vs MD": ("user_query", "agents_md"),
}
CONFLICT_SCENARIOS: tuple[str, ...] = ("language", "emoji", "verbosity", "safety", "identity")
ATTRIBUTIONS: tuple[str, ...] = ("A", "B", "neither", "both")


def source(spelling: str) -> str | None:
    """The source slug of a category spelling (``"SP"`` -> ``"system_prompt"``), or None if unknown."""
    key = re.sub(r"[\s_\-/.]+", "", spelling.strip().lower())
    return _INDEX.get(key)


def scaffold(name: str | None) -> str | None:
    """The scaffold slug of a scaffold name (``claudecode``, ``kilo-dev``, ...); None if unknown.
    A missing name is ``claude_code``, the authors' harness's default."""
    if not name:
        return "claude_code"
    key = re.sub(r"[\s_\-.]+", "", name.strip().lower())
    return _SCAFFOLD_SPELLINGS.get(key) or (key if key in SCAFFOLDS else None)


def conflict_pair(spelling: str) -> str | None:
    """The canonical pair name (``"UQ vs SP"``) of a spelling such as ``uq-vs-sp`` or ``SP vs UQ``."""
    parts = [p for p in re.split(r"[\s_\-]*(?:vs\.?|versus|/)[\s_\-]*", spelling.strip(), flags=re.I) if p]
    if len(parts) != 2:
        return None
    wanted = {p.strip().upper() for p in parts}
    for name in CONFLICT_PAIRS:
        if set(name.split(" vs ")) == wanted:
            return name
    return None
