"""Line-delimited JSON-RPC 2.0 framing shared by both clients."""

from __future__ import annotations

import json
from typing import Any, Optional, Tuple, Union

from .errors import InternalError, LeanpoolError, error_from_wire

#: Default bound on one connection's unanswered requests, the client's own
#: (kept below the daemon's default ``max_inflight_per_connection``, past
#: which the daemon stops reading a connection: docs/protocol.md).
DEFAULT_MAX_IN_FLIGHT = 256


def encode(req_id: int, method: str, params: Any) -> bytes:
    """One request line (``id`` before ``params``, as protocol.md asks)."""
    req = {"jsonrpc": "2.0", "id": req_id, "method": method}
    if params is not None:
        req["params"] = params
    return (json.dumps(req, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def parse(line: bytes) -> Tuple[Optional[Any], Union[Any, LeanpoolError], bool]:
    """``(id, result or error, is_error)`` of one answer line.

    ``id`` is ``None`` for an answer addressed to no request (a parse error,
    or a connection-level ``UNAUTHORIZED``/``OVERLOADED``).
    """
    try:
        msg = json.loads(line)
    except ValueError as e:
        return None, InternalError(f"the daemon sent a line that is not JSON: {e}"), True
    if not isinstance(msg, dict):
        return None, InternalError(f"the daemon sent a non-object line: {line[:200]!r}"), True
    if "error" in msg and msg["error"] is not None:
        return msg.get("id"), error_from_wire(msg["error"]), True
    return msg.get("id"), msg.get("result"), False
