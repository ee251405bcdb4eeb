"""Result records cross xdist's transport (execnet) unchanged, whatever integers they hold."""

from __future__ import annotations

import execnet.gateway_base as wire
import pytest

from pytest_ifbench.reports.records import WIRE_KEY, record_from_wire, record_to_wire

RECORD = {"nodeid": "s.yaml::a", "agent": {"trajectory": {"tools": [
    {"name": "Read", "input_schema": {"properties": {"offset": {"minimum": -9007199254740991,
                                                                "maximum": 9007199254740991}}}}]}},
    "text": "lone \ud800 surrogate", "big": 10 ** 40}


def test_execnet_cannot_carry_the_record_itself():
    with pytest.raises(Exception, match="format requires"):
        wire.dumps({"ifbench_record": RECORD})


def test_a_record_travels_as_json_text_and_comes_back_equal():
    data = record_to_wire({"nodeid": "s.yaml::a", "ifbench_record": RECORD})
    assert "ifbench_record" not in data and isinstance(data[WIRE_KEY], str)
    received = wire.loads(wire.dumps(data))

    class Report:
        pass

    report = Report()
    report.__dict__.update(received)
    assert record_from_wire(report).ifbench_record == RECORD and not hasattr(report, WIRE_KEY)
    assert record_to_wire({"nodeid": "x"}) == {"nodeid": "x"}  # a report without a record is left alone
