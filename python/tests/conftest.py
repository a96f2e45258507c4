"""Shared fixtures: the repository, the Lean that scripts/setup installed, daemons.

Tests run against real daemons (the `leanpool` binary `pip install .`
installed, or $LEANPOOL_BIN) and real Lean; a missing Lean FAILS the Lean
tests, it never skips them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

import leanpool

REPO = Path(__file__).resolve().parents[2]


def lean_backend() -> Path:
    """setup's backend.json: $LEANPOOL_WASM_DIR, else the repository's .lean-native / .lean-wasm."""
    candidates = []
    if os.environ.get("LEANPOOL_WASM_DIR"):
        candidates.append(Path(os.environ["LEANPOOL_WASM_DIR"]) / "backend.json")
    candidates += [REPO / ".lean-native" / "backend.json", REPO / ".lean-wasm" / "backend.json"]
    for c in candidates:
        if c.is_file():
            return c
    pytest.fail(f"no Lean installed (looked for {', '.join(map(str, candidates))}): run `bash scripts/setup`")


#: One worker, no spare: each Lean test module pays one worker start.
#: A queue of 2 per header makes `map`'s OVERLOADED retries happen for real.
LEAN_CONFIG = {"pool": {"max_workers": 1, "spares_per_key": 0, "max_queue_per_key": 2}}


@pytest.fixture(scope="session")
def nolean_daemon() -> Iterator[leanpool.Daemon]:
    """A real daemon without Lean (it serves ping, gted, status; Lean methods answer SPAWN_FAILED)."""
    with leanpool.Daemon(require_lean=False, env={"LEANPOOL_BACKEND_JSON": "/nonexistent/backend.json"}) as d:
        yield d
