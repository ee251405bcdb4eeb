"""Fixtures for the plugin's own tests.

``stub_server`` (a real local OpenAI-compatible server) and ``stub_env`` (the
same, with a fake ``OPENAI_API_KEY``) come from the opt-in
``pytest_ifbench.testing`` plugin, exactly as a third-party benchmark's tests
get them.
"""

pytest_plugins = ("pytester", "pytest_ifbench.testing")
