"""Tool results as the CLI first sent them, whatever a later request's history says.

Between the commands of a multi-turn run a real CLI reads its conversation back from files the agent's own tool
commands can write (Claude Code's ``~/.claude/projects/*/*.jsonl``, Kilo's ``kilo.db``), so in a later request
the output of an earlier tool call is whatever those files say: a turn-1 command that rewrote its own ``3 failed``
to ``0 failed, 12 passed`` there had turn 2's request -- and the trajectory rebuilt from the last request, so
the judge -- read the rewritten text. The first request carrying a result was sent by the CLI process that ran
the tool, from its memory: that text is the result (:mod:`.normalize`, rule 3, as for the model's replies).

CLIs also shorten old results themselves to save context (Claude Code's and Kilo's ``[Old tool result content
cleared]``, Kilo's ``[Tool output truncated for compaction: ...]``). The first text is kept then too -- the
model saw it when it answered that call -- but a shortening is no rewrite and is not recorded as one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .trajectory import result_text

__all__ = ["ResultRewrite", "SentResults"]

#: What the CLIs put in place of an old result they shortened (not the agent's doing).
SHORTENED = ("[Old tool result content cleared]", "[Tool output truncated for compaction")


@dataclass(frozen=True, slots=True)
class ResultRewrite:
    """A tool result whose text in a later request's history differs from the one first sent."""

    message: int  # the index of the user message holding it in that request
    history: dict[str, Any]  # the result as the later request carried it
    sent: dict[str, Any]  # the result as first sent
    sent_at: float  # the time of the first request that carried it


def _content(block: Mapping[str, Any]) -> str:
    """The comparable content of a ``tool_result`` block (transport keys are already gone, see blocks_of)."""
    return json.dumps([block.get("content"), bool(block.get("is_error"))], sort_keys=True, ensure_ascii=False,
                      default=str)


class SentResults:
    """The first-sent ``tool_result`` block of every tool-call id, fed the requests in time order."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[str, tuple[dict[str, Any], float]] = {}

    def restore(self, message: int, blocks: Iterable[dict[str, Any]], time: float,
                ) -> tuple[tuple[dict[str, Any], ...], list[ResultRewrite]]:
        """``blocks`` (a user message of a request made at ``time``) with every tool result put back to the
        first-sent one, and the rewrites among them (shortenings by the CLI are put back, never listed)."""
        out, rewrites = [], []
        for block in blocks:
            ident = block.get("tool_use_id") if block.get("type") == "tool_result" else None
            first = self._first.setdefault(str(ident), (block, time)) if ident is not None else None
            if first is not None and first[0] is not block and _content(first[0]) != _content(block):
                if not result_text(block).lstrip().startswith(SHORTENED):
                    rewrites.append(ResultRewrite(message=message, history=dict(block), sent=dict(first[0]),
                                                  sent_at=first[1]))
                block = first[0]
            out.append(block)
        return tuple(out), rewrites
