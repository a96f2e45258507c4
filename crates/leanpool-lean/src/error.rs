//! [`WorkerError`]: why a worker operation failed. Its own file so that the
//! connection and the session, which the worker owns, name it without
//! importing the worker.

#[derive(Debug, thiserror::Error)]
/// Why a worker operation failed.
pub enum WorkerError {
    #[error("could not start Lean: {0}")]
    /// The process could not be started or did not become ready.
    Spawn(String),
    #[error("the Lean worker died; its stderr ended with:\n{stderr_tail}")]
    /// The process exited or closed its stdout.
    Died {
        /// The end of what the process wrote to stderr.
        stderr_tail: String,
    },
    /// Lean's runtime gave up (`INTERNAL PANIC: out of memory`, ...) while
    /// working on the current document: the text exhausted the process, so
    /// running it again on a fresh worker would end the same way.
    #[error("Lean panicked ({message}); its stderr ended with:\n{stderr_tail}")]
    Panicked {
        /// Lean's `INTERNAL PANIC` line.
        message: String,
        /// The end of what the process wrote to stderr.
        stderr_tail: String,
    },
    /// The request ran past its limit. The worker has been killed (unless
    /// its owner turned that off: [`crate::Worker::set_kill_on_timeout`]).
    #[error("timed out")]
    Timeout,
    #[error("LSP protocol error: {0}")]
    /// Lean's answer could not be read as the driver expects.
    Protocol(String),
    /// Lean's stdout carried a frame the driver did not ask for (a version
    /// never sent, an answer to no request, a malformed frame, a
    /// notification out of place): code running inside the worker can
    /// write to its stdout, so the worker's answers can no longer be
    /// trusted. It has been killed; the request is not retried.
    #[error("the worker wrote a frame the driver did not ask for ({0}); it was killed")]
    Compromised(String),
    /// A bug in leanpool (e.g. a text for another worker's header).
    #[error("internal error: {0}")]
    Internal(String),
    /// Lean answered a request with an error (e.g. an unknown RPC method).
    #[error("Lean returned error {code}: {message}")]
    Lsp {
        /// The LSP error code.
        code: i64,
        /// Lean's error message.
        message: String,
    },
    #[error(transparent)]
    /// Reading or writing the process's pipes failed.
    Io(#[from] std::io::Error),
}
