"""Shared fixtures: the repository, the Lean that scripts/setup installed, daemons.

Tests run against real daemons (the `leanpool` binary `pip install .`
installed, or $LEANPOOL_BIN) and real Lean; a missing Lean FAILS the Lean
tests, it never skips them.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

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


def fake_lean_backend(directory: Path, log: Optional[Path] = None) -> Path:
    """A ``backend.json`` whose "Lean" is the scripted FAKE Lean
    (crates/leanpool-testkit, ``fake-lean``; scripts/test-python builds it):
    a test double that answers each text after its ``-- FAKE sleep MS``
    line, for tests whose point is routing and load, never Lean's answers.
    ``log``: the fake appends ``<pid> <last line>`` per text it elaborates.
    """
    binary = Path(os.environ.get("LEANPOOL_FAKE_LEAN") or REPO / "target" / "debug" / "fake-lean")
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"no fake Lean at {binary}: `cargo build -p leanpool-testkit --bin fake-lean` (scripts/test-python does)")
    env = {"FAKE_LOG": str(log)} if log is not None else {}
    path = directory / "backend.json"
    path.write_text(json.dumps({"backend": "native", "program": str(binary), "env": env,
                                "version": "FAKE Lean (leanpool-testkit fake-lean, a test double)"}))
    return path


#: A daemon config for the fake Lean: the OS sandbox off (the fake is a test
#: build outside the sandbox's read rules; the sandbox is tested on real
#: Lean), the result cache off (every request must reach a worker).
FAKE_DAEMON_CONFIG: Dict[str, Any] = {"sandbox": {"mode": "off"}, "cache": {"enabled": False}}


@contextlib.contextmanager
def local_ray_cluster(extra_nodes: int = 1) -> Iterator[Any]:
    """A Ray cluster of a head and ``extra_nodes`` nodes on this machine, all
    traffic on 127.0.0.1; ``ray.init`` connected to it. Yields the
    ``ray.cluster_utils.Cluster`` (``.worker_nodes``, a set, holds the extra nodes)."""
    import ray  # scripts/setup installs it: missing, the Ray tests fail, never skip
    import ray._private.services
    from ray.cluster_utils import Cluster

    ray._private.services.get_node_ip_address = lambda *a, **k: "127.0.0.1"
    common = {"node_ip_address": "127.0.0.1", "object_store_memory": 200 * 1024 * 1024}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False, **common})
    try:
        for _ in range(extra_nodes):
            cluster.add_node(num_cpus=2, **common)
        ray.init(address=cluster.address, _node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


#: One worker, no spare: each Lean test module pays one worker start.
#: A queue of 2 per header makes `map`'s OVERLOADED retries happen for real.
#: The result cache off: every answer comes from Lean, never from an earlier
#: test's identical request (test_client checks `cached` on purpose).
LEAN_CONFIG = {"pool": {"max_workers": 1, "spares_per_key": 0, "max_queue_per_key": 2}, "cache": {"enabled": False}}


@pytest.fixture(scope="session")
def nolean_daemon() -> Iterator[leanpool.Daemon]:
    """A real daemon without Lean (it serves ping, gted, status; Lean methods answer SPAWN_FAILED)."""
    with leanpool.Daemon(require_lean=False, env={"LEANPOOL_BACKEND_JSON": "/nonexistent/backend.json"}) as d:
        yield d
