"""Which node serves a request: its import set, by rendezvous hashing.

Requests with the same imports share warm workers (the daemon keys its pool
by the import header), so a cluster sends each import set to the same node
while that node lives: every node ranks each key by ``sha256(key, node)``
and the highest ranked live node wins (rendezvous hashing). When a node
leaves, only its keys move, each to its next choice.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, List, Mapping, Optional, Sequence

__all__ = ["import_key", "request_key", "ranked"]

_LINE_COMMENT = re.compile(r"--[^\n]*")
_BLOCK_COMMENT = re.compile(r"/-.*?-/", re.S)


def import_key(text: str) -> str:
    """The leading ``import`` commands of a Lean text, one per line.

    An approximation of the daemon's key (``leanpool_screen::header``): it
    only chooses a node, so a text it misreads is served correctly, only
    perhaps on a colder node.
    """
    body = _BLOCK_COMMENT.sub(" ", _LINE_COMMENT.sub(" ", text))
    tokens = body.split()
    imports: List[str] = []
    i = 0
    while i < len(tokens) and tokens[i] in ("import", "prelude", "module", "public", "meta", "all"):
        if tokens[i] == "import" and i + 1 < len(tokens):
            imports.append(tokens[i + 1])
            i += 2
        else:
            i += 1
    return "\n".join(f"import {m}" for m in imports)


def request_key(method: str, params: Optional[Mapping[str, Any]]) -> str:
    """The import set a request needs (``""`` for methods without Lean)."""
    if not isinstance(params, Mapping):
        return ""
    if method == "verify":
        return import_key(str(params.get("header") or ""))
    return import_key(str(params.get("text") or ""))


def ranked(key: str, nodes: Sequence[str]) -> List[str]:
    """``nodes`` from the key's first choice to its last (rendezvous order)."""

    def score(node: str) -> bytes:
        return hashlib.sha256(f"{key}\0{node}".encode("utf-8")).digest()

    return sorted(nodes, key=score, reverse=True)
