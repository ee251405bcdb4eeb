"""Pre-generated responses for scoring without a model (``ifbench score``)."""

from __future__ import annotations

from pathlib import Path

from ..suite.jsonl import JsonlError, iter_jsonl, jsonl_lines
from .provider_api import Provider


class ResponsesError(ValueError):
    pass


def load_responses(path: Path) -> dict[str, list[str]]:
    """Read JSONL lines ``{"id": ..., "response": "..."}`` or ``{"id": ..., "responses": [...]}``.

    ``responses`` lists one reply per turn for multi-turn instances.
    """
    out: dict[str, list[str]] = {}
    try:
        lines = jsonl_lines(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResponsesError(f"{path}: cannot read: {exc}") from None
    expected = 'expected an object with a string "id"'
    try:
        entries = list(iter_jsonl(lines, expected=expected))
    except JsonlError as exc:
        raise ResponsesError(f"{path}:{exc.line}: {exc.reason}") from None
    for number, entry in entries:
        if not isinstance(entry.get("id"), str):
            raise ResponsesError(f"{path}:{number}: {expected}")
        if "responses" in entry:
            replies = entry["responses"]
            if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
                raise ResponsesError(f'{path}:{number}: "responses" must be a list of strings')
        elif isinstance(entry.get("response"), str):
            replies = [entry["response"]]
        else:
            raise ResponsesError(f'{path}:{number}: needs "response" (string) or "responses" (list)')
        if entry["id"] in out:
            raise ResponsesError(f"{path}:{number}: duplicate id {entry['id']!r}")
        out[entry["id"]] = replies
    return out


#: The model name recorded when scoring pre-generated responses.
RECORDED = "recorded-responses"
#: Recorded responses in the provider table: the protocols hand out the recorded replies, so this
#: model is never called (a stray call -- a judge left at the default -- goes through litellm and
#: fails there, as it always did) and a run scoring recorded responses never prefetches litellm.
PROVIDER = Provider(name="recorded", serves_when=lambda model, api_base, extra: model == RECORDED, free=True)
