"""leanpool.ray on a local two-node Ray cluster (everything on 127.0.0.1),
real daemons and real Lean: one worker per node (two worker starts),
routing by import set, spill-over, Ray Data, and a node removed mid-run."""

from __future__ import annotations

import json
import time

import pytest

import ray  # scripts/setup installs it: missing, this module fails, never skips

import leanpool
from leanpool.ray import LeanpoolCluster, score_jsonl

from conftest import lean_backend, local_ray_cluster

# A queue that holds a whole routing run (16 items in two batches of 8): the
# daemon answers no OVERLOADED there, so nothing spills (spill-over under
# load: test_ray_fake.py).
# The result cache off: every answer comes from a node's Lean.
CONFIG = {"pool": {"max_workers": 1, "spares_per_key": 0, "max_queue_per_key": 16}, "cache": {"enabled": False}}
# Light import sets of core Lean; the test uses one whose first choice is the
# removable (non-head) node. `rfl` on numerals needs only the prelude.
HEADERS = ["", "import Init", "import Init.Prelude", "import Init.Core", "import Init.Data.Nat.Basic", "import Init.Data.List.Basic"]


def text(header: str, i: int, good: bool = True) -> str:
    return f"{header}\ntheorem t{i} : ({i} : Nat) = {i if good else i + 1} := rfl\n"


@pytest.fixture(scope="module")
def env():
    with local_ray_cluster() as cluster:
        lc = LeanpoolCluster(CONFIG, lean=str(lean_backend()))
        head_id = ray.get_runtime_context().get_node_id()
        worker_id = next(n for n in lc.nodes if n != head_id)
        header = next((h for h in HEADERS if lc.preferred_node("check", text(h, 0)) == worker_id), None)
        assert header is not None, "no test header routes to the worker node"
        try:
            yield {"cluster": cluster, "worker": next(iter(cluster.worker_nodes)), "lc": lc, "worker_id": worker_id, "head_id": head_id, "header": header}
        finally:
            lc.shutdown()


def pool_headers(lc, node):
    """The import sets the node's daemon has a pool key for (warm or queued)."""
    with leanpool.Client(lc.nodes[node]["socket"]) as c:
        return {k.header for k in c.status().pool.keys}


def test_one_daemon_per_node(env):
    lc = env["lc"]
    assert set(lc.nodes) == {env["head_id"], env["worker_id"]}
    assert len({i["pid"] for i in lc.nodes.values()}) == 2


def test_routes_by_import_set_in_input_order(env):
    lc, h = env["lc"], env["header"]
    items = [text(h, i, good=(i % 5 != 2)) for i in range(16)]
    results = lc.map("check", items, progress=True)
    assert [r.status for r in results] == ["error" if i % 5 == 2 else "ok" for i in range(16)]
    # Not overloaded, the import set stays on its node: every item answered
    # there, and the other node's daemon never even saw the import set.
    assert lc.last_nodes == [env["worker_id"]] * 16
    assert lc.last_served == {env["worker_id"]: 16}
    assert any(k.strip() == h.strip() for k in pool_headers(lc, env["worker_id"]))
    assert pool_headers(lc, env["head_id"]) == set()


def test_ray_data_scores_a_jsonl(env, tmp_path):
    h = env["header"]
    path = tmp_path / "in.jsonl"
    rows = [{"id": i, "header": h, "statement": f"theorem s{i} : ({i} : Nat) = {i + (i == 3)} := rfl"} for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = sorted(score_jsonl(str(path)).take_all(), key=lambda r: r["id"])
    assert [(r["id"], r["status"]) for r in out] == [(i, "error" if i == 3 else "ok") for i in range(6)]
    assert json.loads(out[0]["result"])["status"] == "ok" and out[0]["error"] is None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_node_removed_mid_run_loses_nothing(env):
    lc, h, worker_id = env["lc"], env["header"], env["worker_id"]
    items = [text(h, 100 + i, good=(i % 7 != 0)) for i in range(40)]
    fut = lc.map_async("check", items)
    deadline = time.monotonic() + 300
    while lc.in_flight().get(worker_id, 0) == 0 and not fut.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lc.in_flight().get(worker_id, 0) > 0, "the worker node had nothing in flight to lose"
    daemon_pid = lc.nodes[worker_id]["pid"]
    env["cluster"].remove_node(env["worker"])
    results = fut.result(timeout=900)
    # Every item answered once (a second answer raises inside map), in order.
    assert [r.status for r in results] == ["error" if i % 7 == 0 else "ok" for i in range(40)]
    assert worker_id not in lc.alive_nodes
    assert lc.last_served[env["head_id"]] > 0
    deadline = time.monotonic() + 30
    while _alive(daemon_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(daemon_pid), "the removed node's daemon outlived its actor"


def test_score_jsonl_ray_example(env, tmp_path):
    # examples/score_jsonl_ray.py's scoring, on this cluster (after the node
    # removal: the head node serves), both ways.
    import importlib.util
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO / "examples"))
    spec = importlib.util.spec_from_file_location("score_jsonl_ray", REPO / "examples" / "score_jsonl_ray.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    path = tmp_path / "in.jsonl"
    h = env["header"]
    rows = [{"id": f"r{i}", "text": text(h, 200 + i, good=i != 1)} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for data in (False, True):
        out = example.score(env["lc"], "check", str(path), data=data)
        assert [(o["id"], o["status"]) for o in out] == [("r0", "ok"), ("r1", "error"), ("r2", "ok"), ("r3", "ok")]
