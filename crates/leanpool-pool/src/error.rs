//! Errors a pool request can end with (besides a result whose status is
//! `error`, `timeout` or `rejected`, which are answers, not errors).

use leanpool_protocol::codes;

#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// The queue of the request's header was full; the request was never
    /// queued. Retrying later is safe.
    #[error("overloaded: {queued} requests already queued for this header (limit {limit})")]
    Overloaded { queued: usize, limit: usize },
    /// The worker died on this request twice (first try plus one retry on a
    /// fresh worker), or was killed for exceeding the memory cap.
    #[error("worker failed: {0}")]
    WorkerFailed(String),
    /// No worker could be started for the request's header.
    #[error("could not start a Lean worker: {0}")]
    SpawnFailed(String),
    /// The pool is shutting down and takes no new work (or the request was
    /// still queued when the shutdown deadline passed).
    #[error("the pool is shutting down")]
    ShuttingDown,
    #[error("invalid params: {0}")]
    InvalidParams(String),
}

impl PoolError {
    /// The JSON-RPC error code the daemon answers with.
    pub fn code(&self) -> i64 {
        match self {
            PoolError::Overloaded { .. } => codes::OVERLOADED,
            PoolError::WorkerFailed(_) => codes::WORKER_FAILED,
            PoolError::SpawnFailed(_) => codes::SPAWN_FAILED,
            PoolError::ShuttingDown => codes::SHUTTING_DOWN,
            PoolError::InvalidParams(_) => codes::INVALID_PARAMS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_from_protocol() {
        let all = [
            PoolError::Overloaded { queued: 1, limit: 1 },
            PoolError::WorkerFailed(String::new()),
            PoolError::SpawnFailed(String::new()),
            PoolError::ShuttingDown,
            PoolError::InvalidParams(String::new()),
        ];
        let mut c: Vec<i64> = all.iter().map(PoolError::code).collect();
        c.sort();
        c.dedup();
        assert_eq!(c.len(), all.len());
        assert_eq!(PoolError::Overloaded { queued: 1, limit: 1 }.code(), codes::OVERLOADED);
    }
}
