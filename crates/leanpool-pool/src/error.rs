//! Errors a pool request can end with (besides a result whose status is
//! `error`, `timeout` or `rejected`, which are answers, not errors).

use leanpool_protocol::{ErrorCode, FailureCause};
use serde_json::{json, Value};

/// Why the pool gave no result for a request (each maps to one error
/// code on the wire: [`PoolError::code`]).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// The queue of the request's header was full; the request was never
    /// queued. Retrying later is safe.
    #[error("overloaded: {queued} requests already queued for this header (limit {limit})")]
    Overloaded {
        /// Requests queued for the header when this one came.
        queued: usize,
        /// `max_queue_per_key`.
        limit: usize,
    },
    /// A worker failed on this request; `cause` says how (the wire's
    /// `data.cause`).
    #[error("worker failed ({}): {message}", cause.as_str())]
    WorkerFailed {
        /// What happened, machine-readable.
        cause: FailureCause,
        /// What happened, for people.
        message: String,
    },
    /// No worker could be started for the request's header.
    #[error("could not start a Lean worker: {0}")]
    SpawnFailed(String),
    /// The pool is shutting down and takes no new work (or the request was
    /// still queued when the shutdown deadline passed).
    #[error("the pool is shutting down")]
    ShuttingDown,
    /// A bug in leanpool (e.g. a request dropped unanswered).
    #[error("internal error: {0}")]
    Internal(String),
}

impl PoolError {
    /// The JSON-RPC error code the daemon answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            PoolError::Overloaded { .. } => ErrorCode::Overloaded,
            PoolError::WorkerFailed { .. } => ErrorCode::WorkerFailed,
            PoolError::SpawnFailed(_) => ErrorCode::SpawnFailed,
            PoolError::ShuttingDown => ErrorCode::ShuttingDown,
            PoolError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The JSON-RPC error's `data`: `{"cause": …}` for `WorkerFailed`.
    pub fn data(&self) -> Option<Value> {
        match self {
            PoolError::WorkerFailed { cause, .. } => Some(json!({ "cause": cause })),
            _ => None,
        }
    }

    pub(crate) fn worker_failed(cause: FailureCause, message: impl Into<String>) -> Self {
        PoolError::WorkerFailed {
            cause,
            message: message.into(),
        }
    }

    /// The failure cause, for `WorkerFailed`.
    pub fn cause(&self) -> Option<FailureCause> {
        match self {
            PoolError::WorkerFailed { cause, .. } => Some(*cause),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_from_protocol() {
        let all = [
            PoolError::Overloaded {
                queued: 1,
                limit: 1,
            },
            PoolError::worker_failed(FailureCause::DiedTwice, ""),
            PoolError::SpawnFailed(String::new()),
            PoolError::ShuttingDown,
            PoolError::Internal(String::new()),
        ];
        let mut c: Vec<i64> = all.iter().map(|e| e.code().code()).collect();
        c.sort();
        c.dedup();
        assert_eq!(c.len(), all.len());
        assert_eq!(
            PoolError::Overloaded {
                queued: 1,
                limit: 1
            }
            .code(),
            ErrorCode::Overloaded
        );
        let e = PoolError::worker_failed(FailureCause::ProtocolViolation, "x");
        assert_eq!(e.data(), Some(json!({"cause": "protocol_violation"})));
        assert_eq!(PoolError::Internal("x".into()).data(), None);
    }
}
