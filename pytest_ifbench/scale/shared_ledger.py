"""``--ifbench-max-cost-ledger redis://host:port/db/NAME``: one spending limit for every shard of a run.

The shards of a run start at once on separate machines (:mod:`.shard`), each with its own host's ledger
(:class:`~..models.spending.SpendingLimit`). Naming one Redis ledger for all of them makes the limit the
run's: every process of every shard asks it before each call, by the same rule as the file ledger (a
call starts only while what was paid, plus a reservation for each call on its way and one for itself,
fits the limit, and waits while it would fit once those are paid; the reservation is the costliest call
of the call's model so far; until a model's first call has come back, one call of that model is on its
way in the whole run).

Each decision is one Lua script run by Redis, so it is atomic however many machines ask (a round trip
to start a call; settlements go several to a round trip). The ledger is seven hashes under
``pytest-ifbench:spending:{NAME}``: the totals; by owner (``host:pid:nonce``, one per process) its
calls on their way, what they hold, the time of its last word and the number of its last settlement; by
model, its costliest call and its paid calls (``largest:MODEL``, ``calls:MODEL``); and by owner and model
(``owner NUL model``), that owner's calls of that model on their way. A process that dies with calls on
their way would hold their reservations (and a model's first call) for good, so every process notes the
time of its last word, a thread renews it while it has calls on their way, and a script drops what an
owner silent for :data:`LEASE` seconds holds. Settlements are sent by that thread, so a call's
end never waits for the network; one Redis did not take (the store unreachable a moment) is sent again
until it does, and counts once. A call that cannot be started because Redis cannot be asked is not made
(:class:`~..models.spending.LedgerUnavailable`): what it would cost could not count.

S3 has no atomic add, so a shared ledger lives only in Redis. NAME is the run's: the same for its shards,
new for each run (e.g. ``${{ github.run_id }}``, ``$SLURM_ARRAY_JOB_ID``, the Kubernetes Job's name); a
re-run shard of the same run (a CI job re-run) counts against what the run has paid already. The keys
are forgotten :data:`KEPT_DAYS` days after the ledger's last call.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import threading
import time
from collections import deque
from itertools import islice
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..models.spending import WAIT, LedgerUnavailable, Spent
from .stores import display_url, hint

#: Seconds after an owner's last word (or its renewal thread's) that what it holds is given back.
LEASE = 120.0
#: Seconds a process refuses calls without asking Redis, once Redis did not answer one.
QUIET = 5.0
#: How long the keys outlive the ledger's last call.
KEPT_DAYS = 30
_PREFIX = "pytest-ifbench:spending:"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")

# KEYS: totals, on-their-way (owner -> calls), held (owner -> USD), heard (owner -> ms of its last word),
# settled (owner -> the number of its last settlement), models ('largest:' .. model -> USD, 'calls:' .. model
# -> its paid calls), models-on-their-way (owner .. NUL .. model -> calls).
# Every script first gives back what owners silent for ARGV[1] ms held, and notes ARGV[2]'s word.
_COMMON = """
if redis.replicate_commands then redis.replicate_commands() end -- (writes after TIME: Redis before 5 asks)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local heard = redis.call('HGETALL', KEYS[4])
for i = 1, #heard, 2 do
  if heard[i] ~= ARGV[2] and now - tonumber(heard[i + 1]) > tonumber(ARGV[1]) then
    redis.call('HDEL', KEYS[2], heard[i]); redis.call('HDEL', KEYS[3], heard[i]); redis.call('HDEL', KEYS[4], heard[i])
    local mine = heard[i] .. '\0'
    for _, field in ipairs(redis.call('HKEYS', KEYS[7])) do
      if string.sub(field, 1, #mine) == mine then redis.call('HDEL', KEYS[7], field) end
    end
  end
end
redis.call('HSET', KEYS[4], ARGV[2], now)
local function num(v) return tonumber(v) or 0 end
local function str(v) return string.format('%.17g', v) end
local function sum(key)
  local total = 0
  for _, v in ipairs(redis.call('HVALS', key)) do total = total + num(v) end
  return total
end
local limit, spent, calls, refused, unpriced, largest = unpack(redis.call('HMGET', KEYS[1],
  'limit', 'spent', 'calls', 'refused', 'unpriced', 'largest'))
limit, spent, calls, largest = num(limit), num(spent), num(calls), num(largest)
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
"""
#: ARGV[4] the largest cost of a call of the model ARGV[6] this process saw in cached replies, ARGV[5] 1 to
#: wait (for the model's first price, or for the calls on their way to be paid).
#: Returns the reservation (the model's costliest call) as a string, 'wait', or false (refused).
_START = _COMMON + """
local model = ARGV[6]
local own = math.max(num(redis.call('HGET', KEYS[6], 'largest:' .. model)), tonumber(ARGV[4]))
if ARGV[5] == '1' and own <= 0 and num(redis.call('HGET', KEYS[6], 'calls:' .. model)) == 0 then
  local suffix = '\0' .. model
  local on_their_way = redis.call('HGETALL', KEYS[7])
  for i = 1, #on_their_way, 2 do
    local field = on_their_way[i]
    if #field > #suffix and string.sub(field, -#suffix) == suffix and num(on_their_way[i + 1]) > 0 then
      return 'wait'
    end
  end
end
local fits_alone = spent < limit and spent + own <= limit
local refused = not fits_alone or spent + sum(KEYS[3]) + own > limit
if refused and fits_alone and ARGV[5] == '1' then return 'wait' end
redis.call('HSET', KEYS[1], 'largest', str(math.max(largest, own)))
redis.call('HSET', KEYS[6], 'largest:' .. model, str(own))
if refused then
  redis.call('HINCRBY', KEYS[1], 'refused', 1)
  return false
end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
redis.call('HINCRBYFLOAT', KEYS[3], ARGV[2], str(own))
redis.call('HINCRBY', KEYS[7], ARGV[2] .. '\0' .. model, 1)
return str(own)
"""
#: ARGV[4] what the call reserved, ARGV[5] its cost ('' when its reply had none), ARGV[6] 1 if it was paid, 2 if
#: it was given up after it was sent (a call without a price of the run's, not of its model's),
#: ARGV[7] its number among the owner's settlements: one sent twice (a connection lost as Redis answered)
#: counts once; ARGV[8] its model.
_END = _COMMON + """
if tonumber(ARGV[7]) <= num(redis.call('HGET', KEYS[5], ARGV[2])) then return 0 end
redis.call('HSET', KEYS[5], ARGV[2], ARGV[7])
local mine = redis.call('HGET', KEYS[2], ARGV[2])
if mine then
  if num(mine) <= 1 then
    redis.call('HDEL', KEYS[2], ARGV[2]); redis.call('HDEL', KEYS[3], ARGV[2])
  else
    redis.call('HINCRBY', KEYS[2], ARGV[2], -1)
    local held = num(redis.call('HGET', KEYS[3], ARGV[2])) - tonumber(ARGV[4])
    redis.call('HSET', KEYS[3], ARGV[2], str(math.max(0, held)))
  end
end
local its = ARGV[2] .. '\0' .. ARGV[8]
if num(redis.call('HGET', KEYS[7], its)) <= 1 then
  redis.call('HDEL', KEYS[7], its)
else
  redis.call('HINCRBY', KEYS[7], its, -1)
end
if ARGV[6] == '1' then
  local cost = tonumber(ARGV[5])
  redis.call('HINCRBY', KEYS[1], 'calls', 1)
  redis.call('HINCRBY', KEYS[6], 'calls:' .. ARGV[8], 1)
  if cost then
    redis.call('HSET', KEYS[1], 'spent', str(spent + cost), 'largest', str(math.max(largest, cost)))
    local own = num(redis.call('HGET', KEYS[6], 'largest:' .. ARGV[8]))
    redis.call('HSET', KEYS[6], 'largest:' .. ARGV[8], str(math.max(own, cost)))
  else
    redis.call('HINCRBY', KEYS[1], 'unpriced', 1)
  end
elseif ARGV[6] == '2' then
  redis.call('HINCRBY', KEYS[1], 'calls', 1)
  redis.call('HINCRBY', KEYS[1], 'unpriced', 1)
end
return 1
"""
#: The totals and the calls on their way; renews ARGV[2]'s word (its renewal thread calls it).
_STATUS = _COMMON + """
return {str(limit), str(spent), calls, num(refused), num(unpriced), str(largest), sum(KEYS[2]), str(sum(KEYS[3]))}
"""
#: ARGV[4] the limit: set when the ledger is new; returns the ledger's limit.
_OPEN = _COMMON + """
if limit <= 0 then
  redis.call('HSET', KEYS[1], 'limit', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return ARGV[4]
end
return str(limit)
"""


def parse(url: str) -> tuple[str, str, str]:
    """``redis://[user:password@]host:port/db/NAME`` as (the Redis URL, NAME, the URL to show: no
    credentials); ValueError saying what is wrong."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("redis", "rediss"):
        raise ValueError(f"--ifbench-max-cost-ledger: {url.split('@')[-1]!r}: a shared ledger lives in Redis "
                         f"(redis://host:port/db/NAME or rediss://...); S3 has no atomic add")
    database, _, name = parts.path.lstrip("/").partition("/")
    try:
        shown = display_url(url)
    except ValueError as exc:
        raise ValueError(f"--ifbench-max-cost-ledger: {exc}") from None
    if not database.isdigit() or not _NAME.fullmatch(name):
        raise ValueError(f"--ifbench-max-cost-ledger: {shown!r}: name the run's ledger after the database, "
                         f"redis://host:port/0/NAME (NAME: letters, digits, '.', '_', ':', '-'; the same for "
                         f"every shard of the run, new for each run)")
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, "")), name, shown


class RedisLedger:
    """The run's ledger in Redis (see the module docstring): one per process, every shard's on the same keys.

    :meth:`start` waits for Redis (the client calls it off its event loop: :attr:`remote`); :meth:`end`
    only queues the settlement, which this ledger's thread sends (several in one round trip when they
    come faster than Redis answers), and which also renews the process's word while it has calls on
    their way. A settlement stays queued while Redis does not answer: it still holds its call's
    reservation there, so no call is let through for lack of it."""

    #: Its calls wait for the network: the client asks it from a thread, never on its event loop.
    remote = True

    def __init__(self, url: str, limit: float, *, timeout: float = 10.0, opened: bool = False) -> None:
        """``opened``: another process of the run (an xdist worker's controller) has opened the ledger with
        ``limit``, so a Redis that does not answer now is not this process's reason to stop: its calls ask
        as they go, and error while Redis does not answer (a worker that raised here was restarted by
        xdist until it gave up, and the run ended with no results file)."""
        try:
            import redis
        except ImportError:
            raise ValueError("--ifbench-max-cost-ledger: the redis package is not installed "
                             "(pip install 'pytest-ifbench[scale]')") from None
        address, name, self.display = parse(url)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._client: Any = redis.Redis.from_url(address, socket_timeout=timeout,
                                                 socket_connect_timeout=min(3.0, timeout))
        # {NAME}: a Redis Cluster keeps the seven in one slot, as a script's keys must be
        self._keys = [f"{_PREFIX}{{{name}}}{suffix}" for suffix in
                      ("", ":on-their-way", ":held", ":heard", ":settled", ":models", ":models-on-their-way")]
        #: This process (its host and pid, and a nonce: a pid is reused, a re-run container keeps its name).
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._settlements = 0
        self._scripts = {kind: self._client.register_script(text)
                         for kind, text in (("start", _START), ("end", _END), ("status", _STATUS), ("open", _OPEN))}
        #: By model, the largest cost of one call this process saw in cached replies.
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        #: Settlements Redis has not taken yet, oldest first: (model, reserved, cost, paid, number).
        self._unsent: deque[tuple[str, float, float | None, bool, int]] = deque()
        self._on_their_way = 0
        self._wake = threading.Event()
        self._closed = threading.Event()
        #: Why Redis did not answer a call's start, until it answers one again; meanwhile calls are refused
        #: without asking until ``_quiet_until``, and while one call (``_asking``) asks again.
        self._unanswered: str | None = None
        self._quiet_until = 0.0
        self._asking = False
        try:
            self.limit = float(self._run("open", limit))
        except LedgerUnavailable as exc:
            if not opened:
                raise
            self.limit, self._unanswered = float(limit), str(exc)
        self._thread = threading.Thread(target=self._settle, name="ifbench-spending-ledger", daemon=True)
        self._thread.start()

    # -- what the clients ask (models.spending.Ledger) ----------------------------------------------------
    def saw(self, model: str, cost: float | None) -> None:
        if cost is not None and cost > self._seen.get(model, 0.0):
            self._seen[model] = cost

    def start(self, model: str, *, wait: bool = True) -> float | None:
        answer = self._asked("start", repr(self._seen.get(model, 0.0)), 1 if wait else 0, model)
        if answer is None:
            return None
        if answer == b"wait":
            return WAIT
        with self._lock:
            self._on_their_way += 1
        return float(answer)

    def end(self, model: str, reserved: float, cost: float | None, *, paid: bool = True,
            given_up: bool = False) -> None:
        """Queue a call's settlement for this ledger's thread (never waits, never raises)."""
        with self._lock:
            self._on_their_way = max(0, self._on_their_way - 1)
            self._settlements += 1
            self._unsent.append((model, reserved, cost, 1 if paid else 2 if given_up else 0, self._settlements))
        self._wake.set()

    def status(self) -> Spent:
        limit, spent, calls, refused, unpriced, largest, in_flight, reserved = self._asked("status")
        return Spent(limit=float(limit), spent=float(spent), calls=int(calls), refused=int(refused),
                     unpriced=int(unpriced), largest=float(largest), in_flight=int(in_flight),
                     reserved=float(reserved))

    def flush(self, patience: float = 10.0) -> bool:
        """Wait until Redis has taken every queued settlement (for at most ``patience`` seconds); whether it has."""
        deadline = time.monotonic() + patience
        while self._unsent and time.monotonic() < deadline:
            self._wake.set()
            time.sleep(0.001)
        return not self._unsent

    def close(self, *, patience: float = 10.0) -> None:
        """Send what is queued (for at most ``patience`` seconds while Redis does not answer), then close."""
        self._closed.set()
        self._wake.set()
        self._thread.join(patience)
        self._client.close()

    # -- Redis ----------------------------------------------------------------------------------------------
    def _asked(self, kind: str, *args: Any) -> Any:
        """``kind``'s script, asked of Redis. Once Redis has not answered, this process does not ask it for
        :data:`QUIET` seconds (raising at once), and then one caller at a time asks again: a store that
        went away would otherwise hold every call's start (and the live status line, which reads the
        ledger) for the socket's timeout."""
        with self._lock:
            if self._unanswered is not None and (self._asking or time.monotonic() < self._quiet_until):
                raise LedgerUnavailable(f"{self._unanswered}; not asked again for a few seconds")
            self._asking = self._unanswered is not None
        try:
            answer = self._run(kind, *args)
        except LedgerUnavailable as exc:
            with self._lock:
                self._unanswered, self._quiet_until, self._asking = str(exc), time.monotonic() + QUIET, False
            raise
        with self._lock:
            self._unanswered, self._asking = None, False
        return answer

    def _run(self, kind: str, *args: Any, client: Any = None) -> Any:
        try:
            return self._scripts[kind](keys=self._keys, args=self._args(*args), client=client)
        except self._errors as exc:
            raise self._unavailable(exc) from None

    def _unavailable(self, exc: BaseException) -> LedgerUnavailable:
        advice = hint(exc)
        return LedgerUnavailable(f"{self.display}: {type(exc).__name__}: {exc}" + (f" -- {advice}" if advice else ""))

    def _args(self, *args: Any) -> list[Any]:
        return [round(LEASE * 1000), self._owner, KEPT_DAYS * 86_400_000, *args]

    def _settle(self) -> None:
        """The ledger's thread: send queued settlements; renew the process's word every quarter lease while
        it has calls on their way; after :meth:`close`, send what is left and end."""
        while True:
            woken = self._wake.wait(LEASE / 4)
            self._wake.clear()
            closing = self._closed.is_set()
            try:
                if not self._send_unsent() and not woken and self._on_their_way:
                    self._run("status")  # (its script notes this process's word)
            except LedgerUnavailable:
                if closing:
                    return
                self._closed.wait(1.0)  # Redis down: try again in a second
                self._wake.set()
                continue
            if closing:
                return

    def _send_unsent(self) -> bool:
        """Send the queued settlements, up to 100 per round trip; whether there were any."""
        sent = False
        while True:
            with self._lock:
                batch = list(islice(self._unsent, 100))
            if not batch:
                return sent
            pipe = self._client.pipeline(transaction=False)
            for model, reserved, cost, paid, number in batch:  # (queued on the pipeline: sent by its execute)
                self._run("end", repr(reserved), "" if cost is None else repr(cost), paid, number,
                          model, client=pipe)
            try:
                pipe.execute()
            except self._errors as exc:
                raise self._unavailable(exc) from None
            with self._lock:
                for _ in batch:
                    self._unsent.popleft()
            sent = True
