"""The daemon's results as dataclasses (docs/protocol.md, "Methods").

Field names are the wire's. Members this client does not know are kept in
each object's ``extra`` dict; ``to_dict()`` gives the JSON back.
Statuses are plain strings (``"ok"``, ``"proved"`` ...), typed as
``Literal`` for checkers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

from ._wire import Wire, omit_default

__all__ = [
    "Position",
    "Range",
    "Diagnostic",
    "Declaration",
    "CheckResult",
    "VerifyResult",
    "Binder",
    "Normalized",
    "NormalizeResult",
    "TreeNode",
    "GtedNode",
    "OptResult",
    "GtedResult",
    "ShutdownResult",
    "ProjectStatus",
    "StatusResult",
    "DaemonStatus",
    "BackendInfo",
    "SandboxInfo",
    "VerdictInfo",
    "LeaseStatus",
    "PoolStatus",
    "KeyStatus",
    "WorkerStatus",
    "MethodLatency",
    "Percentiles",
    "Counters",
    "WorkerTotal",
]

CheckStatus = Literal["ok", "error", "sorry", "timeout", "rejected"]
VerifyStatus = Literal["proved", "sorry", "error", "timeout", "rejected"]
Severity = Literal["error", "warning", "information", "hint"]


@dataclass
class Position(Wire):
    """0-based line and column; columns in UTF-16 code units (LSP)."""

    line: int = 0
    character: int = 0


@dataclass
class Range(Wire):
    """A span of the caller's text."""

    start: Position = field(default_factory=Position)
    end: Position = field(default_factory=Position)


@dataclass
class Diagnostic(Wire):
    """One Lean message, positioned in the caller's text."""

    severity: Severity = "error"
    range: Range = field(default_factory=Range)
    message: str = ""


@dataclass
class Declaration(Wire):
    """A declaration the body introduces (see protocol.md, "Verdicts")."""

    name: str = ""
    kind: str = ""
    range: Range = field(default_factory=Range)
    present: bool = False
    #: Lean's ``#print axioms`` list; ``None`` when Lean did not list them.
    axioms: Optional[List[str]] = None


@dataclass
class CheckResult(Wire):
    """``check``'s answer: does the text elaborate?"""

    status: CheckStatus = "error"
    diagnostics: List[Diagnostic] = field(default_factory=list)
    reason: Optional[str] = None
    declarations: List[Declaration] = omit_default(factory=list)
    elapsed_ms: Optional[int] = None
    worker_us: Optional[int] = None

    @property
    def ok(self) -> bool:
        """``status == "ok"``."""
        return self.status == "ok"


@dataclass
class VerifyResult(Wire):
    """``verify``'s answer: is the proof a proof of the fixed statement?"""

    status: VerifyStatus = "error"
    diagnostics: List[Diagnostic] = field(default_factory=list)
    statement_diagnostics: List[Diagnostic] = omit_default(factory=list)
    reason: Optional[str] = None
    axioms: Optional[List[str]] = None
    elapsed_ms: Optional[int] = None

    @property
    def proved(self) -> bool:
        """``status == "proved"``."""
        return self.status == "proved"


@dataclass
class Binder(Wire):
    """One binder of a normalized statement."""

    name: str = ""
    kind: Literal["default", "implicit", "strict_implicit", "inst_implicit"] = "default"
    type: str = ""
    is_prop: bool = False


@dataclass
class Normalized(Wire):
    """A statement as Lean elaborated it."""

    statement: str = ""
    binders: List[Binder] = field(default_factory=list)
    conclusion: str = ""


@dataclass
class NormalizeResult(Wire):
    """``normalize``'s answer; ``normalized`` only when the check is ok/sorry."""

    check: CheckResult = field(default_factory=CheckResult)
    normalized: Optional[Normalized] = None


@dataclass
class TreeNode(Wire):
    """leanpool's operator tree node (``opt``'s ``tree``)."""

    label: str = ""
    kind: Literal["op", "atom", "bound_var", "hypothesis"] = "op"
    scope: Optional[int] = None
    binder: Optional[str] = None
    children: List["TreeNode"] = omit_default(factory=list)


@dataclass
class GtedNode(Wire):
    """The same tree in GTED's format (``opt``'s ``gted_tree``)."""

    content: str = ""
    children: List["GtedNode"] = field(default_factory=list)
    variable_freecost: bool = omit_default(False)
    hypothesis_freecost: bool = omit_default(False)


@dataclass
class OptResult(Wire):
    """``opt``'s answer: the statement's operator tree."""

    check: CheckResult = field(default_factory=CheckResult)
    normalized: Optional[Normalized] = None
    tree: Optional[TreeNode] = None
    gted_tree: Optional[GtedNode] = None
    lean_requests: Optional[int] = None


@dataclass
class GtedResult(Wire):
    """``gted``'s answer: ``similarity = 1 - distance / max(size_a, size_b)``."""

    distance: float = 0.0
    similarity: float = 0.0
    size_a: int = 0
    size_b: int = 0
    exact: bool = True


@dataclass
class CacheClearResult(Wire):
    """``cache_clear``'s answer: entries removed from the result cache."""

    removed: int = 0


@dataclass
class ShutdownResult(Wire):
    """``shutdown``'s answer."""

    shutting_down: bool = False


@dataclass
class SandboxInfo(Wire):
    """The workers' OS sandbox as planned at start."""

    mode: str = ""
    summary: str = ""
    available: bool = False


@dataclass
class BackendInfo(Wire):
    """Which Lean judges (``kind``: ``native``, ``wasm`` or ``unavailable``)."""

    kind: str = "unavailable"
    version: Optional[str] = None
    error: Optional[str] = None
    library: Optional[Dict[str, Any]] = None
    library_error: Optional[str] = None
    sandbox: Optional[SandboxInfo] = None


@dataclass
class VerdictInfo(Wire):
    """The ``[verdict]`` policy in force."""

    allowed_axioms: List[str] = field(default_factory=list)
    unlisted_axioms: str = ""


@dataclass
class LeaseStatus(Wire):
    """``lease`` counters."""

    active: int = 0
    max: int = 0
    granted: int = 0
    refused_texts: int = 0
    compromised: int = 0


@dataclass
class DaemonStatus(Wire):
    """``status.daemon``."""

    version: str = ""
    pid: int = 0
    uptime_ms: int = 0
    socket: str = ""
    backend: BackendInfo = field(default_factory=BackendInfo)
    verdict: Optional[VerdictInfo] = None
    leases: Optional[LeaseStatus] = None


@dataclass
class WorkerStatus(Wire):
    """One worker of a key."""

    id: int = 0
    pid: Optional[int] = None
    state: Literal["starting", "idle", "busy", "stopping"] = "starting"
    uses: int = 0
    rss_bytes: Optional[int] = None
    rss_cap_bytes: Optional[int] = None
    spare: bool = False


@dataclass
class KeyStatus(Wire):
    """One import set (header) the pool serves."""

    header: str = ""
    caller: Optional[str] = None
    min: int = 0
    queue_depth: int = 0
    workers: List[WorkerStatus] = field(default_factory=list)
    spares: int = 0
    spare_missing: Optional[str] = None


@dataclass
class Percentiles(Wire):
    """Latency percentiles over the recent window, in milliseconds."""

    samples: int = 0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0


@dataclass
class MethodLatency(Wire):
    """Latency of one method."""

    method: str = ""
    requests: int = 0
    total: Percentiles = field(default_factory=Percentiles)
    service: Optional[Percentiles] = None


@dataclass
class Counters(Wire):
    """The pool's counters since start (protocol.md, ``status``)."""

    requests: int = 0
    rejections: int = 0
    overloaded: int = 0
    timeouts: int = 0
    timeout_kills: int = 0
    crashes: int = 0
    retries: int = 0
    worker_failed: int = 0
    recycles: int = 0
    memory_kills: int = 0
    spawns: int = 0
    spawn_failures: int = 0
    evictions: int = 0
    idle_retirements: int = 0
    cancelled: int = 0
    cancel_kills: int = 0
    compromised: int = 0
    cold_waits: int = 0
    spare_takeovers: int = 0
    leases_pristine: int = 0
    leases_fresh: int = 0


@dataclass
class WorkerLimit(Wire):
    """One worker limit in force: ``value`` and ``source`` (``configured``,
    ``cores``, ``memory``, ``project``, ``shared`` or ``borrowed``;
    protocol.md, "Worker limits")."""

    value: int = 0
    source: str = ""


@dataclass
class WorkerTotal(Wire):
    """``status.workers`` (two or more projects): the machine-wide worker
    total, a hard cap over every project's worker processes, leased ones
    included (protocol.md, "Projects")."""

    total: WorkerLimit = field(default_factory=WorkerLimit)
    #: Worker processes counted now over all projects.
    alive: int = 0
    leased: int = 0
    #: Idle workers stopped to make room for another project or a lease.
    evictions: int = 0


@dataclass
class WorkerLimits(Wire):
    """``status.pool.limits``: the worker limits and what they were sized from."""

    max_workers: WorkerLimit = field(default_factory=WorkerLimit)
    max_workers_per_key: WorkerLimit = field(default_factory=WorkerLimit)
    cores: int = 0
    memory_bytes: Optional[int] = None
    worker_bytes: int = 0
    worker_rss: str = ""
    #: Workers the memory allows (``memory_bytes / worker_bytes``).
    by_memory: Optional[int] = None
    #: For a ``project``/``shared``/``borrowed`` limit: the machine-wide total it was
    #: taken from and what bound it (``configured``, ``cores``, ``memory``).
    total: Optional[WorkerLimit] = None


@dataclass
class PoolStatus(Wire):
    """``status.pool``."""

    keys: List[KeyStatus] = field(default_factory=list)
    workers: int = 0
    max_workers: int = 0
    limits: Optional[WorkerLimits] = None
    max_uses: int = 0
    spares_per_key: int = 0
    latency: List[MethodLatency] = field(default_factory=list)
    counters: Counters = field(default_factory=Counters)
    shutting_down: bool = False


@dataclass
class ProjectStatus(Wire):
    """One project of the daemon (``status.projects``): its Lean, library and pool."""

    name: str = ""
    root: Optional[str] = None
    backend: BackendInfo = field(default_factory=BackendInfo)
    pool: PoolStatus = field(default_factory=PoolStatus)


@dataclass
class StatusResult(Wire):
    """``status``'s answer: the daemon and its pool (the default project's), every project."""

    daemon: DaemonStatus = field(default_factory=DaemonStatus)
    pool: PoolStatus = field(default_factory=PoolStatus)
    projects: List[ProjectStatus] = field(default_factory=list)
    #: With two or more projects: the machine-wide worker total.
    workers: Optional[WorkerTotal] = None
