"""The blocking client: one Unix-socket connection, pipelined, thread-safe.

A background thread reads answers and hands each to the request waiting
for its id, so any number of threads may share one :class:`Client`, and
:meth:`Client.map` keeps many requests in flight on it.
"""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import Future
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import methods as m
from ._jsonrpc import DEFAULT_MAX_IN_FLIGHT, encode, parse
from ._progress import progress_bar
from ._retry import Backoff
from .errors import ConnectionLost, LeanpoolError, Overloaded
from .types import CacheClearResult, CheckResult, GtedResult, NormalizeResult, OptResult, ShutdownResult, StatusResult, VerifyResult

__all__ = ["Client"]

PathLike = Union[str, "os.PathLike[str]"]


class Client:
    """A connection to a leanpool daemon.

    Args:
        socket_path: the daemon's Unix socket (``leanpool serve --socket``).
        timeout: seconds to wait for one answer in :meth:`call` and the
            typed methods (``None``: wait as long as the daemon takes; the
            daemon's own ``timeout_ms`` bounds Lean's time anyway).

    Use as a context manager, or call :meth:`close`. Error answers raise
    :class:`~leanpool.errors.LeanpoolError` subclasses by code.
    """

    def __init__(self, socket_path: PathLike, *, timeout: Optional[float] = None) -> None:
        self.socket_path = os.fspath(socket_path)
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.socket_path)
        except OSError as e:
            self._sock.close()
            raise ConnectionLost(
                f"cannot connect to a leanpool daemon at {self.socket_path}: {e} "
                "(start one: `leanpool serve --socket PATH`, or leanpool.Daemon())"
            ) from e
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._pending: Dict[int, "Future[Any]"] = {}
        self._next_id = 1
        self._closed: Optional[LeanpoolError] = None
        self._reader = threading.Thread(target=self._read_loop, name="leanpool-client-reader", daemon=True)
        self._reader.start()

    # ---- connection ----

    def close(self) -> None:
        """Closes the connection; requests still unanswered fail with ConnectionLost."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
        self._fail_all(ConnectionLost("the client closed the connection"))

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _read_loop(self) -> None:
        reader = self._sock.makefile("rb")
        reason: LeanpoolError = ConnectionLost("the daemon closed the connection")
        try:
            for line in reader:
                if not line.strip():
                    continue
                req_id, value, is_error = parse(line)
                if req_id is None:
                    if is_error:  # about the connection (UNAUTHORIZED, OVERLOADED): it ends
                        reason = value
                        break
                    continue
                with self._state_lock:
                    fut = self._pending.pop(req_id, None)
                if fut is None:
                    continue  # a request abandoned by a timed-out caller
                if is_error:
                    fut.set_exception(value)
                else:
                    fut.set_result(value)
        except (OSError, ValueError) as e:
            reason = ConnectionLost(f"the connection to {self.socket_path} failed: {e}")
        finally:
            reader.close()
            self._fail_all(reason)

    def _fail_all(self, reason: LeanpoolError) -> None:
        with self._state_lock:
            if self._closed is None:
                self._closed = reason
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(reason)

    # ---- requests ----

    def submit(self, method: str, params: Any = None) -> "Future[Any]":
        """Sends one request now; the future holds its raw JSON result (or the error)."""
        fut: "Future[Any]" = Future()
        with self._state_lock:
            if self._closed is not None:
                fut.set_exception(self._closed)
                return fut
            req_id = self._next_id
            self._next_id += 1
            self._pending[req_id] = fut
        line = encode(req_id, method, params)
        try:
            with self._send_lock:
                self._sock.sendall(line)
        except OSError as e:
            with self._state_lock:
                self._pending.pop(req_id, None)
            if not fut.done():
                fut.set_exception(ConnectionLost(f"cannot send to {self.socket_path}: {e}"))
        return fut

    def call(self, method: str, params: Any = None) -> Any:
        """One request, its typed answer (``RESULT_TYPES``; raw JSON for other methods)."""
        method, params = m.request(method, params)
        return m.decode(method, self.submit(method, params).result(self.timeout))

    def _typed(self, req: m.Request) -> Any:
        return m.decode(req[0], self.submit(*req).result(self.timeout))

    def check(self, text: str, *, timeout_ms: Optional[int] = None, timings: Optional[bool] = None, **extra: Any) -> CheckResult:
        """Does ``text`` elaborate? (protocol.md, ``check``)"""
        return self._typed(m.check(text, timeout_ms=timeout_ms, timings=timings, **extra))

    def verify(self, statement: str, proof: str, *, header: Optional[str] = None, timeout_ms: Optional[int] = None, **extra: Any) -> VerifyResult:
        """``proof`` judged against the fixed ``statement`` (protocol.md, ``verify``)."""
        return self._typed(m.verify(statement, proof, header=header, timeout_ms=timeout_ms, **extra))

    def normalize(self, text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> NormalizeResult:
        """The statement as Lean elaborated it (protocol.md, ``normalize``)."""
        return self._typed(m.normalize(text, timeout_ms=timeout_ms, **extra))

    def opt(self, text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> OptResult:
        """The statement's operator tree (protocol.md, ``opt``)."""
        return self._typed(m.opt(text, timeout_ms=timeout_ms, **extra))

    def gted(self, a: m.Tree, b: m.Tree, *, mode: Optional[str] = None, **extra: Any) -> GtedResult:
        """Tree edit distance similarity of two trees (protocol.md, ``gted``)."""
        return self._typed(m.gted(a, b, mode=mode, **extra))

    def status(self) -> StatusResult:
        """The daemon and its pool (protocol.md, ``status``)."""
        return self._typed(m.status())

    def ping(self, payload: Any = None) -> Any:
        """Echoes ``payload``: a liveness probe."""
        return self._typed(m.ping(payload))

    def cache_clear(self) -> CacheClearResult:
        """Empties the daemon's result cache (its own uid only); ``.removed``."""
        return self._typed(m.cache_clear())

    def shutdown(self) -> ShutdownResult:
        """Asks the daemon to stop gracefully (its own uid only)."""
        return self._typed(m.shutdown())

    # ---- many requests ----

    def map(
        self,
        method: str,
        items: Iterable[Any],
        *,
        progress: bool = False,
        return_exceptions: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        backoff: Backoff = Backoff(),
        desc: Optional[str] = None,
    ) -> List[Any]:
        """Runs ``method`` on every item, pipelined; results in input order.

        Items are params dicts (or plain texts for ``check``/``normalize``/
        ``opt``). At most ``max_in_flight`` requests are unanswered at once;
        ``OVERLOADED`` answers are resent after ``backoff``. An error answer
        raises (the first in input order, once every item is answered)
        unless ``return_exceptions``, which puts it in that item's place.
        ``progress`` draws a tqdm bar.
        """
        params = [m.params_of(method, it) for it in items]
        runner = _MapRun(self, method, params, max_in_flight, backoff)
        bar = progress_bar(len(params), progress, desc or method)
        try:
            results = runner.run(bar.update)
        finally:
            bar.close()
        return _finish(method, results, return_exceptions)


def _finish(method: str, results: Sequence[Any], return_exceptions: bool) -> List[Any]:
    """Decodes ``map``'s raw results; raises the first error unless asked not to."""
    out: List[Any] = []
    for r in results:
        if isinstance(r, BaseException):
            if not return_exceptions:
                raise r
            out.append(r)
        else:
            try:
                out.append(m.decode(method, r))
            except LeanpoolError as e:
                if not return_exceptions:
                    raise
                out.append(e)
    return out


class _MapRun:
    """One ``Client.map``: a window of in-flight requests, retries on OVERLOADED."""

    def __init__(self, client: Client, method: str, params: List[Any], window: int, backoff: Backoff) -> None:
        self.client, self.method, self.params, self.backoff = client, method, params, backoff
        self.results: List[Any] = [None] * len(params)
        self.window = threading.Semaphore(max(1, window))
        self.left = len(params)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.on_done: Any = None

    def run(self, on_done: Any) -> List[Any]:
        self.on_done = on_done
        if not self.params:
            return []
        for i in range(len(self.params)):
            self.window.acquire()
            self._send(i, 0)
        self.done.wait()
        return self.results

    def _send(self, i: int, attempt: int) -> None:
        fut = self.client.submit(self.method, self.params[i])
        fut.add_done_callback(lambda f: self._answered(i, attempt, f))

    def _answered(self, i: int, attempt: int, fut: "Future[Any]") -> None:
        err = fut.exception()
        if isinstance(err, Overloaded) and attempt < self.backoff.max_retries:
            # Resent from a timer thread: this callback runs on the reader.
            t = threading.Timer(self.backoff.delay(attempt), self._send, (i, attempt + 1))
            t.daemon = True
            t.start()
            return
        self.results[i] = err if err is not None else fut.result()
        self.window.release()
        self.on_done(1)
        with self.lock:
            self.left -= 1
            if self.left == 0:
                self.done.set()
