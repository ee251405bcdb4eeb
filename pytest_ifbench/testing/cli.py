"""``python -m pytest_ifbench.testing``: serve a stub until SIGTERM/SIGINT.

For benchmarks and subprocess tests::

    python -m pytest_ifbench.testing [--host 127.0.0.1] [--port 0]
        [--latency 0.2] [--script script.json] [--url-file PATH] [--stats-file PATH]

prints the base URL (``http://127.0.0.1:<port>/v1``) as the first line on
stdout, writes it to ``--url-file`` if given, and serves until SIGTERM/SIGINT.
The script is the JSON form read by :meth:`StubServer.from_script`. On the way
out it prints how many requests it served (and writes them with the peak
concurrency to ``--stats-file`` as JSON): a run's calls, without a proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import threading
from typing import Any

from .server import StubServer

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m pytest_ifbench.testing``."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_ifbench.testing",
        description="Serve a local OpenAI-compatible stub until SIGTERM/SIGINT.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--latency", type=float, default=None, help="seconds per reply (overrides the script)")
    parser.add_argument("--script", default=None, help="JSON file with latency/rules/faults")
    parser.add_argument("--url-file", default=None, help="also write the base URL to this file")
    parser.add_argument("--stats-file", default=None,
                        help='on exit, write {"calls": N, "peak_concurrency": P} (JSON) to this file')
    args = parser.parse_args(argv)

    script: dict = {}
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as fh:
                script = json.load(fh)
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read --script {args.script}: {exc}")
    overrides: dict[str, Any] = {"host": args.host, "port": args.port}
    if args.latency is not None:
        overrides["latency"] = args.latency
    try:
        server = StubServer.from_script(script, **overrides)
    except (ValueError, TypeError, re.error) as exc:
        parser.error(f"bad --script: {exc}")

    done = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    server.start()
    try:
        url = server.url
        if args.url_file:
            _write_atomic(args.url_file, url + "\n")
        print(url, flush=True)
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
    print(f"served {server.calls} request(s), at most {server.peak_concurrency} at once", flush=True)
    if args.stats_file:
        _write_atomic(args.stats_file, json.dumps({"calls": server.calls,
                                                   "peak_concurrency": server.peak_concurrency}) + "\n")
    return 0


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
