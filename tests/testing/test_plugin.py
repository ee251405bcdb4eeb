"""The opt-in plugin, used the way a third-party benchmark's test suite uses it."""

from __future__ import annotations

import os
import textwrap

import pytest

from pytest_ifbench.testing import FAKE_API_KEY, StubServer, stub_args
from tests._support import IN_PROCESS_WARNING

THIRD_PARTY_TESTS = '''
    import json
    import os
    import urllib.request

    from pytest_ifbench.testing import FAKE_API_KEY, Reply

    servers = []


    def test_scripted_reply(stub_server):
        servers.append(stub_server)
        stub_server.add_rule("ping", Reply(content="pong"))
        body = {"model": "stub", "messages": [{"role": "user", "content": "ping"}]}
        request = urllib.request.Request(stub_server.url + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.load(response)["choices"][0]["message"]["content"] == "pong"
        assert stub_server.calls == 1


    def test_stopped_at_teardown_and_fresh_per_test(stub_server):
        assert not servers[0].running
        assert stub_server.running and stub_server.calls == 0


    def test_stub_env_sets_a_fake_key(stub_env):
        assert os.environ["OPENAI_API_KEY"] == FAKE_API_KEY and stub_env.running
'''


@pytest.mark.parametrize("opt_in", ["conftest", "test module", "-p"])
def test_third_party_suite_opts_in(pytester, opt_in):
    tests = textwrap.dedent(THIRD_PARTY_TESTS)
    args = []
    if opt_in == "conftest":
        pytester.makeconftest('pytest_plugins = ["pytest_ifbench.testing"]')
    elif opt_in == "test module":
        tests = 'pytest_plugins = ["pytest_ifbench.testing"]\n' + tests
    else:
        args = ["-p", "pytest_ifbench.testing"]
    pytester.makepyfile(test_third_party=tests)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning", "-W",
                                IN_PROCESS_WARNING, *args)
    result.assert_outcomes(passed=3)


def test_not_loaded_unless_asked_for(pytester):
    pytester.makepyfile(test_plain="def test_needs_it(stub_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'stub_server' not found*"])


def test_this_projects_tests_use_the_plugin(request, stub_env):
    assert isinstance(request.getfixturevalue("stub_server"), StubServer)
    assert os.environ["OPENAI_API_KEY"] == FAKE_API_KEY
    assert stub_args(stub_env, "-v") == [
        "--model=openai/stub", f"--api-base={stub_env.url}", "-p", "no:cacheprovider",
        "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=", "-v"]
