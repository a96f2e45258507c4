//! A pool of warm Lean workers keyed by header.
//!
//! A request's worker key is its import header
//! (`leanpool_screen::header_key`: the `import`s only, one per line, so
//! headers differing in comments, blank lines or in their `open` /
//! `set_option` / `universe` … commands share workers; those commands
//! travel with the request's text). Each header has a bounded queue and up to
//! `max_workers_per_key` worker slots; a supervisor task starts slots for
//! headers with waiting requests or a prewarm minimum, within
//! `max_workers` overall, evicting the least recently used idle worker of
//! another header when a header with waiting requests has none (several
//! pools may share one machine-wide total, [`WorkerBudget`]: a daemon's
//! projects). Slots take
//! requests straight from their header's queue, so the request path never
//! passes through the supervisor or a pool-wide lock.
//!
//! Guarantees: every accepted request gets exactly one answer (a result,
//! or a [`PoolError`]); a worker that dies mid-request is replaced and the
//! request retried once; the pool never leaves a Lean process behind
//! (`shutdown`, and dropping the last `Pool` handle, kill them all).

#![deny(missing_docs)]

mod budget;
mod config;
mod error;
mod job;
mod latency;
mod limits;

mod plan;
mod pool;
mod queue;
mod shared;
pub mod sizing;
mod slot;
mod status;
mod supervisor;

pub use budget::{WorkerBudget, WorkerPermit};
pub use config::{
    InvalidPoolConfig, IsolateBy, Policies, PoolConfig, PrewarmEntry, DEFAULT_REQUEST_TIMEOUT_MS,
    DEFAULT_TIMEOUT_GRACE_MS, MAX_TIMEOUT_GRACE_MS, MAX_USES_AUTO,
};
pub use error::PoolError;
pub use job::Leased;
pub use latency::Percentiles;
/// The config types of the layers under the pool, so that config readers
/// (the daemon) need not depend on `leanpool-lean`.
pub use leanpool_lean::{BackendKind, SandboxConfig, SandboxMode};
pub use leanpool_methods::{Input, PoolMethod};
pub use leanpool_methods::{UnlistedAxioms, VerdictPolicy};
pub use leanpool_screen::guard::GuardPolicy;
pub use pool::Pool;
pub use sizing::LimitSources;
/// `status`' wire types (defined in `leanpool-protocol`).
pub use status::{Counters, KeyStatus, MethodLatency, PoolStatus, WorkerState, WorkerStatus};
