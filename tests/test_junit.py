"""JUnit XML (``--junitxml``) stays valid for CI servers when instances fail several checks.

The file is validated against ``tests/data/junit.xsd`` (a strict schema after Jenkins'
junit-10.xsd and the Ant JUnit schema) by :class:`Xsd`, a small validator for exactly the
XSD constructs that schema uses (xmlschema is not a dependency).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from tests._support import write_suite

SCHEMA = Path(__file__).parent / "data" / "junit.xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"


class XsdError(Exception):
    """The schema uses an XSD construct this validator does not implement."""


class Xsd:
    """Validates an ElementTree against a W3C XML schema restricted to: global and local
    ``element`` (``name``/``ref``/``type``, ``minOccurs``/``maxOccurs``), ``complexType``
    (``sequence``, ``choice``, ``attribute`` with ``use``, ``simpleContent``/``extension``,
    ``mixed``), ``simpleType`` (``restriction`` with ``minLength``, ``minInclusive``,
    ``pattern``) over ``xs:string``, ``xs:token``, ``xs:int`` and ``xs:decimal``.
    Anything else in the schema raises :class:`XsdError` rather than being ignored."""

    BUILTINS = {"xs:string", "xs:token", "xs:int", "xs:decimal"}

    def __init__(self, path: Path) -> None:
        root = ET.parse(path).getroot()
        self.elements: dict[str, ET.Element] = {}
        self.complex: dict[str, ET.Element] = {}
        self.simple: dict[str, ET.Element] = {}
        tables = {"element": self.elements, "complexType": self.complex, "simpleType": self.simple}
        for child in root:
            kind = child.tag.removeprefix(XS)
            if kind not in tables:
                raise XsdError(f"top-level xs:{kind}")
            tables[kind][child.get("name")] = child

    def validate(self, root: ET.Element) -> list[str]:
        if root.tag not in self.elements:
            return [f"/{root.tag}: not a global element of the schema"]
        errors: list[str] = []
        self._element(root, self.elements[root.tag], f"/{root.tag}", errors)
        return errors

    # -- elements and content ------------------------------------------------------

    def _element(self, node: ET.Element, decl: ET.Element, path: str, errors: list[str]) -> None:
        type_name = decl.get("type")
        inline = [c for c in decl if c.tag != XS + "annotation"]
        if type_name in self.BUILTINS or type_name in self.simple or (inline and inline[0].tag == XS + "simpleType"):
            simple = inline[0] if inline else type_name
            if node.attrib:
                errors.append(f"{path}: attributes {sorted(node.attrib)} on a simple element")
            if len(node):
                errors.append(f"{path}: child elements in a simple element")
            self._simple(node.text or "", simple, path, errors)
            return
        complex_type = self.complex.get(type_name) if type_name else (inline[0] if inline else None)
        if complex_type is None or complex_type.tag != XS + "complexType":
            raise XsdError(f"element {decl.get('name')}: unsupported type {type_name!r}")
        self._complex(node, complex_type, path, errors)

    def _complex(self, node: ET.Element, ctype: ET.Element, path: str, errors: list[str]) -> None:
        parts = [c for c in ctype if c.tag != XS + "annotation"]
        attributes = [c for c in parts if c.tag == XS + "attribute"]
        models = [c for c in parts if c.tag in (XS + "sequence", XS + "choice")]
        content = [c for c in parts if c.tag == XS + "simpleContent"]
        if len(parts) != len(attributes) + len(models) + len(content) or len(models) + len(content) > 1:
            raise XsdError(f"complexType content {[p.tag for p in parts]}")
        if content:
            (extension,) = list(content[0])
            if extension.tag != XS + "extension":
                raise XsdError(f"simpleContent/{extension.tag}")
            attributes += [c for c in extension if c.tag == XS + "attribute"]
            if len(attributes) != len(parts) - 1 + len(extension):
                raise XsdError("simpleContent/extension may hold attributes only")
            if len(node):
                errors.append(f"{path}: child elements in simple content")
            self._simple(node.text or "", extension.get("base"), path, errors)
        else:
            mixed = ctype.get("mixed") == "true"
            texts = [node.text] + [child.tail for child in node]
            if not mixed and any(t and t.strip() for t in texts):
                errors.append(f"{path}: text in element-only content")
            self._children(node, models[0] if models else None, path, errors)
        self._attributes(node, attributes, path, errors)

    def _children(self, node: ET.Element, model: ET.Element | None, path: str, errors: list[str]) -> None:
        decls: dict[str, ET.Element] = {}
        pattern = self._particle(model, decls) if model is not None else ""
        tokens = "".join(f"<{child.tag}>" for child in node)
        if not re.fullmatch(pattern, tokens):
            errors.append(f"{path}: children {[c.tag for c in node]} do not match the content model")
        counts: dict[str, int] = {}
        for child in node:
            counts[child.tag] = counts.get(child.tag, 0) + 1
            if child.tag in decls:
                self._element(child, decls[child.tag], f"{path}/{child.tag}[{counts[child.tag]}]", errors)

    def _particle(self, particle: ET.Element, decls: dict[str, ET.Element]) -> str:
        kind = particle.tag.removeprefix(XS)
        if kind == "element":
            name = particle.get("ref") or particle.get("name")
            decls[name] = self.elements[name] if particle.get("ref") else particle
            body = re.escape(f"<{name}>")
        elif kind in ("sequence", "choice"):
            inner = [self._particle(c, decls) for c in particle if c.tag != XS + "annotation"]
            body = "(?:" + ("|" if kind == "choice" else "").join(inner) + ")"
        else:
            raise XsdError(f"particle xs:{kind}")
        low = int(particle.get("minOccurs", "1"))
        high = particle.get("maxOccurs", "1")
        return f"(?:{body}){{{low},{'' if high == 'unbounded' else int(high)}}}"

    def _attributes(self, node: ET.Element, decls: list[ET.Element], path: str, errors: list[str]) -> None:
        known = {d.get("name"): d for d in decls}
        for name in node.attrib:
            if name not in known:
                errors.append(f"{path}: undeclared attribute {name!r}")
        for name, decl in known.items():
            if name not in node.attrib:
                if decl.get("use") == "required":
                    errors.append(f"{path}: missing required attribute {name!r}")
                continue
            inline = [c for c in decl if c.tag == XS + "simpleType"]
            self._simple(node.attrib[name], inline[0] if inline else decl.get("type", "xs:string"),
                         f"{path}/@{name}", errors)

    # -- simple types ----------------------------------------------------------------

    def _simple(self, value: str, simple: str | ET.Element, path: str, errors: list[str]) -> None:
        if isinstance(simple, str) and simple in self.BUILTINS:
            self._builtin(value, simple, path, errors)
            return
        stype = self.simple[simple] if isinstance(simple, str) else simple
        (restriction,) = [c for c in stype if c.tag != XS + "annotation"]
        if restriction.tag != XS + "restriction":
            raise XsdError(f"simpleType/{restriction.tag}")
        base = restriction.get("base")
        self._simple(value, base, path, errors)
        if base == "xs:token":
            value = " ".join(value.split())
        for facet in restriction:
            kind, limit = facet.tag.removeprefix(XS), facet.get("value")
            if kind == "minLength":
                ok = len(value) >= int(limit)
            elif kind == "minInclusive":
                ok = _number(value) is None or _number(value) >= Decimal(limit)
            elif kind == "pattern":
                ok = re.fullmatch(limit, value) is not None
            else:
                raise XsdError(f"facet xs:{kind}")
            if not ok:
                errors.append(f"{path}: {value!r} violates {kind}={limit!r}")

    @staticmethod
    def _builtin(value: str, name: str, path: str, errors: list[str]) -> None:
        if name == "xs:int":
            ok = re.fullmatch(r"\s*[+-]?[0-9]+\s*", value) is not None and -2**31 <= int(value) < 2**31
        elif name == "xs:decimal":
            ok = re.fullmatch(r"\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*", value) is not None
        else:
            ok = True
        if not ok:
            errors.append(f"{path}: {value!r} is not a valid {name}")


def _number(value: str) -> Decimal | None:
    try:
        return Decimal(value.strip())
    except InvalidOperation:
        return None


# -- the validator itself --------------------------------------------------------------

VALID = ('<testsuites name="x"><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="1" '
         'time="0.5" timestamp="2026-01-02T03:04:05.678+00:00" hostname="h">'
         '<testcase classname="suites.x" name="a" time="0.1"><failure message="m">details</failure>'
         '<failure message="n" /><system-out>o</system-out></testcase></testsuite></testsuites>')


@pytest.mark.parametrize(("change", "error"), [
    (("", ""), None),
    ((' classname="suites.x"', ""), "missing required attribute 'classname'"),
    (('time="0.1"', 'time="fast"'), "'fast' is not a valid xs:decimal"),
    (('errors="0"', 'errors="-1"'), "violates minInclusive"),
    (('name="a"', 'name="a" file="x.py"'), "undeclared attribute 'file'"),
    (("<system-out>o</system-out>", "<system-out>o<b/></system-out>"), "child elements in a simple element"),
    (('hostname="h">', 'hostname="h"><testcase classname="c" name="b" time="1"/><properties/>'),
     "do not match the content model"),
    (("T03:04:05.678", " 03:04:05"), "violates pattern"),
    (("</testcase>", "stray text</testcase>"), "text in element-only content"),
])
def test_validator_is_strict(change, error):
    schema = Xsd(SCHEMA)
    errors = schema.validate(ET.fromstring(VALID.replace(*change)))
    if error is None:
        assert errors == []
    else:
        assert any(error in e for e in errors), errors


# -- pytest's --junitxml on a suite ------------------------------------------------------

SUITE = """
ifbench: 1
benchmark: demo
instances:
  - id: fine
    prompt: say hello in lowercase
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
  - id: many-failures
    prompt: write code & shout
    checks:
      - {id: upper, verifier: ifbench.case, params: {mode: upper}}
      - {id: line-length, verifier: ifbench.ruff, params: {select: [E501], settings: {line-length: 20}}}
      - {id: mentions-xml, verifier: ifbench.keywords, params: {include: ["<xml>"]}}
      - {id: short, verifier: ifbench.word_count, params: {max: 100}}
  - id: api-down
    prompt: this one errors
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
"""

#: Markup, quotes and a control character the XML writer must escape.
CODE_REPLY = 'code & "quotes" \x1b:\n```python\nx = "a & b < c" + "<tag>" + "long enough"\n```'
FAILED_CHECKS = {"upper", "line-length", "mentions-xml"}
#: pytest's own message for a test whose subtests failed (core change pending: name the checks).
GENERIC = re.compile(r"contains \d+ failed subtests?")


def test_junitxml_is_valid_and_names_every_failed_check(pytester):
    """Recorded replies (no model, no litellm: fast); the instance without one errors like a failed call."""
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    replies = pytester.path / "replies.jsonl"
    replies.write_text("\n".join(json.dumps({"id": i, "response": r}) for i, r in
                                 [("fine", "hello there"), ("many-failures", CODE_REPLY)]), encoding="utf-8")
    target = pytester.path / "junit.xml"
    result = pytester.runpytest("suites", f"--ifbench-responses={replies}", "-p", "no:cacheprovider",
                                f"--junitxml={target}")
    result.assert_outcomes(passed=1, failed=1 + len(FAILED_CHECKS), errors=1)
    root = ET.fromstring(target.read_text(encoding="utf-8"))
    assert Xsd(SCHEMA).validate(root) == []

    (suite,) = root.findall("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {"fine", "many-failures", "api-down"}, "one testcase per instance"
    assert all(case.get("classname") == "suites.demo.yaml" for case in cases.values())
    assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
    assert int(suite.get("errors")) == len(suite.findall("testcase/error")) == 1
    assert list(cases["fine"]) == []

    failures = cases["many-failures"].findall("failure")
    named: set[str] = set()
    for failure in failures:
        message = failure.get("message")
        checks = set(re.findall(r"check '([^']+)' failed", message))
        if GENERIC.fullmatch(message):
            continue  # pytest's summary of the subtests (see the core change in docs/reports.md)
        assert checks or all(c in message for c in FAILED_CHECKS), f"names no check: {message!r}"
        assert failure.text and failure.text.startswith(message.split("\n")[0])
        named |= checks
    assert named == FAILED_CHECKS, "each failed check has a <failure> that names it"
    by_check = {re.search(r"check '([^']+)'", f.get("message")).group(1): f for f in failures
                if f.get("message").startswith("check '")}
    assert 'x = "a &amp; b &lt; c"' not in by_check["line-length"].text  # parsed back: real characters
    assert 'x = "a & b < c"' in by_check["line-length"].text
    assert "'<xml>'" in by_check["mentions-xml"].text or "<xml>" in by_check["mentions-xml"].text

    (error,) = cases["api-down"].findall("error")
    assert "no recorded response for instance 'api-down'" in error.get("message")
