"""``python -m pytest_ifbench.testing`` and the cost of importing the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests._support import ROOT
from tests.testing._http import chat, content, post, user


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_cli(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "latency": 0.0,
        "rules": [{"match": "ping", "reply": {"content": "pong"}, "times": None}],
        "faults": [{"kind": "status", "status": 429, "retry_after": 1}],
    }))
    url_file = tmp_path / "url.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_ifbench.testing", "--port", "0", "--latency", "0.01",
         "--script", str(script), "--url-file", str(url_file), "--stats-file", str(tmp_path / "stats.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(tmp_path),
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:") and line.endswith("/v1"), (
            line, proc.stderr.read() if proc.poll() is not None else "")
        assert url_file.read_text().strip() == line
        status, headers, _ = post(line, user("ping"))
        assert status == 429 and headers["Retry-After"] == "1"
        assert content(chat(line, "ping")) == "pong"
        assert content(chat(line, "other")) == "stub reply to: other"
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
            raise
        stderr = proc.stderr.read()
        rest = proc.stdout.read()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0, stderr
    assert stderr == ""  # no per-request logging
    assert rest == "served 3 request(s), at most 1 at once\n"  # a run's calls, counted without a proxy
    assert json.loads((tmp_path / "stats.json").read_text()) == {"calls": 3, "peak_concurrency": 1}


def test_cli_rejects_a_bad_script(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"match": "(", "reply": "x"}]}))
    proc = subprocess.run([sys.executable, "-m", "pytest_ifbench.testing", "--script", str(script)],
                          capture_output=True, text=True, env=_env(), timeout=60)
    assert proc.returncode == 2 and "bad --script" in proc.stderr


def test_import_is_light():
    # Measured after importing the package itself, so that whatever the package
    # __init__ pulls in is not blamed on this one.
    code = (
        "import sys; import pytest_ifbench; before = set(sys.modules); "
        "import pytest_ifbench.testing; new = set(sys.modules) - before; "
        "print(any(m.split('.')[0] == 'litellm' for m in new), 'http.server' in new, 'pytest' in new)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True,
                         timeout=60)
    new_litellm, new_http_server, new_pytest = out.stdout.split()
    assert new_litellm == "False"
    assert new_http_server == "False"  # http.server is imported lazily, on start()
    assert new_pytest == "False"  # only the plugin module (the fixtures) imports pytest
