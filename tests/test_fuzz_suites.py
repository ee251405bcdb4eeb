"""Fuzzing the suite loader with mutations of the shipped suites.

1,200 mutated suites, deterministically seeded, are loaded in-process the way
collection loads them (benchmark importers first, then the YAML loader); 30 more
go through real pytest collection. Whatever the mutation -- deleted, duplicated
or retyped keys, values of the wrong type (huge ints, dates, binary, NaN, very
long strings), anchors, aliases, merge keys and alias bombs, Python tags,
truncation, a byte-order mark, flow style, deep nesting -- the outcome is a
valid suite, a :class:`SuiteError` whose message names the file (and the field
once the YAML was read), or a "not a suite" warning: never another exception,
never more than a few seconds or a few dozen MB per file.
"""

from __future__ import annotations

import copy
import datetime
import random
import re
import signal
import time
import tracemalloc
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ifbench._composition import build_registry, command_plugin_manager
from pytest_ifbench._protocols import PROTOCOLS, ProtocolRegistry
from pytest_ifbench.suite.errors import NotASuite, SuiteError
from pytest_ifbench.suite.format import load_suite, parse_suite
from pytest_ifbench.suite.importers import import_suite_data
from pytest_ifbench.suite.safe_yaml import load_yaml
from tests._support import ROOT

SEED = 20240611
MUTANTS = 1200
THROUGH_PYTEST = 30
#: Per file: a hang is a failure, and so is an allocation peak beyond this.
TIME_BOX_S = 5.0
MEMORY_CAP = 64 * 1024 * 1024
#: Instances kept from each shipped suite (the fuzzing is about shapes, not volume).
KEEP_INSTANCES = 1

# --------------------------------------------------------------------------- seeds


def shipped_suites() -> list[Path]:
    return sorted(p for p in (ROOT / "suites").rglob("*.yaml") if "environments" not in p.relative_to(ROOT).parts)


_ITEM = re.compile(rb"^( *)- ", re.MULTILINE)


def _head(text: bytes) -> bytes:
    """The text of a suite up to its third instance (cheap: big suites are not parsed whole)."""
    start = text.find(b"\ninstances:")
    items = list(_ITEM.finditer(text, start)) if start >= 0 else []
    if items:
        indent = items[0].group(1)
        same = [m for m in items if m.group(1) == indent]
        if len(same) > KEEP_INSTANCES:
            return text[:same[KEEP_INSTANCES].start()]
    return text


def seeds() -> list[dict[str, Any]]:
    out = []
    for path in shipped_suites():
        try:
            data = load_yaml(_head(path.read_bytes()))
        except Exception:  # noqa: BLE001 - the cut fell somewhere odd: read it whole
            data = load_yaml(path.read_bytes())
        data["instances"] = data["instances"][:KEEP_INSTANCES]
        out.append(data)
    return out


# --------------------------------------------------------------------------- mutations

#: Values YAML can carry that a suite field rarely expects (safe_dump writes them all).
VALUES: list[Any] = [
    0, -1, 7, 2**70, 1.5, float("nan"), float("inf"), -0.0, True, False, None, "", "x", "üñí©ødé ✓ 中文",
    "a" * 20_000, [], [1, "two", None], {}, {"k": [1, {"deep": True}]}, {1: "int key", None: "null key"},
    datetime.date(2024, 6, 11), datetime.datetime(2024, 6, 11, 12, 0), b"\x00\xffbinary",
    ["nested", ["lists", ["of", ["lists"]]]], "line\nbreaks\tand\x07bell", "ifbench: 1",
]


def _bomb(levels: int, width: int, merge: bool = False) -> str:
    parts = ["l0: &l0 {a: x, b: y}" if merge else "l0: &l0 [lol, lol, lol]"]
    for level in range(1, levels):
        aliases = ", ".join([f"*l{level - 1}"] * width)
        parts.append(f"l{level}: &l{level} {{<<: [{aliases}]}}" if merge else f"l{level}: &l{level} [{aliases}]")
    return "{" + ", ".join(parts) + "}"


#: Flow-style YAML text only a writer by hand (or an attacker) produces, spliced in for a value.
RAW: list[str] = [
    "9" * 5000, "-" + "1" * 4400, "0x" + "f" * 2000, "2020-13-45", "!!timestamp 2024-02-30", ".nan", "-.inf",
    "!!python/object/apply:os.system ['echo pwned']", "!!python/name:os.system", "!!python/object:object {}",
    "!custom {a: 1}", "!!set {a, b}", "!!binary aGVsbG8=", "!!binary '%%%'", "!!int 'twelve'", "!!float 'x'",
    "!!omap [{a: 1}, {b: 2}]", "!!pairs [[a, 1]]", "&r [*r]", "&m {a: *m}", "*undefined_alias",
    "{<<: {id: merged, verifier: ifbench.case}, id: own}", "{<<: [{a: 1}, {b: 2}], c: 3}", "{<<: 5}",
    _bomb(9, 9), _bomb(9, 9, merge=True), _bomb(4, 3), "[" * 150 + "]" * 150, "{a: " * 120 + "1" + "}" * 120,
    "[" * 30 + "1" + "]" * 30, "'" + "b" * 50 + "'", '"\\ud800 lone surrogate"', '"\\x00 nul"', "~",
    "{[1, 2]: unhashable}", "{{a: 1}: mapping key}", "{a: 1, a: 2}",
]


@dataclass
class Mutant:
    name: str
    data: Any
    raws: dict[str, str] = field(default_factory=dict)
    text_ops: list[Callable[[bytes, random.Random], bytes]] = field(default_factory=list)
    flow: bool = False


def _containers(value: Any, depth: int = 0) -> Iterator[Any]:
    if depth > 12:
        return
    if isinstance(value, (dict, list)):
        yield value
        for item in (value.values() if isinstance(value, dict) else value):
            yield from _containers(item, depth + 1)


def _pick_slot(rng: random.Random, data: Any) -> tuple[Any, Any] | None:
    """A (container, key or index) in ``data``, biased towards the shallow, interesting ones."""
    containers = [c for c in _containers(data) if c]
    if not containers:
        return None
    container = rng.choice(containers[:40] if rng.random() < 0.6 else containers)
    return container, rng.choice(list(container) if isinstance(container, dict) else range(len(container)))


def _wrong_value(rng: random.Random, mutant: Mutant) -> Any:
    if rng.random() < 0.45:
        token = f"RAW{len(mutant.raws)}TOKEN"
        mutant.raws[token] = rng.choice(RAW)
        return token
    return copy.deepcopy(rng.choice(VALUES))


def op_delete(rng: random.Random, mutant: Mutant) -> None:
    slot = _pick_slot(rng, mutant.data)
    if slot is not None:
        del slot[0][slot[1]]


def op_retype(rng: random.Random, mutant: Mutant) -> None:
    slot = _pick_slot(rng, mutant.data)
    if slot is not None:
        slot[0][slot[1]] = _wrong_value(rng, mutant)


def op_swap(rng: random.Random, mutant: Mutant) -> None:
    first, second = _pick_slot(rng, mutant.data), _pick_slot(rng, mutant.data)
    if first is not None and second is not None:
        a, b = first[0][first[1]], second[0][second[1]]
        first[0][first[1]], second[0][second[1]] = copy.deepcopy(b), copy.deepcopy(a)


def op_duplicate(rng: random.Random, mutant: Mutant) -> None:
    containers = [c for c in _containers(mutant.data) if isinstance(c, list) and c]
    if containers:
        target = rng.choice(containers)
        target.append(copy.deepcopy(rng.choice(target)))


def op_odd_key(rng: random.Random, mutant: Mutant) -> None:
    containers = [c for c in _containers(mutant.data) if isinstance(c, dict)]
    if containers:
        key = rng.choice([1, 2.5, None, True, datetime.date(2020, 1, 1), "unknown_field", "ÿ" * 300, "id"])
        rng.choice(containers)[key] = _wrong_value(rng, mutant)


def op_nest(rng: random.Random, mutant: Mutant) -> None:
    mutant.data = rng.choice([{"outer": mutant.data}, [mutant.data], {"list": [mutant.data]}])


def op_version(rng: random.Random, mutant: Mutant) -> None:
    if isinstance(mutant.data, dict):
        mutant.data["ifbench"] = rng.choice([2, 0, "1", 1.0, None, [1], 10**30])


def op_many_instances(rng: random.Random, mutant: Mutant) -> None:
    if isinstance(mutant.data, dict) and isinstance(mutant.data.get("instances"), list) and mutant.data["instances"]:
        template = mutant.data["instances"][0]
        mutant.data["instances"] = [dict(template, id=f"i{n}") if isinstance(template, dict) else template
                                    for n in range(rng.choice([50, 500]))]


def text_truncate(text: bytes, rng: random.Random) -> bytes:
    return text[:rng.randrange(len(text) + 1)]


def text_bom(text: bytes, rng: random.Random) -> bytes:
    return b"\xef\xbb\xbf" + text


def text_crlf(text: bytes, rng: random.Random) -> bytes:
    return text.replace(b"\n", b"\r\n")


def text_garbage(text: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(text) + 1)
    junk = rng.choice([b"\xff\xfe", b"\x00", b"\t", b"\xc3", b": :", b"\n- ", b"&a ", b"*a", b"'"])
    return text[:at] + junk + text[at:]


def text_prefix(text: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"# comment\n", b"%YAML 1.1\n---\n", b"---\n", b"\n\n"]) + text


def text_documents(text: bytes, rng: random.Random) -> bytes:
    return text + rng.choice([b"\n---\nsecond: document\n", b"\n...\n", b"\n---\n"])


def text_duplicate_key(text: bytes, rng: random.Random) -> bytes:
    lines = text.split(b"\n")
    at = rng.randrange(len(lines))
    return b"\n".join(lines[:at + 1] + [lines[at]] + lines[at + 1:])


def text_quote_header(text: bytes, rng: random.Random) -> bytes:
    return re.sub(rb"^ifbench:", rng.choice([b'"ifbench":', b"'ifbench':", b"ifbench :"]), text, flags=re.M)


DATA_OPS = [op_delete, op_retype, op_retype, op_retype, op_swap, op_duplicate, op_odd_key, op_nest, op_version,
            op_many_instances]
TEXT_OPS = [text_truncate, text_bom, text_crlf, text_garbage, text_prefix, text_documents, text_duplicate_key,
            text_quote_header]


def mutants(count: int, seed: int) -> Iterator[Mutant]:
    rng = random.Random(seed)
    bases = seeds()
    for number in range(count):
        mutant = Mutant(name=f"m{number:04d}.yaml", data=copy.deepcopy(rng.choice(bases)))
        for _ in range(rng.choice([1, 1, 2, 3])):
            if rng.random() < 0.7:
                op = rng.choice(DATA_OPS)
                if op is op_many_instances and rng.random() < 0.8:
                    op = op_retype  # keep the big ones rare
                op(rng, mutant)
            else:
                mutant.text_ops.append(rng.choice(TEXT_OPS))
        mutant.flow = rng.random() < 0.25
        yield mutant


def render(mutant: Mutant, rng: random.Random) -> bytes:
    text = yaml.dump(mutant.data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=rng.random() < 0.5,
                     default_flow_style=True if mutant.flow else False, width=10**6)
    for token, raw in mutant.raws.items():
        text = text.replace(token, raw)
    data = text.encode("utf-8", "surrogatepass")
    for op in mutant.text_ops:
        data = op(data, rng)
    return data


# --------------------------------------------------------------------------- loading like collection


class _Config:
    """What the importers read from ``pytest.Config``: the hook, and options left at their defaults."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook

    def getoption(self, name: str, default: Any = None) -> Any:
        return default


@pytest.fixture(scope="module")
def loader() -> Callable[[Path], Any]:
    hook = command_plugin_manager().hook
    registry = build_registry(hook)
    protocols = ProtocolRegistry(PROTOCOLS)
    hook.pytest_ifbench_register_protocols.call_historic(kwargs={"protocols": protocols})
    config, known = _Config(hook), set(protocols)

    def load(path: Path) -> Any:
        """What ``IfbenchState.load`` does, without a pytest session."""
        data = import_suite_data(config, path)  # type: ignore[arg-type]
        if data is not None:
            return parse_suite(path, data, registry, protocols=known, root=path.parent)
        return load_suite(path, registry, protocols=known)

    return load


class _TimeBox(BaseException):  # not Exception: no `except Exception` may swallow it
    pass


@contextmanager
def time_box(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise _TimeBox(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


#: Errors raised before the YAML became data: no field to name.
_DOCUMENT_LEVEL = ("invalid YAML", "refused:", "cannot read", "mentions 'ifbench'", "has an 'ifbench' key")


@pytest.mark.slow
def test_fuzzed_suites_never_crash_hang_or_blow_up(tmp_path, loader):
    rng = random.Random(SEED + 1)
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    slowest, peak_max, traced = 0.0, 0, 0
    try:
        for index, mutant in enumerate(mutants(MUTANTS, SEED)):
            path = tmp_path / mutant.name
            path.write_bytes(render(mutant, rng))
            # tracemalloc triples the cost: trace every aliasing mutant and a tenth of the rest.
            trace = index % 10 == 0 or any(mark in raw for raw in mutant.raws.values() for mark in "&*<")
            if trace:
                tracemalloc.start()
                traced += 1
            start = time.perf_counter()
            try:
                with time_box(TIME_BOX_S), warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    loader(path)
                outcomes["valid"] += 1
            except NotASuite as exc:
                outcomes["not a suite"] += 1
                _check_message(path, exc, problems)
            except SuiteError as exc:
                outcomes["rejected"] += 1
                _check_message(path, exc, problems)
            except BaseException as exc:  # noqa: BLE001 - exactly what this test hunts
                outcomes["traceback"] += 1
                problems.append(f"{mutant.name}: {type(exc).__name__}: {str(exc)[:300]}")
            outcomes["importer warnings"] += sum(1 for w in caught if "importer" in str(w.message))
            elapsed = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1] if trace else 0
            tracemalloc.stop()
            slowest, peak_max = max(slowest, elapsed), max(peak_max, peak)
            if peak > MEMORY_CAP:
                problems.append(f"{mutant.name}: allocated {peak / 2**20:.0f} MiB")
            path.unlink()
    finally:
        tracemalloc.stop()
    print(f"\nfuzzed {MUTANTS} suites: {dict(outcomes)}; slowest {slowest:.2f} s; "
          f"peak {peak_max / 2**20:.1f} MiB ({traced} traced)")
    assert not problems, "\n".join(problems[:20])
    assert outcomes["traceback"] == 0
    # The shipped importers read YAML suites through the core's loader (suite_yaml_or_none), so none
    # of them crashes on a mutant; a third-party importer that does is contained (test_suite_detection).
    assert outcomes["importer warnings"] == 0
    assert outcomes["rejected"] > MUTANTS // 2, "most mutants are broken suites, rejected with a message"
    assert outcomes["valid"] > 20, "some mutations keep a suite valid"


def _check_message(path: Path, exc: SuiteError, problems: list[str]) -> None:
    text = str(exc)
    if not text.startswith(f"{path}: "):
        problems.append(f"{path.name}: the message does not start with the file: {text[:200]}")
    if len(text) > 2500:
        problems.append(f"{path.name}: a {len(text)}-character message")
    if exc.instance is not None and not exc.field:
        problems.append(f"{path.name}: names the instance but no field: {text[:200]}")
    if exc.instance is None and not exc.field and not exc.message.startswith(_DOCUMENT_LEVEL):
        # importer errors name a line or an entry instead of a field
        if not re.search(r"line \d+|instance|entry|row|task|dialogue|turn", exc.message):
            problems.append(f"{path.name}: names no field: {text[:200]}")


def test_fuzzed_suites_through_pytest_collection(pytester):
    rng = random.Random(SEED + 2)
    names = []
    for mutant in mutants(THROUGH_PYTEST, SEED + 3):
        pytester.path.joinpath(mutant.name).write_bytes(render(mutant, rng))
        names.append(mutant.name)
    # A subprocess: its timeout turns a hang in collection into this test's failure, not a stuck worker.
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    errored = re.findall(r"^_+ ERROR collecting (\S+) _+$", output, re.MULTILINE)
    for name in errored:
        section = output.split(f"ERROR collecting {name}")[1].split("\n_")[0]
        assert name in section, f"the error for {name} does not name it:\n{section[:1000]}"
    assert set(errored) <= set(names)
    assert result.ret in (0, 1, 2, 5), output[-2000:]
