"""Wire formats of the recording proxy: the HTTP dialects an agent CLI may speak to its model.

A wire format is one module holding one :class:`WireFormat` object (see :mod:`._base` for the
contract); the shipped ones are :data:`ANTHROPIC_MESSAGES` (``/v1/messages``) and :data:`OPENAI_CHAT`
(``/v1/chat/completions``). A package adds another with one registration in its
``pytest_ifbench_agent_clis(clis)`` hook: ``clis.add_wire_format(MY_FORMAT)``; a CLI then names it in
its declaration (``wire="my_format"``).
"""

from __future__ import annotations

from ._base import RequestError, Translated, WireFormat
from .anthropic_messages import ANTHROPIC_MESSAGES, message_from_completion
from .openai_chat import OPENAI_CHAT

#: The wire formats every registry starts with.
BUILTIN_WIRE_FORMATS: tuple[WireFormat, ...] = (ANTHROPIC_MESSAGES, OPENAI_CHAT)

__all__ = ["ANTHROPIC_MESSAGES", "BUILTIN_WIRE_FORMATS", "OPENAI_CHAT", "RequestError", "Translated", "WireFormat",
           "message_from_completion"]
