"""An instance's reports cross xdist's channel as one JSON text each.

An xdist worker sends every report it makes to the controller as the mapping
``pytest_report_to_serializable`` returns, and execnet serializes that message value by value in
Python: an instance's eight reports (setup, call, teardown and one per check) cost a worker ~320 µs
to write and the controller ~380 µs to read, most of the controller's time on a cached run. The
same mapping as one JSON string is a single value for execnet and the json module's C code for the
rest: a check's report 41 → 20 µs on the worker, 49 → 17 µs on the controller (measured on the
reports of a cached run; ``perf/bench_overhead.py`` has the whole-run figures).

Only what JSON carries exactly goes as text: the worker reads the text back and compares it with the
mapping (a tuple would come back a list, a non-string key a string, NaN unequal), with one exception
made on purpose, the ``location`` tuple every report has, sent as a list and made a tuple again.
Anything else (a failure's representation holds tuples) goes as before. Keys named in ``keep`` stay
values of their own (a result record that is JSON text already is not escaped a second time).

On the controller the text is unpacked into the very mapping the hook was given, before any other
plugin's ``pytest_report_from_serializable`` reads it, so every plugin sees the mapping it always
did. Packing happens on xdist workers only: elsewhere the mapping may be written out as it is
(pytest-reportlog writes it to its log).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._kept_reports import INSTANCE_KEYWORD

#: The key of the packed text in the mapping xdist sends.
PACKED_KEY = "ifbench_report_json"


def pack(data: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
    """``data`` (a serialised instance report) as its JSON text under :data:`PACKED_KEY`, with the
    keys in ``keep`` beside it; ``data`` itself for any other report or when JSON would change it."""
    keywords = data.get("keywords")
    if not isinstance(keywords, dict) or INSTANCE_KEYWORD not in keywords or PACKED_KEY in data:
        return data
    kept = {key: data[key] for key in keep if key in data}
    body = {key: value for key, value in data.items() if key not in kept}
    location = body.get("location")
    if type(location) is tuple:
        body["location"] = list(location)
    try:
        text = json.dumps(body, separators=(",", ":"))
        exact = json.loads(text) == body
    except (TypeError, ValueError, RecursionError):
        return data
    if not exact:
        return data
    return {PACKED_KEY: text, **kept}


def unpack(data: dict[str, Any]) -> None:
    """Turn a mapping :func:`pack` made back into the report's mapping, in place (with whatever the
    sender added beside it: xdist adds the item's index and the worker's id)."""
    text = data.get(PACKED_KEY)
    if not isinstance(text, str):
        return
    body = json.loads(text)
    location = body.get("location")
    if type(location) is list:
        body["location"] = tuple(location)
    del data[PACKED_KEY]
    body.update(data)
    data.clear()
    data.update(body)
