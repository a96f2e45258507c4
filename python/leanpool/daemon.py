"""Start and stop a local daemon from Python: :class:`Daemon`."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from .client import Client
from .errors import ConnectionLost, DaemonError

__all__ = ["Daemon", "find_binary"]

PathLike = Union[str, "os.PathLike[str]"]

#: Seconds a daemon gets to answer its first ``ping`` (it starts no Lean
#: worker before the first request, so this is process start only).
START_TIMEOUT_S = 60.0
#: Seconds a graceful ``shutdown`` may take before SIGTERM, then SIGKILL
#: (longer than the daemon's default ``shutdown_deadline_ms``,
#: docs/protocol.md).
STOP_TIMEOUT_S = 30.0


def find_binary() -> str:
    """The ``leanpool`` executable: ``$LEANPOOL_BIN``, the one ``pip install``
    put next to this Python, ``PATH``, then a source checkout's ``target/``."""
    env = os.environ.get("LEANPOOL_BIN")
    if env:
        return env
    candidates: List[Path] = [Path(sysconfig.get_path("scripts")) / "leanpool", Path(sys.executable).parent / "leanpool"]
    on_path = shutil.which("leanpool")
    if on_path:
        candidates.append(Path(on_path))
    for root in (Path(__file__).resolve().parent, Path.cwd()):
        for d in (root, *root.parents):
            candidates += [d / "target" / "release" / "leanpool", d / "target" / "debug" / "leanpool"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise DaemonError(
        "no `leanpool` binary found: `pip install .` at the leanpool repository root installs it, "
        "or set LEANPOOL_BIN=/path/to/leanpool"
    )


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child
    """In the child: SIGTERM when the thread that started it dies (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:
        pass


def _spawn_in_keeper_thread(argv: List[str], log: Any, env: Dict[str, str]) -> "subprocess.Popen[bytes]":
    """Starts the daemon from a thread that lives as long as this process.

    Linux's parent-death signal follows the *thread* that forked: a daemon
    started from a short-lived thread (a pool's, a Ray actor's) would be
    signalled when that thread ends. Forking from a thread that never ends
    ties the daemon to this process instead: SIGKILLed or not, when the
    process goes, the daemon gets SIGTERM and takes its workers down.
    """
    started: "queue.Queue[Any]" = queue.Queue()

    def keeper() -> None:
        try:
            started.put(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None,
                )
            )
        except BaseException as e:  # surfaced in the caller's thread
            started.put(e)
            return
        threading.Event().wait()  # never set: this thread ends with the process

    threading.Thread(target=keeper, name="leanpool-daemon-keeper", daemon=True).start()
    got = started.get()
    if isinstance(got, BaseException):
        raise DaemonError(f"cannot start {argv[0]}: {got}") from got
    return got


class Daemon:
    """A ``leanpool serve`` process owned by this Python process.

    Args:
        config: the daemon's configuration (docs/protocol.md, "Daemon
            configuration"): a mapping (written as JSON), a path to a TOML
            or JSON file, or ``None`` for the defaults.
        socket: where to listen; ``None``: a fresh private directory.
        lean: the Lean to use: a ``backend.json`` written by
            ``scripts/setup``, or its directory (``.lean-wasm``,
            ``.lean-native``). ``None``: ``$LEANPOOL_BACKEND_JSON`` /
            ``$LEANPOOL_WASM_DIR`` when set, else the daemon's own lookup
            (elan's ``lean`` on PATH, else setup's ``.lean-wasm`` above
            the working directory).
        require_lean: raise at start if the daemon found no Lean (it would
            still serve ``gted``, ``status`` and ``ping``).
        binary: the ``leanpool`` executable (default: :func:`find_binary`).
        env: extra environment variables for the daemon.
        start_timeout: seconds to wait for the daemon to answer.

    The daemon stops when the ``with`` block ends, when :meth:`stop` is
    called, when this object is collected, at interpreter exit, and (Linux)
    when this process dies, even by SIGKILL; its Lean workers die with it.
    """

    def __init__(
        self,
        config: Union[None, Mapping[str, Any], PathLike] = None,
        socket: Optional[PathLike] = None,
        *,
        lean: Optional[PathLike] = None,
        require_lean: bool = True,
        binary: Optional[PathLike] = None,
        env: Optional[Mapping[str, str]] = None,
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="leanpool-"))
        self.socket = str(socket) if socket is not None else str(self._dir / "leanpool.sock")
        self.log_path = self._dir / "daemon.log"
        self.binary = os.fspath(binary) if binary is not None else find_binary()
        argv = [self.binary, "serve", "--socket", self.socket]
        config_path = self._config_file(config)
        if config_path is not None:
            argv += ["--config", config_path]
        self._log = open(self.log_path, "wb")
        self._proc = _spawn_in_keeper_thread(argv, self._log, self._environment(lean, env))
        self._finalizer = weakref.finalize(self, _stop, self._proc, self.socket, self._log, str(self._dir), STOP_TIMEOUT_S)
        try:
            self._wait_ready(start_timeout, require_lean)
        except BaseException:
            self.stop()
            raise

    # ---- set-up ----

    def _config_file(self, config: Union[None, Mapping[str, Any], PathLike]) -> Optional[str]:
        if config is None:
            return None
        if isinstance(config, Mapping):
            path = self._dir / "config.json"
            path.write_text(json.dumps(dict(config)), encoding="utf-8")
            return str(path)
        return os.fspath(config)

    @staticmethod
    def _environment(lean: Optional[PathLike], extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        env = dict(os.environ)
        if lean is not None:
            p = Path(lean)
            if p.is_dir():
                p = p / "backend.json"
            if not p.is_file():
                raise DaemonError(f"no Lean backend description at {p} (run scripts/setup, or pass lean=.../backend.json)")
            env["LEANPOOL_BACKEND_JSON"] = str(p.resolve())
        env.update(extra or {})
        return env

    def _wait_ready(self, timeout: float, require_lean: bool) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                raise DaemonError(f"the daemon exited with code {self._proc.returncode} at start:\n{self.log_tail()}")
            try:
                with Client(self.socket, timeout=max(1.0, deadline - time.monotonic())) as c:
                    backend = c.status().daemon.backend
                break
            except ConnectionLost:
                if time.monotonic() > deadline:
                    raise DaemonError(f"the daemon did not answer within {timeout:.0f} s:\n{self.log_tail()}") from None
                time.sleep(0.05)
        if require_lean and backend.kind == "unavailable":
            raise DaemonError(
                f"the daemon found no Lean: {backend.error}. Run `bash scripts/setup` in the leanpool repository, "
                "then pass Daemon(lean='<repo>/.lean-wasm') or set LEANPOOL_WASM_DIR (or install elan's `lean`)"
            )

    # ---- use ----

    @property
    def pid(self) -> int:
        """The daemon's process id."""
        return self._proc.pid

    @property
    def running(self) -> bool:
        """Whether the daemon process is alive."""
        return self._proc.poll() is None

    def client(self, **kwargs: Any) -> Client:
        """A new :class:`~leanpool.Client` connected to this daemon."""
        return Client(self.socket, **kwargs)

    def async_client(self) -> "Any":
        """A new (not yet connected) :class:`~leanpool.AsyncClient` for this daemon."""
        from .aio import AsyncClient

        return AsyncClient(self.socket)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the daemon's log (stderr)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> Optional[int]:
        """Stops the daemon (graceful ``shutdown``, then SIGTERM, then SIGKILL)
        and waits for it; returns its exit code. Idempotent."""
        self._finalizer()
        return self._proc.returncode

    def __enter__(self) -> "Daemon":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self._proc.returncode}"
        return f"Daemon(socket={self.socket!r}, pid={self.pid}, {state})"


def _stop(proc: "subprocess.Popen[bytes]", sock: str, log: Any, tmpdir: str, timeout: float) -> None:
    """Stops ``proc`` (no reference to the Daemon: run by its finalizer)."""
    try:
        if proc.poll() is None:
            try:
                with Client(sock, timeout=5) as c:
                    c.shutdown()
            except Exception:
                proc.send_signal(signal.SIGTERM)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    proc.wait(timeout)
                    break
                except subprocess.TimeoutExpired:
                    proc.send_signal(sig)
            proc.wait()
    finally:
        log.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
