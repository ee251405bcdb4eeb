"""``ifbench generate octobench``: import the official file, rescore judge outputs, judge rank stability.

* ``import OFFICIAL_FILE -o suite.yaml [--workspaces DIR] [--compat MODE]``: our suite form of the
  official rows (the same data ``pytest OFFICIAL_FILE`` collects).
* ``rescore JUDGE_FILE [JUDGE_FILE ...] [--instances OFFICIAL_FILE]``: the authors' score and ours
  for judge outputs in the authors' format (``{results: [{instance_id, eval_result, reward, ...}]}``),
  per instance and overall; several files are several judges (mean ± std). With ``--instances`` the
  checklists are known, so checks a judge omitted are found and counted as not passed.
* ``ranks RESULTS [RESULTS ...] [--metric isr|csr] [--mode paper|reference]``: one results file per
  model under test; the models ranked per judge, and Kendall's tau-b / Spearman's rho between judges.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifbench generate octobench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import", help="write the official instances as a suite YAML")
    imp.add_argument("official", type=Path)
    imp.add_argument("-o", "--output", type=Path, required=True)
    imp.add_argument("--workspaces", type=Path, default=None, help="DIR holding DIR/<instance_id>/")
    imp.add_argument("--compat", choices=("paper", "reference"), default=None)
    rescore = commands.add_parser("rescore", help="the authors' score and ours for judge-output files")
    rescore.add_argument("judge_files", type=Path, nargs="+")
    rescore.add_argument("--instances", type=Path, default=None, help="the official file (finds omissions)")
    ranks = commands.add_parser("ranks", help="judge rank stability across results files (one per model)")
    ranks.add_argument("results", type=Path, nargs="+")
    ranks.add_argument("--metric", choices=("isr", "csr"), default="isr")
    ranks.add_argument("--mode", choices=("paper", "reference"), default="paper")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        if args.command == "import":
            return import_suite(args.official, args.output, workspaces=args.workspaces, compat=args.compat)
        if args.command == "rescore":
            print("\n".join(rescore_lines(args.judge_files, args.instances)))
            return 0
        print("\n".join(rank_lines(args.results, metric=args.metric, mode=args.mode)))
        return 0
    except (OSError, ValueError) as exc:
        print(f"ifbench generate octobench {args.command}: error: {exc}", file=sys.stderr)
        return 2


def import_suite(official: Path, output: Path, *, workspaces: Path | None = None, compat: str | None = None) -> int:
    import yaml

    from .official import Settings, load_rows, official_suite

    settings = Settings(workspaces=workspaces.resolve() if workspaces else None, compat=compat)
    data = official_suite(load_rows(official), settings, name=official.name)
    if workspaces is not None:
        for inst in data["instances"]:
            inst["environment"] = str(settings.workspaces / inst["id"])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    print(f"wrote {len(data['instances'])} instances to {output}")
    return 0


def _judge_rows(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("results") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected {{results: [...]}}")
    return [r for r in rows if isinstance(r, dict) and r.get("instance_id")]


def rescore_lines(judge_files: Sequence[Path], instances: Path | None = None) -> list[str]:
    """Per instance and overall: the authors' reward and binary reward, ours (share, all passed), omissions."""
    from .official import load_rows
    from .scoring import omissions, paper_score, reference_reward

    rows = load_rows(instances) if instances else []
    checklists = {str(r.get("instance_id")): r.get("checklist") or {} for r in rows}
    lines: list[str] = []
    overall: list[tuple[str, float, float, float | None, float | None]] = []
    for path in judge_files:
        lines.append(f"{path.name}:")
        lines.append(f"  {'instance':<40} {'reference reward':>16} {'ref. pass':>9} {'ours CSR':>9} "
                     f"{'ours pass':>9}  omitted")
        ref_rewards, ref_binary, ours_share, ours_pass = [], [], [], []
        for row in _judge_rows(path):
            ident = str(row["instance_id"])
            result = row.get("eval_result") if row.get("success", True) else {"error": row.get("error")}
            reward = reference_reward(result if result is not None else {"error": "no eval_result"})
            checklist = checklists.get(ident)
            mine = paper_score(result, checklist)
            missing = omissions(result, checklist) if checklist else []
            ref_rewards.append(reward)
            ref_binary.append(float(reward == 1.0))
            if mine is not None:
                ours_share.append(mine.share)
                ours_pass.append(float(mine.passed))
            lines.append(f"  {ident:<40} {reward:>16.3f} {int(reward == 1.0):>9} "
                         f"{'-' if mine is None else f'{mine.share:.3f}':>9} "
                         f"{'-' if mine is None else int(mine.passed):>9}  "
                         f"{', '.join(missing) if missing else ('-' if checklist else 'unknown (no --instances)')}")
        isr, csr = _mean(ref_binary), _mean(ref_rewards)
        ours_isr, ours_csr = (_mean(ours_pass), _mean(ours_share)) if ours_share else (None, None)
        overall.append((path.name, isr, csr, ours_isr, ours_csr))
        lines.append(f"  overall: reference ISR {100 * isr:.1f}% CSR {100 * csr:.1f}% | ours ISR "
                     f"{_pct(ours_isr)} CSR {_pct(ours_csr)} (N={len(ref_rewards)}, scored by us: {len(ours_share)})")
    if len(overall) > 1:
        lines.append("mean ± std across judges:")
        for index, name in enumerate(("reference ISR", "reference CSR", "ours ISR", "ours CSR"), start=1):
            values = [row[index] for row in overall if row[index] is not None]
            if values:
                lines.append(f"  {name}: {100 * statistics.fmean(values):.1f}% ± {100 * statistics.pstdev(values):.1f}")
    return lines


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def model_scores(results: Sequence[Path], *, metric: str = "isr", mode: str = "paper") -> dict[str, dict[str, float]]:
    """``scores[judge][model]`` from results files (one per model; the model is the file's ``model``)."""
    from .scoring import judges_of, rates

    scores: dict[str, dict[str, float]] = {}
    for path in results:
        document = json.loads(path.read_text(encoding="utf-8"))
        records = [r for r in document.get("instances") or [] if r.get("benchmark") == "octobench"]
        model = str(document.get("model") or next((r.get("model") for r in records if r.get("model")), path.stem))
        for judge in judges_of(records):
            value = getattr(rates(records, judge=judge, mode=mode), metric)
            if value is not None:
                scores.setdefault(judge or "verdict", {})[model] = value
    return scores


def rank_lines(results: Sequence[Path], *, metric: str = "isr", mode: str = "paper") -> list[str]:
    from .ranks import agreement

    scores = model_scores(results, metric=metric, mode=mode)
    if not scores:
        raise ValueError("no OctoBench records with scores in the results files")
    ranks, pairs = agreement(scores)
    judges = sorted(ranks)
    models = sorted(next(iter(ranks.values())), key=lambda m: sum(ranks[j][m] for j in judges))
    width = max([len("model")] + [len(m) for m in models])
    lines = [f"ranks by {metric.upper()} ({mode}); 1 = best",
             f"  {'model':<{width}}  " + "  ".join(f"{j:>14}" for j in judges)]
    for model in models:
        lines.append(f"  {model:<{width}}  " + "  ".join(
            f"{ranks[j][model]:>5g} ({100 * scores[j][model]:5.1f})" for j in judges))
    lines.append("agreement between judges:")
    for a, b, tau, rho in pairs:
        lines.append(f"  {a} vs {b}: Kendall tau-b {_num(tau)}, Spearman rho {_num(rho)}")
    if not pairs:
        lines.append("  (one judge only: nothing to compare)")
    spans = [max(ranks[j][m] for j in judges) - min(ranks[j][m] for j in judges) for m in models]
    lines.append(f"largest rank gap of a model across judges: {max(spans, default=0):g}")
    return lines


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:+.3f}"
