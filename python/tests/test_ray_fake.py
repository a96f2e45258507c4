"""leanpool.ray under load, on a local two-node Ray cluster (everything on
127.0.0.1) with real daemons whose workers are the scripted FAKE Lean
(conftest.fake_lean_backend): the point here is routing and spill-over,
which need many slow requests (a fixed `-- FAKE sleep`), not Lean's answers
(those are test_ray.py's, on real Lean)."""

from __future__ import annotations

import collections
import re

import pytest

import ray  # scripts/setup installs it: missing, this module fails, never skips

import leanpool
from leanpool.ray import LeanpoolCluster

from conftest import FAKE_DAEMON_CONFIG, fake_lean_backend, local_ray_cluster

# One worker per daemon and a queue of 2 per import set: a batch of 4
# pipelined at one daemon already overflows it (OVERLOADED), and a node
# with its 2 batches in flight is saturated.
CONFIG = {**FAKE_DAEMON_CONFIG, "pool": {"max_workers": 1, "max_workers_per_key": 1, "spares_per_key": 0, "max_queue_per_key": 2}}
HEADERS = ["", "import Init", "import Init.Prelude", "import Init.Core", "import Init.Data.Nat.Basic", "import Init.Data.List.Basic"]


def text(header: str, name: str, sleep_ms: int) -> str:
    # The theorem last: the fake's log records a text's last line.
    return f"{header}\n-- FAKE sleep {sleep_ms}\ntheorem {name} : True := trivial\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("fake-ray")
    log = d / "fake.log"
    with local_ray_cluster():
        lc = LeanpoolCluster(CONFIG, lean=str(fake_lean_backend(d, log)), batch_size=4, max_batches_per_node=2)
        head = ray.get_runtime_context().get_node_id()
        other = next(n for n in lc.nodes if n != head)
        first = {n: next(h for h in HEADERS if lc.preferred_node("check", text(h, "x", 0)) == n) for n in (head, other)}
        try:
            yield {"lc": lc, "log": log, "head": head, "other": other, "first": first}
        finally:
            lc.shutdown()


def elaborated(log, prefix):
    """How often the fake workers (of both nodes, one log) elaborated each
    theorem named ``prefix<N>`` (a log line is ``<pid> <last line>``)."""
    counts = collections.Counter()
    for line in log.read_text().splitlines() if log.exists() else []:
        m = re.search(rf"\b({prefix}\d+)\b", line)
        if m:
            counts[m.group(1)] += 1
    return counts


def status(lc, node):
    with leanpool.Client(lc.nodes[node]["socket"]) as c:
        return c.status().pool


def test_an_import_set_stays_on_its_node(env):
    # Light load (2 items per import set, fast): each import set is served
    # by its own first choice, and the other node's daemon never sees it.
    lc, head, other, first = env["lc"], env["head"], env["other"], env["first"]
    items, want = [], []
    for i in range(2):
        for node in (head, other):
            items.append(text(first[node], f"stay{node[:6]}{i}", 20))
            want.append(node)
    results = lc.map("check", items)
    assert [r.status for r in results] == ["ok"] * len(items)
    assert lc.last_nodes == want
    for node in (head, other):
        keys = {k.header.strip() for k in status(lc, node).keys}
        assert keys == {first[node].strip()}, (node, keys)


def test_an_overloaded_node_spills_to_the_other(env, capsys):
    # 24 slow items of ONE import set, whose first choice is `other`: its
    # daemon (1 worker, queue 2) answers OVERLOADED and its batches saturate
    # it, so the head node must take some. Each item answered once, in
    # order, and elaborated by exactly one fake worker.
    lc, head, other, first = env["lc"], env["head"], env["other"], env["first"]
    h = first[other]
    n = 24
    items = [text(h, f"spill{i}", 150) for i in range(n)]
    assert {lc.preferred_node("check", t) for t in items} == {other}
    overloaded_before = status(lc, other).counters.overloaded
    results = lc.map("check", items, progress=True, desc="spill")
    assert [r.status for r in results] == ["ok"] * n
    assert [r.declarations[0].name for r in results] == [f"spill{i}" for i in range(n)]
    served = collections.Counter(lc.last_nodes)
    assert served[other] > 0 and served[head] > 0, served
    assert served[other] + served[head] == n
    assert status(lc, other).counters.overloaded > overloaded_before, "the first choice was never overloaded"
    assert h.strip() in {k.header.strip() for k in status(lc, head).keys}, "the head took none of the import set"
    ran = elaborated(env["log"], "spill")
    assert ran == {f"spill{i}": 1 for i in range(n)}, ran
    # The cluster's progress bar counted every item once.
    err = capsys.readouterr().err
    counts = [int(c) for c in re.findall(rf"(\d+)/{n}\b", err)]
    assert counts and max(counts) == n and counts[-1] == n, err[-500:]


def test_a_saturated_node_spills_to_an_idle_one_with_no_refusal(env):
    # Spill-over ALONE (issue 22 part 3), without the OVERLOADED retry the
    # test above also needs: one item per Ray call, so a node with its
    # `max_batches_per_node` (2) calls in flight holds 2 requests, which
    # its daemon (1 worker, queue 2) always accepts. 16 slow items of ONE
    # import set whose first choice is `other`: `other` is saturated by its
    # 2 calls in flight, the head node is idle, so the router must move
    # work to the head with no refusal anywhere: no OVERLOADED counted by
    # either daemon, none re-sent by the router. Each item answered once,
    # in input order, and elaborated by exactly one fake worker.
    lc, head, other, first = env["lc"], env["head"], env["other"], env["first"]
    h = first[other]
    n = 16
    items = [text(h, f"idle{i}", 150) for i in range(n)]
    assert {lc.preferred_node("check", t) for t in items} == {other}
    refused_before = {node: status(lc, node).counters.overloaded for node in (head, other)}
    saved = lc.batch_size
    lc.batch_size = 1
    try:
        results = lc.map("check", items)
    finally:
        lc.batch_size = saved
    assert [r.status for r in results] == ["ok"] * n
    assert [r.declarations[0].name for r in results] == [f"idle{i}" for i in range(n)]
    refused_after = {node: status(lc, node).counters.overloaded for node in (head, other)}
    assert refused_after == refused_before, "a daemon refused work (OVERLOADED): not spill-over alone"
    assert lc.last_retries == 0, "the router re-sent OVERLOADED items"
    served = collections.Counter(lc.last_nodes)
    assert served[head] > 0, f"nothing spilled to the idle node: {served}"
    assert served[other] > 0 and served[other] + served[head] == n, served
    ran = elaborated(env["log"], "idle")
    assert ran == {f"idle{i}": 1 for i in range(n)}, ran
