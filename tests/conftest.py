"""Fixtures for the plugin's own tests.

``stub_server`` (a real local OpenAI-compatible server) and ``stub_env`` (the
same, with a fake ``OPENAI_API_KEY``) come from the opt-in
``pytest_ifbench.testing`` plugin, exactly as a third-party benchmark's tests
get them.
"""

import compileall
import os
import sys
import sysconfig

import _pytest.pytester
import pytest

from tests._support import IN_PROCESS_WARNING

pytest_plugins = ("pytester", "pytest_ifbench.testing")

import pytest_ifbench  # noqa: E402

# Every module of the package compiled now, on the main thread. CPython 3.11's AST constructor keeps a
# recursion counter that is not thread-safe: on a fresh checkout (no __pycache__) a module first imported,
# so compiled, by the background generation thread while pytest parsed source for a traceback raised
# "SystemError: AST constructor recursion depth mismatch" (an INTERNALERROR seen in a clean-clone CI run).
compileall.compile_dir(os.path.dirname(pytest_ifbench.__file__), quiet=1)

try:
    # Imported once here, not first inside an in-process ``pytester.runpytest``: on import it removes
    # ``find_distributions`` from the standard PathFinder and adds its own finder to ``sys.meta_path``;
    # pytester restores ``sys.meta_path`` after the run, which would leave no finder of entry points
    # (every later in-process run would load no plugin at all). litellm imports it.
    import importlib_metadata  # noqa: F401
except ImportError:  # pragma: no cover - litellm always brings it
    pass
# Imported once here too: an in-process run with -n would otherwise import (and assert-rewrite) it anew
# every time; one such re-import failed with "SystemError: AST constructor recursion depth mismatch"
# (CPython 3.11.7) while another thread was parsing.
import xdist.dsession  # noqa: E402, F401

# litellm imported whole, once, on the main thread: a run that needs it imports it on a background thread
# (prefetch_litellm), and when an in-process run ends mid-import pytester restores sys.meta_path under that
# thread, leaving half-initialised litellm submodules that every later import trips on ("cannot import name
# 'CustomLLM' from 'litellm'", seen in a full -n 2 run). Tests of what a run imports use their own process.
from pytest_ifbench.models.client import import_litellm  # noqa: E402

import_litellm()

_LIBRARIES = tuple({sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")})


class _KeepLibraries(_pytest.pytester.SysModulesSnapshot):
    """pytester's snapshot of ``sys.modules``, which also keeps the libraries (and our package) a run imported.

    An in-process run removes every module it imported when it ends; importing litellm, openai or numpy a
    second time in one process then fails ("cannot import name 'BaseModel' from 'openai._models'"). Only
    the modules a test wrote (conftest files, test modules, a package installed into a temporary
    directory) need to go.
    """

    def __init__(self, preserve=None) -> None:
        def keep(name: str) -> bool:
            if (preserve is not None and preserve(name)) or name.split(".")[0] == "pytest_ifbench":
                return True
            where = getattr(sys.modules.get(name), "__file__", None) or ""
            return where.startswith(_LIBRARIES)

        super().__init__(preserve=keep)


_pytest.pytester.SysModulesSnapshot = _KeepLibraries  # type: ignore[misc]  # read by every Pytester

#: See IN_PROCESS_WARNING (quoted: the filter holds spaces and a semicolon).
_IN_PROCESS_ADDOPTS = f"-W '{IN_PROCESS_WARNING}'"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, quiet about the one warning only an in-process run produces."""
    monkeypatch.setenv("PYTEST_ADDOPTS", _IN_PROCESS_ADDOPTS)
    return pytester


def pytest_configure(config):
    """Keep the per-user cache (parsed suites, ruff rule expansions) of the tests out of the real one."""
    import atexit
    import os
    import shutil
    import tempfile

    if "IFBENCH_TESTS_USER_CACHE" not in os.environ:
        folder = tempfile.mkdtemp(prefix="ifbench-tests-cache-")
        os.environ["IFBENCH_TESTS_USER_CACHE"] = os.environ["XDG_CACHE_HOME"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
