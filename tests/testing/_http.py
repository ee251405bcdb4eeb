"""Plain urllib / http.client helpers for the stub server's own tests."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from pytest_ifbench.testing import RecordedRequest


def post(url: str, body, *, path: str = "/chat/completions", headers=None, timeout: float = 10.0):
    """POST JSON (or raw bytes); return (status, headers, body bytes), errors included."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def user(text: str, model: str = "m", **extra) -> dict:
    """A chat request body with one user message."""
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


def chat(url: str, text="hello", *, model="stub", timeout: float = 10.0, **extra) -> dict:
    """POST one user message; assert 200 and return the parsed completion."""
    status, _headers, raw = post(url, user(text, model, **extra), timeout=timeout)
    assert status == 200, raw
    return json.loads(raw)


def content(resp: dict) -> str | None:
    return resp["choices"][0]["message"]["content"]


def connect(url: str, timeout: float = 10.0) -> http.client.HTTPConnection:
    """A keep-alive connection to the stub at ``url``."""
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def held(rec: RecordedRequest) -> float:
    """Seconds the server held ``rec`` (its own timestamps, measured on the monotonic clock)."""
    assert rec.answered_at is not None, f"{rec.path} is still in flight"
    return rec.answered_at - rec.received_at
