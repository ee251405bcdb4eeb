"""Big suite files: accepted when their structure is within the limits, refused by their real size
when over the byte limit, and the alias-bomb defence unchanged by the size-scaled expansion limit."""

from __future__ import annotations

import pytest

from pytest_ifbench.suite import safe_yaml
from pytest_ifbench.suite.detect import read_suite_yaml
from pytest_ifbench.suite.errors import SuiteError
from pytest_ifbench.suite.safe_yaml import LIMITS, YamlLimitError, YamlLimits, check_shape, load_yaml, read_limited


def _suite_text(count: int, padding: int = 0) -> str:
    lines = ["ifbench: 1", "benchmark: big", "instances:"]
    for i in range(count):
        prompt = f"Write one short sentence about item number {i}.{' x' * padding}"
        lines += [f"  - id: inst-{i:06d}", f"    prompt: {prompt}",
                  "    checks:",
                  "      - {id: words, verifier: ifbench.word_count, params: {min: 1, max: 100}}",
                  "      - {id: says-reply, verifier: ifbench.keywords, params: {include: [reply]}}"]
    return "\n".join(lines) + "\n"


def test_a_suite_over_the_old_16_mib_and_20m_expansion_limits_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_IFBENCH_YAML_CACHE", "0")
    text = _suite_text(10_000, padding=1100)  # ~23 MB, ~22 M nodes and scalar characters (long prompts: quick)
    assert len(text) > 16 * 1024 * 1024
    assert 10_000 * len(" x" * 1100) > LIMITS.max_expanded  # the prompts alone are over the old fixed 20 M
    path = tmp_path / "big.yaml"
    path.write_text(text, encoding="utf-8")
    data = read_suite_yaml(path)
    assert len(data["instances"]) == 10_000
    assert data["instances"][-1]["id"] == "inst-009999"


def test_the_expansion_limit_grows_with_the_file_but_never_below_the_floor():
    assert LIMITS.expansion_limit(10) == LIMITS.max_expanded
    assert LIMITS.expansion_limit(50_000_000) == 100_000_000


@pytest.mark.parametrize("merge", [False, True])
def test_an_alias_bomb_is_still_refused_before_it_is_built(merge):
    parts = ["l0: &l0 {a: x, b: y}" if merge else "l0: &l0 [lol, lol, lol]"]
    for level in range(1, 10):
        aliases = ", ".join([f"*l{level - 1}"] * 9)
        parts.append(f"l{level}: &l{level} {{<<: [{aliases}]}}" if merge else f"l{level}: &l{level} [{aliases}]")
    bomb = ("{" + ", ".join(parts) + "}").encode()
    with pytest.raises(YamlLimitError, match="expands to more than 20,000,000 nodes"):
        load_yaml(bomb)


def test_a_bomb_padded_to_a_big_file_is_refused_by_the_size_scaled_limit():
    """Padding a bomb with a big plain scalar raises the allowance only by two units per byte."""
    parts = ["pad: " + "p" * 1_000_000, "l0: &l0 [lol, lol, lol]"]
    for level in range(1, 10):
        parts.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    with pytest.raises(YamlLimitError, match="expands to more than 20,000,000"):
        check_shape("\n".join(parts).encode())


def test_nesting_and_recursion_are_still_refused():
    with pytest.raises(YamlLimitError, match="nested more than 100 levels"):
        load_yaml(b"[" * 150 + b"]" * 150)
    with pytest.raises(YamlLimitError, match="recursive"):
        load_yaml(b"a: &r [*r]")


def test_a_file_over_the_byte_limit_is_refused_with_its_real_size(tmp_path):
    limits = YamlLimits(max_bytes=1000)
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"ifbench: 1\n" + b"# padding\n" * 500)  # 5,011 bytes
    with path.open("rb") as handle:
        data = read_limited(handle, limits)
    with pytest.raises(YamlLimitError) as refused:
        load_yaml(data, limits)
    assert str(refused.value) == "the file has 5,011 bytes, more than the 1,000 allowed"


def test_a_stream_without_a_size_is_read_only_one_past_the_limit():
    import io

    data = read_limited(io.BytesIO(b"x" * 5000), YamlLimits(max_bytes=1000))
    with pytest.raises(YamlLimitError, match="the file has 1,001 bytes, more than the 1,000 allowed"):
        load_yaml(data, YamlLimits(max_bytes=1000))
    assert read_limited(io.BytesIO(b"a: 1\n"), YamlLimits(max_bytes=1000)) == b"a: 1\n"


def test_collection_names_the_real_size_of_an_oversized_suite(tmp_path, monkeypatch):
    monkeypatch.setattr(safe_yaml, "LIMITS", YamlLimits(max_bytes=2000))
    path = tmp_path / "suite.yaml"
    text = _suite_text(40)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as refused:
        read_suite_yaml(path)
    message = str(refused.value)
    assert f"the file has {len(text.encode()):,} bytes, more than the 2,000 allowed" in message
    assert "2,001 bytes" not in message
