"""The processes that score a round's result logs while its archive is still being read: one pool per
refresh process, kept from round to round, bounded in memory and in time, and gone with the refresh
(`ScoringPool`, the context a refresh runs in)."""

from __future__ import annotations

import gc
import hashlib
import itertools
import multiprocessing
import os
import pickle
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from pipelines.lib.io.context import RunContext, activate, current
from pipelines.lib.io.limits import limit
from pipelines.lib.mlperf import rule_interpreter, rule_language
from pipelines.lib.mlperf.rejections import RoundRejected, ScoringDeadline
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.scorer import EVENT_COLUMNS, log_format, score_run


def _score_batch(batch: list[tuple[str, bytes]], round_version: str, rules: RoundRules,
                 deadline: float | None = None) -> list[tuple]:
    # A log is parsed into ~10^5 small objects with no reference cycles, freed as soon as the log is
    # scored: the cycle collector would only walk them again and again. It runs once per batch.
    collecting = gc.isenabled()
    gc.disable()
    rule_interpreter.set_deadline(deadline)
    try:
        out = []
        for path, data in batch:
            if deadline is not None and time.time() > deadline:
                raise ScoringDeadline(round_version)
            events = {c: [] for c in EVENT_COLUMNS}
            row = score_run(data, round_version, rules, events, path)
            # the file as published (hashed while the archive was read), to spot it again
            row["log_sha256"] = getattr(data, "sha256", None) or hashlib.sha256(data).hexdigest()
            row["log_format"] = log_format(data)
            out.append((path, row, events))
    finally:
        if collecting:
            gc.enable()
    return out


# In a worker process: the round and rules of the batches it scores, unpickled once per round (the
# pool outlives a round). Every batch carries them pickled: a memory copy of a few hundred KB,
# which only a worker that has not seen the round yet unpickles.
_WORKER_ROUND: tuple[str, tuple[str, RoundRules]] | None = None


def _score_worker_batch(batch: list[tuple[str, bytes]], round_key: str, round_blob: bytes,
                        deadline: float | None = None) -> list[tuple]:
    global _WORKER_ROUND
    if _WORKER_ROUND is None or _WORKER_ROUND[0] != round_key:
        _WORKER_ROUND = (round_key, pickle.loads(round_blob))
    return _score_batch(batch, *_WORKER_ROUND[1], deadline=deadline)


# One pool per refresh process, started by the first round that needs it and kept for the next ones
# (starting workers costs more than scoring a small round: an archive under SMALL_ARCHIVE_BYTES is scored in
# the refresh's own process unless the pool is already running). Its workers hold the run context of when it
# started: a pool of another context (a later in-process refresh configured differently) is replaced.
_POOL: tuple[tuple, ProcessPoolExecutor] | None = None  # ((owner pid, workers, run context), pool)


_ROUND_KEYS = itertools.count()


SMALL_ARCHIVE_BYTES = 4 << 20


def small_archive(path: Path) -> bool:
    return path.stat().st_size < SMALL_ARCHIVE_BYTES


def _pool_key(workers: int) -> tuple:
    return os.getpid(), workers, current()


def pool_running(workers: int) -> bool:
    """Whether this process already has a scoring pool of `workers` started under the active run context."""
    return _POOL is not None and _POOL[0] == _pool_key(workers)


def _own_pool() -> ProcessPoolExecutor | None:
    """This process's pool (a forked child sees its parent's, which is not its own)."""
    return _POOL[1] if _POOL is not None and _POOL[0][0] == os.getpid() else None


def _shared_pool(workers: int) -> ProcessPoolExecutor:
    global _POOL
    if pool_running(workers):
        return _POOL[1]
    if (stale := _own_pool()) is not None:
        stale.shutdown(wait=False, cancel_futures=True)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    # Workers exit when this process dies, not minutes later when their batch is done.
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_start_worker,
                               initargs=(os.getpid(), current()))
    _POOL = (_pool_key(workers), pool)
    return pool


def default_workers() -> int:
    """Scoring processes: one per core, at most the `max_parse_workers` limit."""
    return min(os.cpu_count() or 1, limit("max_parse_workers"))


def end_pool() -> None:
    """Kill this process's scoring workers now (a deadline passed): shutting down would wait for them."""
    global _POOL
    if (pool := _own_pool()) is not None:
        for process in list(getattr(pool, "_processes", {}).values()):  # the stdlib keeps no public handle
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
    _POOL = None


def shutdown_pool() -> None:
    """Stop the scoring pool of this process, if any (its queues' semaphores are released with it)."""
    global _POOL
    if (pool := _own_pool()) is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    _POOL = None


def _start_worker(refresh_pid: int, context: RunContext) -> None:
    """A scoring process: the refresh's run context active (its limits, its secrets), and gone when the refresh is."""
    activate(context)
    die_with_parent(refresh_pid)


def die_with_parent(refresh_pid: int) -> None:
    """Worker initializer: exit as soon as the refresh process is gone, so a killed refresh leaves
    no workers behind. (The fork server cannot do it: each worker holds the pipe the fork server
    watches, so neither sees the refresh die.) Waits on a pidfd (Linux), else checks every second."""
    import select
    import threading
    import time

    def watch() -> None:
        try:
            fd = os.pidfd_open(refresh_pid)
        except (AttributeError, OSError):  # not Linux, or already gone
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        else:
            while True:
                try:
                    os.kill(refresh_pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-refresh", daemon=True).start()


class ResultScorer:
    """Scores result logs in worker processes while the archive is still being read.

    Batches keep the per-task overhead low; at most a few batches are in flight, so memory stays
    bounded whatever the archive's size. Workers start from a fork server that has imported only
    the parsing modules (no Dagster, no Polars)."""

    BATCH_BYTES = 4 << 20
    IN_FLIGHT = 6
    IN_FLIGHT_BYTES = 256 << 20  # a few huge logs must not pile up in memory either

    def __init__(self, round_version: str, rules: RoundRules, workers: int | None, small: bool = False):
        self.args = (round_version, rules)
        self.round_version = round_version
        self.deadline = time.time() + limit("scoring_deadline_seconds")
        if workers is None:
            workers = default_workers()
        self.pool = None
        # a small archive is scored here unless the refresh's pool is already running
        if workers > 1 and (not small or pool_running(workers)):
            self.pool = _shared_pool(workers)
            self.round_key = f"{os.getpid()}-{next(_ROUND_KEYS)}"
            self.round_blob = pickle.dumps((round_version, rules), protocol=pickle.HIGHEST_PROTOCOL)
        self.batch: list[tuple[str, bytes]] = []
        self.batch_bytes = 0
        self.pending: deque = deque()
        self.done: list[tuple] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # The pool stays for the next round; a round that failed part-way leaves nothing queued on it
        # and waits for the batches already running.
        for future, _ in self.pending:
            future.cancel()
        for future, _ in self.pending:
            if not future.cancelled():
                try:
                    future.exception()
                except BaseException:  # cancelled meanwhile, or the pool broke: nothing to wait for
                    pass
        self.pending.clear()

    def submit(self, path: str, data: bytes) -> None:
        self.batch.append((path, data))
        self.batch_bytes += len(data)
        if self.batch_bytes >= self.BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.pool is None:
            try:
                self.done.extend(_score_batch(batch, *self.args, deadline=self.deadline))
            except rule_language.RuleLimitExceeded as exc:
                raise self._over(exc) from None
            return
        self.pending.append((self.pool.submit(_score_worker_batch, batch, self.round_key, self.round_blob,
                                              self.deadline), sum(len(d) for _, d in batch)))
        while len(self.pending) > self.IN_FLIGHT or sum(n for _, n in self.pending) > self.IN_FLIGHT_BYTES:
            self.done.extend(self._wait(self.pending.popleft()[0]))

    def _wait(self, future) -> list[tuple]:
        """A batch's rows; past the round's deadline the workers are ended and the round refused."""
        try:
            return future.result(timeout=max(0.0, self.deadline - time.time()))
        except FuturesTimeout:
            end_pool()
            raise ScoringDeadline(self.round_version) from None
        except (ScoringDeadline, rule_interpreter.RuleDeadline):
            # a worker saw the deadline before this process did (a busy machine): the others may still be
            # inside a batch, and are ended all the same
            end_pool()
            raise ScoringDeadline(self.round_version) from None
        except rule_language.RuleLimitExceeded as exc:
            raise self._over(exc) from None
        except BrokenProcessPool:  # a worker died: the next round starts a new pool
            end_pool()
            raise

    def _over(self, exc: BaseException) -> RoundRejected:
        if isinstance(exc, rule_interpreter.RuleDeadline):
            return ScoringDeadline(self.round_version)
        return RoundRejected(f"{self.round_version}: a rule of the round's rules went past its budget ({exc}); "
                             "the round keeps its previous data")

    def results(self) -> list[tuple]:
        self._flush()
        while self.pending:
            self.done.extend(self._wait(self.pending.popleft()[0]))
        return self.done


class ScoringPool:
    """The context a refresh scores rounds in: the pool its first large round starts is shut down when the context
    ends, its queues' semaphores released, not left to the interpreter's exit."""

    def __enter__(self) -> ScoringPool:
        return self

    def __exit__(self, *exc) -> None:
        shutdown_pool()
