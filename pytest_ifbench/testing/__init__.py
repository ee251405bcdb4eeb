"""Test support for pytest-ifbench: a local OpenAI- and Anthropic-compatible stub server, opt-in.

Like pytest's own ``pytester``, this plugin is not loaded by default.  A
benchmark's test suite enables it in its top-level ``conftest.py``::

    pytest_plugins = ["pytest_ifbench.testing"]

(or with ``-p pytest_ifbench.testing``) and gets the fixtures

* ``stub_server``: a running :class:`StubServer`, stopped at teardown;
* ``stub_env``: the same server, with ``OPENAI_API_KEY`` set to the fake
  :data:`FAKE_API_KEY`.

A test scripts the server and points the model at ``stub_server.url``::

    from pytest_ifbench.testing import Fault, Reply, stub_args

    def test_retries(pytester, stub_env):
        stub_env.add_rule("capital of France", Reply(content="Paris"))
        stub_env.inject_faults(Fault(kind="status", status=429, retry_after=1))
        result = pytester.runpytest_subprocess("suites", *stub_args(stub_env))
        assert stub_env.calls == 2

Every request is recorded (:attr:`StubServer.requests`, :class:`RecordedRequest`).
The server also runs on its own: ``python -m pytest_ifbench.testing --script
script.json`` (see :mod:`pytest_ifbench.testing.cli`).

Modules: :mod:`.wire` (the format-neutral seam), :mod:`.openai_wire` and
:mod:`.anthropic_wire` (the OpenAI and Anthropic Messages dialects),
:mod:`.script` (replies, faults, rules), :mod:`.handler` (the HTTP layer),
:mod:`.server` (:class:`StubServer`), :mod:`.plugin` (fixtures),
:mod:`.cli`.  Importing this package imports neither pytest, ``http.server``
nor ``litellm``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from .cli import main
from .script import Fault, Reply
from .server import FAKE_API_KEY, RecordedRequest, StubServer, stub_args

#: Registers the fixtures when pytest loads this package as a plugin.
pytest_plugins = ("pytest_ifbench.testing.plugin",)

__all__ = ["FAKE_API_KEY", "Fault", "RecordedRequest", "Reply", "StubServer", "main", "stub_args"]

