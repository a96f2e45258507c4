//! What `Pool::status` reports, and the counters behind it.

use crate::latency::Percentiles;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

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

impl WorkerState {
    pub(crate) fn to_u8(self) -> u8 {
        self as u8
    }
    pub(crate) fn from_u8(v: u8) -> Self {
        match v {
            0 => WorkerState::Starting,
            1 => WorkerState::Idle,
            2 => WorkerState::Busy,
            _ => WorkerState::Stopping,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    /// Slot id, unique within the pool's life (a recycled worker keeps its
    /// slot id and gets a new pid).
    pub id: u64,
    /// `None` while no process is up (starting).
    pub pid: Option<u32>,
    pub state: WorkerState,
    /// Requests served by the current process.
    pub uses: u64,
    /// Resident set of the process, read from `/proc` when status was asked.
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
    pub workers: Vec<WorkerStatus>,
    /// Spares alive (starting or ready).
    #[serde(default)]
    pub spares: usize,
    /// Why there are fewer than `spares_per_key` spares (memory short,
    /// `max_workers` reached, no worker measured yet, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spare_missing: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodLatency {
    pub method: String,
    /// Requests accepted for this method.
    pub requests: u64,
    /// From acceptance by the pool to the answer (queue wait included).
    pub total: Percentiles,
    /// Time spent on a worker (retries included).
    pub service: Option<Percentiles>,
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
    /// Answered `timeout` (the worker was killed and replaced).
    pub timeouts: u64,
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
    pub spawn_failures: u64,
    /// Idle workers retired to make room for another header.
    pub evictions: u64,
    /// Idle workers retired by the idle timeout.
    pub idle_retirements: u64,
    /// Queued requests skipped because their caller had gone away.
    pub cancelled: u64,
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// Sorted by header.
    pub keys: Vec<KeyStatus>,
    /// Worker slots alive (any state), over all headers.
    pub workers: usize,
    pub max_workers: usize,
    /// Recycling limit in force (0 = never), after the backend default.
    pub max_uses: u64,
    /// Spares wanted per header in use (`[pool] spares_per_key`).
    #[serde(default)]
    pub spares_per_key: usize,
    /// Sorted by method name.
    pub latency: Vec<MethodLatency>,
    pub counters: Counters,
    pub shutting_down: bool,
}

/// Lock-free twin of [`Counters`].
#[derive(Default)]
pub(crate) struct AtomicCounters {
    pub requests: AtomicU64,
    pub rejections: AtomicU64,
    pub overloaded: AtomicU64,
    pub timeouts: AtomicU64,
    pub crashes: AtomicU64,
    pub retries: AtomicU64,
    pub worker_failed: AtomicU64,
    pub recycles: AtomicU64,
    pub memory_kills: AtomicU64,
    pub spawns: AtomicU64,
    pub spawn_failures: AtomicU64,
    pub evictions: AtomicU64,
    pub idle_retirements: AtomicU64,
    pub cancelled: AtomicU64,
    pub compromised: AtomicU64,
    pub cold_waits: AtomicU64,
    pub spare_takeovers: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl AtomicCounters {
    pub(crate) fn snapshot(&self) -> Counters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            requests: g(&self.requests),
            rejections: g(&self.rejections),
            overloaded: g(&self.overloaded),
            timeouts: g(&self.timeouts),
            crashes: g(&self.crashes),
            retries: g(&self.retries),
            worker_failed: g(&self.worker_failed),
            recycles: g(&self.recycles),
            memory_kills: g(&self.memory_kills),
            spawns: g(&self.spawns),
            spawn_failures: g(&self.spawn_failures),
            evictions: g(&self.evictions),
            idle_retirements: g(&self.idle_retirements),
            cancelled: g(&self.cancelled),
            compromised: g(&self.compromised),
            cold_waits: g(&self.cold_waits),
            spare_takeovers: g(&self.spare_takeovers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_u8() {
        for s in [WorkerState::Starting, WorkerState::Idle, WorkerState::Busy, WorkerState::Stopping] {
            assert_eq!(WorkerState::from_u8(s.to_u8()), s);
        }
        assert_eq!(serde_json::to_string(&WorkerState::Idle).unwrap(), "\"idle\"");
    }
}
