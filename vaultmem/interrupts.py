"""Where Ctrl-C and SIGTERM may interrupt a command (the ground floor: standard library only).

Importing the CLI and parsing arguments take tens of milliseconds (typer, click, the
command modules). A signal landing there used to surface as a traceback from whatever
was running (an import lock, typing's annotation code) or as click's silent exit. So
signals are *deferred* (:func:`defer_signals`, the first thing :func:`vaultmem.entry.main`
does) until a command runs: inside :func:`interruptible` (entered by the CLI boundary
around every command) SIGINT raises KeyboardInterrupt and SIGTERM raises
:class:`~vaultmem.errors.Terminated`, each unwinding through the command's ``finally``
blocks (lock, workers, temp files) to one line and exit 130 or 143; one that came while
deferred is raised as the command starts. A signal after the command has finished changes
nothing: its work is done. :func:`deferred` holds signals back around the import of C
extensions, wherever in the layers that import happens; so this module sits below all of
them and imports nothing of vaultmem at module level.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: list[int] = []


def _defer(signum: int, frame: object) -> None:
    _pending.append(signum)


def defer_signals() -> None:
    """From now until :func:`interruptible` is entered, SIGINT and SIGTERM wait."""
    for sig in _SIGNALS:
        # An ignored signal (a background job's SIGINT, nohup) stays ignored.
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _defer)


def _in_import_system(frame: object) -> bool:
    while frame is not None:
        code = getattr(frame, "f_code", None)
        if code is not None and code.co_filename.startswith("<frozen importlib"):
            return True
        frame = getattr(frame, "f_back", None)
    return False


def _retry(signum: int, frame: object) -> None:
    if _later:
        _raise(_later[-1], frame)


_later: list[int] = []


def _raise(signum: int, frame: object) -> None:
    if _in_import_system(frame):
        # Inside the import system an exception can land in one of its weakref callbacks,
        # which Python prints as "Exception ignored" and drops: the signal would be lost
        # behind a traceback. Re-sending the signal at once is no cure (it lands in this
        # very handler, still under the callback), so a 2 ms timer asks again once the
        # import has moved on.
        _later.append(signum)
        signal.signal(signal.SIGALRM, _retry)
        signal.setitimer(signal.ITIMER_REAL, 0.002)
        return
    _later.clear()
    if signum == signal.SIGTERM:
        from vaultmem.errors import Terminated  # imported by the command long before

        raise Terminated
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT and SIGTERM raise (a deferred one at once); the handlers before it
    are given back after, so an in-process caller (a test runner) keeps its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in (*_SIGNALS, signal.SIGALRM)}
    live = [sig for sig in _SIGNALS if before[sig] is not signal.SIG_IGN]
    for sig in live:
        signal.signal(sig, _raise)
    try:
        waiting = [sig for sig in _pending if sig in live]
        _pending.clear()
        if waiting:
            _raise(waiting[0], None)
        yield
    finally:
        if _later:  # a signal that came during the last import: the command is over
            signal.setitimer(signal.ITIMER_REAL, 0)
            _later.clear()
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Within: SIGINT and SIGTERM wait; one that came is raised when the block ends.

    For importing C extensions (numpy, onnxruntime, chromadb): an exception raised by a
    signal handler inside their module initialisation is printed as a traceback and turned
    into an ImportError ("import numpy failed"), so the command would fail as if a package
    were missing instead of stopping as interrupted.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    came: list[int] = []
    for sig, handler in before.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if came:
            handler = before[signal.Signals(came[0])]
            if callable(handler):
                handler(came[0], None)
