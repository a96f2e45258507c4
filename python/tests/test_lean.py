"""The package as a user uses it, on real Lean: one daemon for the whole
module, every text without imports (one import set: one worker start, CI's
budget); the last test stops it and checks no process is left."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

import leanpool
from leanpool import errors

from conftest import LEAN_CONFIG, REPO, lean_backend

SEEN_PIDS = set()


@pytest.fixture(scope="module")
def daemon():
    d = leanpool.Daemon(LEAN_CONFIG, lean=lean_backend())
    yield d
    d.stop()


def remember_workers(client):
    for key in client.status().pool.keys:
        SEEN_PIDS.update(w.pid for w in key.workers if w.pid)


def test_check_error_is_typed_with_positions(daemon):
    with daemon.client() as c:
        r = c.check("theorem two_plus_two : 2 + 2 = 5 := by decide", timeout_ms=120_000)
        remember_workers(c)
    assert r.status == "error" and not r.ok
    d = r.diagnostics[0]
    assert (d.severity, d.range.start.line, d.range.start.character) == ("error", 0, 39)
    assert "is false" in d.message


def test_check_ok_sorry_rejected(daemon):
    with daemon.client() as c:
        ok = c.check("theorem t (n : Nat) : n + 0 = n := by simp")
        sorry = c.check("theorem s (n : Nat) : n + 0 = n := sorry")
        rejected = c.check('#eval IO.println "hi"')
    assert ok.ok and ok.declarations[0].name == "t" and ok.declarations[0].present
    assert sorry.status == "sorry"
    assert rejected.status == "rejected" and "#eval" in rejected.reason


def test_verify(daemon):
    with daemon.client() as c:
        # A header without imports: the same import set (and warm worker) as
        # every other test here; a new import set would cost a worker start.
        v = c.verify("theorem t (n : Nat) : n + 0 = n := sorry", "by\n  simp", header="open Nat")
        cheat = c.verify("theorem t : False", "sorry\naxiom cheat : False")
        wrong = c.verify("theorem t (n : Nat) : n + 0 = n := sorry", "by decide")
    assert v.proved and v.diagnostics == []
    assert cheat.status == "rejected"
    assert wrong.status == "error" and wrong.diagnostics


def test_normalize_opt_gted(daemon):
    with daemon.client() as c:
        n = c.normalize("theorem t (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by sorry")
        o1 = c.opt("theorem t (a : Nat) (h : 0 < a) : ∀ c, c < a + c := by sorry")
        o2 = c.opt("theorem u (x : Nat) (hx : 0 < x) : ∀ y, y < x + y := by sorry")
        g = c.gted(o1.gted_tree, o2.gted_tree)
        g_tree = c.gted(o1.tree, o2.tree, mode="paper")
    assert n.check.ok and [b.name for b in n.normalized.binders] == ["a", "b", "h"]
    assert n.normalized.binders[2].is_prop and n.normalized.conclusion == "∀ (c : Nat), a + c < b + c"
    assert o1.tree.children[0].children[0].kind == "bound_var"
    assert g.similarity == 1.0 and g.size_a == g.size_b and g_tree.similarity == 1.0


def test_map_in_order_with_overload_retries(daemon):
    texts = [f"theorem t{i} : {i} + {i} = {2 * i} := by decide" for i in range(10)]
    texts[3] = "theorem bad : 1 = 2 := by decide"
    with daemon.client() as c:
        before = c.status().pool.counters.overloaded
        results = c.map("check", texts, progress=True)
        after = c.status().pool.counters.overloaded
    assert [r.status for r in results] == ["ok"] * 3 + ["error"] + ["ok"] * 6
    # 10 pipelined requests against a queue of 2: the daemon refused some,
    # map resent them, and every one was answered in input order.
    assert after > before


def test_async_client_on_lean(daemon):
    async def run():
        async with daemon.async_client() as c:
            # Two at once fit the queue (2) with no retry; map retries by itself.
            singles = await asyncio.gather(*(c.check(f"example : {i} < {i + 1} := by decide") for i in range(2)))
            mapped = await c.map("check", ["example : 1 = 1 := rfl", "example : 1 = 2 := rfl"] * 3)
            return singles, mapped

    singles, mapped = asyncio.run(run())
    assert [r.status for r in singles] == ["ok"] * 2
    assert [r.status for r in mapped] == ["ok", "error"] * 3


def test_score_jsonl_example(daemon, tmp_path):
    rows = [{"id": 1, "text": "theorem a : 1 + 1 = 2 := by decide"},
            {"id": "b", "header": "open Nat", "statement": "theorem b : 2 + 2 = 5 := by decide"}]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.run([sys.executable, str(REPO / "examples" / "score_jsonl.py"), str(src), str(out), "--socket", daemon.socket],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["id"], x["status"]) for x in lines] == [(1, "ok"), ("b", "error")]
    assert "2 scored: error 1, ok 1" in run.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _descendants(pid: int):
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def test_stop_leaves_no_process_behind(daemon):
    with daemon.client() as c:
        c.check("theorem last : True := trivial")
        remember_workers(c)
    tree = set(_descendants(daemon.pid)) | SEEN_PIDS | {daemon.pid}
    assert SEEN_PIDS, "the pool reported no worker pid"
    assert SEEN_PIDS <= tree, "workers are the daemon's descendants"
    daemon.stop()
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in tree if _alive(p)] == [], "a leanpool/lean/node process outlived Daemon.stop()"
    assert not os.path.exists(daemon.socket)
