"""EvolIF process metrics (Jia et al. §3.4, appendix B), per-group rates, patience sweep, survival.

Everything is computed from the result records: a dialogue's turns are
``record["turns"]``; the constraints of turn t are its scored checks with
``turn_ran == t``. Per dialogue d with N_d turns, turn t has |I_t| scored
constraints of which |C_t| passed, and succeeded when |C_t| = |I_t|.

* EDR_len = mean N_d; EDR_acc = mean sum_t |C_t|/|I_t|; EDR_succ = mean number
  of successful turns; EDR_lss = mean longest run of successful turns.
* CSR = sum over all turns of |C_t|/|I_t| / total turns; ISR = successful turns
  / total turns (both pooled over every turn of every dialogue, appendix B.1).
* REC (eq. 4) per dialogue = #(t in 2..N: turn t-1 failed and turn t succeeded)
  / #(t in 2..N: turn t-1 failed), averaged over the dialogues where the
  denominator is not 0 (0/0: no failure was followed by another turn).
* STA = mean over dialogues of successful turns / N_d.

A turn with no scored constraint counts as satisfied (|C_t|/|I_t| := 1), as
the patience protocol treats it. EDR_acc (and the rest) under a smaller
patience p is derived from the same run: the dialogue would have ended at the
first run of p consecutive failed turns. docs/evolif.md has the details.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ifbench import errored, stats

BENCHMARK = "evolif"
#: Turns at which the survival table samples the curve.
_SURVIVAL_MARKS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)


@dataclass(kw_only=True)
class Dialogue:
    """One dialogue's per-turn outcomes, as read from its result record."""

    name: str
    #: (constraints satisfied, constraints) per turn that ran, in order.
    turns: list[tuple[int, int]]
    ended: str = "completed"
    model: str = ""
    patience: int | None = None
    #: (group abbreviation, passed) for every scored evolif constraint of every turn.
    constraints: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def fractions(self) -> list[float]:
        return [s / n if n else 1.0 for s, n in self.turns]

    @property
    def successes(self) -> list[bool]:
        return [s == n for s, n in self.turns]


# --------------------------------------------------------------------------- reading records


def dialogue_from_record(record: Mapping[str, Any]) -> Dialogue:
    from .catalog import group_of

    n_turns = len(record.get("turns") or [])
    counts = [[0, 0] for _ in range(n_turns)]
    constraints: list[tuple[str, bool]] = []
    for check in record.get("checks") or []:
        if not check.get("scored", True):
            continue
        turn = check.get("turn_ran") or n_turns
        if not 1 <= turn <= n_turns:
            continue
        passed = bool(check.get("passed"))
        counts[turn - 1][1] += 1
        counts[turn - 1][0] += passed
        group = (check.get("metadata") or {}).get("group") or group_of(str(check.get("verifier", "")))
        if group:
            constraints.append((group, passed))
    options = record.get("protocol_options") or {}
    patience = options.get("patience", (record.get("metadata") or {}).get("patience"))
    return Dialogue(
        name=str(record.get("instance") or record.get("nodeid")),
        turns=[(s, n) for s, n in counts], ended=str(record.get("ended") or "completed"),
        model=str(record.get("model") or ""), patience=patience if isinstance(patience, int) else None,
        constraints=constraints,
    )


def dialogues(records: Sequence[Mapping[str, Any]]) -> list[Dialogue]:
    """Dialogues of the records that ran (errored records have no outcomes and are left out)."""
    return [dialogue_from_record(r) for r in records if not errored(r) and r.get("turns")]


# --------------------------------------------------------------------------- formulas


def longest_success_run(successes: Sequence[bool]) -> int:
    best = run = 0
    for ok in successes:
        run = run + 1 if ok else 0
        best = max(best, run)
    return best


def recovery(successes: Sequence[bool]) -> tuple[int, int]:
    """(recoveries, failures followed by another turn): eq. 4's numerator and denominator."""
    recovered = sum(1 for t in range(1, len(successes)) if not successes[t - 1] and successes[t])
    chances = sum(1 for t in range(1, len(successes)) if not successes[t - 1])
    return recovered, chances


@dataclass(frozen=True, kw_only=True)
class DialogueScores:
    length: int
    accuracy: float
    successes: int
    lss: int
    recovered: int
    recover_chances: int

    @property
    def csr(self) -> float:
        return self.accuracy / self.length

    @property
    def isr(self) -> float:
        return self.successes / self.length

    @property
    def rec(self) -> float | None:
        return self.recovered / self.recover_chances if self.recover_chances else None


def score_dialogue(fractions: Sequence[float], successes: Sequence[bool]) -> DialogueScores:
    recovered, chances = recovery(successes)
    return DialogueScores(length=len(fractions), accuracy=float(sum(fractions)), successes=sum(successes),
                          lss=longest_success_run(successes), recovered=recovered, recover_chances=chances)


@dataclass(frozen=True, kw_only=True)
class Summary:
    dialogues: int
    edr_len: float
    edr_acc: float
    edr_succ: float
    edr_lss: float
    csr: float
    isr: float
    rec: float | None
    rec_dialogues: int
    sta: float


def summarise(scores: Sequence[DialogueScores]) -> Summary | None:
    if not scores:
        return None
    turns = sum(s.length for s in scores)
    recs = [s.rec for s in scores if s.rec is not None]
    return Summary(
        dialogues=len(scores),
        edr_len=statistics.fmean(s.length for s in scores),
        edr_acc=statistics.fmean(s.accuracy for s in scores),
        edr_succ=statistics.fmean(s.successes for s in scores),
        edr_lss=statistics.fmean(s.lss for s in scores),
        csr=sum(s.accuracy for s in scores) / turns,
        isr=sum(s.successes for s in scores) / turns,
        rec=statistics.fmean(recs) if recs else None, rec_dialogues=len(recs),
        sta=statistics.fmean(s.isr for s in scores),
    )


def turns_under_patience(successes: Sequence[bool], patience: int) -> int:
    """How many turns would have run with this patience: up to the first ``patience`` failures in a row."""
    budget = patience
    for index, ok in enumerate(successes, start=1):
        budget = patience if ok else budget - 1
        if budget <= 0:
            return index
    return len(successes)


def trailing_failures(successes: Sequence[bool]) -> int:
    count = 0
    for ok in reversed(successes):
        if ok:
            break
        count += 1
    return count


def dialogue_patience(dialogue: Dialogue) -> int | None:
    """The patience a dialogue ran with: exact for one that exhausted it (the failed turns it ended
    with), else as the record states it (``protocol_options`` or ``metadata.patience``)."""
    if dialogue.ended == "patience_exhausted":
        return trailing_failures(dialogue.successes) or dialogue.patience
    return dialogue.patience


def derivable_patience(items: Sequence[Dialogue]) -> int | None:
    """The largest patience every dialogue's outcome can be derived for, None if unlimited.

    A dialogue that ran its script to the end is derivable for any patience; one
    that ended by exhausting patience P only for patience <= P.
    """
    limits = [p for d in items if d.ended == "patience_exhausted" and (p := dialogue_patience(d))]
    return min(limits) if limits else None


def run_patience(items: Sequence[Dialogue]) -> int | None:
    """The patience the run used (the smallest, if suites with different patience ran together)."""
    known = [p for d in items if (p := dialogue_patience(d))]
    return min(known) if known else None


def survival(lengths: Sequence[int], max_turn: int | None = None) -> list[tuple[int, float]]:
    """(turn, share of dialogues still running at that turn) for turn = 1..max_turn."""
    if not lengths:
        return []
    top = max_turn or max(lengths)
    return [(t, sum(1 for n in lengths if n >= t) / len(lengths)) for t in range(1, top + 1)]


def group_rates(items: Sequence[Dialogue]) -> dict[str, tuple[int, int]]:
    """group -> (constraints satisfied, constraints evaluated), pooled over every turn that ran."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for dialogue in items:
        for group, passed in dialogue.constraints:
            out[group][0] += passed
            out[group][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


# --------------------------------------------------------------------------- tables


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def interval_row(items: Sequence[Dialogue], scores: Sequence[DialogueScores]) -> tuple[str, ...]:
    """The headline row's ``value ±SE [95% CI]`` cells, the dialogue as the unit (its turns are not
    independent): EDR_* and STA are means over dialogues (t); turn CSR/ISR pool the turns, so their SE is
    the cluster-robust one with each dialogue a cluster; REC is a mean over the dialogues that have one."""
    found = headline_estimates(items, scores)
    return ("±SE [95% CI]", str(len(scores)),
            *(_cell(found.get(name), percent=name.startswith(("turn", "REC", "STA"))) for name in HEADLINE))


#: The headline table's columns with an interval, in order.
HEADLINE = ("EDR_len", "EDR_acc", "EDR_succ", "EDR_lss", "turn CSR", "turn ISR", "REC", "STA")


def headline_estimates(items: Sequence[Dialogue], scores: Sequence[DialogueScores]) -> dict[str, stats.Estimate]:
    """The headline metrics with their intervals by dialogue (see :func:`interval_row`)."""
    ids = [d.name for d, s in zip(items, scores) for _ in range(s.length)]
    fractions = [f for d in items for f in d.fractions]
    successes = [float(ok) for d in items for ok in d.successes]
    found = {name: stats.mean([float(getattr(s, key)) for s in scores], bounds=(0.0, float("inf")))
             for name, key in zip(HEADLINE, ("length", "accuracy", "successes", "lss"))}
    found |= {"turn CSR": stats.clustered(fractions, ids), "turn ISR": stats.clustered(successes, ids),
              "REC": stats.mean([r for s in scores if (r := s.rec) is not None]),
              "STA": stats.mean([s.isr for s in scores])}
    return {name: estimate for name, estimate in found.items() if estimate is not None}


#: The headline table's note on its interval row.
INTERVAL_NOTE = ("±SE [95% CI]: the dialogue is the unit; EDR_*, REC, STA: mean +- t(n-1) x SE over dialogues; "
                 "turn CSR/ISR: cluster-robust SE over dialogues, t(G-1) (pytest_ifbench.stats)")


def _num(value: float) -> str:
    return f"{value:.2f}"


def _cell(estimate: stats.Estimate | None, percent: bool = True) -> str:
    return "-" if estimate is None else estimate.pct() if percent else estimate.plain(2)


def sweep_row(items: Sequence[Dialogue], patience: int, label: str) -> tuple[str, ...]:
    """One patience of the sweep (Table 3), each cell with its interval by dialogue: EDR_* and STA are means
    over dialogues (t), turn ISR pools the turns (cluster-robust by dialogue)."""
    cut = [(d.name, d.successes[:k], score_dialogue(d.fractions[:k], d.successes[:k]))
           for d in items for k in [turns_under_patience(d.successes, patience)]]
    scores = [score for _, _, score in cut]
    ids = [name for name, successes, _ in cut for _ in successes]
    unbounded = (0.0, float("inf"))
    return (label, *(_cell(stats.mean([float(getattr(s, key)) for s in scores], bounds=unbounded), percent=False)
                     for key in ("length", "accuracy", "successes")),
            _cell(stats.clustered([float(ok) for _, successes, _ in cut for ok in successes], ids)),
            _cell(stats.mean([s.isr for s in scores])))


def group_estimate(items: Sequence[Dialogue], group: str) -> stats.Estimate | None:
    """A constraint group's satisfaction rate, clustered by dialogue."""
    pairs = [(float(passed), d.name) for d in items for g, passed in d.constraints if g == group]
    return stats.clustered([v for v, _ in pairs], [c for _, c in pairs])


def tables(records: Sequence[Mapping[str, Any]]) -> list[Any]:
    from pytest_ifbench import MetricTable

    from .catalog import GROUPS

    items = dialogues(records)
    errors = sum(1 for r in records if errored(r))
    if not items:
        return []
    scores = [score_dialogue(d.fractions, d.successes) for d in items]
    overall = summarise(scores)
    assert overall is not None
    patience = run_patience(items)
    values = sorted({p for d in items if (p := dialogue_patience(d))})
    label = "P=" + ("/".join(map(str, values)) if values else "?")
    notes = []
    if overall.rec_dialogues < overall.dialogues:
        notes.append(f"REC averages {overall.rec_dialogues} of {overall.dialogues} dialogue(s); "
                     f"{overall.dialogues - overall.rec_dialogues} had no failed turn followed by another turn "
                     "(0/0) and are left out")
    if errors:
        notes.append(f"{errors} dialogue(s) errored and are left out")
    out = [MetricTable(
        title=f"{BENCHMARK}: process metrics per turn ({label}; turn CSR/ISR pool every turn, not dialogues)",
        columns=("", "dialogues", "EDR_len", "EDR_acc", "EDR_succ", "EDR_lss", "turn CSR", "turn ISR", "REC", "STA"),
        rows=(("all", overall.dialogues, _num(overall.edr_len), _num(overall.edr_acc), _num(overall.edr_succ),
               _num(overall.edr_lss), _pct(overall.csr), _pct(overall.isr), _pct(overall.rec), _pct(overall.sta)),
              interval_row(items, scores)),
        notes=(*notes, INTERVAL_NOTE), estimates=headline_estimates(items, scores),
    )]
    out.append(MetricTable(
        title=f"{BENCHMARK}: per dialogue",
        columns=("dialogue", "turns", "ended", "acc", "succ", "lss", "turn CSR", "turn ISR", "REC"),
        rows=tuple(
            (d.name, s.length, d.ended, _num(s.accuracy), s.successes, s.lss, _pct(s.csr), _pct(s.isr),
             "-" if s.rec is None else f"{s.recovered}/{s.recover_chances}")
            for d, s in zip(items, scores)
        ),
    ))
    limit = derivable_patience(items)
    top = max(3, patience or 0) if limit is None else limit
    sweep = [sweep_row(items, p, f"P={p}" + (" (run)" if p == patience else "")) for p in range(1, top + 1)]
    sweep_notes = ["derived from this run's per-turn outcomes: with patience p a dialogue ends at its first p "
                   "consecutive failed turns", INTERVAL_NOTE]
    if limit is not None and (patience is None or limit < 3):
        sweep_notes.append(f"patience above {limit} cannot be derived: dialogues ended after {limit} failures")
    out.append(MetricTable(title=f"{BENCHMARK}: endurance by patience (Table 3)",
                           columns=("patience", "EDR_len", "EDR_acc", "EDR_succ", "turn ISR", "STA"),
                           rows=tuple(sweep), notes=tuple(sweep_notes)))
    if any(_reference(r) for r in records):
        out.append(authors_table(items))
    rates = group_rates(items)
    if rates:
        names = {abbr: name for abbr, name in GROUPS.values()}
        order = [abbr for abbr, _ in GROUPS.values()]
        out.append(MetricTable(
            title=f"{BENCHMARK}: satisfaction rate by constraint group (Table 7)",
            columns=("group", "name", "satisfied", "evaluated", "rate", "±SE [95% CI]"),
            rows=tuple((g, names.get(g, g), rates[g][0], rates[g][1], _pct(rates[g][0] / rates[g][1]),
                        _cell(group_estimate(items, g)))
                       for g in sorted(rates, key=lambda g: order.index(g) if g in order else len(order))),
            notes=("±SE [95% CI]: the constraints of one dialogue are not independent: "
                   + stats.METHODS["cluster"],),
        ))
    curve = survival([s.length for s in scores])
    marks = [t for t in _SURVIVAL_MARKS if t <= len(curve)]
    if curve and curve[-1][0] not in marks:
        marks.append(curve[-1][0])
    out.append(MetricTable(
        title=f"{BENCHMARK}: dialogue survival (share still running at turn t)",
        columns=("turn", "running", "share", "±SE [95% CI]"),
        rows=tuple((t, running, _pct(curve[t - 1][1]), _cell(stats.proportion([True] * running
                                                                             + [False] * (len(items) - running))))
                   for t in marks for running in [round(curve[t - 1][1] * len(items))]),
        notes=("a dialogue whose script ended is no longer running either",
               "±SE [95% CI]: " + stats.METHODS["wilson"].replace("instances", "dialogues")),
    ))
    return out


def _reference(record: Mapping[str, Any]) -> bool:
    return any((c.get("params") or {}).get("compat") == "reference" for c in record.get("checks") or []
               if isinstance(c.get("params"), dict))


def authors_table(items: Sequence[Dialogue]) -> Any:
    """The authors' ``score.py`` reading of the same turns, REC's nan/inf/-0 dialogues counted apart."""
    from pytest_ifbench import MetricTable

    from .authors_score import score

    turns = [[[True] * s + [False] * (n - s) if n else [True] for s, n in d.turns] for d in items]
    result = score(turns)
    assert result is not None
    rec = "nan" if result.rec != result.rec else ("inf" if abs(result.rec) == float("inf") else _pct(result.rec))
    return MetricTable(
        title=f"{BENCHMARK}: as the authors' score.py computes it (compat reference)",
        columns=("CSR", "ISR", "Robustness", "REC", "REC finite", "REC 0/-1 (no failure)", "REC nan (0/0)",
                 "REC inf (n/0)"),
        rows=((_pct(result.csr), _pct(result.isr), _pct(result.robustness), rec, result.rec_finite,
               result.rec_negative_zero, result.rec_nan, result.rec_inf),),
        notes=("score.py divides recoveries by turns - successes - 1 per dialogue and averages with numpy: one nan "
               "or inf dialogue makes REC nan/inf; a dialogue without failures counts as 0",),
    )


# --------------------------------------------------------------------------- plots


def plots(records: list[dict[str, Any]], directory: Any) -> list[Any]:
    """``evolif-survival.png`` (Figure 3) and ``evolif-groups.png`` (Figure 4), one line/bar set per model."""
    items = dialogues(records)
    if not items:
        return []
    return [plot_survival(items, Path(directory)), plot_groups(items, Path(directory))]


def _figure(width: float = 7.0, height: float = 4.2) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _by_model(items: Sequence[Dialogue]) -> dict[str, list[Dialogue]]:
    out: dict[str, list[Dialogue]] = defaultdict(list)
    for dialogue in items:
        out[dialogue.model or "model"].append(dialogue)
    return dict(sorted(out.items()))


def plot_survival(items: Sequence[Dialogue], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    figure = _figure()
    ax = figure.add_subplot(1, 1, 1)
    top = max(len(d.turns) for d in items)
    for model, group in _by_model(items).items():
        curve = survival([len(d.turns) for d in group], top)
        ax.plot([0] + [t for t, _ in curve], [100.0] + [100 * s for _, s in curve],
                drawstyle="steps-post", marker="o", markersize=3, label=f"{model} ({len(group)} dialogues)")
    patience = run_patience(items)
    ax.set_title("EvolIF dialogue survival" + (f" (patience {patience})" if patience else ""))
    ax.set_xlabel("turn")
    ax.set_ylabel("dialogues still running (%)")
    ax.set_ylim(0, 105)
    ax.set_xlim(0, max(top, 1))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    path = directory / "evolif-survival.png"
    figure.savefig(path)
    return path


def plot_groups(items: Sequence[Dialogue], directory: Path) -> Path:
    from .catalog import GROUPS

    directory.mkdir(parents=True, exist_ok=True)
    figure = _figure(8.0, 4.2)
    ax = figure.add_subplot(1, 1, 1)
    order = [abbr for abbr, _ in GROUPS.values()]
    models = _by_model(items)
    present = sorted({g for d in items for g, _ in d.constraints}, key=lambda g: order.index(g) if g in order else 99)
    width = 0.8 / max(1, len(models))
    for index, (model, group) in enumerate(models.items()):
        rates = group_rates(group)
        xs = [i + index * width for i in range(len(present))]
        ys = [100 * rates[g][0] / rates[g][1] if g in rates else float("nan") for g in present]
        ax.bar(xs, ys, width=width, label=model)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(present))], present)
    ax.set_ylabel("satisfaction rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title("EvolIF satisfaction rate by constraint group")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    path = directory / "evolif-groups.png"
    figure.savefig(path)
    return path
