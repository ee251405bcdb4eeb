"""``ifbench verifiers [--json]``: list every registered verifier with its kind, version and parameters."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .plugin_option import add_plugin_option, registry_with_plugins


def add_parser(commands: Any) -> None:
    listing = commands.add_parser(
        "verifiers", help="list the registered verifiers",
        description="List every registered verifier with its kind, version and parameter schema.",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON array of Verifier.describe() objects")
    add_plugin_option(listing)
    listing.set_defaults(run=run)


def _describe_param(name: str, spec: dict[str, Any]) -> str:
    parts = [spec["type"]]
    if "choices" in spec:
        parts.append("one of " + ", ".join(map(str, spec["choices"])))
    if "min" in spec:
        parts.append(f">= {spec['min']}")
    if "max" in spec:
        parts.append(f"<= {spec['max']}")
    parts.append(f"default {json.dumps(spec['default'])}" if "default" in spec else "required")
    text = f"{name}: {', '.join(parts)}"
    if spec.get("description"):
        text += f" -- {spec['description']}"
    return text


def run(args: argparse.Namespace, extra: list[str]) -> int:
    registry = registry_with_plugins(args.plugins)
    described = [verifier.describe() for verifier in registry]
    if args.json:
        print(json.dumps(described, indent=1, ensure_ascii=False, default=str))
        return 0
    for entry in described:
        target = "" if entry["target"] == "response" else f", target {entry['target']}"
        print(f"{entry['id']}  ({entry['kind']}, v{entry['version']}{target})")
        if entry["description"]:
            print(f"    {entry['description']}")
        for name, spec in entry["params"].items():
            print(f"    - {_describe_param(name, spec)}")
        if not entry["params"]:
            print("    (no parameters)")
    return 0

