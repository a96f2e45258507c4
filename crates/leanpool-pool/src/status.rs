//! What `Pool::status` reports (wire types from `leanpool-protocol`), and
//! the counters behind it.

pub use leanpool_protocol::{
    Counters, KeyStatus, MethodLatency, PoolStatus, WorkerState, WorkerStatus,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// A [`WorkerState`] kept in an atomic.
pub(crate) fn state_to_u8(s: WorkerState) -> u8 {
    match s {
        WorkerState::Starting => 0,
        WorkerState::Idle => 1,
        WorkerState::Busy => 2,
        WorkerState::Stopping => 3,
    }
}

pub(crate) fn state_from_u8(v: u8) -> WorkerState {
    match v {
        0 => WorkerState::Starting,
        1 => WorkerState::Idle,
        2 => WorkerState::Busy,
        _ => WorkerState::Stopping,
    }
}

/// Lock-free twin of [`Counters`].
#[derive(Default)]
pub(crate) struct AtomicCounters {
    pub requests: AtomicU64,
    pub rejections: AtomicU64,
    pub overloaded: AtomicU64,
    pub timeouts: AtomicU64,
    pub timeout_kills: AtomicU64,
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
    pub cancel_kills: AtomicU64,
    pub compromised: AtomicU64,
    pub cold_waits: AtomicU64,
    pub spare_takeovers: AtomicU64,
    pub leases_pristine: AtomicU64,
    pub leases_fresh: AtomicU64,
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
            timeout_kills: g(&self.timeout_kills),
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
            cancel_kills: g(&self.cancel_kills),
            compromised: g(&self.compromised),
            cold_waits: g(&self.cold_waits),
            spare_takeovers: g(&self.spare_takeovers),
            leases_pristine: g(&self.leases_pristine),
            leases_fresh: g(&self.leases_fresh),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_u8() {
        for s in [
            WorkerState::Starting,
            WorkerState::Idle,
            WorkerState::Busy,
            WorkerState::Stopping,
        ] {
            assert_eq!(state_from_u8(state_to_u8(s)), s);
        }
    }
}
