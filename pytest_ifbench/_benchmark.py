"""A benchmark as a declaration: :class:`Benchmark` is the pluggy plugin the core registers for it.

A benchmark module (its entry point, or a ``conftest.py``) holds one ``Benchmark(...)``; the core
registers that object beside the module, and its methods are the hook implementations every
benchmark used to write by hand: verifiers and protocols, metric tables and plots for its own
records, its ``ifbench generate`` command, the ``--<name>-compat`` option and its official-file
importer. The module's own ``pytest_*`` functions stay hooks too, for whatever does not fit.

References to the benchmark's code are ``"package.module:function"`` strings (entry-point syntax),
imported on first use so ``pytest --help`` loads none of it, or plain callables.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ``"package.module:function"`` (imported when first needed) or the callable itself.
Ref = str | Callable[..., Any]


def resolve(ref: Ref) -> Callable[..., Any]:
    """The callable ``ref`` names: ``"package.module:attr.path"`` is imported, a callable returned as is."""
    if callable(ref):
        return ref
    from importlib import import_module

    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected 'package.module:function', got {ref!r}")
    target: Any = import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def _ref_key(ref: Ref | None) -> str:
    """A name for ``ref`` that survives re-importing its module (a conftest is imported once per run)."""
    if ref is None or isinstance(ref, str):
        return str(ref)
    return f"{getattr(ref, '__module__', '')}:{getattr(ref, '__qualname__', repr(ref))}"


def _either(choices: tuple[str, ...]) -> str:
    return " or ".join(choices) if len(choices) <= 2 else f"{', '.join(choices[:-1])} or {choices[-1]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Compat:
    """The ``--<name>-compat`` option: which rules a benchmark's checks follow (e.g. the paper's or the
    authors' released code's).

    With ``checks=True`` the core applies it to the benchmark's YAML suites: every ``<name>.*`` check
    gets ``params.compat`` -- the option overrides, a suite's ``options: {compat: ...}`` fills in where
    the check sets nothing (``coerce`` first turns other params shapes into a mapping). With
    ``checks=False`` the option only reaches the official reader (``ReadOptions.compat``), which
    applies it its own way. Official files in another format always get it through the reader.
    """

    help: str
    choices: tuple[str, ...] = ("paper", "reference")
    default: str | None = None
    checks: bool = True
    coerce: Ref | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """What an official reader may depend on besides the file: ``--<name>-compat`` (None when not
    given) and the options it declared in ``Benchmark.reader_options``, by dest. Part of the cache key."""

    compat: str | None = None
    values: tuple[tuple[str, Any], ...] = ()

    def option(self, dest: str, default: Any = None) -> Any:
        """The value of a declared option (``default`` when unset or not registered)."""
        value = dict(self.values).get(dest)
        return default if value is None else value


#: Official-file reads: (file, mtime, size, benchmark, reader, options) -> suite data or None.
_READS: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_MAX_READS = 512


def cached_read(path: Path, key: tuple[Any, ...], read: Callable[[], Any]) -> Any:
    """``read()``, once per content of ``path`` (its resolved name, mtime and size) and ``key``.

    A file that cannot be stat'ed is read every time. The suite data returned is shared: callers
    must not change it (the core parses it without doing so)."""
    try:
        stat = path.stat()
        full = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, *key)
    except OSError:
        return read()
    if full in _READS:
        _READS.move_to_end(full)
        return _READS[full]
    data = read()
    _READS[full] = data
    if len(_READS) > _MAX_READS:
        _READS.popitem(last=False)
    return data


def _option(config: Any, dest: str) -> Any:
    try:
        return config.getoption(dest)
    except (ValueError, AttributeError):  # not registered (plugin loaded without its addoption), or no config
        return None


_OPTIONS_LINE = re.compile(rb"(?m)^options\s*:")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Benchmark:
    """One benchmark, declared; the core derives its hook implementations (the methods below).

    * ``verifiers``/``protocols``: ``register(registry)`` / ``register(protocols)``;
    * ``metrics``: ``tables(records) -> list[MetricTable]`` for this benchmark's result records;
    * ``plots``: ``plots(records, directory) -> list[Path]`` (PNG files drawn into ``directory``);
    * ``generator``: ``main(argv) -> int``, run as ``ifbench generate <name> ...``;
    * ``official_reader``: ``read(path, options: ReadOptions) -> suite data | None`` for files in the
      benchmark's own format (or its YAML suites needing more than ``compat``); called through one
      core cache, so once per file content and options;
    * ``reader_options``: the dests of other options the reader reads (they key the cache);
    * ``compat``: the ``--<name>-compat`` option (:class:`Compat`);
    * ``markers``: ``(name, help)`` of markers its instances may carry besides the core's. They and the
      benchmark's name are registered at start-up, so ``-m`` with ``--strict-markers`` and ``--markers``
      know them whatever files a run collects (the core registers the others as it collects instances).
    """

    name: str
    verifiers: Ref | None = None
    protocols: Ref | None = None
    metrics: Ref | None = None
    plots: Ref | None = None
    generator: Ref | None = None
    official_reader: Ref | None = None
    reader_options: tuple[str, ...] = ()
    compat: Compat | None = None
    markers: tuple[tuple[str, str], ...] = ()

    @property
    def compat_dest(self) -> str:
        """The dest of ``--<name>-compat``."""
        return f"{self.name.replace('-', '_')}_compat"

    # ------------------------------------------------------------------ hook implementations

    def pytest_addoption(self, parser: Any) -> None:
        if self.compat is not None:
            parser.getgroup("ifbench").addoption(
                f"--{self.name}-compat", dest=self.compat_dest, choices=self.compat.choices,
                default=self.compat.default, help=self.compat.help)

    def pytest_configure(self, config: Any) -> None:
        declared = marker_names(config)
        for name, help_text in ((self.name, f"{self.name} benchmark instances"), *self.markers):
            if name not in declared:
                config.addinivalue_line("markers", f"{name}: {help_text}")

    def pytest_ifbench_register_verifiers(self, registry: Any) -> None:
        if self.verifiers is not None:
            resolve(self.verifiers)(registry)

    def pytest_ifbench_register_protocols(self, protocols: Any) -> None:
        if self.protocols is not None:
            resolve(self.protocols)(protocols)

    def pytest_ifbench_suite_data(self, path: Any, config: Any) -> Any:
        if self.official_reader is None and (self.compat is None or not self.compat.checks):
            return None
        path = Path(path)
        options = self.read_options(config)
        return cached_read(path, (self.name, _ref_key(self.official_reader), options),
                           lambda: self.read(path, options))

    def pytest_ifbench_metrics(self, benchmark: str, records: list[dict[str, Any]]) -> list[Any] | None:
        if benchmark != self.name or self.metrics is None:
            return None
        return resolve(self.metrics)(records)

    def pytest_ifbench_plots(self, benchmark: str, records: list[dict[str, Any]], directory: Any) -> list[Any] | None:
        if benchmark != self.name or self.plots is None:
            return None
        return resolve(self.plots)(records, directory)

    def pytest_ifbench_generators(self, generators: dict[str, Any]) -> None:
        if self.generator is not None:
            ref = self.generator
            generators[self.name] = lambda argv: resolve(ref)(argv)

    # ------------------------------------------------------------------ official files and compat

    def read_options(self, config: Any) -> ReadOptions:
        """This run's :class:`ReadOptions` (lists made tuples: they key the cache)."""
        values = []
        for dest in self.reader_options:
            value = _option(config, dest)
            values.append((dest, tuple(value) if isinstance(value, list) else value))
        compat = _option(config, self.compat_dest) if self.compat is not None else None
        return ReadOptions(compat=compat, values=tuple(values))

    def read(self, path: Path, options: ReadOptions) -> Any:
        """Suite data for ``path`` (uncached): the official reader's, then compat on YAML suites."""
        data = resolve(self.official_reader)(path, options) if self.official_reader is not None else None
        if self.compat is not None and self.compat.checks and path.suffix in (".yaml", ".yml"):
            return self._compat_yaml(path, data, options.compat)
        return data

    def _compat_yaml(self, path: Path, data: Mapping[str, Any] | None, flag: str | None) -> Any:
        """Apply ``options.compat`` / ``--<name>-compat`` to a YAML suite of this benchmark (``data``:
        the reader's, else read here); None when there is nothing to apply (the core loads the file)."""
        # Imported here, not at the top: the ``ifbench`` command loads every benchmark's declaration
        # and never reads a suite, so it should not pay for the YAML loader.
        from .suite.detect import suite_yaml_or_none
        from .suite.errors import SuiteError
        from .suite.format import set_check_param

        assert self.compat is not None
        taken = data is not None
        if data is None:
            def worth_reading(raw: bytes) -> bool:  # else nothing to apply: the core loads it (no second parse)
                return flag is not None or bool(_OPTIONS_LINE.search(raw) and b"compat" in raw)

            data = suite_yaml_or_none(path, self.name, worth_reading=worth_reading)
            if data is None:
                return None
        options = data.get("options") if isinstance(data.get("options"), dict) else {}
        option = options.get("compat")
        if option is not None and option not in self.compat.choices:
            raise SuiteError(path, f"expected {_either(self.compat.choices)}, got {option!r}", field="options.compat")
        if flag is None and option is None:
            return data if taken else None
        coerce = resolve(self.compat.coerce) if self.compat.coerce is not None else None
        set_check_param(data, f"{self.name}.", "compat", flag=flag, default=option, coerce=coerce)
        return data


def marker_names(config: Any) -> set[str]:
    """The markers ``config`` declares (its ``markers`` ini lines: ``name(args): help``)."""
    return {re.split(r"[(:]", line, maxsplit=1)[0].strip() for line in config.getini("markers")}
