"""The child-side modules: real, stdlib-only source, started by file path, robust to monkeypatching."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

import pytest

from pytest_ifbench import sandbox
from pytest_ifbench.sandbox import run_assert_tests, run_python
from tests.sandbox._support import FAST

PACKAGE_DIR = Path(sandbox.__file__).resolve().parent
CHILD_MODULES = ("_bootstrap", "_confine", "_harness")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, top-level name) of every import statement, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(0, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, (node.module or "").split(".")[0]))
    return found


@pytest.mark.parametrize("name", CHILD_MODULES)
def test_child_modules_import_only_the_standard_library(name):
    imports = _imports(PACKAGE_DIR / f"{name}.py")
    assert imports, "the walker found no import at all"
    assert [i for i in imports if i[0] != 0] == [], "no relative imports: the child has no package"
    assert sorted({n for _, n in imports} - set(sys.stdlib_module_names)) == []


@pytest.mark.parametrize(("name", "entry"), [("_bootstrap", "main"), ("_confine", "confine"), ("_harness", "main")])
def test_child_modules_import_cleanly_without_running(name, entry):
    # Importing _bootstrap must not run main() (it would fail on this process's argv).
    module = importlib.import_module(f"pytest_ifbench.sandbox.{name}")
    assert module.__doc__ and len(module.__doc__) > 200
    assert callable(getattr(module, entry))


def test_the_child_is_started_by_file_path_with_the_documented_flags():
    code = (
        "import json, sys\n"
        "print(json.dumps({'argv': sys.orig_argv, 'path': sys.path, 'flags': [sys.flags.no_user_site,\n"
        "    sys.flags.safe_path, sys.flags.dont_write_bytecode, sys.flags.ignore_environment,\n"
        "    sys.flags.isolated, sys.flags.hash_randomization],\n"
        "    'ifbench': sorted(m for m in sys.modules if m.startswith('pytest_ifbench'))}))\n"
    )
    res = run_python(code, limits=FAST)
    assert res.ok, res.stderr
    info = json.loads(res.stdout)
    argv = info["argv"]
    assert Path(argv[0]).name.startswith("python")
    assert argv[1:4] == ["-s", "-P", "-B"]
    assert Path(argv[4]) == PACKAGE_DIR / "_bootstrap.py"
    assert len(argv) == 7 and "-c" not in argv and "-m" not in argv
    # -s, -P, -B on; not -E/-I, so PYTHONHASHSEED=0 turns hash randomisation off.
    assert info["flags"] == [1, True, 1, 0, 0, 0]
    assert str(PACKAGE_DIR) not in info["path"]
    assert info["ifbench"] == []


def test_child_frames_never_show_in_tracebacks():
    res = run_python("def f():\n    open('/etc/ifbench-denied', 'w')\nf()\n", limits=FAST)
    assert res.returncode == 1 and "PermissionError" in res.stderr
    assert "main.py" in res.stderr
    for name in CHILD_MODULES:
        assert f"{name}.py" not in res.stderr, res.stderr
    run = run_assert_tests("def f():\n    raise ValueError('x')\n", ["f()"], limits=FAST)
    assert "<solution>" in run.outcomes[0].message
    assert not any(f"{name}.py" in run.outcomes[0].message for name in CHILD_MODULES)


def test_monkeypatched_builtins_do_not_switch_off_the_audit_hook():
    # The audit hook is the second layer (the system is read-only anyway); its message must survive.
    target = Path("/etc/ifbench-escaped.txt")
    code = (
        "import builtins\n"
        "builtins.isinstance = lambda *a: False\n"
        "builtins.any = lambda *a: False\n"
        f"open({str(target)!r}, 'w').write('escaped')\n"
    )
    res = run_python(code, limits=FAST)
    assert res.returncode == 1 and "PermissionError" in res.stderr, res.stderr
    assert not target.exists()


def test_monkeypatched_builtins_do_not_break_the_test_harness():
    # Builtins the harness itself calls (dict(ns), len(tests), min/max in the time slices).
    # Stdlib modules it shares with the candidate (json) see the patched ones, so isinstance stays.
    code = (
        "import builtins\n"
        "builtins.len = None\n"
        "builtins.dict = None\n"
        "builtins.min = builtins.max = None\n"
        "def f():\n"
        "    return 1\n"
    )
    run = run_assert_tests(code, ["assert f() == 1", "assert f() == 2"], limits=FAST)
    assert run.load_error is None
    assert [o.passed for o in run.outcomes] == [True, False]
    assert "left:  1" in run.outcomes[1].message


def test_script_main_namespace_is_fresh():
    res = run_python("print(sorted(k for k in globals() if not k.startswith('__')), __doc__, __name__)", limits=FAST)
    assert res.stdout == "[] None __main__\n", res.stderr
