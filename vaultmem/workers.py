"""Forked worker processes that never outlive their parent and never keep its locks.

Issue 9: `index --rebuild` killed with SIGKILL left its workers alive under PID 1, still
holding the vault lock through the descriptor they inherited at fork, so every later
write failed with "lock busy". :func:`run_forked` is the one way vaultmem starts worker
processes. Each worker

* closes its copies of the parent's lock descriptors (the parent keeps the lock: an
  ``flock`` belongs to the open file description, not to one descriptor);
* dies with its parent: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, a thread polling
  ``getppid()`` elsewhere (a parent killed with SIGKILL takes its workers within 0.5 s);
* ignores SIGINT (Ctrl-C reaches the whole process group; the parent decides) and dies
  quietly on SIGTERM, which the parent sends to stop it when the run is interrupted
  or fails.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from vaultmem.errors import VaultmemError
from vaultmem.vault import close_inherited_locks

Report = Callable[[int], None]
# A job runs in a worker: it gets a callback for progress (units done) and returns a
# picklable result.
Job = Callable[[Report], Any]

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_PR_SET_PDEATHSIG = 1
_TICK, _DONE, _FAILED = "tick", "done", "failed"


def run_forked(jobs: Sequence[Job], on_progress: Report | None = None) -> list[Any]:
    """Run each job in its own forked process and return their results, in order.

    Call it from the thread that waits for the results (on Linux a worker's death
    signal is tied to the thread that forked it). Progress reported by the workers is
    passed to ``on_progress`` in this process. An exception in a job is raised here; an
    interrupt here (KeyboardInterrupt, or the CLI's SIGTERM) stops every worker before
    it propagates.
    """
    ctx = multiprocessing.get_context("fork")
    channel: Any = ctx.Queue()
    parent = os.getpid()
    procs = [
        ctx.Process(target=_worker_main, args=(channel, i, job, parent), daemon=True)
        for i, job in enumerate(jobs)
    ]
    try:
        _start(procs)
        results = _collect(channel, procs, on_progress)
        for p in procs:
            p.join(timeout=5)
        return results
    finally:
        _stop(procs)
        channel.close()


def _start(procs: Sequence[Any]) -> None:
    # A signal that lands between fork and the worker's own setup would run the parent's
    # Python handlers in the child: block them across the forks (children inherit the
    # mask and unblock it once set up); pending ones reach the parent afterwards.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        for p in procs:
            p.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _collect(channel: Any, procs: Sequence[Any], on_progress: Report | None) -> list[Any]:
    results: dict[int, Any] = {}
    suspects: set[int] = set()
    while len(results) < len(procs):
        try:
            index, kind, payload = channel.get(timeout=0.2)
        except queue.Empty:
            # A worker that exited without a result may still have it in the pipe:
            # only a second empty wait in a row proves it died (killed, out of memory).
            dead = {i for i, p in enumerate(procs) if i not in results and p.exitcode is not None}
            lost = dead & suspects
            if lost:
                code = procs[min(lost)].exitcode
                raise VaultmemError(
                    f"a worker process ended without its result (exit status {code})"
                ) from None
            suspects = dead
            continue
        if kind == _TICK:
            if on_progress is not None:
                on_progress(payload)
        elif kind == _DONE:
            results[index] = pickle.loads(payload)
        else:
            raise _unpickled_error(payload)
    return [results[i] for i in range(len(procs))]


def _stop(procs: Sequence[Any]) -> None:
    """Make sure no worker outlives this call: SIGTERM, then SIGKILL after 2 s."""
    started = [p for p in procs if p.pid is not None]
    for p in started:
        if p.is_alive():
            p.terminate()
    for p in started:
        p.join(timeout=2)
        if p.is_alive():
            p.kill()
            p.join()


def _worker_main(channel: Any, index: int, job: Job, parent: int) -> None:
    _become_worker(parent)
    try:
        result = job(lambda n: channel.put((index, _TICK, n)))
        channel.put((index, _DONE, pickle.dumps(result)))
    except BaseException as exc:  # reported to the parent, which raises it
        channel.put((index, _FAILED, _pickled_error(exc)))


def _become_worker(parent: int) -> None:
    close_inherited_locks()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler, inherited at fork
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if not _arm_death_signal():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the death signal was armed


def _arm_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _unpickled_error(payload: bytes) -> BaseException:
    try:
        exc = pickle.loads(payload)
    except Exception:  # an exception class whose __init__ does not round-trip
        return VaultmemError("a worker process failed (its error could not be read back)")
    return exc if isinstance(exc, BaseException) else VaultmemError(str(exc))


def _pickled_error(exc: BaseException) -> bytes:
    try:
        return pickle.dumps(exc)
    except Exception:  # an exception carrying unpicklable state
        return pickle.dumps(VaultmemError(f"a worker process failed: {type(exc).__name__}: {exc}"))
