"""The package's import structure: no cycles, layers only import downwards, benchmarks stay apart.

Every ``import`` statement counts -- module level, inside functions and under
``TYPE_CHECKING`` alike -- because a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_ifbench

PACKAGE = Path(pytest_ifbench.__file__).resolve().parent
NAME = "pytest_ifbench"

#: Core modules by layer; a module may import only from its own layer or lower ones.
#: Benchmarks (layer 5) build on the engine below them and are composed by the layers above.
LAYERS: dict[str, int] = {
    # 0: plain data, text helpers and self-contained leaves (the sandbox imports only the stdlib)
    "_version": 0, "_types": 0, "_params": 0, "_text": 0, "_redact": 0, "_owner": 0, "suite.jsonl": 0,
    "suite.safe_yaml": 0, "_atomic_file": 0,
    "suite.yaml_cache": 0, "suite.errors": 0, "suite.detect": 0, "_user_cache": 0, "reports.metrics": 0, "suite": 0,
    "models.background": 0, "models.lookahead": 0, "models.local": 0, "models.local_tools": 0,
    "models.provider_api": 0, "models.spending": 0, "sandbox": 0,
    "ruff.rules_store": 0, "reports.stats": 0, "_ast_guard": 0, "_heap": 0, "_kept_reports": 0, "_report_wire": 0,
    "_check_bundle": 0, "_xdist": 0, "reports.results_reader": 0,
    # 1: the verifier registry and the response cache
    "_registry": 1, "models.cache": 1,
    # 2: model access and the ruff runner
    "ruff.check": 2, "ruff": 2, "models.openai_compat": 2, "models.client": 2, "models.recorded": 2,
    "models.providers": 2, "models": 2,
    # 3: checking, and agent runs (their trajectories are what trajectory verifiers check)
    "verifiers": 3, "judges": 3, "ruff.batch": 3, "_verify": 3, "agents": 3,
    # 4: suites, protocols, result records
    "_protocols": 4, "suite.format": 4, "reports.records": 4, "reports.baseline_compare": 4, "suite.run_settings": 4,
    "reports.results_stream": 4,
    # ... the benchmark declaration, and the public facade: all a benchmark may import from the core
    "_benchmark": 4, "": 4,
    # 5: benchmarks
    "benchmarks": 5,
    # 6: hooks and the composition root
    "_hookspecs": 6, "_composition": 6, "suite.importers": 6,
    # 7: per-session state
    "_state": 7,
    # 8: pytest items and the terminal summary
    "_collect": 8, "reports.terminal": 8, "_subtests": 8,
    # 9: reporters, entry points and the testing plugin
    "reports.baseline": 9, "reports.allure": 9, "reports.allure_render": 9, "reports.summary_file": 9,
    "reports.summary_writer": 9, "reports.baseline_extension": 9, "reports": 9,
    "_plugin": 9, "_termination": 9, "_startup_checks": 9, "_options": 9, "_max_cost": 9, "cli": 9, "testing": 9,
    # scale/: the split (a leaf), the stores and the cache's shared tier, the merge, and its plugins/reports
    "scale": 0, "scale.partition": 0, "scale.stores": 0, "scale.tier": 1, "scale.shared_ledger": 1, "scale.merge": 4,
    "scale.shard": 9, "scale.shared": 9, "scale.report": 9, "scale.rootdir": 9,
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = [NAME, *path.relative_to(PACKAGE).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == NAME]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
        if target.split(".")[0] != NAME:
            return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in MODULES.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(module, is_package, node):
                    while target not in MODULES and "." in target:
                        target = target.rsplit(".", 1)[0]
                    if target != module:
                        deps.add(target)
        graph[module] = deps
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _top(module: str) -> str:
    """The layer key of a module: the longest key of LAYERS that is the module or a package holding it
    ('' for the package itself); else the module's first component below the package."""
    rest = module.removeprefix(NAME).lstrip(".")
    parts = rest.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    return parts[0]


def _benchmark(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "benchmarks" else None


def test_the_walker_sees_real_imports():
    """Guards the test itself: known edges must be found, or every other assertion is vacuous."""
    assert f"{NAME}._registry" in GRAPH[f"{NAME}._verify"]
    assert f"{NAME}._registry" in GRAPH[f"{NAME}._composition"]
    assert any(dep.startswith(f"{NAME}.benchmarks.manyih.") for dep in GRAPH[f"{NAME}.benchmarks.manyih.verifiers"])
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_every_core_module_has_a_layer():
    unknown = sorted({_top(m) for m in MODULES} - set(LAYERS))
    assert not unknown, f"add these modules to LAYERS in {__file__}: {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    layer = LAYERS[_top(module)]
    upward = sorted(dep for dep in GRAPH[module] if LAYERS[_top(dep)] > layer)
    assert not upward, f"{module} (layer {layer}) imports from higher layers: {upward}"


def test_benchmarks_do_not_import_each_other():
    crossing = sorted(
        (module, dep) for module, deps in GRAPH.items() for dep in deps
        if _benchmark(module) and _benchmark(dep) and _benchmark(module) != _benchmark(dep)
    )
    assert crossing == []


def test_the_core_never_imports_a_benchmark():
    reaching = sorted((m, d) for m, deps in GRAPH.items() for d in deps
                      if _benchmark(d) and not _benchmark(m) and _top(m) != "benchmarks")
    assert reaching == []


#: What a benchmark may import from the core besides the facade (``pytest_ifbench``): public sub-packages.
PUBLIC_SUBPACKAGES = ("sandbox",)


def _public(module: str) -> bool:
    """The facade itself, or a public sub-package or one of its modules not starting with ``_``."""
    if module == NAME:
        return True
    for package in PUBLIC_SUBPACKAGES:
        base = f"{NAME}.{package}"
        rest = module.removeprefix(base)
        if module == base or (rest.startswith(".") and "._" not in rest):
            return True
    return False


def _private_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((module, dep) for module, deps in graph.items() if _benchmark(module) for dep in deps
                  if _benchmark(dep) != _benchmark(module) and not _public(dep))


def test_benchmarks_use_only_the_public_api():
    """A shipped benchmark imports the facade, its own modules and the public sub-packages -- as a
    third-party one must -- never a private core module."""
    assert _private_imports(GRAPH) == []


def test_the_public_api_rule_sees_private_imports():
    """Guards the rule above on real edges and on made-up ones."""
    assert NAME in GRAPH[f"{NAME}.benchmarks.manyih.verifiers"]
    assert f"{NAME}.sandbox" in GRAPH[f"{NAME}.benchmarks.manyih.verifiers"]
    made_up = {f"{NAME}.benchmarks.x.plugin": {NAME, f"{NAME}.sandbox", f"{NAME}.benchmarks.x.metrics",
                                               f"{NAME}.models.client", f"{NAME}._types", f"{NAME}.sandbox._run"}}
    assert _private_imports(made_up) == [(f"{NAME}.benchmarks.x.plugin", f"{NAME}._types"),
                                         (f"{NAME}.benchmarks.x.plugin", f"{NAME}.models.client"),
                                         (f"{NAME}.benchmarks.x.plugin", f"{NAME}.sandbox._run")]


#: The sandbox's modules every backend shares, which callers may import although private: the relay
#: (its wire constants are the proxy's), owned by the relay, not by any backend.
SHARED_SANDBOX_MODULES = (f"{NAME}.sandbox._forward",)


def _backend_private(module: str) -> bool:
    """A private module of the sandbox or of one of its backends (``sandbox._namespaces``,
    ``sandbox.backends._docker``...), which only the sandbox package itself may import."""
    rest = module.removeprefix(f"{NAME}.sandbox")
    return rest != module and "._" in rest and module not in SHARED_SANDBOX_MODULES


def _backend_leaks(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((module, dep) for module, deps in graph.items() for dep in deps
                  if _top(module).split(".")[0] in ("agents", "benchmarks") and _backend_private(dep))


def test_agents_and_benchmarks_use_only_the_sandbox_seam():
    """Agent workspaces, tools and CLIs and the benchmarks reach a sandbox backend only through the seam
    (``sandbox.backend``, ``sandbox.backends``, the facade), so a backend can be added or swapped."""
    assert _backend_leaks(GRAPH) == []


def test_the_sandbox_seam_rule_sees_leaks():
    assert f"{NAME}.sandbox.backend" in GRAPH[f"{NAME}.agents.workspace"]
    made_up = {f"{NAME}.agents.tools": {f"{NAME}.sandbox.backend", f"{NAME}.sandbox._namespaces",
                                        f"{NAME}.sandbox._forward"},
               f"{NAME}.benchmarks.x.plugin": {f"{NAME}.sandbox.backends._docker", f"{NAME}.sandbox.backends"},
               f"{NAME}.sandbox.backends._docker": {f"{NAME}.sandbox._namespaces"}}
    assert _backend_leaks(made_up) == [(f"{NAME}.agents.tools", f"{NAME}.sandbox._namespaces"),
                                       (f"{NAME}.benchmarks.x.plugin", f"{NAME}.sandbox.backends._docker")]


def test_the_core_never_names_a_benchmark():
    """Outside ``benchmarks/`` no module mentions a shipped benchmark, not even in a docstring."""
    names = sorted(p.name for p in (PACKAGE / "benchmarks").iterdir() if (p / "plugin.py").is_file())
    assert names, "no benchmark found"
    mentions = []
    for module, (path, _) in MODULES.items():
        if _top(module) in ("benchmarks", "testing"):
            continue
        text = path.read_text(encoding="utf-8").lower()
        mentions += [(module, name) for name in names if name in text]
    assert mentions == []


def test_modules_stay_small():
    """500 lines at most, except modules that are declarative tables (listed here with the reason)."""
    tables: dict[str, str] = {  # "path": "why it is a table"
        "benchmarks/vericode/instructions.py": "the paper's 30 instructions (lines 157-530), one declaration "
                                               "each: wording, params, ruff selectors and settings",
    }
    long = sorted(
        (str(path.relative_to(PACKAGE)), n) for path, _ in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
        and str(path.relative_to(PACKAGE)) not in tables
    )
    assert long == []
