"""The reference clients of ``bench_generation.py``: scripts run as subprocesses, no pytest.

Each sends the same N requests with an ``asyncio.Semaphore(concurrency)`` and prints
``{"elapsed_s", "cpu_s"}``; its wall time (interpreter start and imports included) is what the
plugin's wall time is compared with. Arguments: ``URL COUNT CONCURRENCY [MODEL]``.
"""

from __future__ import annotations

#: Reference clients, each run as a subprocess sending the same N requests with an
#: ``asyncio.Semaphore(concurrency)``, no pytest: ``raw litellm`` goes through
#: ``litellm.acompletion`` (imported the way the plugin imports it), ``raw OpenAI SDK``
#: through one ``openai.AsyncOpenAI`` client. Their wall time (interpreter start and
#: imports included) is what the plugin's wall time is compared with.
LITELLM_BASELINE = r"""
import asyncio, json, resource, sys, time
url, count, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from pytest_ifbench.models.client import import_litellm
litellm = import_litellm()

async def main():
    limiter = asyncio.Semaphore(concurrency)

    async def one(i):
        async with limiter:
            call = litellm.acompletion(
                model="openai/stub", api_base=url, num_retries=0, max_retries=0, timeout=60.0,
                messages=[{"role": "user", "content": f"Write one short sentence about item number {i}."}],
                temperature=0.0, max_tokens=32)
            response = await asyncio.wait_for(call, timeout=65.0)
            assert response.choices[0].message.content

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - start

elapsed = asyncio.run(main())
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"elapsed_s": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime}))
"""

OPENAI_BASELINE = r"""
import asyncio, json, os, resource, sys, time
url, count, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model = sys.argv[4] if len(sys.argv) > 4 else "stub"
import openai

async def main():
    client = openai.AsyncOpenAI(base_url=url, api_key=os.environ["OPENAI_API_KEY"], max_retries=0, timeout=60.0)
    limiter = asyncio.Semaphore(concurrency)

    async def one(i):
        async with limiter:
            response = await client.chat.completions.create(
                model=model, temperature=0.0, max_tokens=32,
                messages=[{"role": "user", "content": f"Write one short sentence about item number {i}."}])
            assert response.choices[0].message.content

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - start

elapsed = asyncio.run(main())
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"elapsed_s": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime}))
"""

#: inspect_ai (not a project dependency): the same N prompts as one eval task with a no-op
#: scorer, against the stub through its ``openai-api`` provider (chat completions), ``--max-connections`` as the
#: concurrency. Run with the interpreter given by ``--inspect-python``.
INSPECT_TASK = r"""
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

COUNT = {count}


@task
def bench():
    samples = [Sample(input=f"Write one short sentence about item number {{i}}.", target="reply")
               for i in range(COUNT)]
    return Task(dataset=samples, solver=generate(), scorer=includes())
"""

#: The raw Anthropic SDK: one ``anthropic.AsyncAnthropic`` client (URL: the stub's root, without ``/v1``).
ANTHROPIC_BASELINE = r"""
import asyncio, json, os, resource, sys, time
url, count, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model = sys.argv[4] if len(sys.argv) > 4 else "claude-sonnet-4-5"
import anthropic

async def main():
    client = anthropic.AsyncAnthropic(base_url=url, api_key=os.environ["ANTHROPIC_API_KEY"], max_retries=0,
                                      timeout=60.0)
    limiter = asyncio.Semaphore(concurrency)

    async def one(i):
        async with limiter:
            # (no temperature: this SDK's messages.create no longer takes one; the plugin sends litellm's body)
            response = await client.messages.create(
                model=model, max_tokens=32,
                messages=[{"role": "user", "content": f"Write one short sentence about item number {i}."}])
            assert response.content[0].text

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - start

elapsed = asyncio.run(main())
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"elapsed_s": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime}))
"""
