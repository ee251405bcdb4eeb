"""Fixtures for the plugin's own tests.

``stub_server`` (a real local OpenAI-compatible server) and ``stub_env`` (the
same, with a fake ``OPENAI_API_KEY``) come from the opt-in
``pytest_ifbench.testing`` plugin, exactly as a third-party benchmark's tests
get them.
"""

pytest_plugins = ("pytester", "pytest_ifbench.testing")


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
