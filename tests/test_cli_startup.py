"""``ifbench`` builds only what its command needs: what each command imports, in a fresh interpreter.

* ``ifbench verify`` imports the verifiers the input names: a core case imports no benchmark, a
  benchmark's case that benchmark only; pytest, asyncio, the sandbox, litellm and matplotlib never.
* An id no loaded source defines makes the registry load everything (its error names what exists).
* ``ifbench --help`` and the other subcommands' help import no benchmark; ``ifbench generate``
  still lists and checks the benchmarks' names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ifbench._registry import Registry, UnknownVerifier, Verifier
from pytest_ifbench._types import Verdict

#: The ``ifbench`` console script, then the names of the modules it imported written to argv[1].
RUNNER = """\
import sys
from pytest_ifbench.cli.main import main
status = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write("\\n".join(sorted(sys.modules)))
sys.exit(status)
"""

NEVER = ("pytest", "_pytest", "asyncio", "pytest_ifbench.sandbox", "litellm", "matplotlib", "yaml")


def ifbench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    modules = tmp_path / "modules.txt"
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(modules), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    return proc, set(modules.read_text().split("\n")) if modules.exists() else set()


def benchmarks(modules: set[str]) -> set[str]:
    return {m.split(".")[2] for m in modules if m.startswith("pytest_ifbench.benchmarks.") and m.count(".") >= 2}


def cases(tmp_path: Path, *lines: dict) -> str:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


CORE = {"verifier": "ifbench.word_count", "params": {"min": 2}, "response": "hello there"}
RUFF = {"verifier": "vericode.style_1", "params": {}, "response": "```python\ndef f(x):\n    return x\n```"}


def test_a_core_case_imports_no_benchmark_and_nothing_heavy(tmp_path):
    proc, modules = ifbench(tmp_path, "verify", "--in", cases(tmp_path, CORE))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["passed"] is True
    assert benchmarks(modules) == set()
    assert [name for name in NEVER if name in modules] == []
    assert "importlib.metadata" not in modules, "no benchmark was looked up, so no entry point either"


def test_a_benchmark_case_imports_that_benchmark_only(tmp_path):
    proc, modules = ifbench(tmp_path, "verify", "--in", cases(tmp_path, RUFF, CORE))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["passed"] for line in proc.stdout.splitlines()] == [True, True]
    assert benchmarks(modules) == {"vericode"}
    assert [name for name in NEVER if name in modules] == []


def test_an_id_of_no_installed_benchmark_loads_everything_for_its_error(tmp_path):
    proc, modules = ifbench(tmp_path, "verify", "--in", cases(tmp_path, CORE | {"verifier": "nosuch.check"},
                                                               CORE | {"verifier": "vericode.nosuch"}))
    assert proc.returncode == 1
    first, second = (json.loads(line)["error"] for line in proc.stdout.splitlines())
    assert first == ("line 1: unknown verifier 'nosuch.check' (no verifier of 'nosuch' is registered: is its "
                     "benchmark package installed, or switched off with -p no:nosuch?)")
    assert second == "line 2: unknown verifier 'vericode.nosuch'"
    assert {"vericode", "manyih", "evolif"} <= benchmarks(modules), "everything was loaded to be sure"


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["score", "--help"], ["agents", "status", "--help"],
                                  ["merge", "--help"], ["compare", "--help"]])
def test_help_imports_no_benchmark(tmp_path, args):
    proc, modules = ifbench(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert benchmarks(modules) == set() and "pytest" not in modules


def test_generate_still_lists_and_checks_the_benchmarks(tmp_path):
    proc, modules = ifbench(tmp_path, "generate", "--help")
    assert proc.returncode == 0
    assert "Benchmarks: agentif, evolif, manyih, octobench, vericode." in " ".join(proc.stdout.split())
    proc, _ = ifbench(tmp_path, "generate", "nosuch")
    assert proc.returncode == 2
    assert ("argument BENCHMARK: invalid choice: 'nosuch' (choose from 'agentif', 'evolif', 'manyih', "
            "'octobench', 'vericode')") in proc.stderr


def test_agents_help_names_the_shipped_clis(tmp_path):
    proc, _ = ifbench(tmp_path, "agents", "install", "--help")
    assert proc.returncode == 0
    assert "claude_code, kilo or droid, or a plugin's CLI" in " ".join(proc.stdout.split())


def _verifier(verifier_id: str) -> Verifier:
    return Verifier(id=verifier_id, func=lambda text, params, ctx: Verdict(passed=True))


def test_an_on_demand_registry_asks_its_loader_until_the_id_is_there():
    asked: list[str | None] = []
    sources = [["a.one"], ["b.two", "b.three"]]

    def loader(verifier_id: str | None) -> bool:
        asked.append(verifier_id)
        if not sources:
            return False
        for vid in sources.pop(0):
            registry.add(_verifier(vid))
        return True

    registry = Registry(loader=loader)
    assert registry.get("a.one").id == "a.one" and asked == ["a.one"]
    assert "b.three" in registry and asked == ["a.one", "b.three"]
    with pytest.raises(UnknownVerifier, match="did you mean a.one"):
        registry.get("c.one")
    assert asked == ["a.one", "b.three", "c.one"], "the loader said it had nothing left"
    assert [v.id for v in registry] == ["a.one", "b.three", "b.two"]
    assert len(asked) == 3, "once empty, the loader is never asked again"


def test_listing_an_on_demand_registry_loads_everything():
    loaded: list[str | None] = []

    def loader(verifier_id: str | None) -> bool:
        if loaded:
            return False
        loaded.append(verifier_id)
        registry.add(_verifier("x.late"))
        return True

    registry = Registry(loader=loader)
    assert len(registry) == 1 and [v.id for v in registry] == ["x.late"] and loaded == [None]


def test_lines_checking_one_reply_get_the_verdicts_each_would_get_alone(tmp_path):
    """Ruff-backed lines of one response are checked as one reply in one ruff batch; each line's output
    is still exactly what verifying that line alone gives (failing, passing, unparsable code, a bad
    selector that errors its own line only, an echoed id)."""
    good = "```python\nimport os\n\n\ndef f(x):\n    return x\n```"
    broken = "```python\ndef f(:\n```"
    lines = [
        {"id": 1, "verifier": "ifbench.ruff", "params": {"select": ["F401"]}, "response": good},
        {"id": 2, "verifier": "ifbench.ruff", "params": {"select": ["E501"]}, "response": good},
        {"id": 3, "verifier": "vericode.style_1", "params": {}, "response": good},
        {"id": 4, "verifier": "ifbench.ruff", "params": {"select": ["ZZZ999"]}, "response": good},
        {"id": 5, "verifier": "ifbench.ruff", "params": {"select": ["E501"]}, "response": broken},
        CORE,
        {"id": 7, "verifier": "ifbench.ruff", "params": {"select": ["F401"]}, "response": good},
    ]
    together, _ = ifbench(tmp_path, "verify", "--in", cases(tmp_path, *lines))
    alone = []
    for number, line in enumerate(lines, 1):
        proc, _ = ifbench(tmp_path, "verify", "--in", cases(tmp_path, line))
        alone.append(proc.stdout.strip().replace('"error": "line 1: ', f'"error": "line {number}: '))
    assert together.stdout.splitlines() == alone
    verdicts = [json.loads(line) for line in alone]
    assert [v["passed"] for v in verdicts] == [False, True, True, None, False, True, False]
    assert "ZZZ999" in verdicts[3]["error"]
