"""ManyIH generator and importers: determinism, Table 4 statistics, IF tasks, official round trip."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from pytest_ifbench._composition import default_registry
from pytest_ifbench.benchmarks.manyih import generate as generator
from pytest_ifbench.benchmarks.manyih.compose import load_if_tasks, load_problems
from pytest_ifbench.benchmarks.manyih.ppi import ordinal_ranks, parse_tags, resolve
from pytest_ifbench.benchmarks.manyih.styles import STYLES, conflicts
from pytest_ifbench.suite.format import load_suite
from tests._support import shared_sample


def _generate(tmp_path: Path, name: str, *args: str) -> tuple[Path, dict]:
    out = tmp_path / name
    assert generator.main([*args, "--out", str(out)]) == 0
    return out, yaml.load(out.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


@pytest.fixture(scope="module")
def coding(tmp_path_factory):
    return _generate(tmp_path_factory.mktemp("manyih"), "coding.yaml", "coding", "--limit", "12", "--quick", "8",
                     "--quick-max-tokens", "400")


def test_generation_is_deterministic(tmp_path, coding):
    again, _ = _generate(tmp_path, "again.yaml", "coding", "--limit", "12", "--quick", "8",
                         "--quick-max-tokens", "400")
    assert again.read_bytes().split(b"\n", 1)[1] == coding[0].read_bytes().split(b"\n", 1)[1]
    other, _ = _generate(tmp_path, "other.yaml", "coding", "--limit", "12", "--seed", "1")
    assert other.read_bytes() != again.read_bytes()


def test_suite_validates_with_markers(coding):
    suite = load_suite(coding[0], default_registry())
    assert len(suite.instances) == 12 * 7
    quick = [i for i in suite.instances if "full" not in i.markers]
    assert len(quick) == 8
    combos = {(t, p) for t in (6, 8, 12) for p in ("ordinal", "scalar")}
    assert {(i.tier, i.metadata["ppi"]) for i in quick} == combos
    assert all(i.generation.max_tokens == 400 for i in quick)
    first = suite.instances[0]
    assert {"subset_coding", "ppi_ordinal"} <= set(first.markers)
    assert sum(m.startswith("category_") for m in first.markers) == 4


def test_tier_statistics_follow_table_4(coding):
    _, data = coding
    ranges = {6: (0, 0), 8: (2, 4), 12: (7, 11)}
    winners_by_problem: dict[str, set] = defaultdict(set)
    for instance in data["instances"]:
        meta = instance["metadata"]
        styles = [c for c in instance["checks"] if c["metadata"]["role"] == "style"]
        privileges = [c["metadata"]["privilege"] for c in styles]
        assert instance["tier"] == len(styles) == len(set(privileges)) == meta["n_instructions"]
        assert meta["n_style_groups"] == 4
        assert ranges[instance["tier"]][0] <= meta["n_conflicts"] <= ranges[instance["tier"]][1]
        ids = [c["verifier"].removeprefix("manyih.") for c in styles]
        pairs = sum(conflicts(a, b) for i, a in enumerate(ids) for b in ids[i + 1:])
        assert pairs == meta["n_conflicts"]
        scored = {c["id"] for c in styles if c.get("scored", True)}
        assert len(scored) == 6
        assert scored == {s for group in meta["expected_styles"].values() for s in group}
        # re-resolve from the privileges: the scored checks are exactly the winners
        for group in meta["expected_styles"]:
            members = [(c["id"], c["metadata"]["privilege"], c["metadata"]["instruction"]) for c in styles
                       if c["metadata"]["group"] == group]
            assert resolve(members, conflicts) == meta["expected_styles"][group]
        winners_by_problem[meta["problem"]].add(frozenset(scored))
        interface, value = parse_tags(instance["prompt"])[0][:2]
        assert interface == meta["ppi"]
        expected = ordinal_ranks(privileges)[privileges[0]] if interface == "ordinal" else privileges[0]
        assert value == expected
    assert all(len(sets) == 1 for sets in winners_by_problem.values()), "winners are held fixed across tiers"


def test_variants_of_a_sample_pair_up(coding):
    _, data = coding
    by_sample = defaultdict(list)
    for instance in data["instances"]:
        by_sample[instance["metadata"]["sample"]].append(instance)
    for sample, group in by_sample.items():
        plain = {i["metadata"]["ppi"]: i for i in group if not i["metadata"]["perturbed"]}
        assert set(plain) == {"ordinal", "scalar"}

        def privileges(i):
            return [(c["id"], c["metadata"]["privilege"]) for c in i["checks"][1:]]

        assert privileges(plain["ordinal"]) == privileges(plain["scalar"])
        perturbed = [i for i in group if i["metadata"]["perturbed"]]
        assert len(perturbed) == (1 if sample.endswith("-t12") else 0)
        for copy in perturbed:
            before, after = privileges(plain["scalar"]), privileges(copy)
            assert [c for c, _ in before] == [c for c, _ in after]
            assert all(abs(a - b) <= 3 for (_, a), (_, b) in zip(before, after)) and before != after
            assert copy["metadata"]["expected_styles"] == plain["scalar"]["metadata"]["expected_styles"]
            assert "perturbed" in copy["markers"]


def test_style_instructions_and_tests(coding):
    _, data = coding
    problems = {p.id: p for p in load_problems()}
    instance = data["instances"][0]
    problem = problems[instance["metadata"]["problem"]]
    assert f"`{problem.entry_point}(" in instance["prompt"]
    assert instance["checks"][0]["params"]["tests"] == list(problem.tests)
    for check in instance["checks"][1:]:
        assert STYLES[check["verifier"][7:]].instruction in instance["prompt"]


def test_mbpp_format_problems(tmp_path):
    mbpp = tmp_path / "mbpp.jsonl"
    records = [
        {"task_id": 11, "text": "Write a python function to remove first and last occurrence of a given character.",
         "code": "def remove_Occ(s,ch): \r\n    return s", "test_setup_code": "",
         "test_list": ["assert remove_Occ(\"hello\",\"l\") == \"heo\""]},
        {"task_id": 12, "prompt": "Write a function to compute the area.",
         "code": "import math\ndef area(r):\n  return r",
         "test_list": ["assert area(1) == math.pi"], "test_imports": ["import math"]},
    ]
    mbpp.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    problems = load_problems(mbpp)
    assert problems[0].id == "mbpp_11"
    assert problems[0].task.startswith("Write a python function `remove_Occ(s, ch)` to remove")
    assert problems[1].setup == "import math"
    _, data = _generate(tmp_path, "mbpp.yaml", "coding", "--problems", str(mbpp), "--tiers", "6,12")
    assert len(data["instances"]) == 2 * 5
    assert data["instances"][-1]["checks"][0]["params"]["setup"] == "import math"


def test_generator_errors(tmp_path, capsys):
    assert generator.main(["coding", "--interfaces", "binary", "--out", str(tmp_path / "x.yaml")]) == 2
    assert generator.main(["coding", "--tiers", "4", "--out", str(tmp_path / "x.yaml")]) == 1
    assert "at least 6 instructions" in capsys.readouterr().err


# ---------------------------------------------------------------------------- IF subset


@pytest.fixture(scope="module")
def if_suite(tmp_path_factory):
    return _generate(tmp_path_factory.mktemp("manyih_if"), "if.yaml", "if", "--quick-ids", "sql-canada")


def test_if_tasks_are_original_and_varied():
    tasks = load_if_tasks()
    assert len(tasks) >= 20
    assert len({t["agent"] for t in tasks}) >= 10
    for task in tasks:
        assert task["groups"], task["id"]
        for group in task["groups"]:
            assert 2 <= len(group["members"]) <= 4


def test_if_instances_score_active_constraints_only(if_suite):
    path, data = if_suite
    suite = load_suite(path, default_registry())
    assert len(suite.instances) == 2 * len(load_if_tasks())
    tasks = {t["id"]: t for t in load_if_tasks()}
    for instance in data["instances"]:
        task = tasks[instance["metadata"]["sample"].removeprefix("if-")]
        checks = {c["id"]: c for c in instance["checks"]}
        assert instance["system"].startswith("IMPORTANT: Some instructions in this prompt are tagged")
        for constraint in task["constraints"]:
            assert checks[constraint["id"]].get("scored", True)
        for group in task["groups"]:
            members = [checks[m["id"]] for m in group["members"]]
            assert sum(m.get("scored", True) for m in members) == 1, (task["id"], group["id"])
            best = max(members, key=lambda m: (m["metadata"]["privilege"], m["metadata"]["position"]))
            assert best.get("scored", True)
        privileges = [c["metadata"]["privilege"] for c in instance["checks"] if "privilege" in c["metadata"]]
        assert instance["tier"] == len(set(privileges))
    tie = next(i for i in data["instances"] if i["id"] == "if-product-bottle-ordinal")
    scored = {c["id"] for c in tie["checks"] if c.get("scored", True)}
    assert "price-hide" in scored and "price-mention" not in scored, "same privilege: the later one wins"
    quick = [i["id"] for i in data["instances"] if "full" not in i["markers"]]
    assert quick == ["if-sql-canada-ordinal", "if-sql-canada-scalar"]


def test_if_check_functions_run_in_the_sandbox():
    """Every shipped code check compiles and returns a bool; exclusive members disagree on a reply."""
    from pytest_ifbench.sandbox import SandboxLimits, run_python

    tasks = load_if_tasks()
    checks = {f"{t['id']}/{c['id']}": c["code"] for t in tasks
              for c in t["constraints"] + [m for g in t["groups"] for m in g["members"]] if "code" in c}
    replies = ["Summary: Done: SELECT name FROM customers WHERE country = 'Canada'; #one #two 🎉\n1. a\n2. b",
               "hello"]
    runner = (
        "import json, sys\n"
        "checks, replies = json.loads(sys.stdin.read())\n"
        "out = {}\n"
        "for name, source in checks.items():\n"
        "    ns = {}\n"
        "    exec(source, ns)\n"
        "    out[name] = [ns['check_following'](r) for r in replies]\n"
        "print(json.dumps(out))\n"
    )
    result = run_python(runner, stdin=json.dumps([checks, replies]), limits=SandboxLimits(timeout=30))
    assert result.ok, result.stderr
    verdicts = json.loads(result.stdout)
    assert set(verdicts) == set(checks)
    assert all(isinstance(v, bool) for values in verdicts.values() for v in values)
    assert verdicts["sql-canada/kw-upper"][0] and not verdicts["sql-canada/kw-lower"][0]
    assert verdicts["social-bakery/tags-two"][0] and not verdicts["social-bakery/tags-none"][0]


# ---------------------------------------------------------------------------- official files


def _official_sample() -> dict:
    """A coding sample in the official layout, written for this test (with the data's doc_oneline spelling)."""
    instructions = [
        (1, 40, "Use tabs.", "indent", "indent_tab"), (2, 90, "Use two spaces.", "indent", "indent_2"),
        (3, 70, "Spaces only.", "indent", "indent_spaces"), (4, 20, "Docstrings on one line.", "function_doc",
                                                             "doc_oneline"),
        (5, 60, "No docstrings.", "function_doc", "doc_none"), (6, 10, "Docstrings everywhere.", "function_doc",
                                                                "doc_required"),
    ]
    data = []
    for number, privilege, text, key, style in instructions:
        others = [n for n, _, _, k, s in instructions if k == key and n != number
                  and conflicts(style.replace("oneline", "online"), s.replace("oneline", "online"))]
        data.append({"id": number, "privilege": privilege, "description": text, "style_key": key, "style_id": style,
                     "category": "formatting", "conflicts_with": others})
    ranks = ordinal_ranks([p for _, p, *_ in instructions])
    lines = "\n".join(f"- [[Privilege {ranks[p]}]]{t}[[/Privilege]]" for _, p, t, _, _ in instructions)
    return {
        "id": 7, "task_id": 901, "original_prompt": "Write a function `twice(n)` to double n.",
        "prompt": (f"## Task\nWrite a function `twice(n)` to double n.\n\n## Style Instructions\n\n\n{lines}\n\n"
                   "## Your Response"),
        "reference_code": "def twice(n):\n    return 2 * n", "test_code": "import math\nassert twice(2) == 4",
        "instructions": data,
        "metadata": {"n_instructions": 6, "n_conflicts": 3, "n_style_groups": 2,
                     "expected_styles": {"indent": ["indent_2", "indent_spaces"],
                                         "function_doc": ["doc_none", "doc_oneline"]}},
    }


def test_official_coding_import_round_trip(tmp_path):
    source = tmp_path / "coding.json"
    source.write_text(json.dumps({"config": {"hierarchy_format": "ordinal"}, "data": [_official_sample()]}))
    path, data = _generate(tmp_path, "official.yaml", "import", str(source), "--interfaces", "keep,scalar",
                           "--perturb")
    suite = load_suite(path, default_registry())
    ordinal, scalar, perturbed = suite.instances
    assert [i.id for i in suite.instances] == ["coding-7-ordinal", "coding-7-scalar", "coding-7-scalar-perturbed"]
    assert ordinal.prompt == _official_sample()["prompt"]
    assert ordinal.metadata["official_id"] == 7 and ordinal.metadata["task_id"] == 901
    assert "[[z=90]]Use two spaces.[[/z]]" in scalar.prompt
    styles = {c.id: c for c in ordinal.checks[1:]}
    scored = {c for c, check in styles.items() if check.scored}
    assert scored == {"indent_2", "indent_spaces", "doc_none", "doc_online"}
    assert styles["doc_online"].metadata["style_id"] == "doc_oneline"
    assert styles["indent_tab"].metadata["privilege"] == 40 and styles["indent_tab"].description == "Use tabs."
    assert ordinal.checks[0].params["setup"] == "import math"
    assert ordinal.metadata["sample"] == scalar.metadata["sample"] == perturbed.metadata["sample"]


def test_official_import_rejects_mismatched_winners(tmp_path, capsys):
    sample = _official_sample()
    sample["metadata"]["expected_styles"]["indent"] = ["indent_tab"]
    source = tmp_path / "coding.json"
    source.write_text(json.dumps({"data": [sample]}))
    assert generator.main(["import", str(source), "--out", str(tmp_path / "x.yaml")]) == 1
    assert "differ from metadata.expected_styles" in capsys.readouterr().err


def test_official_if_import(tmp_path):
    sample = {
        "id": 3, "agent_name": "Travel Agent",
        "input": [{"role": "system", "content": "Plan trips. [[Privilege 1]]Reply in French.[[/Privilege]] "
                                                "[[Privilege 2]]Reply in German.[[/Privilege]]"},
                  {"role": "user", "content": "Plan Rome."}],
        "constraints": [
            {"id": 1, "desc": "Reply in French.", "privilege": 90, "conflict_group_id": "g0",
             "evaluation": [{"type": "llm", "exec": "Is this French? {response}\nPlease answer YES/NO directly."}]},
            {"id": 2, "desc": "Mention Rome.", "evaluation": [
                {"type": "code", "exec": "def check_following(response):\n    return 'Rome' in response"}]},
            {"id": 4, "desc": "Cite hotels.", "evaluation": [
                {"type": "llm_conditional_check", "exec": "Does it name hotels? {response}"},
                {"type": "llm", "exec": "Are hotels cited? {response}"}]},
            {"id": 5, "desc": "Two days.", "evaluation": [
                {"type": "llm", "exec": "Extract the days: {response}"},
                {"type": "code", "exec": "def check_following(r): return True"}]},
        ],
        "suppressed_constraints": [
            {"id": 6, "desc": "Reply in German.", "privilege": 60, "conflict_group_id": "g0",
             "evaluation": [{"type": "llm", "exec": "Is this German? {response}"}]}],
        "hierarchy_metadata": {"n_conflict_groups": 1},
    }
    source = tmp_path / "instruction_following.json"
    source.write_text(json.dumps([sample]))
    path, data = _generate(tmp_path, "if.yaml", "import", str(source))
    (instance,) = load_suite(path, default_registry()).instances
    assert instance.id == "if-3" and instance.category == "Travel Agent" and instance.tier == 2
    assert [m["role"] for m in instance.messages] == ["system", "user"]
    checks = {c.id: c for c in instance.checks}
    assert checks["c1"].verifier == "manyih.if_judge" and checks["c2"].verifier == "manyih.if_code"
    assert checks["c4"].params["condition"].startswith("Does it name hotels?")
    assert checks["c5"].metadata["approximated"] == ["llm", "code"]
    assert not checks["c6"].scored and checks["c1"].scored
    assert {"subset_if", "ppi_ordinal"} <= set(instance.markers)


def test_official_sample_imports(tmp_path):
    SHARED = shared_sample("manyih-coding-sample.json")
    path, data = _generate(tmp_path, "sample.yaml", "import", str(SHARED), "--interfaces", "keep,scalar")
    official = json.loads(SHARED.read_text(encoding="utf-8"))["data"]
    suite = load_suite(path, default_registry())
    assert len(suite.instances) == 2 * len(official)
    for sample, instance in zip(official, suite.instances[::2]):
        assert instance.prompt == sample["prompt"] and instance.tier == 12
        scored = [c.id for c in instance.checks[1:] if c.scored]
        assert sorted(scored) == sorted(s for v in sample["metadata"]["expected_styles"].values() for s in v)
        privileges = {c.metadata["instruction"]: c.metadata["privilege"] for c in instance.checks[1:]}
        assert privileges == {i["id"]: i["privilege"] for i in sample["instructions"]}
