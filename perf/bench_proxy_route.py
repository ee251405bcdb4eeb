#!/usr/bin/env python
"""Benchmark: what the proxy route (a real agent CLI's one way out) costs per command, per backend.

* **command `true`**: ``Workspace.run(["true"])`` without the route, in a workspace whose sandbox
  is already up (docker: a ``docker exec`` in the run's container).
* **routed `true`**: the same with a :class:`ProxyRoute` -- the relay started in front of the command
  (docker: a container of its own per routed command, created, attached, started and removed).
* **routed command + 1 request**: a routed ``python3`` that makes one HTTP request through the relay
  to a Unix-socket server on the host (the relay traces the connection to its process first) --
  close to one turn of a real CLI without the CLI's own start-up.

Each figure is the median and the 90th percentile of ``--repeat`` runs (10 by default) after one
warm-up run.  Exits with status 2 when the backend is unavailable (printing the reason).

Usage (from the repository root)::

    python perf/bench_proxy_route.py
    DOCKER_HOST=unix:///path/docker.sock python perf/bench_proxy_route.py --backend docker --json route.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import measure, sandbox_backend, source_revision, succeeded

from pytest_ifbench.agents.workspace import Limits, ProxyRoute, Workspace

REQUEST = ("import sys, urllib.request\n"
           "request = urllib.request.Request(sys.argv[1] + '/v1/messages', data=b'{}')\n"
           "urllib.request.urlopen(request, timeout=30).read()\n")


class _Ok(BaseHTTPRequestHandler):
    def setup(self):
        super().setup()
        self.rfile.readline()  # the relay's first line

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs per figure (default 10)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--backend", default="bubblewrap", help="sandbox backend (default bubblewrap)")
    args = parser.parse_args(argv)
    backend = sandbox_backend(args.backend)
    limits = Limits(timeout=60)
    figures: dict[str, dict[str, float]] = {}

    with Workspace.create(None, backend=backend) as ws:
        server = _Server(str(ws.root / "proxy.sock"), _Ok)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        route = ProxyRoute(socket=ws.root / "proxy.sock", port=41777)
        try:
            figures["command true"] = measure(lambda: succeeded(ws.run(["true"], limits=limits)), args.repeat)
            figures["routed true"] = measure(
                lambda: succeeded(ws.run(["true"], limits=limits, route=route)), args.repeat)
            figures["routed command + 1 request"] = measure(
                lambda: succeeded(ws.run(["python3", "-c", REQUEST, route.url], limits=limits, route=route)),
                args.repeat)
        finally:
            server.shutdown()
            server.server_close()

    width = max(len(name) for name in figures)
    print(f"proxy route on {args.backend} ({args.repeat} runs each, after one warm-up)")
    for name, figure in figures.items():
        print(f"  {name:<{width}}  median {figure['median_ms']:8.1f} ms  p90 {figure['p90_ms']:8.1f} ms")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "benchmark": "proxy_route", "backend": args.backend, "figures": figures,
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
            **source_revision()}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
