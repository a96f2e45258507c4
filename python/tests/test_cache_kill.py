"""The result cache when its daemon is SIGKILLed while writing it (issue 23
part 5, at the level of the daemon process; the store alone is tested in
crates/leanpool-cache/tests/store.rs, a restart on real Lean in
crates/leanpool/tests/cache_lean.rs).

FAKE Lean (leanpool-testkit ``fake-lean``, a test double): the kill must
land while the daemon commits one answer after another, which needs many
distinct answers a few milliseconds apart; real Lean answers ~10 a second.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Dict, List

import leanpool
from conftest import fake_lean_backend

N = 600
KILL_AFTER = 150
WINDOW = 32


def texts() -> List[str]:
    """Distinct texts with distinct answers: even ones elaborate, odd ones
    carry an error whose column depends on the text (a key mixed up with
    another text's would give a visibly different answer)."""
    out = []
    for i in range(N):
        if i % 2:
            out.append(f"theorem t{i} : True :=\n{' ' * (i % 41)}bad\n")
        else:
            out.append(f"theorem t{i} (n : Nat) : n + {i} = {i} + n := by omega\n")
    return out


def send_all(sock_path: str, params: List[Dict[str, object]], kill_pid: int = 0) -> Dict[int, bytes]:
    """One ``check`` per params, at most WINDOW in flight (under the
    daemon's queue cap of 64 per header); returns the raw answer line per
    id. With ``kill_pid``: SIGKILLs it after KILL_AFTER answers and returns
    what arrived before the connection closed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.settimeout(120)
    answers: Dict[int, bytes] = {}
    buf, sent = b"", 0
    while len(answers) < len(params):
        while sent < len(params) and sent - len(answers) < WINDOW:
            req = {"jsonrpc": "2.0", "id": sent, "method": "check", "params": params[sent]}
            try:
                s.sendall(json.dumps(req).encode() + b"\n")
            except OSError:  # the daemon was killed: keep what arrived
                break
            sent += 1
        try:
            chunk = s.recv(1 << 16)
        except ConnectionResetError:  # the daemon was killed
            chunk = b""
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            answers[json.loads(line)["id"]] = line
        if kill_pid and len(answers) >= KILL_AFTER:
            os.kill(kill_pid, signal.SIGKILL)
            kill_pid = 0
    s.close()
    return answers


def unmarked(raw: bytes) -> bytes:
    """The answer's bytes without the cache's mark (the only difference a
    hit may have: protocol.md, result cache)."""
    mark = b',"cached":true}}'
    return raw[: -len(mark)] + b"}}" if raw.endswith(mark) else raw


def gone(pid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_daemon_sigkilled_while_writing_its_cache_never_answers_wrong(tmp_path: Path) -> None:
    log = tmp_path / "fake.log"
    lean = fake_lean_backend(tmp_path, log)
    # A LEAN_PATH with one .olean gives the fake a library identity (the
    # cache stays off without one).
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Fake.olean").write_bytes(b"fake olean")
    env = {"LEAN_PATH": str(lib)}
    cfg = {"sandbox": {"mode": "off"}, "pool": {"max_workers": 2, "spares_per_key": 0},
           "cache": {"dir": str(tmp_path / "cache")}}
    cached = [{"text": t} for t in texts()]

    killed = leanpool.Daemon(cfg, lean=lean, env=env)
    before = send_all(killed.socket, cached, kill_pid=killed.pid)
    killed.stop()
    assert KILL_AFTER <= len(before) < N, f"the kill did not land mid-run: {len(before)} answers"
    # Its workers do not outlive it (they read EOF on their stdin).
    # (Log lines of two workers may interleave: take the ones led by a pid;
    # interleaving can also glue two pids' digits into one word, so keep
    # only numbers that can be pids, <= the kernel's pid_max.)
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    words = [line.split(" ", 1)[0] for line in log.read_text().splitlines()]
    pids = {int(w) for w in words if w.isdigit() and int(w) <= pid_max}
    assert pids and all(gone(p, 30) for p in pids), f"workers left behind: {pids}"

    with leanpool.Daemon(cfg, lean=lean, env=env) as again:
        after = send_all(again.socket, cached)
        truth = send_all(again.socket, [{"text": t, "cache": False} for t in texts()])
        store = again.client().status().extra["cache"]
    assert len(after) == len(truth) == N
    hits = sum(unmarked(raw) != raw for raw in after.values())
    for i in range(N):
        assert b'"cached"' not in truth[i], truth[i]
        assert unmarked(after[i]) == truth[i], f"{i}: {after[i]!r} != {truth[i]!r}"
        if i in before:
            assert unmarked(before[i]) == truth[i], f"{i}: {before[i]!r}"
    # The store opened (repaired if the kill tore it) and kept answers
    # committed before the kill: some of the second run's are hits.
    print(f"answered before the kill: {len(before)}; hits after restart: {hits}; store: {store}")
    assert store["enabled"] is True and hits > 0, store
