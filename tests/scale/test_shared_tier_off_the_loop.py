"""A shared tier's network read happens off the event loop: other calls go on while one waits for the store."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from pytest_ifbench import GenerationParams, ModelClient, ResponseCache


class SlowTier:
    """A SharedTier (the cache's own seam, not a store client) whose every fetch takes 0.3 s, like a far store."""

    def __init__(self, entries: dict[str, str]) -> None:
        self.entries = entries
        self.threads: set[str] = set()

    def fetch(self, key: str, fresh: bool = False) -> str | None:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.3)
        return self.entries.get(key)

    def offer(self, key: str, text: str) -> None:
        self.entries.setdefault(key, text)

    def claim(self, key: str) -> bool:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.3)
        return True

    def release(self, key: str) -> None:
        pass


def test_a_shared_tier_read_does_not_block_the_event_loop(tmp_path):
    messages = [{"role": "user", "content": "hi"}]
    probe = ModelClient(model="openai/stub", api_base="http://127.0.0.1:9/v1")
    keys = [probe.key(messages, GenerationParams(), sample=n, tools=(), response_format=None) for n in range(4)]
    reply = {"raw_text": "hello", "prompt_tokens": 1, "completion_tokens": 1}
    tier = SlowTier({key: json.dumps({"response": reply}) for key in keys})
    client = ModelClient(model="openai/stub", api_base="http://127.0.0.1:9/v1", cache=ResponseCache(tmp_path, tier))

    async def main() -> tuple[list[str], int, float]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.create_task(ticker())
        start = time.perf_counter()
        done = await asyncio.gather(*(client.complete(messages, GenerationParams(), sample=n) for n in range(4)))
        beat.cancel()
        return [c.text for c in done], ticks, time.perf_counter() - start

    texts, ticks, seconds = asyncio.run(main())
    assert texts == ["hello"] * 4  # served from the shared tier, no model call (port 9 answers nothing)
    assert ticks >= 10, ticks  # the loop kept running while the tier was read
    assert seconds < 4 * 0.3, seconds  # the four reads overlapped instead of queueing on the loop
    assert threading.main_thread().name not in tier.threads
