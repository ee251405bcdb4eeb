"""Tool results as the CLI first sent them, whatever a later request's history says.

A real CLI reads its conversation back from files the agent's own tool commands can write -- Claude Code between
the commands of a multi-turn run (``~/.claude/projects/*/*.jsonl``), Kilo for every request (``kilo.db``) -- so
in a later request the output of an earlier tool call is whatever those files say: a command that rewrote an
earlier one's ``3 failed`` to ``0 failed, 12 passed`` there had the later requests -- and the trajectory, rebuilt
from the last request, so the judge -- read the rewritten text. The first request carrying a result is the one
the model answered that call with: that text is the result (:mod:`.normalize`, rule 3, as for the model's
replies). A rewrite landing before that first request (a process the agent left running, racing the CLI) is
what the model read, as it would be had the command printed it: the command is in the trajectory either way.

CLIs also change old results themselves: they shorten them to save context (Claude Code's and Kilo's ``[Old
tool result content cleared]``, Kilo's ``[Tool output truncated for compaction: ...]``) or resend the same text
in another form (a string as a list of text blocks). The first result is kept then too, but neither is a
rewrite, nor recorded as one.
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
    call_id: str  # the tool call it answers
    history: dict[str, Any]  # the result as the later request carried it
    sent: dict[str, Any]  # the result as first sent
    sent_at: float  # the time of the first request that carried it


def _content(block: Mapping[str, Any]) -> str:
    """The comparable content of a ``tool_result`` block (transport keys are already gone, see blocks_of)."""
    return json.dumps([block.get("content"), bool(block.get("is_error"))], sort_keys=True, ensure_ascii=False,
                      default=str)


def _rewritten(first: Mapping[str, Any], later: Mapping[str, Any]) -> bool:
    """Whether ``later`` says something else than ``first``: not in form only, nor shortened by the CLI."""
    text = result_text(later)
    return (text, bool(later.get("is_error"))) != (result_text(first), bool(first.get("is_error"))) \
        and not text.lstrip().startswith(SHORTENED)


class SentResults:
    """The first-sent ``tool_result`` block of every tool-call id, fed the requests in time order."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[str, tuple[dict[str, Any], float]] = {}

    def restore(self, message: int, blocks: Iterable[dict[str, Any]], time: float,
                ) -> tuple[tuple[dict[str, Any], ...], list[ResultRewrite]]:
        """``blocks`` (a user message of a request made at ``time``) with every tool result put back to the
        first-sent one, and the rewrites among them (the CLI's own changes are put back, never listed)."""
        out, rewrites = [], []
        for block in blocks:
            ident = block.get("tool_use_id") if block.get("type") == "tool_result" else None
            first = self._first.setdefault(str(ident), (block, time)) if ident is not None else None
            if first is not None and first[0] is not block and _content(first[0]) != _content(block):
                if _rewritten(first[0], block):
                    rewrites.append(ResultRewrite(message=message, call_id=str(ident), history=dict(block),
                                                  sent=dict(first[0]), sent_at=first[1]))
                block = first[0]
            out.append(block)
        return tuple(out), rewrites
