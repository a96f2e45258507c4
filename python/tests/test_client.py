"""Client, AsyncClient and Daemon against a real daemon that has no Lean
(transport, pipelining, typed errors); Lean itself: test_lean.py."""

from __future__ import annotations

import asyncio
import os

import pytest

import leanpool
from leanpool import errors


def test_ping_round_trips_unicode(nolean_daemon):
    with nolean_daemon.client() as c:
        assert c.ping({"s": "é ∀ 🎉", "n": 1}) == {"s": "é ∀ 🎉", "n": 1}


def test_error_answers_raise_one_class_per_code(nolean_daemon):
    with nolean_daemon.client() as c:
        with pytest.raises(errors.MethodNotFound) as e:
            c.call("chek", {"text": "x"})
        assert e.value.code == -32601
        with pytest.raises(errors.InvalidParams) as e:
            c.gted({"content": "x"}, {"content": "x"}, mode="fuzzy")
        assert "fuzzy" in e.value.message
        with pytest.raises(errors.SpawnFailed) as spawn:
            c.check("theorem t : True := trivial")
        assert isinstance(spawn.value, leanpool.LeanpoolError) and spawn.value.code == -32006


def test_error_from_wire_knows_every_documented_code():
    for code, cls in [(-32700, errors.ParseError), (-32600, errors.InvalidRequest), (-32601, errors.MethodNotFound),
                      (-32602, errors.InvalidParams), (-32603, errors.InternalError), (-32001, errors.RequestTooLarge),
                      (-32002, errors.Overloaded), (-32003, errors.WorkerFailed), (-32004, errors.Unauthorized),
                      (-32005, errors.ShuttingDown), (-32006, errors.SpawnFailed)]:
        e = errors.error_from_wire({"code": code, "message": "m", "data": {"cause": "died_twice"}})
        assert type(e) is cls and e.code == code
    assert errors.error_from_wire({"code": -32003, "message": "m", "data": {"cause": "lean_panic"}}).cause == "lean_panic"
    assert type(errors.error_from_wire({"code": -31999, "message": "new"})) is errors.UnknownCodeError


def test_map_pipelines_and_keeps_input_order(nolean_daemon):
    with nolean_daemon.client() as c:
        out = c.map("ping", [{"i": i} for i in range(3000)], progress=True, max_in_flight=512)
    assert out == [{"i": i} for i in range(3000)]


def test_map_returns_or_raises_per_item_errors(nolean_daemon):
    items = [{"a": {"content": "x"}, "b": {"content": "x"}}, {"a": {"content": "x"}, "b": {"content": "x"}, "mode": "bad"}]
    with nolean_daemon.client() as c:
        ok, bad = c.map("gted", items, return_exceptions=True)
        assert ok.similarity == 1.0 and isinstance(bad, errors.InvalidParams)
        with pytest.raises(errors.InvalidParams):
            c.map("gted", items)


def test_client_is_thread_safe(nolean_daemon):
    from concurrent.futures import ThreadPoolExecutor

    with nolean_daemon.client() as c, ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: c.ping(i), range(400)))
    assert got == list(range(400))


def test_async_client_pipelines(nolean_daemon):
    async def run():
        async with leanpool.AsyncClient(nolean_daemon.socket) as c:
            many = await asyncio.gather(*(c.ping(i) for i in range(500)))
            mapped = await c.map("ping", [{"i": i} for i in range(500)], progress=True)
            with pytest.raises(errors.MethodNotFound):
                await c.call("nope")
            st = await c.status()
            return many, mapped, st

    many, mapped, st = asyncio.run(run())
    assert many == list(range(500))
    assert mapped == [{"i": i} for i in range(500)]
    assert st.daemon.backend.kind == "unavailable" and st.pool.counters.requests >= 0


def test_connecting_to_nothing_says_what_to_do(tmp_path):
    with pytest.raises(errors.ConnectionLost) as e:
        leanpool.Client(tmp_path / "none.sock")
    assert "leanpool serve" in str(e.value)


def test_pending_requests_fail_when_the_daemon_goes_away():
    d = leanpool.Daemon(require_lean=False, env={"LEANPOOL_BACKEND_JSON": "/nonexistent/backend.json"})
    c = d.client()
    assert c.ping(1) == 1
    d.stop()
    assert not d.running
    with pytest.raises(errors.ConnectionLost):
        c.ping(2)
    c.close()


def test_daemon_with_config_file_and_socket(tmp_path):
    cfg = tmp_path / "lp.toml"
    cfg.write_text("gted_max_nodes = 3\n")
    sock = tmp_path / "d.sock"
    with leanpool.Daemon(cfg, socket=sock, require_lean=False, env={"LEANPOOL_BACKEND_JSON": "/x.json"}) as d:
        assert d.socket == str(sock)
        with d.client() as c, pytest.raises(errors.InvalidParams):
            c.gted({"content": "a", "children": [{"content": "b"}, {"content": "c"}, {"content": "d"}]}, {"content": "a"})
        pid = d.pid
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert not sock.exists()


def test_daemon_refuses_to_start_without_lean_when_lean_is_required():
    with pytest.raises(leanpool.DaemonError) as e:
        leanpool.Daemon(env={"LEANPOOL_BACKEND_JSON": "/nonexistent/backend.json"})
    assert "scripts/setup" in str(e.value)


def test_daemon_dies_with_its_sigkilled_owner(tmp_path):
    # The owner is SIGKILLed (no atexit, no finalizer): the parent-death
    # signal, tied to the keeper thread, must still stop the daemon.
    import subprocess
    import sys
    import time

    code = (
        "import leanpool, os\n"
        "d = leanpool.Daemon(require_lean=False, env={'LEANPOOL_BACKEND_JSON': '/x.json'})\n"
        "print(d.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = int(run.stdout.strip())
    deadline = time.monotonic() + 15
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}"), "the daemon outlived its SIGKILLed owner"


def test_status_says_where_worker_limits_come_from(tmp_path):
    # status.pool.limits as a user reads it: sized to the machine (`cores`
    # or `memory`) with one project; with two projects sharing the machine,
    # each pool's share is `shared` (not `configured`: nothing set it). A
    # backend is needed to serve projects: the fake Lean's, never started
    # (no request reaches a worker here).
    from conftest import fake_lean_backend

    lean = fake_lean_backend(tmp_path)
    with leanpool.Daemon(None, lean=lean) as d, d.client() as c:
        one = c.status().pool.limits
    assert {one.max_workers.source, one.max_workers_per_key.source} <= {"cores", "memory"}
    with leanpool.Daemon({"project": [{"name": "a"}, {"name": "b"}]}, lean=lean) as d, d.client() as c:
        st = c.status()
    shares = {p.name: p.pool.limits for p in st.projects}
    assert set(shares) == {"a", "b"}
    # With two projects the total is a hard cap over both (issue 25).
    assert st.workers is not None and st.workers.total.source in {"cores", "memory"}
    assert st.workers.alive == 0 and st.workers.leased == 0
    for lim in shares.values():
        # `borrowed` on a machine whose total is below 2 (no share each).
        src = "shared" if st.workers.total.value >= 2 else "borrowed"
        assert (lim.max_workers.source, lim.max_workers_per_key.source) == (src, src)
        # What bound the machine-wide total shared out, and the memory's
        # figure beside the cores' (issue 22 part 4).
        assert lim.total is not None and lim.total.source in {"cores", "memory"}
        assert lim.by_memory is not None and lim.total.value >= lim.max_workers.value
    assert sum(lim.max_workers.value for lim in shares.values()) <= max(one.max_workers.value, 2)


def test_cache_answers_a_repeated_check_on_purpose(tmp_path):
    # The one Python test that wants the cache on (the Lean fixtures turn it
    # off): the second identical check is answered `cached: true` and never
    # reaches Lean. Fake Lean (leanpool-testkit): its log shows each text it
    # elaborated, so "never reached Lean" is counted, not assumed.
    from conftest import fake_lean_backend

    log = tmp_path / "fake.log"
    lean = fake_lean_backend(tmp_path, log)
    # The cache keys answers by the library: a LEAN_PATH with one .olean
    # gives the fake a library identity (without one the cache stays off).
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Fake.olean").write_bytes(b"fake olean")
    # A fresh cache dir: the first answer is computed, never an earlier run's.
    cfg = {"sandbox": {"mode": "off"}, "pool": {"max_workers": 1, "spares_per_key": 0},
           "cache": {"dir": str(tmp_path / "cache")}}
    text = "theorem cached_once (n : Nat) : n + 0 = n := by simp"
    with leanpool.Daemon(cfg, lean=lean, env={"LEAN_PATH": str(lib)}) as d, d.client() as c:
        assert c.status().extra["cache"]["enabled"] is True
        first = c.check(text, timeout_ms=60_000)
        second = c.check(text, timeout_ms=60_000)
    assert first.status == second.status
    assert "cached" not in first.extra and second.extra.get("cached") is True
    elaborated = [line for line in log.read_text().splitlines() if "cached_once" in line]
    assert len(elaborated) == 1, elaborated


def test_overloaded_retry_alone_recovers_every_item_once(tmp_path):
    # The client's OVERLOADED retry on its own, without Ray's spill-over
    # (issue 22 part 3): one daemon, one worker, a queue of 1, 12 slow items
    # pipelined: the daemon refuses some, `map` resends them, every item is
    # answered in input order and elaborated exactly once. Fake Lean
    # (leanpool-testkit): a fixed `-- FAKE sleep` makes the queue overflow,
    # and its log counts each elaboration.
    import collections
    import re

    from conftest import FAKE_DAEMON_CONFIG, fake_lean_backend

    log = tmp_path / "fake.log"
    lean = fake_lean_backend(tmp_path, log)
    cfg = {**FAKE_DAEMON_CONFIG, "pool": {"max_workers": 1, "max_workers_per_key": 1, "spares_per_key": 0, "max_queue_per_key": 1}}
    texts = [f"-- FAKE sleep 30\ntheorem retry{i} : True := trivial\n" for i in range(12)]
    with leanpool.Daemon(cfg, lean=lean) as d, d.client() as c:
        results = c.map("check", texts)
        overloaded = c.status().pool.counters.overloaded
    assert [r.status for r in results] == ["ok"] * len(texts)
    assert [r.declarations[0].name for r in results] == [f"retry{i}" for i in range(len(texts))]
    assert overloaded > 0, "the queue of 1 never overflowed: the retry was not exercised"
    counts = collections.Counter(re.search(r"\b(retry\d+)\b", line).group(1)
                                 for line in log.read_text().splitlines() if "retry" in line)
    assert counts == {f"retry{i}": 1 for i in range(len(texts))}, counts
