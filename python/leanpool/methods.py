"""One place for the RPC methods: their params and their result types.

The clients (:mod:`leanpool.client`, :mod:`leanpool.aio`) and the Ray layer
build requests with these functions and decode answers with
:func:`decode`, so a method's parameter names are written once. Keyword
arguments not named here are passed on as params unchanged (a newer daemon's
optional parameters work without a new client).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Type, Union

from ._wire import ResultDecodeError, Wire
from .errors import InternalError
from .types import (
    CacheClearResult,
    CheckResult,
    GtedNode,
    GtedResult,
    NormalizeResult,
    OptResult,
    ShutdownResult,
    StatusResult,
    TreeNode,
    VerifyResult,
)

__all__ = ["RESULT_TYPES", "TEXT_METHODS", "Request", "decode", "params_of", "request"]

#: A method name and its params object.
Request = Tuple[str, Optional[Dict[str, Any]]]

#: Result type per method; a method not listed (``ping``, a newer daemon's)
#: is answered with the plain JSON value.
RESULT_TYPES: Dict[str, Type[Wire]] = {
    "check": CheckResult,
    "verify": VerifyResult,
    "normalize": NormalizeResult,
    "opt": OptResult,
    "gted": GtedResult,
    "status": StatusResult,
    "shutdown": ShutdownResult,
    "cache_clear": CacheClearResult,
}

#: Methods whose params are ``{"text": ...}``: ``map`` takes plain strings for them.
TEXT_METHODS = frozenset({"check", "normalize", "opt"})

Tree = Union[Mapping[str, Any], TreeNode, GtedNode]


def decode(method: str, result: Any) -> Any:
    """The typed result of ``method`` (the JSON value for untyped methods)."""
    cls = RESULT_TYPES.get(method)
    if cls is None:
        return result
    try:
        return cls.from_dict(result)
    except ResultDecodeError as e:
        raise InternalError(f"`{method}` answered with an unreadable result ({e}); is the daemon's version this client's?") from e


def params_of(method: str, item: Any) -> Optional[Dict[str, Any]]:
    """Params for one ``map`` item: a dict as is, a string as ``{"text": ...}``
    for ``check``/``normalize``/``opt``, a ``(method, params)`` request's params."""
    if item is None or isinstance(item, dict):
        return item
    if isinstance(item, Mapping):
        return dict(item)
    if isinstance(item, str) and method in TEXT_METHODS:
        return {"text": item}
    raise TypeError(f"`{method}` items must be dicts of params" + (" or strings" if method in TEXT_METHODS else "") + f", got {type(item).__name__}")


def _params(**kw: Any) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _tree(t: Tree) -> Any:
    return t.to_dict() if isinstance(t, Wire) else t


def check(text: str, *, timeout_ms: Optional[int] = None, timings: Optional[bool] = None, **extra: Any) -> Request:
    """``check``: does ``text`` (a whole file, header and body) elaborate?"""
    return "check", _params(text=text, timeout_ms=timeout_ms, timings=timings, **extra)


def verify(
    statement: str,
    proof: str,
    *,
    header: Optional[str] = None,
    timeout_ms: Optional[int] = None,
    timings: Optional[bool] = None,
    **extra: Any,
) -> Request:
    """``verify``: ``proof`` (a term or ``by`` block) judged against ``statement``."""
    return "verify", _params(
        header=header or None, statement=statement, proof=proof, timeout_ms=timeout_ms, timings=timings, **extra
    )


def normalize(text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> Request:
    """``normalize``: the statement as Lean elaborated it."""
    return "normalize", _params(text=text, timeout_ms=timeout_ms, **extra)


def opt(text: str, *, timeout_ms: Optional[int] = None, **extra: Any) -> Request:
    """``opt``: the statement's operator tree."""
    return "opt", _params(text=text, timeout_ms=timeout_ms, **extra)


def gted(a: Tree, b: Tree, *, mode: Optional[str] = None, **extra: Any) -> Request:
    """``gted``: tree edit distance similarity (``mode``: alpha, paper, plain)."""
    return "gted", _params(a=_tree(a), b=_tree(b), mode=mode, **extra)


def status() -> Request:
    """``status``: the daemon and its pool."""
    return "status", None


def ping(payload: Any = None) -> Request:
    """``ping``: echoes ``payload``."""
    return "ping", payload


def cache_clear() -> Request:
    """``cache_clear``: empty the daemon's result cache (its own uid only)."""
    return "cache_clear", None


def shutdown() -> Request:
    """``shutdown``: graceful stop (only the daemon's own uid)."""
    return "shutdown", None


def request(method: str, params: Any = None) -> Request:
    """Any method by name (``lease`` excepted: it needs a tunnel)."""
    if method == "lease":
        raise ValueError("`lease` turns the connection into a tunnel; use `leanpool lsp --socket` instead")
    return method, params
