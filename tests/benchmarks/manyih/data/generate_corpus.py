"""Record the authors' verdicts for the ManyIH conformance corpus (see README.md).

Run OUTSIDE the repository's environment, with the authors' checkout given on the command line:

    python tests/benchmarks/manyih/data/generate_corpus.py /tmp/manyih-authors <commit>

It imports their modules from that path (nothing of theirs is copied here) and writes
``style_corpus.jsonl`` and ``if_corpus.jsonl`` next to this file.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
STYLE_IDS = None  # filled from the authors' registry


def _header(kind: str, commit: str, extra: dict) -> dict:
    return {"corpus": kind, "authors_repo": "https://github.com/JHU-CLSP/ManyIH", "commit": commit,
            "python": platform.python_version(), **extra}


def style_corpus(commit: str) -> list[dict]:
    from manyih.coding.evaluate import extract_code_from_response
    from manyih.coding.styles import REGISTRY, check_style_instruction

    sys.path.insert(0, str(HERE))
    from style_inputs import replies

    ids = list(REGISTRY.all_style_ids)
    rows = [_header("style", commit, {"style_ids": ids,
                                      "verdicts": "one character per style id: 1 pass, 0 fail, E the checker raises"})]
    for reply in replies():
        code = extract_code_from_response(reply)
        marks = []
        for style_id in ids:
            if not code:
                marks.append("0")  # their judge_response: no code, every style fails
                continue
            try:
                marks.append("1" if check_style_instruction(code, style_id)[0] else "0")
            except Exception:  # noqa: BLE001
                marks.append("E")
        rows.append({"reply": reply, "verdicts": "".join(marks)})
    return rows


def _score_in_child(code: str, response: str) -> str:
    """One execute_function call in a forked child (their imports land in module globals and would
    leak into later calls otherwise); the score as the evaluator turns it into a constraint score."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            from manyih.instruction_following import evaluator

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            value, error = evaluator.execute_function(code, response)
            if error:
                score = "none"
            elif isinstance(value, str):
                score = "true" if "YES" in value else "false" if "NO" in value else "none"
            elif value is None:
                score = "none"
            elif isinstance(value, bool):
                score = "true" if value else "false"
            else:
                score = f"other:{'truthy' if value else 'falsy'}"
        except BaseException as exc:  # noqa: BLE001
            score = f"crash:{type(exc).__name__}"
        os.write(write, score.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 4096):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode() or "crash:silent"


def if_corpus(commit: str) -> list[dict]:
    sys.path.insert(0, str(HERE))
    from if_inputs import cases

    rows = [_header("if_code", commit, {"score": "true / false / none (excluded) / other:truthy|falsy "
                                                 "(a non-bool, non-str return kept as is)"})]
    for code, reply in cases():
        # their prediction stage stores reply.strip(); their evaluation keeps what follows "</think>"
        response = reply.strip()
        if "</think>" in response:
            response = response.split("</think>")[1].strip()
        rows.append({"code": code, "response": reply, "score": _score_in_child(code, response)})
    return rows


def main(argv: list[str]) -> int:
    authors, commit = argv[0], argv[1]
    sys.path.insert(0, authors)
    sys.modules.setdefault("tqdm", types.SimpleNamespace(tqdm=lambda iterable=None, **kw: iterable))
    which = argv[2:] or ["style", "if"]
    for kind, build in (("style", style_corpus), ("if", if_corpus)):
        if kind in which:
            rows = build(commit)
            target = HERE / f"{kind}_corpus.jsonl"
            target.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
                              encoding="utf-8")
            print(f"{target.name}: {len(rows) - 1} inputs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
