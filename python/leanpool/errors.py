"""Typed exceptions for the daemon's error answers (docs/protocol.md, "Error codes").

Every error answer raises a subclass of :class:`LeanpoolError` chosen by its
code: one class per documented code, :class:`UnknownCodeError` for a code
this client does not know (a newer daemon's). Outcomes of Lean itself
(a statement that does not elaborate, a time-out, a refusal by the guard)
are *results*, never exceptions.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

__all__ = [
    "LeanpoolError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "RequestTooLarge",
    "Overloaded",
    "WorkerFailed",
    "Unauthorized",
    "ShuttingDown",
    "SpawnFailed",
    "UnknownProject",
    "UnknownCodeError",
    "ConnectionLost",
    "DaemonError",
    "error_from_wire",
]


class LeanpoolError(Exception):
    """Base of every error this package raises for the daemon.

    Attributes:
        code: the JSON-RPC error code on the wire (``None`` for errors that
            are not an answer, such as :class:`ConnectionLost`).
        message: the daemon's message.
        data: the error's ``data`` member, if any.
    """

    #: The wire code this class stands for (``None``: not a wire code).
    CODE: Optional[int] = None
    #: The documented name of the code (``"OVERLOADED"`` ...).
    NAME: Optional[str] = None

    def __init__(self, message: str, code: Optional[int] = None, data: Any = None) -> None:
        self.code = self.CODE if code is None else code
        self.message = message
        self.data = data
        prefix = f"{self.NAME} ({self.code})" if self.NAME else f"error {self.code}"
        super().__init__(f"{prefix}: {message}" if self.code is not None else message)

    def __reduce__(self):  # picklable (Ray ships exceptions between processes)
        return (_rebuild, (type(self), self.message, self.code, self.data))


def _rebuild(cls: Type[LeanpoolError], message: str, code: Optional[int], data: Any) -> LeanpoolError:
    return cls(message, code, data)


class ParseError(LeanpoolError):
    """The line was not valid JSON or UTF-8: a client bug."""

    CODE, NAME = -32700, "PARSE_ERROR"


class InvalidRequest(LeanpoolError):
    """Valid JSON that is not a request (bad id, a batch, ...): a client bug."""

    CODE, NAME = -32600, "INVALID_REQUEST"


class MethodNotFound(LeanpoolError):
    """No such method on this daemon: check the name (or the daemon's version)."""

    CODE, NAME = -32601, "METHOD_NOT_FOUND"


class InvalidParams(LeanpoolError):
    """Params missing, of the wrong type, or past a documented cap: fix the request."""

    CODE, NAME = -32602, "INVALID_PARAMS"


class InternalError(LeanpoolError):
    """A bug in leanpool: report it."""

    CODE, NAME = -32603, "INTERNAL_ERROR"


class RequestTooLarge(LeanpoolError):
    """The request line exceeds the daemon's ``max_request_bytes``."""

    CODE, NAME = -32001, "REQUEST_TOO_LARGE"


class Overloaded(LeanpoolError):
    """The header's queue (or the daemon's connection limit) is full; retry later.

    The request never started. ``map`` retries these with back-off.
    """

    CODE, NAME = -32002, "OVERLOADED"


class WorkerFailed(LeanpoolError):
    """A Lean worker failed on this request; :attr:`cause` says how.

    Causes (docs/protocol.md): ``died_twice``, ``lean_panic``, ``memory_cap``,
    ``protocol_violation``, ``lean_error``, ``unexpected_answer``.
    """

    CODE, NAME = -32003, "WORKER_FAILED"

    @property
    def cause(self) -> Optional[str]:
        """``error.data.cause``, or ``None`` when the daemon sent none."""
        return self.data.get("cause") if isinstance(self.data, dict) else None


class Unauthorized(LeanpoolError):
    """This uid may not connect, or may not call ``shutdown``."""

    CODE, NAME = -32004, "UNAUTHORIZED"


class ShuttingDown(LeanpoolError):
    """The daemon is shutting down; reconnect to its successor and resend."""

    CODE, NAME = -32005, "SHUTTING_DOWN"


class SpawnFailed(LeanpoolError):
    """No Lean worker could be started for this header: see ``leanpool doctor``."""

    CODE, NAME = -32006, "SPAWN_FAILED"


class UnknownProject(LeanpoolError):
    """The request's ``project`` names no project the daemon serves (``data["projects"]`` lists them)."""

    CODE, NAME = -32007, "UNKNOWN_PROJECT"


class UnknownCodeError(LeanpoolError):
    """An error code this client does not know (a newer daemon's)."""


class ConnectionLost(LeanpoolError, ConnectionError):
    """The connection closed before this request was answered.

    The daemon went away (or closed the connection); the request may or may
    not have run. Reconnect and resend.
    """


class DaemonError(LeanpoolError):
    """A local daemon (:class:`leanpool.Daemon`) could not be started or stopped."""


_BY_CODE: Dict[int, Type[LeanpoolError]] = {
    cls.CODE: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestTooLarge,
        Overloaded,
        WorkerFailed,
        Unauthorized,
        ShuttingDown,
        SpawnFailed,
        UnknownProject,
    )
    if cls.CODE is not None
}


def error_from_wire(error: Any) -> LeanpoolError:
    """The exception for a response's ``error`` member (``{"code", "message", "data"?}``)."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return InternalError(f"the daemon sent an unreadable error member: {error!r}")
    code = error["code"]
    cls = _BY_CODE.get(code, UnknownCodeError)
    return cls(str(error.get("message", "")), code, error.get("data"))
