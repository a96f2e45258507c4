//! A handler's panic becomes its request's answer (`INTERNAL_ERROR`), never
//! an unanswered request or a dead connection task.

use crate::handler::rpc_error;
use leanpool_protocol::{ErrorCode, RpcError};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A handler's future (a method, an upgrade, a tunnel) whose panic
/// becomes an `Err` with the panic's message: a bug in a method must still
/// answer its request (with `INTERNAL_ERROR`), never leave it unanswered,
/// and never take its connection's task down. The daemon is built with
/// `panic = "unwind"` (the default), so the panic reaches here.
pub(super) struct CatchUnwind<F>(pub(super) Pin<Box<F>>);

/// A handler's future panicked: a leanpool bug (the panic's message).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Panicked(String);

impl Panicked {
    /// The answer to the request whose handler panicked.
    pub(super) fn into_rpc_error(self) -> RpcError {
        rpc_error(
            ErrorCode::InternalError,
            format!("leanpool failed on this request (a bug: {self})"),
        )
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panicked>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Panicked(panic_message(payload.as_ref())))),
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
