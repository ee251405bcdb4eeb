"""Suite files: parsing, defaults merging and precise validation errors."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import Param
from pytest_ifbench._registry import Registry
from pytest_ifbench._types import GenerationParams, Verdict
from pytest_ifbench.suite.detect import is_suite_file
from pytest_ifbench.suite.errors import NotASuite, SuiteError
from pytest_ifbench.suite.format import _frozen, load_suite, marker_name, parse_suite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The built-ins plus a throwaway verifier with an int parameter."""
    reg = default_registry()

    @reg.verifier("tmp.wrap", params={"line_length": Param(int)}, description="Lines are wrapped.")
    def wrap(text, params, ctx):
        return Verdict(passed=all(len(line) <= params["line_length"] for line in text.splitlines()))

    return reg


def write(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def load(tmp_path: Path, registry: Registry, text: str, name: str = "suite.yaml"):
    return load_suite(write(tmp_path, text, name), registry)


def suite_error(tmp_path: Path, registry: Registry, text: str) -> tuple[Path, SuiteError]:
    path = write(tmp_path, text)
    with pytest.raises(SuiteError) as info:
        load_suite(path, registry)
    return path, info.value


CASE = {"id": "upper", "verifier": "ifbench.case", "params": {"mode": "upper"}}


def data(**instance: Any) -> dict[str, Any]:
    """A minimal valid suite as data; keyword arguments update its only instance."""
    inst: dict[str, Any] = {"id": "abc", "prompt": "Say hi.", "checks": [dict(CASE)]}
    inst.update(instance)
    return {"ifbench": 1, "benchmark": "demo", "instances": [inst]}


def parse_error(registry: Registry, raw: Any, path: str = "s.yaml") -> SuiteError:
    with pytest.raises(SuiteError) as info:
        parse_suite(Path(path), raw, registry)
    return info.value


# --------------------------------------------------------------------------
# valid suites
# --------------------------------------------------------------------------


VALID = """
ifbench: 1
benchmark: demo
description: A demo suite.
options: {shuffle: false}
defaults:
  system: Be brief.
  category: format
  tier: 2
  generation: {temperature: 0.5, max_tokens: 100, stop: ["END"]}
  markers: [slow]
instances:
  - id: inherits
    prompt: Say hi.
    checks:
      - {id: upper, verifier: ifbench.case, params: {mode: upper}}
  - id: overrides
    prompt: Say bye.
    system: Be verbose.
    category: content
    generation: {max_tokens: 300, seed: 7}
    markers: [nightly, smoke_test]
    checks:
      - {id: short, verifier: ifbench.word_count, params: {max: 5}, kind: bonus, points: 2}
      - {id: wrapped, verifier: tmp.wrap, params: {line_length: 80}, scored: false}
  - id: two.turns_x-1
    protocol: multi_turn
    turns:
      - user: First.
        checks:
          - {id: one, verifier: ifbench.word_count, params: {max: 1}}
      - user: Second.
        checks:
          - {id: one, verifier: ifbench.word_count, params: {max: 1}}
          - {id: lower, verifier: ifbench.case, params: {mode: lower}}
    checks:
      - {id: overall, verifier: ifbench.keywords, params: {include: [hi]}}
"""


def test_valid_suite_parses(tmp_path, registry):
    suite = load(tmp_path, registry, VALID)
    assert suite.benchmark == "demo"
    assert suite.description == "A demo suite."
    assert dict(suite.options) == {"shuffle": False}
    assert [i.id for i in suite.instances] == ["inherits", "overrides", "two.turns_x-1"]
    first = suite.instances[0]
    assert first.suite == tmp_path / "suite.yaml"
    assert first.benchmark == "demo"
    assert first.protocol == "single_turn"
    assert first.prompt == "Say hi."
    check = first.checks[0]
    assert (check.id, check.verifier, dict(check.params)) == ("upper", "ifbench.case", {"mode": "upper"})
    assert check.kind == "check" and check.points == 1.0 and check.scored and check.turn is None
    # the description defaults to the verifier's
    assert check.description == registry.get("ifbench.case").description


def test_defaults_merge(tmp_path, registry):
    inherits, overrides, _ = load(tmp_path, registry, VALID).instances
    # plain keys: inherited, and overridden by the instance
    assert (inherits.system, inherits.category, inherits.tier) == ("Be brief.", "format", 2)
    assert (overrides.system, overrides.category, overrides.tier) == ("Be verbose.", "content", 2)
    # generation: merged key-wise on top of the built-in defaults
    assert inherits.generation == GenerationParams(temperature=0.5, max_tokens=100, stop=("END",))
    assert overrides.generation == GenerationParams(temperature=0.5, max_tokens=300, seed=7, stop=("END",))
    # markers: concatenated, defaults first
    assert inherits.markers == ("slow",)
    assert overrides.markers == ("slow", "nightly", "smoke_test")


def test_no_defaults_gives_builtin_generation(registry):
    suite = parse_suite(Path("s.yaml"), data(), registry)
    assert suite.instances[0].generation == GenerationParams()
    assert suite.instances[0].markers == ()


def test_check_fields(tmp_path, registry):
    overrides = load(tmp_path, registry, VALID).instances[1]
    short, wrapped = overrides.checks
    assert (short.kind, short.points, short.scored) == ("bonus", 2.0, True)
    assert dict(short.params) == {"min": 0, "max": 5}  # defaults filled in
    assert (wrapped.scored, dict(wrapped.params)) == (False, {"line_length": 80})
    assert wrapped.description == "Lines are wrapped."


def test_turn_checks_get_turn_prefixed_ids(tmp_path, registry):
    inst = load(tmp_path, registry, VALID).instances[2]
    assert inst.protocol == "multi_turn"
    assert [t.user for t in inst.turns] == ["First.", "Second."]
    assert [c.id for c in inst.turns[0].checks] == ["turn1.one"]
    assert [c.id for c in inst.turns[1].checks] == ["turn2.one", "turn2.lower"]
    assert [c.turn for t in inst.turns for c in t.checks] == [1, 2, 2]
    # instance-level checks keep their id and apply to the last turn
    assert [(c.id, c.turn) for c in inst.checks] == [("overall", None)]
    assert [c.id for c in inst.all_checks()] == ["overall", "turn1.one", "turn2.one", "turn2.lower"]


def test_turn_prefixed_id_collides_with_instance_check(registry):
    raw = data(protocol="multi_turn", checks=[dict(CASE, id="turn1.x")],
               turns=[{"user": "u", "checks": [dict(CASE, id="x")]}])
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'abc': checks: duplicate check id 'turn1.x'"


def test_messages_and_response(registry):
    raw = data(prompt=None, messages=[{"role": "user", "content": "hi"}], response="HELLO")
    del raw["instances"][0]["prompt"]
    inst = parse_suite(Path("s.yaml"), raw, registry).instances[0]
    assert inst.prompt is None
    assert inst.messages == ({"role": "user", "content": "hi"},)
    assert inst.response == "HELLO" and not inst.needs_model


def test_smoke_suite_loads():
    path = REPO / "suites" / "smoke.yaml"
    suite = load_suite(path, default_registry())
    assert suite.benchmark == "smoke"
    ids = [i.id for i in suite.instances]
    assert len(ids) == len(set(ids)) >= 5
    patience = next(i for i in suite.instances if i.id == "patience-dialogue")
    assert [c.id for c in patience.all_checks()] == ["turn1.one-word", "turn2.one-word", "turn3.one-word"]


# --------------------------------------------------------------------------
# errors name file, instance and field
# --------------------------------------------------------------------------


def test_bad_param_message_is_exact(tmp_path, registry):
    path, err = suite_error(tmp_path, registry, """
        ifbench: 1
        benchmark: demo
        instances:
          - id: abc
            prompt: Write a poem.
            checks:
              - {id: a, verifier: ifbench.case, params: {mode: upper}}
              - {id: b, verifier: ifbench.word_count, params: {max: 50}}
              - {id: c, verifier: tmp.wrap, params: {line_length: eighty}}
    """)
    assert str(err) == f"{path}: instance 'abc': checks[2].params.line_length: expected int, got 'eighty'"
    assert (err.path, err.instance, err.field) == (path, "abc", "checks[2].params.line_length")


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "checks[0].params.line_length", "required parameter is missing"),
        ({"line_length": 80, "width": 3}, "checks[0].params.width", "unknown parameter (known: line_length)"),
        ({"line_length": True}, "checks[0].params.line_length", "expected int, got True"),
        ("eighty", "checks[0].params", "expected mapping, got str"),
    ],
)
def test_param_errors(registry, params, field, message):
    err = parse_error(registry, data(checks=[{"id": "c", "verifier": "tmp.wrap", "params": params}]))
    assert str(err) == f"s.yaml: instance 'abc': {field}: {message}"


def test_param_choice_and_range_errors(registry):
    err = parse_error(registry, data(checks=[dict(CASE, params={"mode": "title"})]))
    assert str(err) == "s.yaml: instance 'abc': checks[0].params.mode: expected one of upper, lower, got 'title'"
    err = parse_error(registry, data(checks=[{"id": "w", "verifier": "ifbench.word_count", "params": {"min": -1}}]))
    assert str(err) == "s.yaml: instance 'abc': checks[0].params.min: must be >= 0, got -1"
    err = parse_error(registry, data(checks=[{"id": "k", "verifier": "ifbench.keywords",
                                              "params": {"include": ["a", 3]}}]))
    assert str(err) == "s.yaml: instance 'abc': checks[0].params.include[1]: expected str, got 3"


def test_turn_check_error_names_turn(registry):
    raw = data(protocol="multi_turn", turns=[{"user": "u", "checks": [dict(CASE)]},
                      {"user": "v", "checks": [{"id": "w", "verifier": "tmp.wrap", "params": {"line_length": "x"}}]}])
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'abc': turns[1].checks[0].params.line_length: expected int, got 'x'"


def test_duplicate_instance_ids(tmp_path, registry):
    path, err = suite_error(tmp_path, registry, """
        ifbench: 1
        benchmark: demo
        instances:
          - {id: same, prompt: a, checks: [{id: u, verifier: ifbench.case, params: {mode: upper}}]}
          - {id: other, prompt: b, checks: [{id: u, verifier: ifbench.case, params: {mode: upper}}]}
          - {id: same, prompt: c, checks: [{id: u, verifier: ifbench.case, params: {mode: upper}}]}
    """)
    assert str(err) == f"{path}: instance 'same': id: duplicate instance id"


@pytest.mark.parametrize(
    "bad_id",
    ["has space", "a::b", "a[1]", "[x]", "-leading", "a/b", "trailing ", "", "tab\there", "x:y", "_under"],
)
def test_unselectable_instance_ids(registry, bad_id):
    err = parse_error(registry, data(id=bad_id))
    assert err.field == "instances[0].id"
    assert str(err).startswith("s.yaml: instances[0].id: ")
    assert repr(bad_id) in str(err) and "not a selectable id" in str(err)


@pytest.mark.parametrize("bad_id", [None, 12, ["a"]])
def test_non_string_instance_ids(registry, bad_id):
    raw = data(id=bad_id)
    if bad_id is None:
        del raw["instances"][0]["id"]
    err = parse_error(registry, raw)
    assert err.field == "instances[0].id"


@pytest.mark.parametrize("good_id", ["a", "A1", "9lives", "x.y-z_1", "ifeval-0001"])
def test_selectable_instance_ids(registry, good_id):
    assert parse_suite(Path("s.yaml"), data(id=good_id), registry).instances[0].id == good_id


@pytest.mark.parametrize("what", ["instance id", "check id", "marker", "benchmark"])
def test_trailing_newline_is_rejected(registry, what):
    raw = data()
    if what == "instance id":
        raw["instances"][0]["id"] = "abc\n"
    elif what == "check id":
        raw["instances"][0]["checks"] = [dict(CASE, id="upper\n")]
    elif what == "marker":
        raw["instances"][0]["markers"] = ["slow\n"]
    else:
        raw["benchmark"] = "demo\n"
    with pytest.raises(SuiteError):
        parse_suite(Path("s.yaml"), raw, registry)


def test_invalid_check_id(registry):
    err = parse_error(registry, data(checks=[dict(CASE, id="has space")]))
    assert err.field == "checks[0].id" and err.instance == "abc"
    assert "'has space' is not a valid check id" in str(err)


def test_unknown_top_level_field(registry):
    raw = data()
    raw["instance"] = []
    err = parse_error(registry, raw)
    assert str(err).startswith("s.yaml: instance: unknown field (allowed: ")
    assert "instances" in str(err) and err.instance is None


def test_unknown_instance_field(registry):
    err = parse_error(registry, data(promt="typo"))
    assert str(err).startswith("s.yaml: instance 'abc': promt: unknown field (allowed: ")


def test_unknown_check_field(registry):
    err = parse_error(registry, data(checks=[dict(CASE), dict(CASE, id="second", parms={})]))
    assert str(err).startswith("s.yaml: instance 'abc': checks[1].parms: unknown field (allowed: ")


def test_unknown_defaults_and_generation_fields(registry):
    raw = data()
    raw["defaults"] = {"temprature": 0.1}
    assert str(parse_error(registry, raw)).startswith("s.yaml: defaults.temprature: unknown field")
    err = parse_error(registry, data(generation={"temp": 1}))
    assert str(err).startswith("s.yaml: instance 'abc': generation.temp: unknown field")


def test_unknown_turn_field(registry):
    err = parse_error(registry, data(turns=[{"user": "u", "assistant": "x", "checks": [dict(CASE)]}]))
    assert str(err).startswith("s.yaml: instance 'abc': turns[0].assistant: unknown field")


def test_unknown_verifier(registry):
    err = parse_error(registry, data(checks=[{"id": "c", "verifier": "ifbench.nope"}]))
    assert str(err) == "s.yaml: instance 'abc': checks[0].verifier: unknown verifier 'ifbench.nope'"


def test_unknown_verifier_suggests_same_name(registry):
    err = parse_error(registry, data(checks=[{"id": "c", "verifier": "other.case"}]))
    assert str(err).startswith("s.yaml: instance 'abc': checks[0].verifier: unknown verifier 'other.case' "
                               "(did you mean ")
    assert "ifbench.case" in str(err)


@pytest.mark.parametrize("key", ["id", "verifier"])
def test_check_required_fields(registry, key):
    check = dict(CASE)
    del check[key]
    err = parse_error(registry, data(checks=[check]))
    assert str(err) == f"s.yaml: instance 'abc': checks[0].{key}: required field is missing"


def test_missing_prompt(registry):
    raw = data()
    del raw["instances"][0]["prompt"]
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'abc': prompt: an instance needs a prompt, messages or turns"


def test_prompt_wrong_type(registry):
    err = parse_error(registry, data(prompt=["a", "b"]))
    assert str(err) == "s.yaml: instance 'abc': prompt: expected str, got list"


@pytest.mark.parametrize("checks", [[], None])
def test_no_checks(registry, checks):
    raw = data(checks=checks)
    if checks is None:
        del raw["instances"][0]["checks"]
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'abc': checks: an instance needs at least one check"


def test_duplicate_check_ids(registry):
    err = parse_error(registry, data(checks=[dict(CASE), dict(CASE, id="other"), dict(CASE)]))
    assert str(err) == "s.yaml: instance 'abc': checks: duplicate check id 'upper'"


def test_same_check_id_in_different_turns_is_fine(registry):
    raw = data(protocol="multi_turn",
               turns=[{"user": "u", "checks": [dict(CASE)]}, {"user": "v", "checks": [dict(CASE)]}])
    inst = parse_suite(Path("s.yaml"), raw, registry).instances[0]
    assert [c.id for c in inst.all_checks()] == ["upper", "turn1.upper", "turn2.upper"]


def test_duplicate_check_ids_within_a_turn(registry):
    raw = data(protocol="multi_turn", turns=[{"user": "u", "checks": [dict(CASE), dict(CASE)]}])
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'abc': checks: duplicate check id 'turn1.upper'"


def test_invalid_yaml_names_the_file(tmp_path, registry):
    path, err = suite_error(tmp_path, registry, "ifbench: 1\nbenchmark: [unclosed\n")
    assert str(err).startswith(f"{path}: invalid YAML: ")
    assert err.path == path


def test_unreadable_file_names_the_file(tmp_path, registry):
    path = tmp_path / "missing.yaml"
    with pytest.raises(SuiteError) as info:
        load_suite(path, registry)
    assert str(info.value).startswith(f"{path}: cannot read: ")


@pytest.mark.parametrize("version", [2, 0, "1", None, [1]])
def test_wrong_version(registry, version):
    raw = data()
    if version is None:
        del raw["ifbench"]
    else:
        raw["ifbench"] = version
    err = parse_error(registry, raw)
    assert str(err) == f"s.yaml: ifbench: unsupported suite format version {version!r} (supported: 1)"


@pytest.mark.parametrize("version", [True, 1.0])
def test_version_must_be_the_integer_one(registry, version):
    raw = data()
    raw["ifbench"] = version
    with pytest.raises(SuiteError, match="unsupported suite format version"):
        parse_suite(Path("s.yaml"), raw, registry)


def test_top_level_must_be_mapping(tmp_path, registry):
    path, err = suite_error(tmp_path, registry, "- ifbench: 1\n")
    assert isinstance(err, NotASuite)
    assert str(err) == (f"{path}: mentions 'ifbench' but its top level is a list, not a mapping with "
                        "'ifbench: 1'; not collected as a suite")
    assert str(parse_error(registry, ["x"])) == "s.yaml: expected mapping, got list"


@pytest.mark.parametrize("bench_name", [None, "Demo", "1demo", "my-bench", 3])
def test_bad_benchmark_name(registry, bench_name):
    raw = data()
    raw["benchmark"] = bench_name
    err = parse_error(registry, raw)
    assert err.field == "benchmark"
    assert "expected a name like" in str(err)


@pytest.mark.parametrize("marker", ["Slow", "slow-test", "1st", "has space", "", 3, "a::b"])
def test_bad_marker_names(registry, marker):
    err = parse_error(registry, data(markers=["ok", marker]))
    assert str(err) == (f"s.yaml: instance 'abc': markers[1]: {marker!r} is not a valid marker name "
                        "([a-z][a-z0-9_]*)")


def test_bad_default_marker_name_is_reported(registry):
    raw = data(markers=["fine"])
    raw["defaults"] = {"markers": ["Bad"]}
    err = parse_error(registry, raw)
    assert err.field == "defaults.markers[0]" and err.instance is None
    assert "'Bad' is not a valid marker name" in str(err)


def test_markers_must_be_a_list(registry):
    err = parse_error(registry, data(markers="slow"))
    assert str(err) == "s.yaml: instance 'abc': markers: expected list, got 'slow'"


def test_default_markers_must_be_a_list(registry):
    raw = data()
    raw["defaults"] = {"markers": "slow"}
    with pytest.raises(SuiteError, match="markers"):
        parse_suite(Path("s.yaml"), raw, registry)


@pytest.mark.parametrize(
    ("generation", "field", "message"),
    [
        ({"temperature": "hot"}, "generation.temperature", "expected int or float, got 'hot'"),
        ({"temperature": True}, "generation.temperature", "expected int or float, got True"),
        ({"max_tokens": 0}, "generation.max_tokens", "must be between 1 and 1,000,000, got 0"),
        ({"samples": 0}, "generation.samples", "must be between 1 and 100, got 0"),
        ({"samples": 1000000000}, "generation.samples", "must be between 1 and 100, got 1000000000"),
        ({"temperature": float("nan")}, "generation.temperature", "must be between 0 and 2, got nan"),
        ({"top_p": 1.5}, "generation.top_p", "must be between 0 and 1, got 1.5"),
        ({"seed": 10**5000}, "generation.seed", "must be between -9,223,372,036,854,775,808 and "
                                                "9,223,372,036,854,775,807, got <int of about 5001 digits>"),
        ({"stop": ["END", 5]}, "generation.stop[1]", "expected str, got 5"),
        ({"samples": None}, "generation.samples", "expected int, got NoneType"),
        ({"seed": 1.5}, "generation.seed", "expected int, got 1.5"),
        ({"stop": 5}, "generation.stop", "expected list, got 5"),
        ("fast", "generation", "expected mapping, got 'fast'"),
    ],
)
def test_generation_errors(registry, generation, field, message):
    err = parse_error(registry, data(generation=generation))
    assert str(err) == f"s.yaml: instance 'abc': {field}: {message}"


def test_an_error_in_the_defaults_is_the_suites_not_its_first_instances(registry):
    """It read "s.yaml: instance 'abc': defaults.generation.top_p: ...", as if the field were that instance's."""
    raw = data()
    raw["defaults"] = {"generation": {"top_p": "high"}}
    assert str(parse_error(registry, raw)) == "s.yaml: defaults.generation.top_p: expected int or float, got 'high'"
    raw["defaults"] = {"markers": ["ok", "Not OK"]}
    assert str(parse_error(registry, raw)) == (
        "s.yaml: defaults.markers[1]: 'Not OK' is not a valid marker name ([a-z][a-z0-9_]*)")


def test_an_instance_without_an_id_says_the_field_is_missing(registry):
    raw = data()
    del raw["instances"][0]["id"]
    assert str(parse_error(registry, raw)) == "s.yaml: instances[0].id: required field is missing"


def test_generation_stop_string_becomes_tuple(registry):
    inst = parse_suite(Path("s.yaml"), data(generation={"stop": "END"}), registry).instances[0]
    assert inst.generation.stop == ("END",)


@pytest.mark.parametrize(
    ("check", "field", "message"),
    [
        ({"kind": "reward"}, "checks[0].kind", "expected check, bonus or penalty, got 'reward'"),
        ({"points": 0}, "checks[0].points", "must be > 0 and <= 1,000,000, got 0"),
        ({"points": float("inf")}, "checks[0].points", "must be > 0 and <= 1,000,000, got inf"),
        ({"points": "two"}, "checks[0].points", "expected int or float, got 'two'"),
        ({"scored": "yes"}, "checks[0].scored", "expected bool, got 'yes'"),
        ({"turn": "last"}, "checks[0].turn", "expected int, got 'last'"),
        ({"description": 5}, "checks[0].description", "expected str, got 5"),
    ],
)
def test_check_field_errors(registry, check, field, message):
    err = parse_error(registry, data(checks=[dict(CASE, **check)]))
    assert str(err) == f"s.yaml: instance 'abc': {field}: {message}"


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "robot", "content": "x"}, "messages[0].role"),
        ({"role": "user"}, "messages[0].content"),
    ],
)
def test_message_errors(registry, message, field):
    err = parse_error(registry, data(messages=[message]))
    assert err.field == field and err.instance == "abc"


def test_unknown_protocol_when_protocols_given(registry):
    raw = data(protocol="telepathy")
    with pytest.raises(SuiteError) as info:
        parse_suite(Path("s.yaml"), raw, registry, protocols={"single_turn", "multi_turn"})
    assert str(info.value) == ("s.yaml: instance 'abc': protocol: unknown protocol 'telepathy' "
                               "(known: multi_turn, single_turn)")


def test_instance_must_be_mapping(registry):
    raw = data()
    raw["instances"].append("oops")
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instances[1]: expected mapping, got str"


def test_error_in_default_checks_names_defaults(registry):
    raw = data()
    del raw["instances"][0]["checks"]
    raw["defaults"] = {"checks": [{"id": "c", "verifier": "ifbench.nope"}]}
    err = parse_error(registry, raw)
    assert err.field == "defaults.checks[0].verifier"


@pytest.mark.parametrize("turn", [0, -1, 3])
def test_check_turn_out_of_range(registry, turn):
    raw = data(protocol="multi_turn", turns=[{"user": "u"}, {"user": "v"}], checks=[dict(CASE, turn=turn)])
    with pytest.raises(SuiteError, match="turn"):
        parse_suite(Path("s.yaml"), raw, registry)


@pytest.mark.parametrize("params", [{"pattern": "("}, {"pattern": "a", "flags": "q"}])
def test_invalid_regex_is_a_suite_error(registry, params):
    with pytest.raises(SuiteError, match=r"checks\[0\]\.params"):
        parse_suite(Path("s.yaml"), data(checks=[{"id": "r", "verifier": "ifbench.regex", "params": params}]),
                    registry)


# --------------------------------------------------------------------------
# sniffing and marker names
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.yaml", "ifbench: 1\nbenchmark: x\n", True),
        ("b.yml", "# a comment\nbenchmark: x\nifbench: 1\n", True),
        ("c.yaml", "---\nifbench : 1\n", True),
        ("d.yaml", "benchmark: x\ninstances: []\n", False),
        ("e.yaml", "outer:\n  ifbench: 1\n", True),  # opened, then a warning says why it is no suite
        ("f.yaml", "# ifbench: 1\nkey: value\n", False),
        ("g.yaml", "ifbench_version: 1\n", False),
        ("h.yaml", "name: ifbench: no\n", False),
        ("i.txt", "ifbench: 1\n", False),
        ("j.json", '{"ifbench": 1}\n', False),
        ("k.py", "ifbench: int = 1\n", False),
    ],
)
def test_is_suite_file(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert is_suite_file(path) is expected


def test_is_suite_file_missing_or_directory(tmp_path):
    assert is_suite_file(tmp_path / "absent.yaml") is False
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert is_suite_file(folder) is False


def test_sniffed_file_parses_as_yaml_with_ifbench_key(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("benchmark: x\nifbench: 1\n", encoding="utf-8")
    assert is_suite_file(path) and "ifbench" in yaml.safe_load(path.read_text())


@pytest.mark.parametrize(
    ("prefix", "value", "expected"),
    [
        ("category", "format", "category_format"),
        ("category", "Code Gen", "category_code_gen"),
        ("category", "code-gen", "category_code_gen"),
        ("category", "  Mixed--CASE!! ", "category_mixed_case"),
        ("category", "a__b", "category_a_b"),
        ("tier", 3, "tier_3"),
        ("scaffold", "claude/code v2", "scaffold_claude_code_v2"),
        ("protocol", "multi_turn", "protocol_multi_turn"),
        ("", "Some Thing", "some_thing"),
    ],
)
def test_marker_name_folding(prefix, value, expected):
    assert marker_name(prefix, value) == expected


def test_marker_names_are_valid_marker_names():
    from pytest_ifbench.suite.format import NAME

    for value in ["X", "a b", "3", "Ünïcode x", "a.b", "--x--"]:
        assert NAME.match(marker_name("category", value))


def test_set_check_param_flag_overrides_default_fills_in_everywhere():
    from pytest_ifbench import set_check_param

    data = {"defaults": {"checks": [{"id": "d", "verifier": "bench.x"}]},
            "instances": [{"id": "i", "checks": [{"id": "a", "verifier": "bench.x", "params": {"compat": "paper"}},
                                                 {"id": "b", "verifier": "other.x", "params": {}},
                                                 {"id": "c", "verifier": "bench.y", "params": ["w1", "w2"]},
                                                 "not a check"],
                           "turns": [{"checks": [{"id": "t", "verifier": "bench.x", "params": None}]}]}]}
    set_check_param(data, "bench.", "compat", default="reference", coerce=lambda p: {"keywords": p}
                    if isinstance(p, list) else p)
    checks = {c["id"]: c.get("params") for h in [data["defaults"], data["instances"][0],
                                                  data["instances"][0]["turns"][0]]
              for c in h["checks"] if isinstance(c, dict)}
    assert checks == {"d": {"compat": "reference"}, "a": {"compat": "paper"}, "b": {},
                      "c": {"keywords": ["w1", "w2"], "compat": "reference"}, "t": {"compat": "reference"}}
    set_check_param(data, "bench.", "compat", flag="paper")
    assert data["instances"][0]["checks"][0]["params"]["compat"] == "paper"
    assert data["instances"][0]["turns"][0]["checks"][0]["params"] == {"compat": "paper"}


# --------------------------------------------------------------------------
# memory: what a suite repeats is held once
# --------------------------------------------------------------------------


def test_a_check_written_the_same_way_again_is_the_same_spec(registry):
    """A suite repeats its checks across instances; their specs (immutable) are shared, not copied."""
    words = {"id": "w", "verifier": "ifbench.word_count", "params": {"min": 1, "max": 9}}
    raw = {"ifbench": 1, "benchmark": "demo", "instances": [
        {"id": f"i{n}", "prompt": "p", "checks": [dict(words, params=dict(words["params"])), dict(CASE)]}
        for n in range(3)] + [
        {"id": "other-params", "prompt": "p", "checks": [dict(words, params={"min": 1, "max": 8})]},
        {"id": "described", "prompt": "p", "checks": [dict(words, description="Nine words at most.")]},
        {"id": "turns", "prompt": "p", "protocol": "multi_turn",
         "turns": [{"user": "a", "checks": [dict(words)]}, {"user": "b", "checks": [dict(words)]}]},
    ]}
    suite = parse_suite(Path("s.yaml"), raw, registry)
    first, *others = [inst.checks for inst in suite.instances[:3]]
    assert all(a is b for checks in others for a, b in zip(first, checks, strict=True))
    other_params, described, turns = suite.instances[3:]
    assert other_params.checks[0] is not first[0] and other_params.checks[0].params["max"] == 8
    assert described.checks[0] is not first[0] and described.checks[0].description == "Nine words at most."
    one, two = (turn.checks[0] for turn in turns.turns)
    assert (one.turn, two.turn) == (1, 2) and one.id == "turn1.w" and two.id == "turn2.w"


def test_checks_are_the_same_only_when_written_exactly_the_same():
    """1, 1.0 and true are equal in Python; in a suite they are different parameters."""
    forms = [_frozen({"a": value}) for value in (1, 1.0, True, "1", [1], {"b": 1}, None)]
    assert len(set(forms)) == len(forms)
    assert _frozen({"a": [1, {"b": "c"}]}) == _frozen({"a": [1, {"b": "c"}]})
    assert _frozen({"a": {1, 2}}) is None and _frozen({"a": [b"x"]}) is None  # not plain data: never shared


def test_a_bad_check_after_good_copies_of_it_is_still_named_exactly(registry):
    good = {"id": "c", "verifier": "tmp.wrap", "params": {"line_length": 80}}
    raw = {"ifbench": 1, "benchmark": "demo", "instances": [
        {"id": "a", "prompt": "p", "checks": [dict(good)]},
        {"id": "b", "prompt": "p", "checks": [dict(good)]},
        {"id": "c", "prompt": "p", "checks": [dict(good), dict(good, params={"line_length": "80"})]}]}
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: instance 'c': checks[1].params.line_length: expected int, got '80'"


def test_items_share_their_markers(pytester):
    pytester.makefile(".yaml", suite="""
        ifbench: 1
        benchmark: demo
        defaults: {category: style}
        instances:
          - {id: a, prompt: p, checks: [{id: c, verifier: ifbench.case, params: {mode: upper}}]}
          - {id: b, prompt: p, checks: [{id: c, verifier: ifbench.case, params: {mode: upper}}]}
    """)
    items, _ = pytester.inline_genitems("suite.yaml", "--model=openai/x")
    first, second = ([(m.name, id(m)) for m in item.own_markers] for item in items)
    assert [name for name, _ in first] == ["ifbench", "demo", "category_style", "protocol_single_turn"]
    assert first == second


def test_equal_generation_settings_are_one_object(registry):
    raw = {"ifbench": 1, "benchmark": "demo", "defaults": {"generation": {"temperature": 0.2, "stop": ["x"]}},
           "instances": [{"id": "a", "prompt": "p", "checks": [dict(CASE)]},
                         {"id": "b", "prompt": "p", "checks": [dict(CASE)]},
                         {"id": "c", "prompt": "p", "checks": [dict(CASE)], "generation": {"seed": 3}},
                         {"id": "d", "prompt": "p", "checks": [dict(CASE)], "generation": {"seed": 3}},
                         {"id": "e", "prompt": "p", "checks": [dict(CASE)], "generation": {"seed": 4}}]}
    a, b, c, d, e = (inst.generation for inst in parse_suite(Path("s.yaml"), raw, registry).instances)
    assert a is b and c is d and c is not e and c is not a
    assert (a.temperature, a.stop, a.seed, c.seed, c.temperature, e.seed) == (0.2, ("x",), None, 3, 0.2, 4)


def test_every_malformed_instance_is_reported_not_only_the_first(registry):
    raw = data()
    raw["instances"] += [
        {"id": "b", "prompt": 3, "checks": [dict(CASE)]},
        {"id": "fine", "prompt": "Say hi.", "checks": [dict(CASE)]},
        {"id": "abc", "prompt": "Say hi."},
        7,
    ]
    raw["instances"][0]["checks"] = [{"verifier": "ifbench.case", "params": {"mode": "upper"}}]
    err = parse_error(registry, raw)
    assert str(err) == "\n".join([
        "s.yaml: 4 malformed instances:",
        "  instance 'abc': checks[0].id: required field is missing",
        "  instance 'b': prompt: expected str, got 3",
        "  instance 'abc': id: duplicate instance id",
        "  instances[4]: expected mapping, got int",
    ])
    assert [(e.instance, e.field) for e in err.errors] == [
        ("abc", "checks[0].id"), ("b", "prompt"), ("abc", "id"), (None, "instances[4]")]
    assert (err.instance, err.field) == ("abc", "checks[0].id")


def test_a_long_list_of_malformed_instances_is_cut(registry):
    raw = data()
    raw["instances"] = [{"id": f"i{n}", "prompt": n, "checks": [dict(CASE)]} for n in range(25)]
    err = parse_error(registry, raw)
    lines = str(err).splitlines()
    assert len(err.errors) == 25 and len(str(err)) <= 2000
    assert lines[0] == "s.yaml: 25 malformed instances:" and len(lines) == 12
    assert lines[-2] == "  instance 'i9': prompt: expected str, got 9" and lines[-1] == "  … and 15 more"


def test_one_mistake_in_many_instances_is_one_line_naming_them(registry):
    """A verifier no plugin registers, used by every instance, was the same line per instance, each cut short of
    the message's hint (is its package installed, or switched off with -p no:...?)."""
    raw = data()
    raw["instances"] = [{"id": f"i{n}", "prompt": "hi", "checks": [{"id": "c", "verifier": "wordcount.max_words"}]}
                        for n in range(4)] + [{"id": "odd", "prompt": 3, "checks": [dict(CASE)]}]
    err = parse_error(registry, raw)
    lines = str(err).splitlines()
    assert lines[0] == "s.yaml: 5 malformed instances:" and len(lines) == 3
    assert lines[1].startswith("  instances 'i0', 'i1', 'i2' and 1 more: checks[0].verifier: unknown verifier "
                               "'wordcount.max_words' (no verifier of 'wordcount' is registered: ")
    assert lines[1].endswith("-p no:wordcount?)")
    assert lines[2] == "  instance 'odd': prompt: expected str, got 3"
    assert [e.instance for e in err.errors] == ["i0", "i1", "i2", "i3", "odd"]


def test_a_top_level_error_stops_the_reading(registry):
    raw = data(prompt=3)
    raw["description"] = 5
    err = parse_error(registry, raw)
    assert str(err) == "s.yaml: description: expected str, got 5"


def test_one_malformed_instance_is_reported_alone(registry):
    raw = data()
    raw["instances"].append({"id": "b", "prompt": 3})
    assert str(parse_error(registry, raw)) == "s.yaml: instance 'b': prompt: expected str, got 3"


def test_turns_on_a_single_turn_instance_are_refused_not_dropped(registry):
    """One request: turn 2 was never sent and its checks never run (a recorded reply for turn 1 passed alone)."""
    turns = [{"user": "Hi.", "checks": [dict(CASE)]}, {"user": "Again.", "checks": [dict(CASE, id="c2")]}]
    raw = data(turns=turns, checks=[])
    del raw["instances"][0]["prompt"]
    err = parse_error(registry, raw)
    assert str(err) == ("s.yaml: instance 'abc': turns: scripted turns need protocol: multi_turn (or agent); this "
                        "instance's protocol is single_turn, one request")
    raw["instances"][0]["protocol"] = "multi_turn"
    assert len(parse_suite(Path("s.yaml"), raw, registry).instances[0].turns) == 2


def test_protocol_options_merge_key_by_key_with_the_defaults(registry):
    """An agent instance naming only its tools lost the suite's max_steps, command_timeout and max_seconds
    (the shipped agent smoke suite's read-notes ran under the 30-step, 600 s defaults)."""
    raw = data(protocol="multi_turn", protocol_options={"subtests": "turn"},
               turns=[{"user": "u", "checks": [dict(CASE)]}], checks=[])
    raw["defaults"] = {"protocol_options": {"patience": 2, "subtests": "check"}}
    del raw["instances"][0]["prompt"]
    (instance,) = parse_suite(Path("s.yaml"), raw, registry).instances
    assert instance.protocol_options == {"patience": 2, "subtests": "turn"}
    raw["defaults"] = {"protocol_options": ["patience"]}
    assert str(parse_error(registry, raw)).endswith("defaults.protocol_options: expected mapping, got list")
