"""Reading untrusted YAML with bounded time and memory.

PyYAML's C loader is fast but trusts its input: a document nested 100,000 deep
crashes its composer (a segfault, not an exception), and aliases and merge keys
let a few hundred bytes stand for billions of nodes (the "billion laughs"):
construction shares the aliased objects, but every later walk -- validation,
an error message's ``repr``, ``json.dumps`` of the results -- expands them.

:func:`load_yaml` therefore runs one cheap pass over libyaml's event stream
first (about a tenth of the cost of loading) and measures, without building
anything, the nesting depth and the size the document has once every alias and
merge key is resolved; only a document within :data:`LIMITS` is then loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from . import yaml_cache as _yaml_cache


@dataclass(frozen=True, slots=True, kw_only=True)
class YamlLimits:
    """How big a document may be; see docs/suite-format.md ("Limits")."""

    #: Bytes of the file itself (a 50,000-instance suite is about 24 MB).
    max_bytes: int = 256 * 1024 * 1024
    #: Collections open at once (a real suite nests about 10 deep).
    max_depth: int = 100
    #: Nodes plus scalar characters once every alias and merge key is expanded: at least this many...
    max_expanded: int = 20_000_000
    #: ...and up to this many per byte of the file. Without aliases a document expands to less than
    #: two per byte (``[1,1,...]``: two bytes and two units per item), so a big suite is never refused
    #: for its size alone, while an alias bomb -- a few bytes standing for millions of nodes -- still is.
    expanded_per_byte: int = 2

    def expansion_limit(self, size: int) -> int:
        """The most nodes plus scalar characters a document of ``size`` bytes may expand to."""
        return max(self.max_expanded, self.expanded_per_byte * size)


LIMITS = YamlLimits()


class YamlLimitError(ValueError):
    """The document is over one of the :class:`YamlLimits`, or an alias refers to itself."""


class _Oversized(bytes):
    """The head of a file over the size limit (enough to tell a suite by), with the file's real size."""

    file_size: int


#: Bytes of an oversized file read anyway, so that collection can still tell it is a suite and refuse it by name.
_OVERSIZED_HEAD = 1 << 20


def read_limited(handle: IO[bytes], limits: YamlLimits | None = None) -> bytes:
    """A file's bytes, never reading (or allocating) much past ``limits.max_bytes``; for a file over the
    limit, its head, which :func:`load_yaml` and :func:`within_limits` refuse naming the file's real size.

    ``read(max_bytes + 1)`` would allocate the whole limit up front for every file, however small, so the
    file's size is asked first and anything that is not a regular file is read in chunks."""
    limits = LIMITS if limits is None else limits
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, AttributeError, ValueError):  # not a real file
        size = 0
    if size > limits.max_bytes:
        return _oversized(handle.read(_OVERSIZED_HEAD), size)
    chunks, total = [], 0
    want = size + 1  # a regular file in one read; the extra byte shows whether it grew
    while total <= limits.max_bytes:
        chunk = handle.read(min(want, limits.max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 20
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return _oversized(data[:_OVERSIZED_HEAD], total) if total > limits.max_bytes else data


def _oversized(head: bytes, size: int) -> _Oversized:
    out = _Oversized(head)
    out.file_size = size
    return out


def _check_size(data: bytes | str, limits: YamlLimits) -> None:
    size = getattr(data, "file_size", len(data))
    if size > limits.max_bytes:
        raise YamlLimitError(f"the file has {size:,} bytes, more than the {limits.max_bytes:,} allowed")


def check_shape(data: bytes | str, limits: YamlLimits | None = None) -> None:
    """Raise :class:`YamlLimitError` when ``data`` nests too deep, expands too far or is recursive.

    Sizes are summed bottom-up as collections close: an anchored node's size is
    remembered, and each alias adds it again to its parent, so a bomb is caught
    at the first level that crosses the limit, long before anything is built.
    Syntax errors propagate as :class:`yaml.YAMLError`.
    """
    limits = LIMITS if limits is None else limits
    stack: list[list[Any]] = []  # [anchor, expanded size] of each open collection
    sizes: dict[str, int] = {}
    total = 0
    most = limits.expansion_limit(len(data))

    def add(size: int) -> None:
        nonlocal total
        if stack:
            stack[-1][1] += size
            size = stack[-1][1]
        else:
            total += size
            size = total
        if size > most:
            raise YamlLimitError(
                f"the document expands to more than {most:,} nodes and characters once its "
                "aliases and merge keys (*name, <<) are resolved")

    try:
        for event in yaml.parse(data, Loader=yaml.CSafeLoader):
            kind = type(event)
            if kind is ScalarEvent:
                size = 1 + len(event.value)
                if event.anchor is not None:
                    sizes[event.anchor] = size
                add(size)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if len(stack) >= limits.max_depth:
                    raise YamlLimitError(f"nested more than {limits.max_depth} levels deep")
                if event.anchor is not None:
                    sizes.pop(event.anchor, None)  # a redefined anchor is not usable inside itself
                stack.append([event.anchor, 1])
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                anchor, size = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                add(size)
            elif kind is AliasEvent:
                if any(entry[0] == event.anchor for entry in stack):
                    raise YamlLimitError(f"alias *{event.anchor} is used inside its own anchor (a recursive structure)")
                # An undefined alias is left to the loader, which names it.
                add(sizes.get(event.anchor, 1))
    except yaml.YAMLError as error:
        # libyaml 0.2.6 (in the PyYAML 6.0.4 wheels) refuses nesting past its own limit of 1,000 while it
        # scans ahead, before the events at depth max_depth reach us: that document is over our limit too.
        if "nesting depth" in str(getattr(error, "problem", None) or ""):
            raise YamlLimitError(f"nested more than {limits.max_depth} levels deep") from None
        raise


def load_yaml(data: bytes, limits: YamlLimits | None = None) -> Any:
    """The single document in ``data``, loaded with the C safe loader once :func:`check_shape` passed.

    Raises :class:`YamlLimitError` (over a limit), :class:`yaml.YAMLError` (not YAML)
    or :class:`ValueError` (a scalar PyYAML cannot convert, e.g. a 5,000-digit int or
    the date 2020-13-45).
    """
    limits = LIMITS if limits is None else limits
    _check_size(data, limits)
    cacheable = limits is LIMITS and isinstance(data, bytes)
    if cacheable:
        kept = _yaml_cache.get(data)
        if kept is not _yaml_cache.MISS:
            return kept
    check_shape(data, limits)
    document = share_equal_strings(yaml.load(data, Loader=yaml.CSafeLoader))
    if cacheable:
        _yaml_cache.put(data, document)
    return document


def share_equal_strings(document: Any) -> Any:
    """``document`` with each distinct string (keys and values) held once.

    The loader makes a new string for every scalar, so a suite of 50,000 instances held 50,000 copies
    of each check's id, verifier name, parameter names and repeated values (and of a system prompt
    every instance repeats) for the whole session: ~1 KB per instance in a suite of five small
    checks. Sharing them also shrinks the kept parse (pickle stores a shared object once), which then
    loads shared."""
    seen: dict[str, str] = {}
    share = seen.setdefault
    visited: set[int] = set()  # an anchor's value appears once per alias: walk it once
    stack = [document]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        if type(node) is dict:
            visited.add(id(node))
            items = list(node.items())
            node.clear()
            for key, value in items:
                if type(value) is str:
                    value = share(value, value)
                elif type(value) in (dict, list):
                    stack.append(value)
                node[share(key, key) if type(key) is str else key] = value
        elif type(node) is list:
            visited.add(id(node))
            for index, value in enumerate(node):
                if type(value) is str:
                    node[index] = share(value, value)
                elif type(value) in (dict, list):
                    stack.append(value)
    return document


def within_limits(data: bytes) -> None:
    """:func:`check_shape` with the default limits, answered at once for bytes loaded before."""
    _check_size(data, LIMITS)
    if not _yaml_cache.known(data):
        check_shape(data)
