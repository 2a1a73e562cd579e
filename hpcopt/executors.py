"""Where a batch's tasks run: in this process, on a local process pool, or on Dask.

One abstraction for ``hpcopt solve`` and ``hpcopt sweep``.  A task is a small picklable
value (an instance file path and the solve settings, or one sweep run's settings) and
``fn(task)`` turns it into a result on a worker; ``Executor.run`` calls ``on_result`` in
this process as results come back, so rows stream to the output file as they complete.

- ``SerialExecutor``: one task after the other, here (the reference: every other executor
  gives the same results, since seeds never depend on placement).
- ``PoolExecutor``: ``workers`` local processes (``concurrent.futures``), no extra package.
- ``DaskExecutor``: a Dask ``distributed`` cluster, ``local:N`` (a ``LocalCluster`` of N
  single-threaded worker processes) or a scheduler address ``tcp://HOST:PORT``; needs the
  ``dask`` extra (``pip install "hpcopt[dask]"``).

Tasks travel in chunks of ``chunk`` (default: about 8 chunks per worker, at most 200 tasks
per chunk), so a Dask task (~5 ms of overhead) carries hundreds of small solves.  A chunk
lost with its worker (a process that died: segfault, out of memory, ``os._exit``) is
retried one task per chunk; a task lost again is run alone after everything else, and only
one that is lost alone is reported to ``on_result`` as an error (``worker lost: ...``), so
a crash becomes one error row, never a lost batch.

Stop signals (``StopSignals``): pending chunks are dropped (serial, pool) or
skip their tasks (Dask, through a ``distributed.Event``), running tasks finish or are
interrupted (the pool's workers get the signal), and their results are still reported; a
second signal stops waiting.

The stop/run engine lives here too: ``StopSignals`` (the SIGINT/SIGTERM handlers of a run and
of each pool worker, ``worker_init`` / ``worker_stop``), ``Interrupted`` (a signal during a
task) and ``run_tasks`` (executor + progress bar + signals), which ``hpcopt.batch`` and
``hpcopt.sweep`` build on; this module imports neither.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from .errors import HpcoptError, OptionError, one_line

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
MAX_CHUNK = 200
CHUNKS_PER_WORKER = 8
DASK_MISSING = ('--dask needs the Dask "distributed" package, which is not installed: '
                'pip install "hpcopt[dask]"')

# on_result(index, result, error): error is None, or one line saying why the task failed
OnResult = Callable[[int, Any, "str | None"], None]


# ---------------------------------------------------------------------------- signals


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGINT or SIGTERM) that arrived while a task was running.

    A ``KeyboardInterrupt``, so backends that stop cleanly on Ctrl-C (CP-SAT) stop the same
    way on SIGTERM, and ``except Exception`` in a backend never swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopSignals:
    """SIGINT/SIGTERM handlers for a run (main thread only; a signal already ignored, as in
    a background job, stays ignored).

    A signal sets ``signum`` (the first one wins) and is forwarded to ``forward()``'s process
    ids (the pool's workers); inside ``solving()`` it also raises ``Interrupted``, so a
    long task stops at once instead of at its end."""

    def __init__(self):
        self.signum: int | None = None
        self.count = 0
        self.forward = lambda: ()
        self._solving = False
        self._old: dict[int, Any] = {}

    def _handler(self, signum, frame) -> None:
        self.count += 1
        if self.signum is None:
            self.signum = signum
        for pid in self.forward():
            try:
                os.kill(pid, signum)
            except OSError:
                pass
        if self._solving:
            self._solving = False
            raise Interrupted(signum)

    def install(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                old = signal.getsignal(sig)
                if old is not signal.SIG_IGN:
                    self._old[sig] = old
                    signal.signal(sig, self._handler)
        return self

    def reinstall(self) -> None:
        """Install again (a backend may have reset a handler: CP-SAT's own Ctrl-C handling
        leaves SIGINT at SIG_DFL)."""
        for sig in self._old:
            signal.signal(sig, self._handler)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._old.clear()

    @contextmanager
    def solving(self):
        self._solving = self.signum is None
        try:
            yield
        finally:
            self._solving = False


_WORKER_STOP: StopSignals | None = None


def worker_init() -> None:
    """Pool worker: the same handlers, so Ctrl-C (sent to the whole process group) or the
    signal the parent forwards interrupts the worker's current task only."""
    global _WORKER_STOP
    _WORKER_STOP = StopSignals().install()


def worker_stop() -> StopSignals | None:
    """The stop handlers of this pool worker (``None`` outside a pool worker)."""
    return _WORKER_STOP


# ---------------------------------------------------------------------------- executors


class NotStarted:
    """The result of a task a stop signal kept from starting (nothing to report)."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "NotStarted"


NOT_STARTED = NotStarted()


def default_chunk(n_tasks: int, workers: int) -> int:
    """Tasks per chunk: about ``CHUNKS_PER_WORKER`` chunks per worker, at most
    ``MAX_CHUNK`` tasks each (results stream back a chunk at a time)."""
    return max(1, min(MAX_CHUNK, math.ceil(n_tasks / (max(1, workers) * CHUNKS_PER_WORKER))))


def chunks(n_tasks: int, size: int) -> list[list[int]]:
    return [list(range(i, min(i + size, n_tasks))) for i in range(0, n_tasks, size)]


def _stop_requested() -> bool:
    stop = _WORKER_STOP
    return stop is not None and stop.signum is not None


def run_chunk(fn, tasks: Sequence, stop_event: str | None = None) -> list[tuple]:
    """Worker side: ``[(result, error), ...]`` for ``tasks`` in order; a task a stop kept
    from starting gives ``(NOT_STARTED, None)``.  ``stop_event`` names a Dask ``Event``
    looked at before the first task and then every half second."""
    event, checked, stopped = None, 0.0, False
    if stop_event is not None:
        from distributed import Event

        event = Event(stop_event)
    out = []
    for task in tasks:
        if not stopped and event is not None and time.monotonic() - checked > 0.5:
            stopped = event.is_set()
            checked = time.monotonic()
        if stopped or _stop_requested():
            stopped = True
            out.append((NOT_STARTED, None))
            continue
        try:
            out.append((fn(task), None))
        except Exception as exc:  # noqa: BLE001 - one task's failure is that task's row
            out.append((None, f"{type(exc).__name__}: {one_line(exc)}"))
    return out


class Executor:
    """Runs ``fn`` over tasks and reports each result with ``on_result`` as it arrives."""

    name = "serial"
    workers = 1
    remote = False  # workers may not share this process's working folder

    def run(self, fn, tasks: Sequence, on_result: OnResult, stop=None,
            chunk: int | None = None, serial_fn=None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return self.name

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Every task here, in order.  ``serial_fn(task, stop)`` (default ``fn(task)``) lets a
    task be interrupted by the batch's own signal handlers."""

    def run(self, fn, tasks, on_result, stop=None, chunk=None, serial_fn=None) -> None:
        for i, task in enumerate(tasks):
            if stop is not None and stop.signum is not None:
                break
            try:
                result = serial_fn(task, stop) if serial_fn is not None else fn(task)
            except Exception as exc:  # noqa: BLE001 - as on a worker
                on_result(i, None, f"{type(exc).__name__}: {one_line(exc)}")
                continue
            on_result(i, result, None)


class _ChunkLoop:
    """What the pool and Dask share: the chunks still to submit, results reported as chunks
    finish, and the retries after a worker died.

    A chunk whose worker died is split: its tasks go back one per chunk.  A task that is
    lost again (it may only have shared the worker's fate) waits until nothing else runs and
    is then run alone; lost alone, it is reported as an error (``worker lost: ...``)."""

    def __init__(self, n_tasks: int, on_result, stop, size: int, window: int | None = None):
        self.on_result, self.stop = on_result, stop
        self.queue: deque[list[int]] = deque(chunks(n_tasks, size))
        self.alone: deque[int] = deque()
        self.lost: dict[int, int] = {}
        self.window = window  # at most this many chunks in flight (None: all at once)

    @property
    def stopping(self) -> bool:
        return self.stop is not None and self.stop.signum is not None

    def next_chunks(self, in_flight: int) -> list[list[int]]:
        """The chunks to submit now, given how many are in flight."""
        if self.stopping:
            return []
        out = []
        while self.queue and (self.window is None or in_flight + len(out) < self.window):
            out.append(self.queue.popleft())
        if not out and not in_flight and not self.queue and self.alone:
            out.append([self.alone.popleft()])
        return out

    def report(self, idx: list[int], results: list[tuple]) -> None:
        for i, (result, error) in zip(idx, results):
            if isinstance(result, NotStarted):  # (a copy, after pickling)
                continue
            self.on_result(i, result, error)

    def failed(self, idx: list[int], error: str) -> None:
        """A chunk whose worker died (or a pool that broke under it)."""
        if self.stopping:
            return  # stopping: the lost tasks are not reported (--resume solves them)
        if len(idx) > 1:
            self.queue.extendleft([i] for i in reversed(idx))
            return
        i = idx[0]
        self.lost[i] = self.lost.get(i, 0) + 1
        if self.lost[i] == 1:
            self.alone.append(i)
        else:
            self.on_result(i, None, f"worker lost: {error}")


class PoolExecutor(Executor):
    """``workers`` local processes, at most two chunks per worker in flight; a worker that
    dies breaks the pool, which is made again for the chunks that were in flight."""

    name = "pool"

    def __init__(self, workers: int):
        self.workers = workers

    def describe(self) -> str:
        return f"{self.workers} local processes"

    def run(self, fn, tasks, on_result, stop=None, chunk=None, serial_fn=None) -> None:
        if not tasks:
            return
        size = chunk or default_chunk(len(tasks), self.workers)
        workers = min(self.workers, len(tasks))
        loop = _ChunkLoop(len(tasks), on_result, stop, size, window=2 * workers)
        pool = None
        futures: dict = {}
        pending: set = set()

        def new_pool():
            nonlocal pool
            pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_init)
            if stop is not None:
                stop.forward = lambda: list(getattr(pool, "_processes", None) or ())

        def fill() -> None:
            for idx in loop.next_chunks(len(pending)):
                fut = pool.submit(run_chunk, fn, [tasks[i] for i in idx])
                futures[fut] = idx
                pending.add(fut)

        new_pool()
        fill()
        count_at_stop = None
        try:
            while pending:
                finished, still = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                pending.intersection_update(still)
                broken = []
                for fut in finished:
                    idx = futures.pop(fut)
                    if fut.cancelled():
                        continue
                    try:
                        results = fut.result()
                    except BrokenProcessPool as exc:
                        broken.append((idx, one_line(exc) or "a worker process died"))
                        continue
                    except Exception as exc:  # noqa: BLE001 - e.g. a result that won't pickle
                        results = [(None, f"{type(exc).__name__}: {one_line(exc)}")] * len(idx)
                    loop.report(idx, results)
                if broken:
                    # every chunk in flight in a broken pool fails: a new pool retries them
                    lost = broken + [(futures.pop(f), "a worker process died")
                                     for f in list(pending)]
                    pending.clear()
                    pool.shutdown(wait=False, cancel_futures=True)
                    for idx, error in lost:
                        loop.failed(idx, error)
                    if not loop.stopping:
                        new_pool()
                fill()
                if loop.stopping:
                    if count_at_stop is None:
                        count_at_stop = stop.count
                        for fut in pending:
                            fut.cancel()
                    elif stop.count > count_at_stop:
                        break  # asked twice: do not wait for the running chunks
        finally:
            if stop is not None:
                stop.forward = lambda: ()
            if pending:
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.terminate()
            pool.shutdown(wait=not pending, cancel_futures=True)


def parse_dask(spec: str) -> tuple[str, Any]:
    """``local:N`` -> ("local", N); ``tcp://HOST:PORT`` (or any scheduler address, or a
    scheduler file ``*.json``) -> ("address", spec)."""
    text = spec.strip()
    if text.startswith("local"):
        _, sep, n = text.partition(":")
        try:
            count = int(n) if sep else 0
        except ValueError:
            count = 0
        if count < 1:
            raise HpcoptError(f"--dask {spec!r}: expected local:N (N worker processes, N >= 1)"
                              " or a scheduler address like tcp://HOST:8786")
        return "local", count
    if "://" in text or text.endswith(".json"):
        return "address", text
    raise HpcoptError(f"--dask {spec!r}: expected local:N or a scheduler address like "
                      "tcp://HOST:8786 (or a scheduler file .json)")


@contextmanager
def _sigint_ignored():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def dask_client(spec: str, *, allowed_failures: int | None = None):
    """A ``distributed.Client`` (and the ``LocalCluster`` it owns, or None) for ``spec``."""
    kind, value = parse_dask(spec)
    try:
        import distributed
    except ImportError:
        raise HpcoptError(DASK_MISSING) from None
    if kind == "local":
        import dask

        # glibc's own malloc tuning (None unsets it): with Dask's MALLOC_TRIM_THRESHOLD_=65536
        # the numpy tables of a DP solve were 2-4x slower in a worker than in this process
        config = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
        if allowed_failures is not None:
            config["distributed.scheduler.allowed-failures"] = allowed_failures
        with dask.config.set(config), _sigint_ignored():
            # workers start with Ctrl-C ignored: it reaches the whole process group, but it
            # is this process that stops the batch (workers finish their current task)
            cluster = distributed.LocalCluster(
                n_workers=value, threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=40)
        return distributed.Client(cluster), cluster
    try:
        if value.endswith(".json"):
            return distributed.Client(scheduler_file=value, timeout="30s"), None
        return distributed.Client(value, timeout="30s"), None
    except (OSError, TimeoutError) as exc:
        raise HpcoptError(f"--dask {spec}: cannot reach the scheduler ({one_line(exc)})") \
            from None
    except ValueError as exc:  # an address Dask cannot parse (an unknown protocol)
        raise HpcoptError(f"--dask {spec}: not a scheduler address Dask knows "
                          f"({one_line(exc)}); expected e.g. tcp://HOST:8786") from None


class DaskExecutor(Executor):
    """Chunks of tasks as Dask tasks on ``client`` (workers should run one thread each:
    ``dask worker ADDR --nthreads 1``).  ``spec`` (``local:N`` or an address) makes and
    owns the client; ``client=`` uses one the caller owns (tests share a LocalCluster)."""

    name = "dask"
    remote = True

    def __init__(self, spec: str | None = None, *, client=None):
        if client is None and spec is None:
            raise OptionError("DaskExecutor needs a scheduler: spec='local:N' or an address "
                              "(as for --dask), or client=, a distributed.Client")
        self._own = client is None
        self.cluster = None
        if client is None:
            client, self.cluster = dask_client(spec)
        self.client = client
        self.spec = spec or getattr(client.scheduler, "address", "a Dask client")

    @property
    def workers(self) -> int:
        try:
            info = self.client.scheduler_info()
            return max(1, sum(w.get("nthreads", 1) for w in info["workers"].values()))
        except Exception:  # noqa: BLE001
            return 1

    def describe(self) -> str:
        return f"Dask {self.spec} ({self.workers} worker threads)"

    def close(self) -> None:
        if self._own:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
            self._own = False

    def run(self, fn, tasks, on_result, stop=None, chunk=None, serial_fn=None) -> None:
        from distributed import Event, as_completed

        if not tasks:
            return
        size = chunk or default_chunk(len(tasks), self.workers)
        loop = _ChunkLoop(len(tasks), on_result, stop, size)
        event_name = f"hpcopt-stop-{uuid.uuid4().hex}"
        event = Event(event_name, client=self.client)
        futures: dict = {}
        done = as_completed()

        def fill() -> None:
            for idx in loop.next_chunks(len(futures)):
                fut = self.client.submit(run_chunk, fn, [tasks[i] for i in idx], event_name,
                                         pure=False, key=f"hpcopt-chunk-{uuid.uuid4().hex}")
                futures[fut] = idx
                done.add(fut)

        fill()
        count_at_stop, checked = None, 0.0
        try:
            while futures:
                batch = done.next_batch(block=False) if done.has_ready() else []
                if not batch:
                    time.sleep(0.02)
                for fut in batch:
                    idx = futures.pop(fut)
                    try:
                        results = fut.result()
                    except Exception as exc:  # noqa: BLE001 - KilledWorker, lost data ...
                        loop.failed(idx, f"{type(exc).__name__}: {one_line(exc)}")
                        continue
                    finally:
                        fut.release()
                    loop.report(idx, results)
                fill()
                if stop is not None and stop.signum is not None:
                    if count_at_stop is None:
                        count_at_stop = stop.count
                        event.set()  # chunks skip the tasks they have not started
                        checked = time.monotonic()
                    elif stop.count > count_at_stop:
                        break
                    elif time.monotonic() - checked > 0.5:
                        checked = time.monotonic()
                        if not self.client.nthreads():
                            break  # no worker left to finish the running chunks
        finally:
            if futures:
                self.client.cancel(list(futures))
            try:
                event.clear()
            except Exception:  # noqa: BLE001 - the cluster may be gone
                pass


def make_executor(workers: int = 1, dask: str | None = None, client=None) -> Executor:
    """The executor for ``--workers N`` / ``--dask SPEC`` (or an existing Dask client)."""
    if client is not None or dask:
        return DaskExecutor(dask, client=client)
    if workers > 1:
        return PoolExecutor(workers)
    return SerialExecutor()


def run_tasks(tasks: list, fn, serial_fn, on_result, *, executor=None, workers: int = 1,
              chunk: int | None = None, handle_signals: bool = False, progress: bool = False,
              desc: str = "solve", unit: str = "file") -> int | None:
    """Run ``fn`` over ``tasks`` on ``executor`` (default: serial, or a pool of
    ``workers``), calling ``on_result(index, result, error)`` here as each one is done;
    with ``handle_signals`` SIGINT/SIGTERM stop the run.  Returns the stop signal or None.
    The engine under ``hpcopt.batch.run_batch`` and ``hpcopt.sweep.run_sweep``."""
    from tqdm.auto import tqdm

    stop = StopSignals()
    if handle_signals:
        stop.install()
    own = executor is None
    if executor is None:
        executor = PoolExecutor(workers) if workers > 1 and len(tasks) > 1 \
            else SerialExecutor()
    try:
        # disable=None: off where stderr is not a terminal (no bar fragments in a log)
        with tqdm(total=len(tasks), unit=unit, desc=desc, disable=None if progress else True,
                  file=sys.stderr) as bar:
            def report(i, result, error):
                on_result(i, result, error, stop)
                bar.update(1)

            executor.run(fn, tasks, report, stop=stop, chunk=chunk, serial_fn=serial_fn)
    finally:
        stop.restore()
        if own:
            executor.close()
    return stop.signum
