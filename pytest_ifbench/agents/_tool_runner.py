"""Sandbox side of the file tools: one request in, one reply out.

Run *inside* the sandbox by file path (bound read-only), never imported there as part of
``pytest_ifbench``; standard library only, and no syntax newer than the oldest Python a
sandbox may offer (3.8)::

    python3 -I -S -B _tool_runner.py  < {"op": "read", "path": "a.py", ...}
                                      > {"ok": true, "output": "     1\\tprint(1)\\n"}

Paths are relative to the working directory (the workspace) or absolute as the sandbox
sees them; every file access happens in the sandbox, so a symlink the agent made can only
lead to what the sandbox itself shows. Operations (``op``):

* ``read`` {path, offset=1, limit=2000, separator="\\t"}: numbered lines like ``cat -n``.
* ``write`` {path, content}: creates parent directories, replaces the file.
* ``edit`` {path, edits: [{old, new, replace_all}]}: exact-string edits applied in order,
  all or nothing.
* ``list`` {path=".", pattern=None}: a directory's entries, or files matching a glob below it.
* ``grep`` {pattern, path=".", glob=None, ignore_case, mode=content|files|count, before,
  after, limit}: a regular-expression search through text files (``.git`` is skipped).
"""

import fnmatch
import json
import os
import re
import sys

MAX_LINE = 2000
MAX_ENTRIES = 1000


class ToolError(Exception):
    """A failure explained to the model (the reply has ``ok: false``)."""


def _show(path):
    """``path`` as the model should see it: relative to the workspace when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _text(path):
    if os.path.isdir(path):
        raise ToolError(f"{_show(path)} is a directory, not a file")
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\0" in data[:8192]:
        raise ToolError(f"{_show(path)} is a binary file")
    return data.decode("utf-8", errors="replace")


def op_read(req):
    text = _text(req["path"])
    if not text:
        return "(the file is empty)"
    lines = text.splitlines()
    offset, limit = max(int(req.get("offset") or 1), 1), max(int(req.get("limit") or MAX_ENTRIES * 2), 1)
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end of {_show(req['path'])} ({len(lines)} lines)")
    sep = req.get("separator") or "\t"
    out = []
    for number in range(offset, min(offset + limit, len(lines) + 1)):
        line = lines[number - 1]
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + f" [line cut at {MAX_LINE} characters]"
        out.append(f"{number:6d}{sep}{line}")
    shown_to = offset + len(out) - 1
    if shown_to < len(lines):
        out.append(f"[lines {offset}-{shown_to} of {len(lines)}; use offset/limit to read more]")
    return "\n".join(out)


def op_write(req):
    path, content = req["path"], req["content"]
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    existed = os.path.exists(path)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(content)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return f"{'Overwrote' if existed else 'Created'} {_show(path)} ({len(content.encode())} bytes, {lines} lines)"


def op_edit(req):
    path = req["path"]
    if not os.path.exists(path):
        raise ToolError(f"{_show(path)} does not exist (write_file creates files)")
    text = _text(path)
    total = 0
    for number, edit in enumerate(req["edits"], start=1):
        old, new, every = edit["old"], edit["new"], bool(edit.get("replace_all"))
        which = f"edit {number}: " if len(req["edits"]) > 1 else ""
        if old == "":
            raise ToolError(f"{which}the text to replace is empty")
        if old == new:
            raise ToolError(f"{which}the replacement is identical to the text to replace")
        count = text.count(old)
        if count == 0:
            raise ToolError(f"{which}the text to replace was not found in {_show(path)}")
        if count > 1 and not every:
            raise ToolError(f"{which}the text to replace occurs {count} times in {_show(path)}; include more "
                            "surrounding text to make it unique, or replace all occurrences")
        text = text.replace(old, new) if every else text.replace(old, new, 1)
        total += count if every else 1
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return f"Edited {_show(path)}: {total} replacement{'s' if total != 1 else ''}"


def _walk(root):
    """Files below ``root`` (a file is its own walk), sorted, ``.git`` skipped."""
    if os.path.isfile(root):
        yield root
        return
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            yield os.path.join(base, name)


def _glob_regex(pattern):
    """A glob with ``**`` (any depth, including none), ``*`` and ``?`` (not crossing ``/``), ``{a,b}``."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            out.append("(?:" + "|".join(re.escape(p) for p in pattern[i + 1:end].split(",")) + ")")
            i = end
        elif c == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            out.append(fnmatch.translate(pattern[i:end + 1])[4:-3])
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _matcher(pattern):
    """Match a path (relative to the search root) against a glob; a glob without ``/`` matches basenames."""
    regex = _glob_regex(pattern)
    if "/" in pattern:
        return lambda rel: bool(regex.match(rel))
    return lambda rel: bool(regex.match(rel.rsplit("/", 1)[-1]))


def _capped(items, what):
    if len(items) > MAX_ENTRIES:
        return "\n".join(items[:MAX_ENTRIES] + [f"[{len(items) - MAX_ENTRIES} more {what} not shown]"])
    return "\n".join(items)


def op_list(req):
    root = req.get("path") or "."
    if not os.path.exists(root):
        raise ToolError(f"{_show(root)} does not exist")
    pattern = req.get("pattern")
    if not pattern:
        if not os.path.isdir(root):
            return _show(root)
        names = sorted(os.listdir(root))
        items = [n + "/" if os.path.isdir(os.path.join(root, n)) else n for n in names]
        return _capped(items, "entries") if items else "(the directory is empty)"
    match = _matcher(pattern)
    found = [_show(p) for p in _walk(root) if match(os.path.relpath(p, root))]
    return _capped(found, "files") if found else f"no files match {pattern!r}"


def op_grep(req):
    root = req.get("path") or "."
    if not os.path.exists(root):
        raise ToolError(f"{_show(root)} does not exist")
    try:
        regex = re.compile(req["pattern"], re.IGNORECASE if req.get("ignore_case") else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from None
    keep = _matcher(req["glob"]) if req.get("glob") else (lambda rel: True)
    mode = req.get("mode") or "content"
    before, after = int(req.get("before") or 0), int(req.get("after") or 0)
    out = []
    for path in _walk(root):
        if not keep(os.path.relpath(path, root) if path != root else os.path.basename(path)):
            continue
        try:
            text = _text(path)
        except (ToolError, OSError):
            continue
        lines = text.splitlines()
        hits = [n for n, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        if mode == "files":
            out.append(_show(path))
        elif mode == "count":
            out.append(f"{_show(path)}:{len(hits)}")
        else:
            shown = sorted({k for n in hits for k in range(max(n - before, 0), min(n + after + 1, len(lines)))})
            hit_set = set(hits)
            out += [f"{_show(path)}{':' if k in hit_set else '-'}{k + 1}{':' if k in hit_set else '-'}"
                    f"{lines[k][:MAX_LINE]}" for k in shown]
    limit = req.get("limit")
    if limit:
        out = out[:int(limit)]
    return _capped(out, "lines") if out else f"no matches for {req['pattern']!r}"


OPS = {"read": op_read, "write": op_write, "edit": op_edit, "list": op_list, "grep": op_grep}


def answer(req):
    try:
        op = OPS.get(req.get("op"))
        if op is None:
            raise ToolError(f"unknown operation {req.get('op')!r}")
        return {"ok": True, "output": op(req)}
    except ToolError as exc:
        return {"ok": False, "output": str(exc)}
    except OSError as exc:
        where = f": {_show(exc.filename)}" if getattr(exc, "filename", None) else ""
        return {"ok": False, "output": f"{exc.strerror or type(exc).__name__}{where}"}
    except (KeyError, TypeError, ValueError) as exc:
        return {"ok": False, "output": f"bad request: {type(exc).__name__}: {exc}"}


def main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdout.write(json.dumps(answer(request), ensure_ascii=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
