"""Judge rank stability (Kendall's tau-b, Spearman's rho, ``ifbench generate octobench ranks``) and the
conflict attribution verifier (criterion rendering, A | B | neither | both, Table 4)."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.benchmarks.octobench import ranks
from pytest_ifbench.benchmarks.octobench.generate import main as generate
from pytest_ifbench.benchmarks.octobench.metrics import conflict_table
from pytest_ifbench.benchmarks.octobench.verifiers import attribution, criterion


def test_rank_ties_share_their_mean_rank():
    assert ranks.rank({"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.1}) == {"a": 1, "b": 2.5, "c": 2.5, "d": 4}


def test_kendall_and_spearman_known_values():
    assert ranks.kendall_tau_b([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert ranks.kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert ranks.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant
    assert ranks.kendall_tau_b([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / (3 * 2) ** 0.5)  # tau-b with a tie
    assert ranks.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(1 - 6 * 2 / (4 * 15))
    assert ranks.spearman([1, 2, 3], [5, 5, 5]) is None and ranks.kendall_tau_b([1], [1]) is None


def _results(path, model: str, passes: dict[str, list[bool]]) -> None:
    """A results file for ``model``: one instance per position, one check judged by each judge."""
    records = []
    for index in range(len(next(iter(passes.values())))):
        votes = [{"judge": j, "result": "success" if p[index] else "fail", "passed": p[index], "applicable": True}
                 for j, p in passes.items()]
        records.append({"instance": f"i{index}", "benchmark": "octobench", "model": model, "status": "passed",
                        "checks": [{"id": "c", "verifier": "ifbench.judge", "scored": True, "kind": "check",
                                    "passed": True, "error": None, "verdict": {"details": {"judges": votes}}}]})
    path.write_text(json.dumps({"format": 1, "model": model, "instances": records}), encoding="utf-8")


def test_generate_ranks(tmp_path, capsys):
    files = []
    table = {"m-a": ([1, 1, 1, 0], [1, 1, 1, 1]), "m-b": ([1, 1, 0, 0], [1, 1, 0, 0]),
             "m-c": ([1, 0, 0, 0], [1, 1, 1, 0])}
    for model, (one, two) in table.items():
        files.append(tmp_path / f"{model}.json")
        _results(files[-1], model, {"gpt": [bool(x) for x in one], "gemini": [bool(x) for x in two]})
    assert generate(["ranks", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "gemini vs gpt: Kendall tau-b +0.333, Spearman rho +0.500" in out
    assert "largest rank gap of a model across judges: 1" in out
    lines = out.splitlines()
    assert lines[2].split()[0] == "m-a"  # best on average first


PARAMS = {"pair": "UQ vs SP", "a": "Please answer in Chinese!", "b": "Respond in English ONLY."}


def test_criterion_names_the_side_asked_about_first():
    text = criterion({**PARAMS, "side": "B"})
    assert text.startswith('Two instructions contradict each other. The system prompt says: "Respond in English ONLY."')
    assert "follows the system prompt's instruction quoted first" in text
    assert "The user's request says" in criterion({**PARAMS, "side": "A"}).split(".")[1]


def _conflict(a: str, b: str, pair: str = "UQ vs SP") -> dict:
    def entry(side: str, result: str) -> dict:
        return {"id": f"conflict_follows_{side}", "verifier": "octobench.conflict_attribution", "scored": False,
                "params": {**PARAMS, "pair": pair, "side": side}, "passed": result == "success", "error": None,
                "verdict": {"passed": result == "success", "details": {}}}

    return {"instance": "x", "status": "passed", "metadata": {"conflict": {"pair": pair}},
            "checks": [entry("A", a), entry("B", b)]}


@pytest.mark.parametrize(("a", "b", "expected"), [("success", "fail", "A"), ("fail", "success", "B"),
                                                  ("fail", "fail", "neither"), ("success", "success", "both")])
def test_attribution(a, b, expected):
    assert attribution(_conflict(a, b)) == expected


def test_conflict_rates_per_pair():
    records = [_conflict("fail", "success"), _conflict("fail", "success"), _conflict("success", "fail"),
               _conflict("success", "fail", pair="SP vs MD")]
    table = conflict_table(records)
    assert table.rows == (("UQ vs SP", 3, "33.3", "66.7", "0.0", "0.0"), ("SP vs MD", 1, "100.0", "0.0", "0.0", "0.0"))
