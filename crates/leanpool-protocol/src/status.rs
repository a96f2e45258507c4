//! The result of `status`: the daemon (version, backend, verdict policy)
//! and its pool (workers per header, latency, counters).

use crate::LibraryIdentity;
use serde::{Deserialize, Serialize};

/// Result of `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusResult {
    /// The daemon process.
    pub daemon: DaemonStatus,
    /// Its pool of Lean workers.
    pub pool: PoolStatus,
    /// The result cache (absent from daemons without one, e.g. a library
    /// user's handler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStatus>,
    /// Every project the daemon serves (issue 25), the default (first)
    /// one first; `daemon.backend` and `pool` above repeat the default
    /// project's. Absent from daemons that predate projects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<ProjectStatus>,
    /// With several projects (issue 25): the machine-wide worker total
    /// every project's pool draws from, a hard cap on worker processes
    /// (leased ones included). Absent with one project (its
    /// `pool.max_workers` is then the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkerTotal>,
}

/// `status`' `workers`: the machine-wide worker total several projects
/// share, and its use now (docs/protocol.md, "Projects").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerTotal {
    /// The cap on Lean worker processes over all projects, and what bound
    /// it: `configured` (`[pool] max_workers`), `cores` or `memory` (sized
    /// when the daemon started).
    pub total: WorkerLimit,
    /// Worker processes counted now over all projects: starting, idle,
    /// busy, spare, stopping (until gone) and leased.
    pub alive: usize,
    /// Of `alive`, the workers leased out (`lease`, `leanpool lsp`).
    pub leased: usize,
    /// Idle workers stopped so that another project's waiting requests,
    /// or a lease, could have a worker within the total.
    pub evictions: u64,
}

/// One project of the daemon (`status`' `projects`): its Lean, its
/// library and its own pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectStatus {
    /// The name requests give as `project`.
    pub name: String,
    /// The project's root directory; absent for the backend's own library
    /// (a daemon started without `--project`, or `--project NAME=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Which Lean its workers run, its version and library identity, and
    /// its workers' sandbox.
    pub backend: BackendInfo,
    /// Its workers (keyed by import header within the project).
    pub pool: PoolStatus,
}

/// The daemon's result cache (`[cache]`, see "Result cache" in
/// docs/protocol.md). Counters since the daemon started; `entries` and
/// `bytes` are the store's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStatus {
    /// Whether answers are looked up and stored.
    pub enabled: bool,
    /// Why the cache is off (config, an unidentified library, a store that
    /// could not be opened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The store file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What opening the store found: `intact`, `repaired` (an interrupted
    /// write undone) or `discarded` (damaged beyond repair, replaced by an
    /// empty store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened: Option<String>,
    /// Requests answered from the store.
    pub hits: u64,
    /// Requests looked up and not found (they ran on a worker).
    pub misses: u64,
    /// Requests answered by an identical request running at the same time.
    pub in_flight_joins: u64,
    /// Requests that asked to bypass the cache (`"cache": false`).
    pub bypassed: u64,
    /// Entries found damaged (failed their digest) and removed.
    pub corrupt: u64,
    /// Entries in the store.
    pub entries: u64,
    /// Bytes of those entries.
    pub bytes: u64,
    /// The size cap (`[cache] max_bytes`).
    pub max_bytes: u64,
}

/// The daemon process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// leanpool's version.
    pub version: String,
    /// The daemon's process id.
    pub pid: u32,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// The socket it listens on.
    pub socket: String,
    /// Which Lean the workers run.
    pub backend: BackendInfo,
    /// The verdict policy in force (`[verdict]`), so a scorer can record
    /// what an `ok` rested on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictInfo>,
    /// Workers leased to connections (`lease`) and the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases: Option<LeaseStatus>,
}

/// `status`' view of the leases (`daemon.leases`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseStatus {
    /// Connections holding a leased worker now.
    pub active: usize,
    /// `max_leases` of the config.
    pub max: usize,
    /// Leases granted since start.
    pub granted: u64,
    /// Document texts the guard refused in tunnels.
    pub refused_texts: u64,
    /// Leased workers killed for writing a frame nobody asked for.
    pub compromised: u64,
}

/// Which Lean build runs the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// A native `lean` (elan's), the real deployment.
    Native,
    /// Lean compiled to WebAssembly, run by Node (`scripts/setup`'s).
    Wasm,
}

impl BackendKind {
    /// `native` or `wasm`, as in `backend.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Wasm => "wasm",
        }
    }
}

/// `status`' `daemon.backend.kind`: a backend, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendInfoKind {
    /// Native Lean.
    Native,
    /// The WASM Lean.
    Wasm,
    /// No Lean could be found or run (`error` says why); the daemon still
    /// serves `gted` and `status`.
    Unavailable,
}

impl BackendInfoKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendInfoKind::Native => "native",
            BackendInfoKind::Wasm => "wasm",
            BackendInfoKind::Unavailable => "unavailable",
        }
    }

    /// The backend, unless none is available.
    pub fn backend(self) -> Option<BackendKind> {
        match self {
            BackendInfoKind::Native => Some(BackendKind::Native),
            BackendInfoKind::Wasm => Some(BackendKind::Wasm),
            BackendInfoKind::Unavailable => None,
        }
    }
}

impl From<BackendKind> for BackendInfoKind {
    fn from(b: BackendKind) -> Self {
        match b {
            BackendKind::Native => BackendInfoKind::Native,
            BackendKind::Wasm => BackendInfoKind::Wasm,
        }
    }
}

impl std::fmt::Display for BackendInfoKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which Lean the daemon's workers run, for `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// `native`, `wasm` or `unavailable`.
    pub kind: BackendInfoKind,
    /// `lean --version` as recorded at set-up, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why no Lean is available (then `kind` is `unavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The library the workers import (Mathlib's revision natively, a
    /// digest of the olean set otherwise), computed once at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryIdentity>,
    /// Why the library could not be identified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_error: Option<String>,
    /// What confines the worker processes (`[sandbox]` of the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInfo>,
}

impl BackendInfo {
    /// No Lean: `kind` `unavailable` and why.
    pub fn unavailable(why: String) -> BackendInfo {
        BackendInfo {
            kind: BackendInfoKind::Unavailable,
            version: None,
            error: Some(why),
            library: None,
            library_error: None,
            sandbox: None,
        }
    }
}

/// The workers' OS sandbox, as the daemon planned it at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    /// The configured mode: `required`, `best-effort` or `off`.
    pub mode: String,
    /// What is enforced on this kernel (Landlock ABI, rules), or why
    /// workers cannot start (then `available` is false).
    pub summary: String,
    /// False when `required` cannot be met here: every Lean request is
    /// then answered `SPAWN_FAILED`.
    pub available: bool,
}

/// `status`' report of the verdict policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictInfo {
    /// Axioms an `ok`/`proved` may depend on.
    pub allowed_axioms: Vec<String>,
    /// What a declaration whose axioms Lean did not list gives, for this
    /// backend: `error` or `allow` (`auto` resolved).
    pub unlisted_axioms: String,
}

/// The pool: its workers per header, latency and counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// Sorted by header.
    pub keys: Vec<KeyStatus>,
    /// Worker slots alive (any state), over all headers.
    pub workers: usize,
    /// The cap on worker slots (`[pool] max_workers`, or sized to the
    /// machine when not configured: `limits`).
    pub max_workers: usize,
    /// The worker limits in force and where each came from (configured,
    /// cores, memory); absent from daemons before issue 22.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<WorkerLimits>,
    /// Recycling limit in force (0 = never), after the backend default.
    pub max_uses: u64,
    /// Spares wanted per header in use (`[pool] spares_per_key`).
    #[serde(default)]
    pub spares_per_key: usize,
    /// Sorted by method name.
    pub latency: Vec<MethodLatency>,
    /// Counters since the pool started.
    pub counters: Counters,
    /// True once the pool stopped taking work.
    pub shutting_down: bool,
}

/// Where a worker limit's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitSource {
    /// Set in the config file (`[pool]`).
    Configured,
    /// Not configured: the machine's cores bound it.
    Cores,
    /// Not configured: the machine's memory over the worker size bound it.
    Memory,
    /// Set in the project's own `[[project]]` table (issue 25), capped by
    /// the machine-wide `max_workers`.
    Project,
    /// The machine-wide `max_workers` (configured or sized to the
    /// machine) shared out between the projects that set none of their own.
    Shared,
    /// No share of its own (more projects than the machine-wide total has
    /// room for): the project may run one worker, borrowed from the total
    /// only while a place is free or can be freed by evicting another
    /// project's idle worker (issue 25).
    Borrowed,
}

/// One worker limit in force and why it has that value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerLimit {
    /// The limit.
    pub value: usize,
    /// Where it came from.
    pub source: LimitSource,
}

/// `max_workers` and `max_workers_per_key` in force, and the machine
/// figures they were sized from (docs/protocol.md, "Worker limits").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerLimits {
    /// Worker slots over all headers.
    pub max_workers: WorkerLimit,
    /// Worker slots for one header (import set).
    pub max_workers_per_key: WorkerLimit,
    /// Cores available to the daemon (`available_parallelism`: affinity
    /// and cgroup CPU quota).
    pub cores: usize,
    /// Memory available when the pool started (`MemAvailable`, lowered to
    /// the cgroup's limit minus its usage); absent if unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Memory counted per worker: its RSS at ready plus
    /// `rss_headroom_bytes`.
    pub worker_bytes: u64,
    /// Whether the RSS in `worker_bytes` was `measured` (the largest RSS
    /// at ready of a worker so far) or the `estimate` used before any
    /// worker has started.
    pub worker_rss: String,
    /// The workers the memory allows: `memory_bytes / worker_bytes`
    /// (the other figure is `cores`); absent when the memory is
    /// unreadable or from daemons before issue 22's `bound_by` (part 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_memory: Option<usize>,
    /// With several projects (issue 25): the machine-wide worker total a
    /// `project` or `shared` `max_workers` was taken from, and what bound
    /// that total: `configured` (`[pool] max_workers`), `cores` or
    /// `memory` (sized when the daemon started, from the figures then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<WorkerLimit>,
}

/// The workers of one header (and caller).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyStatus {
    /// The canonical header (the key).
    pub header: String,
    /// The caller whose workers these are (`[pool] isolate_by`: `uid:N`
    /// or `conn:N`); absent when callers share them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// Workers kept for this header even when idle (from `prewarm`).
    pub min: usize,
    /// Requests waiting (not yet taken by a worker).
    pub queue_depth: usize,
    /// Its worker slots.
    pub workers: Vec<WorkerStatus>,
    /// Spares alive (starting or ready).
    #[serde(default)]
    pub spares: usize,
    /// Why there are fewer than `spares_per_key` spares (memory short,
    /// `max_workers` reached, no worker measured yet, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spare_missing: Option<String>,
}

/// One worker slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    /// Slot id, unique within the pool's life (a recycled worker keeps its
    /// slot id and gets a new pid).
    pub id: u64,
    /// `None` while no process is up (starting).
    pub pid: Option<u32>,
    /// Where the slot is in its life cycle.
    pub state: WorkerState,
    /// Requests served by the current process.
    pub uses: u64,
    /// Resident set of the worker's process group (the measure its memory
    /// cap is checked with), read from `/proc` when status was asked.
    pub rss_bytes: Option<u64>,
    /// The memory cap that applies to this process (from `rss_limit_bytes`
    /// and `rss_headroom_bytes`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_cap_bytes: Option<u64>,
    /// A hot spare: ready (or starting) and unused; takes requests only
    /// while no serving worker of its header is up.
    #[serde(default)]
    pub spare: bool,
}

/// Life cycle of one worker slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerState {
    /// Process starting or header being elaborated (also while a crashed or
    /// recycled worker is being replaced).
    Starting,
    /// Waiting for a request.
    Idle,
    /// Serving a request.
    Busy,
    /// Told to retire (idle timeout, eviction, shutdown); gone soon.
    Stopping,
}

/// Latency of one method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodLatency {
    /// The method's name ([`crate::method::Method::NAME`]).
    pub method: String,
    /// Requests accepted for this method.
    pub requests: u64,
    /// From acceptance by the pool to the answer (queue wait included).
    pub total: Percentiles,
    /// Time spent on a worker (retries included).
    pub service: Option<Percentiles>,
}

/// Percentiles of one method, in milliseconds (fractional).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Samples the percentiles are computed from (at most the window size).
    pub samples: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The largest sample.
    pub max_ms: f64,
}

/// Monotonic counters since the pool started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Requests accepted (everything that got past the shutdown check).
    pub requests: u64,
    /// Answered `rejected` by the guard without reaching a worker.
    pub rejections: u64,
    /// Answered `Overloaded` (queue full).
    pub overloaded: u64,
    /// Answered `timeout`: the request ran past its limit (the worker was
    /// interrupted and kept, or killed: see `timeout_kills`).
    pub timeouts: u64,
    /// Time-outs that cost the worker: Lean was not interrupted within
    /// `timeout_grace_ms` (or the grace is 0), so the worker was killed and
    /// replaced. `timeouts - timeout_kills` kept their worker.
    #[serde(default)]
    pub timeout_kills: u64,
    /// Workers that died during a request.
    pub crashes: u64,
    /// Requests run a second time after a crash.
    pub retries: u64,
    /// Answered `WorkerFailed`.
    pub worker_failed: u64,
    /// Workers replaced after `max_uses` requests.
    pub recycles: u64,
    /// Workers killed for exceeding `rss_limit_bytes`.
    pub memory_kills: u64,
    /// Worker processes started successfully.
    pub spawns: u64,
    /// Worker processes that failed to start.
    pub spawn_failures: u64,
    /// Idle workers retired to make room for another header.
    pub evictions: u64,
    /// Idle workers retired by the idle timeout.
    pub idle_retirements: u64,
    /// Requests whose caller went away before the answer: queued ones
    /// are skipped, a running one is interrupted in Lean.
    pub cancelled: u64,
    /// Cancelled running requests that cost the worker: Lean had not
    /// finished the interrupting edit *and* gone quiet within
    /// `timeout_grace_ms` (or the grace is 0), so the worker was killed
    /// and replaced rather than left computing the departed caller's text.
    #[serde(default)]
    pub cancel_kills: u64,
    /// Workers killed because they wrote a frame the driver did not ask
    /// for (`WORKER_FAILED` with cause `protocol_violation`).
    #[serde(default)]
    pub compromised: u64,
    /// Requests that waited for a worker start: accepted before the
    /// process that served them was ready (no spare was ready for them).
    #[serde(default)]
    pub cold_waits: u64,
    /// Times a spare took over from a serving worker that had to go.
    #[serde(default)]
    pub spare_takeovers: u64,
    /// Leases answered with a pristine worker (a spare or a fresh
    /// process no caller's text had reached), which left the pool.
    #[serde(default)]
    pub leases_pristine: u64,
    /// Leases answered with a process started for the leaser, because the
    /// worker that took the lease had served the pool's traffic (it keeps
    /// serving it: a lease never takes a used worker).
    #[serde(default)]
    pub leases_fresh: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_states_have_their_wire_names() {
        assert_eq!(
            serde_json::to_string(&WorkerState::Idle).unwrap(),
            "\"idle\""
        );
        for k in [
            BackendInfoKind::Native,
            BackendInfoKind::Wasm,
            BackendInfoKind::Unavailable,
        ] {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        for b in [BackendKind::Native, BackendKind::Wasm] {
            assert_eq!(BackendInfoKind::from(b).as_str(), b.as_str());
            assert_eq!(BackendInfoKind::from(b).backend(), Some(b));
        }
        let u = serde_json::to_string(&BackendInfo::unavailable("no lean".into())).unwrap();
        assert_eq!(u, r#"{"kind":"unavailable","error":"no lean"}"#);
    }
}
