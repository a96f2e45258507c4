"""leanpool from Python: warm Lean 4 workers behind a Unix socket.

>>> import leanpool
>>> with leanpool.Daemon() as d, d.client() as c:          # doctest: +SKIP
...     r = c.check("theorem t : 2 + 2 = 4 := by decide")
...     r.status
'ok'

* :class:`Client` (blocking, thread-safe, pipelined) and :class:`AsyncClient`
  (asyncio): one method per RPC method, typed results (:mod:`leanpool.types`),
  ``map(method, items, progress=True)`` for many requests.
* :class:`Daemon`: a local ``leanpool serve`` started and stopped from Python.
* :mod:`leanpool.errors`: one exception class per error code.
* :mod:`leanpool.ray` (``pip install leanpool[ray]``): one daemon per Ray node.

The wire contract is docs/protocol.md in the leanpool repository.
"""

from __future__ import annotations

from ._retry import Backoff
from .aio import AsyncClient
from .client import Client
from .daemon import Daemon, find_binary
from .errors import (
    ConnectionLost,
    DaemonError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LeanpoolError,
    MethodNotFound,
    Overloaded,
    ParseError,
    RequestTooLarge,
    ShuttingDown,
    SpawnFailed,
    UnknownProject,
    Unauthorized,
    UnknownCodeError,
    WorkerFailed,
)
from .types import (
    CheckResult,
    Diagnostic,
    GtedResult,
    NormalizeResult,
    OptResult,
    StatusResult,
    VerifyResult,
)

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("leanpool")
except PackageNotFoundError:  # a source checkout on sys.path, not installed
    __version__ = "0+source"

__all__ = [
    "AsyncClient",
    "Backoff",
    "CheckResult",
    "Client",
    "ConnectionLost",
    "Daemon",
    "DaemonError",
    "Diagnostic",
    "GtedResult",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LeanpoolError",
    "MethodNotFound",
    "NormalizeResult",
    "OptResult",
    "Overloaded",
    "ParseError",
    "RequestTooLarge",
    "ShuttingDown",
    "SpawnFailed",
    "UnknownProject",
    "StatusResult",
    "Unauthorized",
    "UnknownCodeError",
    "VerifyResult",
    "WorkerFailed",
    "find_binary",
]
