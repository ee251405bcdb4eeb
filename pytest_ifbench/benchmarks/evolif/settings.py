"""Run settings of the authors' evaluation (``src/eval.py``) that imported official files default to.

``eval.py`` calls the model through ``LLM_backend`` with its default
temperature 1.0 and no token limit, and sends the released system prompt
(``src/data_utils/system_prompt.py``) when run with ``--system_prompt 1``.
"""

from __future__ import annotations

from typing import Any

AUTHORS_TEMPERATURE = 1.0
#: ``options.system_prompt`` / ``--system-prompt``: the authors' released prompt, ours, or none.
SYSTEM_PROMPTS = ("authors", "ours", "none")


def authors_system_prompt() -> str:
    """The system prompt of the authors' release (``src/data_utils/system_prompt.py``), byte for byte."""
    from importlib import resources

    return resources.files(__package__).joinpath("data/authors-system-prompt.txt").read_text(encoding="utf-8")


def system_defaults(defaults: dict[str, Any], choice: str) -> None:
    """Set ``defaults.system`` for ``choice``: authors | ours | none."""
    from .assemble import SYSTEM_PROMPT

    defaults.pop("system", None)
    if choice == "authors":
        defaults["system"] = authors_system_prompt()
    elif choice == "ours":
        defaults["system"] = SYSTEM_PROMPT
