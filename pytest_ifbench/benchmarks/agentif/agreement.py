"""``ifbench generate agentif agreement --human FILE --results RESULTS.json``: each judge's agreement with
human annotations of the rubric items (paper, Table 3), and Cohen's kappa.

The human file is JSON lines, one rubric item a line::

    {"question_id": "taskif_3", "criterion": "c2", "satisfied": true}

(``instance`` instead of ``question_id``; ``criterion_id`` or ``id`` instead of ``criterion``.) ``criterion`` is
the check id: for the official file ``c<n>`` is the n-th item of ``score_criteria`` (1-based). ``satisfied``
has the judge's meaning: for a penalty item, true means the penalty applies. Each judge's vote is read from the
results file (``verdict.details.judges[].satisfied``); items a judge did not decide are counted as missing, not
as disagreements.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ifbench import JsonlError, iter_jsonl


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary raters; None with no pairs, 1.0 when both always agree on one label."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    p_a = sum(a for a, _ in pairs) / n
    p_b = sum(b for _, b in pairs) / n
    expected = p_a * p_b + (1 - p_a) * (1 - p_b)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def read_human(path: Path) -> dict[tuple[str, str], bool]:
    out: dict[tuple[str, str], bool] = {}
    expected = "expected question_id/instance, criterion and a boolean satisfied"
    try:  # split at newlines only: a U+2028 inside an annotator's note is JSON, not a line break
        rows = list(iter_jsonl(path.read_text(encoding="utf-8"), expected=expected))
    except JsonlError as exc:
        raise ValueError(f"{path}:{exc.line}: {exc.reason}") from None
    for number, row in rows:
        task = row.get("question_id", row.get("instance"))
        criterion = row.get("criterion", row.get("criterion_id", row.get("id")))
        satisfied = row.get("satisfied")
        if task is None or criterion is None or not isinstance(satisfied, bool):
            raise ValueError(f"{path}:{number}: {expected}")
        out[(str(task), str(criterion))] = satisfied
    return out


def judge_votes(results: Mapping[str, Any]) -> dict[str, dict[tuple[str, str], bool]]:
    """judge -> (instance, check id) -> satisfied, from a results file's records."""
    out: dict[str, dict[tuple[str, str], bool]] = {}
    for record in results.get("instances", []):
        task = str((record.get("metadata") or {}).get("question_id") or record.get("instance"))
        for check in record.get("checks", []):
            for vote in (check.get("verdict") or {}).get("details", {}).get("judges", []) or []:
                if isinstance(vote.get("satisfied"), bool):
                    out.setdefault(str(vote["judge"]), {})[(task, str(check["id"]))] = vote["satisfied"]
    return out


def agreement(human: Mapping[tuple[str, str], bool], votes: Mapping[str, Mapping[tuple[str, str], bool]],
              ) -> list[dict[str, Any]]:
    rows = []
    for judge in sorted(votes):
        pairs = [(said, votes[judge][key]) for key, said in human.items() if key in votes[judge]]
        rows.append({"judge": judge, "items": len(pairs), "missing": len(human) - len(pairs),
                     "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
                     "kappa": cohen_kappa(pairs)})
    return rows


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="ifbench generate agentif agreement",
                                     description="Judge agreement with human rubric annotations (Table 3).")
    parser.add_argument("--human", type=Path, required=True, help="JSON lines: question_id, criterion, satisfied")
    parser.add_argument("--results", type=Path, required=True, help="an ifbench results file (JSON)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(list(argv))
    try:
        human = read_human(args.human)
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = agreement(human, judge_votes(results))
    if not rows:
        print("error: the results file has no judge votes on rubric items", file=sys.stderr)
        return 1
    print(f"{'judge':40} {'items':>6} {'missing':>8} {'agreement':>10} {'kappa':>7}")
    for row in rows:
        rate = "-" if row["agreement"] is None else f"{100 * row['agreement']:.1f}%"
        kappa = "-" if row["kappa"] is None else f"{row['kappa']:.3f}"
        print(f"{row['judge']:40} {row['items']:>6} {row['missing']:>8} {rate:>10} {kappa:>7}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0
