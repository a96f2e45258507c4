"""The asyncio client: one connection, pipelined, answers matched by id."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Dict, Iterable, List, Optional, Union

from . import methods as m
from ._jsonrpc import DEFAULT_MAX_IN_FLIGHT, encode, parse
from ._progress import progress_bar
from ._retry import Backoff
from .client import _finish
from .errors import ConnectionLost, LeanpoolError, Overloaded
from .types import CacheClearResult, CheckResult, GtedResult, NormalizeResult, OptResult, ShutdownResult, StatusResult, VerifyResult

__all__ = ["AsyncClient"]

#: asyncio's per-line buffer limit: answers (``opt`` trees, ``status``) can
#: be long; the daemon's own answers are bounded by its request caps.
_LINE_LIMIT = 1 << 28


class AsyncClient:
    """An asyncio connection to a leanpool daemon.

    ``async with AsyncClient(path) as c: r = await c.check(text)``. Every
    coroutine may run concurrently with others on the same client: requests
    are pipelined on the one connection. Error answers raise
    :class:`~leanpool.errors.LeanpoolError` subclasses by code.
    """

    def __init__(self, socket_path: Union[str, "os.PathLike[str]"]) -> None:
        self.socket_path = os.fspath(socket_path)
        self._writer: Optional[asyncio.StreamWriter] = None
        self._reader_task: Optional["asyncio.Task[None]"] = None
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._next_id = 1
        self._closed: Optional[LeanpoolError] = None

    async def connect(self) -> "AsyncClient":
        """Opens the connection (``async with`` does this)."""
        try:
            reader, self._writer = await asyncio.open_unix_connection(self.socket_path, limit=_LINE_LIMIT)
        except OSError as e:
            raise ConnectionLost(
                f"cannot connect to a leanpool daemon at {self.socket_path}: {e} "
                "(start one: `leanpool serve --socket PATH`, or leanpool.Daemon())"
            ) from e
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(reader))
        return self

    async def close(self) -> None:
        """Closes the connection; unanswered requests fail with ConnectionLost."""
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        if self._reader_task is not None:
            self._reader_task.cancel()
            try:
                await self._reader_task
            except asyncio.CancelledError:
                pass
        self._fail_all(ConnectionLost("the client closed the connection"))

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        reason: LeanpoolError = ConnectionLost("the daemon closed the connection")
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                req_id, value, is_error = parse(line)
                if req_id is None:
                    if is_error:
                        reason = value
                        break
                    continue
                fut = self._pending.pop(req_id, None)
                if fut is None or fut.done():
                    continue
                if is_error:
                    fut.set_exception(value)
                else:
                    fut.set_result(value)
        except (OSError, ValueError) as e:
            reason = ConnectionLost(f"the connection to {self.socket_path} failed: {e}")
        finally:
            self._fail_all(reason)

    def _fail_all(self, reason: LeanpoolError) -> None:
        if self._closed is None:
            self._closed = reason
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(reason)

    async def submit(self, method: str, params: Any = None) -> Any:
        """Sends one request and waits for its raw JSON result."""
        if self._writer is None:
            raise ConnectionLost("not connected: use `async with AsyncClient(path)` or `await client.connect()`")
        if self._closed is not None:
            raise self._closed
        req_id = self._next_id
        self._next_id += 1
        fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        try:
            self._writer.write(encode(req_id, method, params))
            await self._writer.drain()
        except OSError as e:
            self._pending.pop(req_id, None)
            raise ConnectionLost(f"cannot send to {self.socket_path}: {e}") from e
        try:
            return await fut
        finally:
            self._pending.pop(req_id, None)

    async def call(self, method: str, params: Any = None) -> Any:
        """One request, its typed answer (``RESULT_TYPES``; raw JSON for other methods)."""
        method, params = m.request(method, params)
        return m.decode(method, await self.submit(method, params))

    async def _typed(self, req: m.Request) -> Any:
        return m.decode(req[0], await self.submit(*req))

    async def check(self, text: str, *, timeout_ms: Optional[int] = None, timings: Optional[bool] = None, **extra: Any) -> CheckResult:
        """Does ``text`` elaborate? (protocol.md, ``check``)"""
        return await self._typed(m.check(text, timeout_ms=timeout_ms, timings=timings, **extra))

    async def verify(self, statement: str, proof: str, *, header: Optional[str] = None, timeout_ms: Optional[int] = None, **extra: Any) -> VerifyResult:
        """``proof`` judged against the fixed ``statement`` (protocol.md, ``verify``)."""
        return await self._typed(m.verify(statement, proof, header=header, timeout_ms=timeout_ms, **extra))

    async def normalize(self, text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> NormalizeResult:
        """The statement as Lean elaborated it (protocol.md, ``normalize``)."""
        return await self._typed(m.normalize(text, timeout_ms=timeout_ms, **extra))

    async def opt(self, text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> OptResult:
        """The statement's operator tree (protocol.md, ``opt``)."""
        return await self._typed(m.opt(text, timeout_ms=timeout_ms, **extra))

    async def gted(self, a: m.Tree, b: m.Tree, *, mode: Optional[str] = None, **extra: Any) -> GtedResult:
        """Tree edit distance similarity of two trees (protocol.md, ``gted``)."""
        return await self._typed(m.gted(a, b, mode=mode, **extra))

    async def status(self) -> StatusResult:
        """The daemon and its pool (protocol.md, ``status``)."""
        return await self._typed(m.status())

    async def ping(self, payload: Any = None) -> Any:
        """Echoes ``payload``: a liveness probe."""
        return await self._typed(m.ping(payload))

    async def cache_clear(self) -> CacheClearResult:
        """Empties the daemon's result cache (its own uid only); ``.removed``."""
        return await self._typed(m.cache_clear())

    async def shutdown(self) -> ShutdownResult:
        """Asks the daemon to stop gracefully (its own uid only)."""
        return await self._typed(m.shutdown())

    async def map(
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
        """As :meth:`leanpool.Client.map`: pipelined, input order, OVERLOADED retried."""
        params = [m.params_of(method, it) for it in items]
        window = asyncio.Semaphore(max(1, max_in_flight))
        bar = progress_bar(len(params), progress, desc or method)

        async def one(p: Any) -> Any:
            async with window:
                attempt = 0
                while True:
                    try:
                        return await self.submit(method, p)
                    except Overloaded as e:
                        if attempt >= backoff.max_retries:
                            return e
                        await asyncio.sleep(backoff.delay(attempt))
                        attempt += 1
                    except LeanpoolError as e:
                        return e

        async def tracked(p: Any) -> Any:
            r = await one(p)
            bar.update(1)
            return r

        try:
            results = await asyncio.gather(*(tracked(p) for p in params))
        finally:
            bar.close()
        return _finish(method, results, return_exceptions)
