"""Result records cross xdist's transport (execnet) unchanged, whatever integers they hold."""

from __future__ import annotations

import execnet.gateway_base as wire
import pytest

from pytest_ifbench.reports.records import (
    RECORD_TEXT_ATTR,
    WIRE_ASCII_KEY,
    WIRE_KEY,
    dumps_record,
    record_from_wire,
    record_to_wire,
)

RECORD = {"nodeid": "s.yaml::a", "agent": {"trajectory": {"tools": [
    {"name": "Read", "input_schema": {"properties": {"offset": {"minimum": -9007199254740991,
                                                                "maximum": 9007199254740991}}}}]}},
    "text": "lone \ud800 surrogate", "big": 10 ** 40}


def test_execnet_cannot_carry_the_record_itself():
    with pytest.raises(Exception, match="format requires"):
        wire.dumps({"ifbench_record": RECORD})


def _received(data):
    class Report:
        pass

    report = Report()
    report.__dict__.update(wire.loads(wire.dumps(data)))
    return record_from_wire(report)


def test_a_record_travels_as_json_text_and_comes_back_equal():
    """As the results journal writes it (non-ASCII as it is), so the controller writes that text as it came."""
    record = dict(RECORD, text="ünïcode, 中文")
    data = record_to_wire({"nodeid": "s.yaml::a", "ifbench_record": record})
    assert "ifbench_record" not in data and data[WIRE_KEY] == dumps_record(record) and "中文" in data[WIRE_KEY]
    report = _received(data)
    assert report.ifbench_record == record and not hasattr(report, WIRE_KEY)
    assert getattr(report, RECORD_TEXT_ATTR) == dumps_record(record)
    assert record_to_wire({"nodeid": "x"}) == {"nodeid": "x"}  # a report without a record is left alone


def test_a_record_utf8_cannot_carry_travels_escaped_and_is_encoded_again_for_the_journal():
    data = record_to_wire({"nodeid": "s.yaml::a", "ifbench_record": RECORD})  # a lone surrogate
    assert WIRE_KEY not in data and data[WIRE_ASCII_KEY].isascii()
    report = _received(data)
    assert report.ifbench_record == RECORD and not hasattr(report, RECORD_TEXT_ATTR)
    assert not hasattr(report, WIRE_ASCII_KEY)


REPORT = {"location": ("s.yaml", None, "a (s.yaml)"), "keywords": {"a": 1, "ifbench": 1}, "outcome": "passed",
          "longrepr": None, "when": "call", "user_properties": [], "sections": [], "duration": 0.1 + 0.2,
          "nodeid": "s.yaml::a", "text": "lone \ud800 surrogate, ünïcode", "$report_type": "TestReport"}


def test_an_instance_report_travels_as_one_json_text_and_comes_back_the_same():
    from pytest_ifbench._report_wire import PACKED_KEY, pack, unpack

    data = pack(dict(REPORT, ifbench_record_json='{"x": 1}'), keep=("ifbench_record_json",))
    assert set(data) == {PACKED_KEY, "ifbench_record_json"}  # the record's text is not escaped again
    data["item_index"] = 3  # what xdist adds on the worker, after the hook
    received = wire.loads(wire.dumps(data))
    unpack(received)
    assert received == dict(REPORT, ifbench_record_json='{"x": 1}', item_index=3)
    assert list(received) == [*REPORT, "ifbench_record_json", "item_index"]  # the fields' order too
    assert type(received["location"]) is tuple


@pytest.mark.parametrize("change", [
    {"user_properties": [("name", "value")]},  # a tuple JSON would turn into a list
    {"sections": [("Captured stdout call", "x")]},
    {"extra": {1: "an int key"}},
    {"duration": float("nan")},
    {"extra": object()},
])
def test_a_report_json_would_change_travels_as_before(change):
    from pytest_ifbench._report_wire import pack

    data = dict(REPORT, **change)
    assert pack(data) is data


def test_only_instance_reports_are_packed():
    from pytest_ifbench._report_wire import pack, unpack

    other = dict(REPORT, keywords={"test_x": 1})
    assert pack(other) is other
    unpack(other)  # a mapping that was not packed is left alone
    assert other == dict(REPORT, keywords={"test_x": 1})
