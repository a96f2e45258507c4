//! What a request's driver error means: its answer, and whether the
//! worker stays.

use super::*;

/// Whether a request's driver error leaves the process in service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    Yes,
    /// Killed and replaced: its state is suspect (or it is gone).
    No,
}

/// The answer to a request whose run ended in a driver error (a death
/// counts only after its one retry: [`Slot::serve_request`]), and whether the
/// process stays. Every variant is named, so a new one needs a decision
/// here: what Lean did is `WORKER_FAILED` with its cause, a worker that
/// could not start `SPAWN_FAILED`, leanpool's own bug `INTERNAL_ERROR`.
pub(super) fn request_failed(e: WorkerError) -> (PoolError, Keep) {
    match e {
        e @ (WorkerError::Died { .. } | WorkerError::Io(_)) => (
            PoolError::worker_failed(
                FailureCause::DiedTwice,
                format!("the worker died on this request twice; last: {e}"),
            ),
            Keep::No,
        ),
        // The text itself exhausted Lean (out of memory on the WASM heap,
        // ...): a retry would cost a worker start and end the same way.
        WorkerError::Panicked { message, .. } => (
            PoolError::worker_failed(
                FailureCause::LeanPanic,
                format!("Lean gave up on this request ({message}); the worker was replaced"),
            ),
            Keep::No,
        ),
        // Code running in Lean wrote to its stdout. Fail closed: the worker
        // is killed and never reused, and the request is not retried (the
        // text that did it would only take over the next worker too).
        WorkerError::Compromised(what) => (
            PoolError::worker_failed(
                FailureCause::ProtocolViolation,
                format!(
                    "the worker wrote a frame leanpool did not ask for ({what}); it was killed"
                ),
            ),
            Keep::No,
        ),
        // Lean answered a request with an error: the process is fine, the
        // request is not retried.
        e @ WorkerError::Lsp { .. } => (
            PoolError::worker_failed(FailureCause::LeanError, e.to_string()),
            Keep::Yes,
        ),
        // An answer leanpool cannot read (an unsupported Lean, or a reader
        // bug): not a crash, so no retry, but the process's state is
        // suspect.
        e @ WorkerError::Protocol(_) => (
            PoolError::worker_failed(FailureCause::UnexpectedAnswer, e.to_string()),
            Keep::No,
        ),
        // A process that could not be started: the backend's fault, not
        // the statement's.
        WorkerError::Spawn(msg) => (PoolError::SpawnFailed(msg), Keep::No),
        // A leanpool bug; the process's state is suspect.
        e @ WorkerError::Internal(_) => (PoolError::Internal(e.to_string()), Keep::No),
        // `Request::run` answers a time-out with status `timeout`: one that
        // reaches the slot as an error is a leanpool bug. The process may
        // still be working on the request.
        WorkerError::Timeout => (
            PoolError::Internal("a time-out escaped the request's runner".into()),
            Keep::No,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::ErrorCode;

    fn answer(e: WorkerError) -> (ErrorCode, Option<FailureCause>, Keep, String) {
        let (err, keep) = request_failed(e);
        (err.code(), err.cause(), keep, err.to_string())
    }

    #[test]
    fn what_lean_did_is_worker_failed_with_its_cause() {
        let died = answer(WorkerError::Died {
            stderr_tail: "boom".into(),
        });
        assert_eq!(
            (died.0, died.1, died.2),
            (
                ErrorCode::WorkerFailed,
                Some(FailureCause::DiedTwice),
                Keep::No
            )
        );
        let io = answer(WorkerError::Io(std::io::Error::from(
            std::io::ErrorKind::BrokenPipe,
        )));
        assert_eq!((io.1, io.2), (Some(FailureCause::DiedTwice), Keep::No));
        let panic = answer(WorkerError::Panicked {
            message: "out of memory".into(),
            stderr_tail: String::new(),
        });
        assert_eq!(
            (panic.1, panic.2),
            (Some(FailureCause::LeanPanic), Keep::No)
        );
        let forged = answer(WorkerError::Compromised("version 7".into()));
        assert_eq!(
            (forged.1, forged.2),
            (Some(FailureCause::ProtocolViolation), Keep::No)
        );
        let lsp = answer(WorkerError::Lsp {
            code: leanpool_protocol::lsp_error::METHOD_NOT_FOUND,
            message: "no such method".into(),
        });
        assert_eq!((lsp.1, lsp.2), (Some(FailureCause::LeanError), Keep::Yes));
    }

    #[test]
    fn an_unreadable_answer_is_unexpected_answer() {
        let (code, cause, keep, msg) =
            answer(WorkerError::Protocol("missing field `goals`".into()));
        assert_eq!(
            (code, cause, keep),
            (
                ErrorCode::WorkerFailed,
                Some(FailureCause::UnexpectedAnswer),
                Keep::No
            )
        );
        assert!(msg.contains("missing field `goals`"), "{msg}");
    }

    #[test]
    fn a_spawn_failure_is_spawn_failed_not_a_lean_answer() {
        let (code, cause, keep, msg) = answer(WorkerError::Spawn("lean: not found".into()));
        assert_eq!(
            (code, cause, keep),
            (ErrorCode::SpawnFailed, None, Keep::No)
        );
        assert_eq!(msg, "could not start a Lean worker: lean: not found");
    }

    #[test]
    fn leanpool_bugs_are_internal_error() {
        for e in [
            WorkerError::Internal("wrong header".into()),
            WorkerError::Timeout,
        ] {
            let (code, cause, keep, _) = answer(e);
            assert_eq!(
                (code, cause, keep),
                (ErrorCode::InternalError, None, Keep::No)
            );
        }
    }
}
