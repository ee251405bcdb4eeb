"""The ``ifbench`` console script: verify, score and verifiers."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_ifbench.cli.main import main
from pytest_ifbench.testing import Reply, StubServer
from tests._support import FAKE_KEY, write_suite

LONG_LINE = "```python\nx = 1  # " + "a" * 90 + "\n```"
GOOD_ADD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD_ADD = "```python\ndef add(a, b):\n    return a - b\n```"
RUFF_PARAMS = {"select": ["E501"], "settings": {"line-length": 79}}


def _case(verifier: str, response: str, params: dict | None = None, **extra) -> str:
    entry = {"verifier": verifier, "response": response, **extra}
    if params is not None:
        entry["params"] = params
    return json.dumps(entry)


def _write_cases(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _verify(capsys, cases: Path, *extra: str) -> tuple[int, list[dict]]:
    code = main(["verify", "--in", str(cases), *extra])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


# --------------------------------------------------------------------------- verify


def test_verify_builtin_verifiers_pass_and_fail(tmp_path, capsys):
    cases = _write_cases(
        tmp_path / "cases.jsonl",
        _case("ifbench.case", "hello there", {"mode": "lower"}),
        _case("ifbench.case", "Hello There", {"mode": "lower"}),
        _case("ifbench.regex", "- a\n- b\n- c", {"pattern": r"^- \w", "flags": "m", "min_count": 3}),
        _case("ifbench.regex", "a, b", {"pattern": ",", "min_count": 0, "max_count": 0}),
        _case("ifbench.word_count", "one two three", {"min": 1, "max": 5}),
        _case("ifbench.word_count", "one two three", {"max": 2}),
        _case("ifbench.ruff", "```python\nx = 1\n```", RUFF_PARAMS),
        _case("ifbench.ruff", LONG_LINE, RUFF_PARAMS),
        _case("ifbench.unit_tests", GOOD_ADD, {"tests": ["assert add(2, 3) == 5"]}),
        _case("ifbench.unit_tests", BAD_ADD, {"tests": ["assert add(2, 3) == 5"]}),
    )
    code, results = _verify(capsys, cases)
    assert code == 0, "failed checks are verdicts, not errors"
    assert [r["passed"] for r in results] == [True, False] * 5
    for result in results:
        assert set(result) == {"passed", "evidence", "details"}
    assert "wrong case" in results[1]["evidence"]
    assert results[5]["evidence"].startswith("3 words")
    assert "E501" in results[7]["evidence"] and results[7]["details"] == {"violations": ["E501"]}
    assert results[8]["details"]["failed_tests"] == []
    assert results[9]["details"]["failed_tests"] == ["test_0"]
    assert "AssertionError" in results[9]["evidence"]


def test_verify_errors_name_the_line_and_do_not_stop_the_run(tmp_path, capsys):
    cases = _write_cases(
        tmp_path / "cases.jsonl",
        _case("ifbench.case", "ok", {"mode": "lower"}),
        "",  # blank lines are skipped but still counted
        _case("x.y", "text"),
        _case("ifbench.regex", "a", {"pattern": "a", "min_count": -1}),
        _case("ifbench.case", "a", {"mode": "title"}),
        "{not json",
        _case("ifbench.word_count", "a", {"min": 1, "colour": "red"}),
        _case("ifbench.word_count", "a", [1]),
        json.dumps({"params": {}, "response": "a"}),
        json.dumps(["ifbench.case"]),
        _case("case", "a"),
        _case("ifbench.word_count", "one", {"min": 1}),
    )
    code, results = _verify(capsys, cases)
    assert code == 1
    assert len(results) == 11
    assert results[0]["passed"] is True and results[-1]["passed"] is True
    errors = [r["error"] for r in results[1:-1]]
    assert all(r["passed"] is None for r in results[1:-1])
    assert errors[0].startswith("line 3: unknown verifier 'x.y' (no verifier of 'x' is registered: ")
    assert errors[1] == "line 4: params.min_count: must be >= 0, got -1"
    assert errors[2] == "line 5: params.mode: expected one of upper, lower, got 'title'"
    assert errors[3].startswith("line 6: not JSON: ")
    assert errors[4] == "line 7: params.colour: unknown parameter (known: max, min)"
    assert errors[5] == "line 8: params: expected mapping, got list"
    assert errors[6] == 'line 9: "verifier" is missing'
    assert errors[7].startswith("line 10: expected a JSON object")
    assert errors[8].startswith("line 11: unknown verifier 'case' (did you mean ")
    assert "ifbench.case" in errors[8]


def test_verify_reads_stdin_and_writes_out(tmp_path, capsys, monkeypatch):
    lines = "\n".join([
        _case("ifbench.starts_with", "Dear Sam", {"prefix": "Dear"}, id="first"),
        _case("ifbench.keywords", "no cats here", {"include": ["dog"]}, id="second"),
    ]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    out = tmp_path / "verdicts.jsonl"
    assert main(["verify", "--in", "-", "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["passed"]) for r in results] == [("first", True), ("second", False)]


def test_verify_usage_errors(tmp_path, capsys):
    assert main(["verify", "--in", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["verify"]) == 2
    assert "--in" in capsys.readouterr().err
    assert main(["verifiers", "--", "-x"]) == 2


def test_verify_plugin_verifiers(tmp_path, capsys, monkeypatch):
    (tmp_path / "my_ifbench_plugin.py").write_text(textwrap.dedent("""
        from pytest_ifbench import Param, Verdict

        def pytest_ifbench_register_verifiers(registry):
            @registry.verifier("mine.exclaims", params={"times": Param(int, default=1, min=1)})
            def exclaims(text, params, ctx):
                n = text.count("!")
                return Verdict(passed=n >= params["times"], evidence=f"{n} exclamation marks")

            @registry.verifier("mine.broken")
            def broken(text, params, ctx):
                raise ZeroDivisionError("boom")
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = _write_cases(tmp_path / "cases.jsonl",
                         _case("mine.exclaims", "wow!!", {"times": 2}),
                         _case("mine.exclaims", "wow", {}),
                         _case("mine.broken", "wow"))
    code, results = _verify(capsys, cases, "--plugin", "my_ifbench_plugin")
    assert code == 1
    assert results[:2] == [{"passed": True, "evidence": "2 exclamation marks", "details": {}},
                           {"passed": False, "evidence": "0 exclamation marks", "details": {}}]
    assert results[2]["passed"] is None
    assert results[2]["error"].startswith("line 3: verifier mine.broken raised ZeroDivisionError: boom")
    code, results = _verify(capsys, cases)
    assert code == 1
    assert results[0]["error"].startswith("line 1: unknown verifier 'mine.exclaims' (no verifier of 'mine'")
    assert main(["verifiers", "--plugin", "my_ifbench_plugin"]) == 0
    assert "mine.exclaims  (python, v1)" in capsys.readouterr().out
    assert main(["verifiers", "--plugin", "no_such_module_xyz"]) == 2
    assert "cannot import" in capsys.readouterr().err


def test_verify_judged_case_calls_the_judge(tmp_path, capsys, monkeypatch):
    import aiohttp

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    sessions = []
    real_init = aiohttp.ClientSession.__init__

    def init(self, *args, **kwargs):
        sessions.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "__init__", init)
    verdicts = {"checks": [{"id": "case", "verdict": "pass", "reasoning": "It is polite."}]}
    with StubServer() as server:
        server.add_rule("", Reply(content=json.dumps(verdicts)))
        cases = _write_cases(
            tmp_path / "cases.jsonl",
            _case("ifbench.judge", "Thank you kindly!", {"criterion": "The reply is polite."},
                  task="Say thanks."),
            _case("ifbench.judge", "x", {}),  # invalid params: no judge call
        )
        code, results = _verify(capsys, cases, "--judge-model", "openai/stub", "--api-base", server.url)
        assert server.calls == 1
        body = server.requests[-1].body
    assert sessions and all(s.closed for s in sessions)  # the direct path's connections are closed at the end
    assert code == 1
    assert results[0]["passed"] is True
    assert results[0]["evidence"] == "[openai/stub] pass: It is polite."
    assert results[0]["details"]["judges"][0]["judge"] == "openai/stub"
    assert results[1] == {"passed": None, "error": "line 2: params.criterion: required parameter is missing"}
    prompt = body["messages"][-1]["content"]
    assert "The reply is polite." in prompt and "Say thanks." in prompt and "Thank you kindly!" in prompt
    assert body["response_format"]["json_schema"]["schema"]["properties"]["checks"]["items"][
        "properties"]["id"]["enum"] == ["case"]


def test_verify_judge_failure_is_a_case_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with StubServer() as server:
        server.add_rule("", Reply(content="I refuse to answer in JSON."))
        cases = _write_cases(tmp_path / "cases.jsonl",
                             _case("ifbench.judge", "hi", {"criterion": "Says hi."}),
                             _case("ifbench.case", "hi", {"mode": "lower"}))
        code, results = _verify(capsys, cases, "--judge-model", "openai/stub", "--api-base", server.url)
        assert server.calls == 2, "one repair turn, then the case errors"
    assert code == 1
    assert results[0]["passed"] is None
    assert results[0]["error"].startswith("line 1: judge 'openai/stub' returned malformed JSON twice")
    assert results[1]["passed"] is True


def test_verify_a_case_the_judge_left_out_of_its_answer_is_a_case_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with StubServer() as server:
        server.add_rule("", Reply(content=json.dumps({"checks": []})))
        cases = _write_cases(tmp_path / "cases.jsonl", _case("ifbench.judge", "hi", {"criterion": "Says hi."}))
        code, results = _verify(capsys, cases, "--judge-model", "openai/stub", "--api-base", server.url)
    assert code == 1
    assert results[0] == {"passed": None, "error": "line 1: judge openai/stub left this check out of its answer"}


def test_verify_a_judge_without_its_key_is_a_case_error_at_once(tmp_path, capsys, monkeypatch):
    """Each judged case retried litellm's made-up HTTP 500 six times (~17 s) before it errored."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_IDENTITY_PROVIDER_ID"):
        monkeypatch.delenv(name, raising=False)
    cases = _write_cases(tmp_path / "cases.jsonl", _case("ifbench.judge", "hi", {"criterion": "Says hi."}),
                         _case("ifbench.case", "hi", {"mode": "lower"}))
    code, results = _verify(capsys, cases, "--judge-model", "openai/gpt-4o-mini")
    assert code == 1
    assert results[0] == {"passed": None, "error": "line 1: judge 'openai/gpt-4o-mini' needs an API key: set "
                                                   "OPENAI_API_KEY in the environment"}
    assert results[1]["passed"] is True


# --------------------------------------------------------------------------- verifiers


def test_verifiers_lists_every_builtin(capsys):
    assert main(["verifiers", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    by_id = {d["id"]: d for d in described}
    assert {"ifbench.case", "ifbench.regex", "ifbench.ruff", "ifbench.judge", "ifbench.unit_tests"} <= set(by_id)
    assert by_id["ifbench.judge"]["kind"] == "judge"
    assert by_id["ifbench.case"]["params"]["mode"] == {"type": "str", "choices": ["upper", "lower"]}
    assert main(["verifiers"]) == 0
    text = capsys.readouterr().out
    assert "ifbench.ruff  (ruff, v1, target code)" in text
    assert "    - mode: str, one of upper, lower, required" in text
    assert "    - min_count: int, >= 0, default 1" in text


# --------------------------------------------------------------------------- score

SCORE_SUITE = """
ifbench: 1
benchmark: scored
instances:
  - id: lower-ok
    prompt: say hello in lowercase
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
  - id: upper-bad
    prompt: say hello in uppercase
    checks:
      - {id: upper, verifier: ifbench.case, params: {mode: upper}}
      - {id: short, verifier: ifbench.word_count, params: {max: 5}}
  - id: not-recorded
    prompt: say anything
    checks:
      - {id: short, verifier: ifbench.word_count, params: {max: 5}}
"""


def test_score_recorded_responses_without_calling_a_model(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    suite = write_suite(tmp_path, "suites/scored.yaml", SCORE_SUITE)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        json.dumps({"id": "lower-ok", "response": "hello there"}) + "\n"
        + json.dumps({"id": "upper-bad", "response": "Hello There"}) + "\n",
        encoding="utf-8",
    )
    results = tmp_path / "out" / "results.json"
    with StubServer() as server:
        # Even with a model configured, recorded responses mean no request goes out.
        code = main(["score", "--suite", str(suite), "--responses", str(responses), "--results", str(results),
                     "--", "--model=openai/stub", f"--api-base={server.url}", "-q"])
        assert server.requests == []
    out = capsys.readouterr().out
    assert code == 1, "pytest's exit code: some checks failed"
    assert "no recorded response for instance 'not-recorded'" in out
    doc = json.loads(results.read_text())
    by_id = {r["instance"]: r for r in doc["instances"]}
    assert {k: r["status"] for k, r in by_id.items()} == {
        "lower-ok": "passed", "upper-bad": "failed", "not-recorded": "error"}
    assert "no recorded response for instance 'not-recorded'" in by_id["not-recorded"]["error"]
    assert [c["passed"] for c in by_id["upper-bad"]["checks"]] == [False, True]
    assert by_id["upper-bad"]["turns"][0]["response"]["text"] == "Hello There"
    assert "ifbench summary" in out


def test_score_all_passing_and_bad_responses_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path, "scored.yaml", SCORE_SUITE)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "lower-ok", "response": "hi"}) + "\n", encoding="utf-8")
    assert main(["score", "--suite", str(suite), "--responses", str(responses),
                 "--", "-q", "-k", "lower-ok"]) == 0
    assert json.loads((tmp_path / "ifbench-results.json").read_text())["instances"][0]["status"] == "passed"
    capsys.readouterr()
    responses.write_text("{broken\n", encoding="utf-8")
    assert main(["score", "--suite", str(suite), "--responses", str(responses)]) == 4
    assert "responses.jsonl:1: not JSON" in capsys.readouterr().err


def test_score_a_reply_holding_line_separators_json_may_keep_as_they_are(tmp_path, capsys, monkeypatch):
    """``json.dumps(..., ensure_ascii=False)`` writes U+2028, U+2029 and U+0085 unescaped: valid JSON Lines,
    which the loader split inside the string ("not JSON: Unterminated string"), with every later line
    number off by one."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path, "scored.yaml", SCORE_SUITE)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "lower-ok", "response": "hi\u2028there\u0085you\u2029now"},
                                    ensure_ascii=False) + "\r\n" + "{broken\n", encoding="utf-8")
    main(["score", "--suite", str(suite), "--responses", str(responses), "--", "-q", "-k", "lower-ok"])
    said = capsys.readouterr()
    assert "responses.jsonl:2: not JSON" in said.err + said.out  # the line numbers are the file's
    assert "responses.jsonl:1" not in said.err + said.out
    (record,) = json.loads((tmp_path / "ifbench-results.json").read_text())["instances"]
    assert record["turns"][0]["response"]["text"] == "hi\u2028there\u0085you\u2029now"


def test_recorded_responses_do_not_make_samples(tmp_path, capsys, monkeypatch):
    """An instance with ``generation.samples: 3`` and one recorded reply was scored as three samples of that
    reply (pass rate 1.0, three of three). Recorded responses hold one reply per turn: an error saying so."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path, "scored.yaml", SCORE_SUITE.replace(
        "  - id: lower-ok\n", "  - id: lower-ok\n    generation: {samples: 3}\n"))
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "lower-ok", "response": "hi"}) + "\n", encoding="utf-8")
    main(["score", "--suite", str(suite), "--responses", str(responses), "--", "-q", "-k", "lower-ok"])
    (record,) = json.loads((tmp_path / "ifbench-results.json").read_text())["instances"]
    assert record["status"] == "error", record
    assert record["error"] == ("instance 'lower-ok' asks for 3 samples (generation.samples); recorded responses "
                               "hold one reply per turn"), record["error"]


def test_more_recorded_replies_than_the_instance_has_turns_is_an_error(tmp_path, capsys, monkeypatch):
    """Extra replies were ignored without a word: the responses were recorded for another version of the
    instance (a turn removed since), and the first replies were scored against turns they did not answer."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path, "scored.yaml", SCORE_SUITE)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "lower-ok", "responses": ["hi", "there"]}) + "\n", encoding="utf-8")
    main(["score", "--suite", str(suite), "--responses", str(responses), "--", "-q", "-k", "lower-ok"])
    (record,) = json.loads((tmp_path / "ifbench-results.json").read_text())["instances"]
    assert record["status"] == "error", record
    assert record["error"] == ("instance 'lower-ok' has 1 turn(s), but its recorded responses hold 2 replies: "
                               "recorded for another version of it?"), record["error"]


# --------------------------------------------------------------------------- the installed script


def _console_script() -> str:
    beside = Path(sys.executable).with_name("ifbench")
    found = str(beside) if beside.is_file() else shutil.which("ifbench")
    assert found, "the ifbench console script is not installed (pip install -e .)"
    return found


def test_console_script_entry_point(tmp_path):
    stdin = "\n".join([
        _case("ifbench.case", "HELLO", {"mode": "upper"}),
        _case("ifbench.ruff", LONG_LINE, RUFF_PARAMS),
        _case("nope.nope", "x"),
    ]) + "\n"
    proc = subprocess.run([_console_script(), "verify", "--in", "-"], check=False, input=stdin, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["passed"] for r in results] == [True, False, None]
    assert results[2]["error"].startswith("line 3: unknown verifier 'nope.nope' (no verifier of 'nope'")


def test_litellm_is_imported_only_for_judged_cases(tmp_path):
    cases = _write_cases(tmp_path / "cases.jsonl", _case("ifbench.case", "hi", {"mode": "lower"}))
    script = (
        "import sys; from pytest_ifbench.cli.main import main; "
        f"code = main(['verify', '--in', {str(cases)!r}]); code |= main(['verifiers']); "
        "assert 'litellm' not in sys.modules, 'litellm was imported'; sys.exit(code)"
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
