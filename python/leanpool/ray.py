"""Scale-out on Ray: one daemon per node, requests routed by import set.

``pip install leanpool[ray]``. On a running Ray cluster::

    from leanpool.ray import LeanpoolCluster
    cluster = LeanpoolCluster(config={"pool": {"max_workers": 4}}, lean="/opt/leanpool/.lean-wasm")
    results = cluster.map("check", texts, progress=True)       # input order
    future = cluster.map_async("verify", items)                # concurrent.futures.Future
    ds = score_jsonl("statements.jsonl")                        # Ray Data, map_batches

* Each alive node gets one :class:`NodeServer` actor (node-affinity
  scheduling, ``num_cpus=0``) owning a :class:`~leanpool.Daemon`; the
  daemon dies with the actor's process (even SIGKILLed).
* A request goes to its import set's first live choice by rendezvous
  hashing (:mod:`leanpool.routing`), so a node keeps warm the workers of the
  import sets it serves. It spills over to the next choice when its node has
  ``max_batches_per_node`` batches in flight while another node is idle, or
  when the node answered ``OVERLOADED``.
* A node that dies (actor gone, daemon gone): its in-flight batches are
  sent to the items' next choices. Results are recorded per input index,
  once: none is lost and none is answered twice.
"""

from __future__ import annotations

import collections
import heapq
import json
import os
import threading
import time
from concurrent.futures import Future
from typing import Any, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from . import methods as m
from ._progress import progress_bar
from ._retry import Backoff
from .client import Client, _finish
from .daemon import Daemon
from .errors import ConnectionLost, LeanpoolError, Overloaded, error_from_wire
from .routing import ranked, request_key

__all__ = ["LeanpoolCluster", "NodeServer", "score_dataset", "score_jsonl"]

#: Ray namespace and name prefix of the per-node actors.
NAMESPACE = "leanpool"
ACTOR_PREFIX = "leanpool-node-"

#: One answer as it crosses Ray: ("ok", result) | ("error", error member) | ("lost", message).
Outcome = Tuple[str, Any]


class NodeServer:
    """A node's daemon, owned by a Ray actor pinned to that node.

    ``run`` serves a batch on the daemon, pipelined; OVERLOADED is *not*
    retried here (the cluster spills such items to another node).
    """

    def __init__(self, config: Any = None, lean: Optional[str] = None) -> None:
        self.node_id = ray.get_runtime_context().get_node_id()
        self.daemon = Daemon(config, lean=lean)
        self.client = Client(self.daemon.socket)

    def info(self) -> Dict[str, Any]:
        """This node's id, its daemon's socket (for clients on the node) and pid."""
        return {"node_id": self.node_id, "socket": self.daemon.socket, "pid": self.daemon.pid}

    def run(self, method: str, params: List[Any]) -> List[Outcome]:
        """Each request's outcome, in order."""
        futures = [self.client.submit(method, p) for p in params]
        out: List[Outcome] = []
        for f in futures:
            try:
                out.append(("ok", f.result()))
            except ConnectionLost as e:
                out.append(("lost", e.message))
            except LeanpoolError as e:
                out.append(("error", {"code": e.code, "message": e.message, "data": e.data}))
        return out

    def stop(self) -> None:
        """Stops the daemon (and its workers)."""
        self.client.close()
        self.daemon.stop()


_NodeServerActor = ray.remote(NodeServer)


class LeanpoolCluster:
    """One daemon per Ray node, and a router in front of them.

    Args:
        config: each daemon's configuration (as :class:`~leanpool.Daemon`).
        lean: setup's ``backend.json`` (or its directory) on every node.
        nodes: node ids to use (default: every alive node).
        batch_size: requests per Ray call to a node.
        max_batches_per_node: batches in flight per node before spilling.
        backoff: how OVERLOADED items wait before being sent again.
    """

    def __init__(
        self,
        config: Any = None,
        *,
        lean: Optional[str] = None,
        nodes: Optional[Sequence[str]] = None,
        batch_size: int = 8,
        max_batches_per_node: int = 2,
        backoff: Backoff = Backoff(),
    ) -> None:
        if not ray.is_initialized():
            ray.init()
        self.batch_size = max(1, batch_size)
        self.max_batches_per_node = max(1, max_batches_per_node)
        self.backoff = backoff
        node_ids = list(nodes) if nodes is not None else [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        self._servers: Dict[str, Any] = {}
        for node in node_ids:
            self._servers[node] = _NodeServerActor.options(
                name=ACTOR_PREFIX + node,
                namespace=NAMESPACE,
                num_cpus=0,
                max_concurrency=self.max_batches_per_node + 4,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(config, lean)
        infos = ray.get([s.info.remote() for s in self._servers.values()])
        self.nodes: Dict[str, Dict[str, Any]] = {i["node_id"]: i for i in infos}
        self._dead: set = set()
        self._lock = threading.Lock()
        #: Items answered per node in the latest ``map`` (a Counter).
        self.last_served: "collections.Counter[str]" = collections.Counter()
        #: The node that answered each item of the latest ``map``, in input order.
        self.last_nodes: List[Optional[str]] = []
        #: OVERLOADED answers re-sent (after a back-off) in the latest ``map``.
        self.last_retries = 0
        self._running: Optional[_Dispatch] = None

    def in_flight(self) -> Dict[str, int]:
        """Batches in flight per node in the running ``map`` (empty when none runs)."""
        run = self._running
        if run is None:
            return {}
        return dict(collections.Counter(n for n, _ in list(run.inflight.values())))

    @property
    def alive_nodes(self) -> List[str]:
        """Node ids whose daemon this cluster still uses."""
        with self._lock:
            return [n for n in self._servers if n not in self._dead]

    def preferred_node(self, method: str, params: Any) -> str:
        """The live node a request goes to first."""
        return ranked(request_key(method, m.params_of(method, params)), self.alive_nodes)[0]

    def _mark_dead(self, node: str) -> None:
        with self._lock:
            self._dead.add(node)

    def map(
        self,
        method: str,
        items: Iterable[Any],
        *,
        progress: bool = False,
        return_exceptions: bool = False,
        desc: Optional[str] = None,
    ) -> List[Any]:
        """Runs ``method`` on every item across the nodes; typed results in input order.

        Items as for :meth:`leanpool.Client.map`. An error answer raises the
        first in input order unless ``return_exceptions``.
        """
        params = [m.params_of(method, it) for it in items]
        bar = progress_bar(len(params), progress, desc or method)
        run = _Dispatch(self, method, params, bar.update)
        self._running = run
        try:
            raw = run.run()
        finally:
            self._running = None
            bar.close()
        self.last_served = run.served
        self.last_nodes = run.node_of
        self.last_retries = sum(run.attempts)
        return _finish(method, raw, return_exceptions)

    def map_async(self, method: str, items: Iterable[Any], **kwargs: Any) -> "Future[List[Any]]":
        """:meth:`map` in a background thread; a ``concurrent.futures.Future`` of its list."""
        fut: "Future[List[Any]]" = Future()
        items = list(items)

        def work() -> None:
            try:
                fut.set_result(self.map(method, items, **kwargs))
            except BaseException as e:
                fut.set_exception(e)

        threading.Thread(target=work, name="leanpool-ray-map", daemon=True).start()
        return fut

    def shutdown(self) -> None:
        """Stops every daemon and its actor."""
        for node, server in self._servers.items():
            if node in self._dead:
                continue
            try:
                ray.get(server.stop.remote(), timeout=60)
            except Exception:
                pass
            ray.kill(server)
        self._servers.clear()

    def __enter__(self) -> "LeanpoolCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


class _Dispatch:
    """One cluster ``map``: per-node queues by rendezvous order, batches in flight,
    spill-over, re-sending on node death. Each index is answered exactly once."""

    def __init__(self, cluster: LeanpoolCluster, method: str, params: List[Any], on_done: Any) -> None:
        self.c, self.method, self.params, self.on_done = cluster, method, params, on_done
        self.results: List[Any] = [_UNSET] * len(params)
        self.keys = [request_key(method, p) for p in params]
        self.queues: Dict[str, Deque[int]] = collections.defaultdict(collections.deque)
        self.attempts = [0] * len(params)
        self.retry_at: List[Tuple[float, int]] = []
        self.inflight: Dict[Any, Tuple[str, List[int]]] = {}
        self.left = len(params)
        self.served: "collections.Counter[str]" = collections.Counter()
        self.node_of: List[Optional[str]] = [None] * len(params)
        self._last_node: Dict[int, str] = {}
        for i in range(len(params)):
            self._enqueue(i)

    def _enqueue(self, i: int, skip: Optional[str] = None) -> None:
        nodes = self.c.alive_nodes
        if not nodes:
            raise LeanpoolError("every leanpool node of the Ray cluster is gone; nothing can serve the rest")
        order = ranked(self.keys[i], nodes)
        # Spilled (OVERLOADED) items rotate through the choices.
        target = order[(order.index(skip) + 1) % len(order)] if skip in order else order[0]
        self.queues[target].append(i)

    def _busy(self, node: str) -> int:
        return sum(1 for n, _ in self.inflight.values() if n == node)

    def _fill(self) -> None:
        now = time.monotonic()
        while self.retry_at and self.retry_at[0][0] <= now:
            _, i = heapq.heappop(self.retry_at)
            self._enqueue(i, skip=self._last_node.get(i))
        # Every node takes its own queue first; only then do nodes with room
        # left take what saturated nodes cannot send yet. (Spilling in the
        # same pass saw a node that had just answered a batch as not
        # saturated, before it refilled: nothing ever spilled.)
        for spill in (False, True):
            for node in self.c.alive_nodes:
                while self._busy(node) < self.c.max_batches_per_node:
                    batch = self._take(node, spill)
                    if not batch:
                        break
                    ref = self.c._servers[node].run.remote(self.method, [self.params[i] for i in batch])
                    self.inflight[ref] = (node, batch)
                    for i in batch:
                        self._last_node[i] = node

    def _take(self, node: str, spill: bool) -> List[int]:
        """Up to a batch from the node's own queue, or (``spill``) from the
        longest queue of a node that is saturated (or gone)."""
        if not spill:
            source = self.queues.get(node)
        else:
            busy = [n for n, q in self.queues.items() if q and n != node
                    and (n not in self.c.alive_nodes or self._busy(n) >= self.c.max_batches_per_node)]
            source = self.queues[max(busy, key=lambda n: len(self.queues[n]))] if busy else None
        if not source:
            return []
        return [source.popleft() for _ in range(min(self.c.batch_size, len(source)))]

    def run(self) -> List[Any]:
        while self.left:
            self._fill()
            if not self.inflight:
                wait = (self.retry_at[0][0] - time.monotonic()) if self.retry_at else 0.05
                time.sleep(max(0.0, min(wait, 0.5)))
                continue
            ready, _ = ray.wait(list(self.inflight), num_returns=1, timeout=0.2)
            for ref in ready:
                self._collect(ref)
        return self.results

    def _collect(self, ref: Any) -> None:
        node, batch = self.inflight.pop(ref)
        try:
            outcomes = ray.get(ref)
        except ray.exceptions.RayActorError:
            self._node_lost(node, batch)
            return
        except ray.exceptions.RayError as e:  # a bug in the actor: an answer, not a re-send
            outcomes = [("error", {"code": -32603, "message": f"the node's actor failed: {e}"})] * len(batch)
        lost = [i for i, (kind, _) in zip(batch, outcomes) if kind == "lost"]
        if lost:
            self._node_lost(node, lost)
        for i, (kind, value) in zip(batch, outcomes):
            if kind == "ok":
                self.served[node] += 1
                self._answer(i, value, node)
            elif kind == "error":
                err = error_from_wire(value)
                if isinstance(err, Overloaded) and self.attempts[i] < self.c.backoff.max_retries:
                    heapq.heappush(self.retry_at, (time.monotonic() + self.c.backoff.delay(self.attempts[i]), i))
                    self.attempts[i] += 1
                else:
                    self._answer(i, err, node)

    def _node_lost(self, node: str, batch: List[int]) -> None:
        """The node is gone: its items (never answered) go to their next choice."""
        self.c._mark_dead(node)
        orphans = list(batch) + list(self.queues.pop(node, ()))
        for i in orphans:
            self._enqueue(i)

    def _answer(self, i: int, value: Any, node: str) -> None:
        if self.results[i] is not _UNSET:
            raise AssertionError(f"item {i} answered twice")  # the invariant this class keeps
        self.results[i] = value
        self.node_of[i] = node
        self.left -= 1
        self.on_done(1)


_UNSET = object()


# ---- Ray Data ----


class _NodeScorer:
    """``map_batches`` UDF: scores a batch on the daemon of the node it runs on."""

    def __init__(self, method: str) -> None:
        node = ray.get_runtime_context().get_node_id()
        try:
            server = ray.get_actor(ACTOR_PREFIX + node, namespace=NAMESPACE)
        except ValueError:
            raise LeanpoolError(f"no leanpool daemon on node {node}: create a LeanpoolCluster first") from None
        self.method = method
        self.client = Client(ray.get(server.info.remote())["socket"])

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        rows = _rows(batch)
        results = self.client.map(self.method, [_params(self.method, r) for r in rows], return_exceptions=True)
        status, result, error = [], [], []
        for r in results:
            if isinstance(r, LeanpoolError):
                status.append(None), result.append(None), error.append(json.dumps({"code": r.code, "message": r.message}))
            else:
                status.append(getattr(r, "status", None) or r.check.status)
                result.append(json.dumps(r.to_dict(), ensure_ascii=False))
                error.append(None)
        out = dict(batch)
        out.update(status=status, result=result, error=error)
        return out


def _rows(batch: Dict[str, Any]) -> List[Dict[str, Any]]:
    cols = list(batch)
    n = len(batch[cols[0]]) if cols else 0
    return [{c: _plain(batch[c][k]) for c in cols} for k in range(n)]


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _params(method: str, row: Dict[str, Any]) -> Dict[str, Any]:
    if method == "verify":
        return {k: row[k] for k in ("header", "statement", "proof") if row.get(k) is not None}
    if row.get("text") is not None:
        return {"text": row["text"]}
    return {"text": (row.get("header") or "") + "\n" + row["statement"]}


def score_dataset(ds: Any, method: str = "check", *, batch_size: int = 16, concurrency: Optional[int] = None) -> Any:
    """``ds.map_batches``: adds ``status``, ``result`` (JSON) and ``error``
    (JSON, per-item errors) columns, each batch served by its node's daemon.

    Rows: ``text``, or ``header`` + ``statement`` (+ ``proof`` for
    ``verify``), as ``leanpool batch`` reads. Needs a :class:`LeanpoolCluster`.
    """
    n_nodes = len([n for n in ray.nodes() if n.get("Alive")])
    return ds.map_batches(
        _NodeScorer,
        fn_constructor_kwargs={"method": method},
        batch_size=batch_size,
        batch_format="numpy",
        concurrency=concurrency or n_nodes,
        num_cpus=0.5,
    )


def score_jsonl(path: str, method: str = "check", **kwargs: Any) -> Any:
    """A JSONL file (``leanpool batch``'s input) read with Ray Data and scored.

    Rows come out in Ray Data's order (match them by ``id``), or in input
    order with ``DataContext.get_current().execution_options.preserve_order = True``.
    """
    return score_dataset(ray.data.read_json(os.fspath(path)), method, **kwargs)
