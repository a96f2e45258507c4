"""`map(..., progress=True)`: the tqdm bar's output, its counts, and the
same results without tqdm. The retry case runs on a daemon whose workers are
the scripted FAKE Lean (conftest.fake_lean_backend): the point is a full
queue answering OVERLOADED on demand, not Lean's answers."""

from __future__ import annotations

import asyncio
import re
import sys

import pytest

import leanpool

from conftest import FAKE_DAEMON_CONFIG, fake_lean_backend


def bar_counts(err: str, total: int):
    """The ``k/total`` counts a tqdm bar printed, in order."""
    return [int(k) for k in re.findall(rf"(\d+)/{total}\b", err)]


def test_map_progress_counts_each_item_once_despite_retries(tmp_path, capsys):
    # One worker, a queue of 1: most of 12 pipelined slow texts are answered
    # OVERLOADED and resent; the bar must still count each item once.
    cfg = {**FAKE_DAEMON_CONFIG, "pool": {"max_workers": 1, "max_workers_per_key": 1, "spares_per_key": 0, "max_queue_per_key": 1}}
    texts = [f"-- FAKE sleep 40\ntheorem p{i} : True := trivial\n" for i in range(12)]
    with leanpool.Daemon(cfg, lean=fake_lean_backend(tmp_path)) as d, d.client() as c:
        out = c.map("check", texts, progress=True, desc="fake checks")
        overloaded = c.status().pool.counters.overloaded
    assert [r.declarations[0].name for r in out] == [f"p{i}" for i in range(12)]
    assert overloaded > 0, "no OVERLOADED answer: the retry path was not exercised"
    err = capsys.readouterr().err
    counts = bar_counts(err, 12)
    assert "fake checks" in err and counts, err
    assert counts == sorted(counts) and counts[-1] == 12 and max(counts) == 12, counts


def test_async_map_progress(nolean_daemon, capsys):
    async def run():
        async with leanpool.AsyncClient(nolean_daemon.socket) as c:
            return await c.map("ping", [{"i": i} for i in range(300)], progress=True, desc="pings")

    assert asyncio.run(run()) == [{"i": i} for i in range(300)]
    err = capsys.readouterr().err
    counts = bar_counts(err, 300)
    assert "pings" in err and counts and counts[-1] == 300 and max(counts) == 300, err[-300:]


def test_no_bar_unless_asked(nolean_daemon, capsys):
    with nolean_daemon.client() as c:
        assert c.map("ping", [{"i": i} for i in range(50)]) == [{"i": i} for i in range(50)]
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("client", ["sync", "async"])
def test_progress_without_tqdm_gives_the_same_results_silently(nolean_daemon, capsys, monkeypatch, client):
    # tqdm not importable (a stripped install): `progress=True` still works.
    for name in [n for n in sys.modules if n == "tqdm" or n.startswith("tqdm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError):
        import tqdm.auto  # noqa: F401

    items = [{"i": i} for i in range(100)]
    if client == "sync":
        with nolean_daemon.client() as c:
            out = c.map("ping", items, progress=True)
    else:
        async def run():
            async with leanpool.AsyncClient(nolean_daemon.socket) as c:
                return await c.map("ping", items, progress=True)

        out = asyncio.run(run())
    assert out == items
    assert capsys.readouterr().err == ""
