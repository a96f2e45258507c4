//! A request inside the pool: what to run, and the one answer it owes.

use crate::error::PoolError;
use leanpool_lean::guard::GuardPolicy;
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{
    CheckParams, CheckResult, CheckStatus, NormalizeResult, OptResult, StatementParams, VerifyParams, VerifyResult,
    VerifyStatus,
};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The pool's methods (indices into per-method statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Check = 0,
    Normalize = 1,
    Opt = 2,
    Verify = 3,
}

impl Method {
    pub(crate) const ALL: [Method; 4] = [Method::Check, Method::Normalize, Method::Opt, Method::Verify];
    pub(crate) fn name(self) -> &'static str {
        use leanpool_protocol::method::{self, Method as _};
        match self {
            Method::Check => method::Check::NAME,
            Method::Normalize => method::Normalize::NAME,
            Method::Opt => method::Opt::NAME,
            Method::Verify => method::Verify::NAME,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Input {
    Check(CheckParams),
    Normalize(StatementParams),
    Opt(StatementParams),
    /// Hand the slot's warm worker over ([`crate::Pool::lease`]); `header`
    /// is the text whose header picks the queue.
    Lease { header: String, tx: LeaseTx },
    /// The params and the text they assemble to (what is screened and
    /// keys the worker).
    Verify(VerifyParams, String),
}

/// A worker taken out of the pool for one caller's exclusive, long use
/// (an editor's open document, `leanpool lsp`). The pool no longer counts
/// or supervises it: the holder watches it (`rss_cap`) and kills it when
/// done (dropping a `Worker` kills its process group too).
pub struct Leased {
    pub worker: Worker,
    /// The memory cap the pool would apply to this process (bytes
    /// resident), from `rss_limit_bytes` / `rss_headroom_bytes`.
    pub rss_cap: Option<u64>,
}

/// Where a slot sends the worker it hands over.
pub(crate) struct LeaseTx(pub oneshot::Sender<Leased>);

impl std::fmt::Debug for LeaseTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaseTx")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    Check(CheckResult),
    Normalize(NormalizeResult),
    Opt(OptResult),
    Verify(VerifyResult),
}

impl Input {
    pub(crate) fn method(&self) -> Method {
        match self {
            Input::Check(_) => Method::Check,
            Input::Normalize(_) => Method::Normalize,
            Input::Opt(_) => Method::Opt,
            Input::Verify(..) => Method::Verify,
            // Leases are not method requests; they are never timed or
            // counted per method (see `Pool::lease`).
            Input::Lease { .. } => Method::Check,
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            Input::Check(p) => &p.text,
            Input::Normalize(p) | Input::Opt(p) => &p.text,
            Input::Lease { header, .. } => header,
            Input::Verify(_, text) => text,
        }
    }

    pub(crate) fn timeout(&self, default: Duration) -> Duration {
        let ms = match self {
            Input::Check(p) => p.timeout_ms,
            Input::Normalize(p) | Input::Opt(p) => p.timeout_ms,
            Input::Lease { .. } => None,
            Input::Verify(p, _) => p.timeout_ms,
        };
        ms.map(Duration::from_millis).unwrap_or(default)
    }

    /// Clamps the request's own `timeout_ms` to `[min_ms, max_ms]`, so the
    /// driver and the `timeout` answer use the limit that applies.
    pub(crate) fn clamp_timeout(&mut self, min_ms: u64, max_ms: u64) {
        let t = match self {
            Input::Check(p) => &mut p.timeout_ms,
            Input::Normalize(p) | Input::Opt(p) => &mut p.timeout_ms,
            Input::Verify(p, _) => &mut p.timeout_ms,
            Input::Lease { .. } => return,
        };
        if let Some(ms) = t {
            *ms = (*ms).clamp(min_ms, max_ms.max(min_ms));
        }
    }

    /// The answer for a request the guard refused.
    pub(crate) fn rejected(&self, reason: &str) -> Output {
        if let Input::Verify(..) = self {
            return Output::Verify(VerifyResult::rejected(reason));
        }
        self.with_check(CheckResult::rejected(reason))
    }

    /// The answer for a request that ran past its time limit.
    pub(crate) fn timed_out(&self, limit: Duration) -> Output {
        if let Input::Verify(..) = self {
            return Output::Verify(VerifyResult::timeout(limit.as_millis() as u64));
        }
        self.with_check(CheckResult::timeout(limit.as_millis() as u64))
    }

    fn with_check(&self, check: CheckResult) -> Output {
        match self {
            Input::Check(_) | Input::Lease { .. } | Input::Verify(..) => Output::Check(check),
            Input::Normalize(_) => Output::Normalize(NormalizeResult { check, normalized: None }),
            Input::Opt(_) => Output::Opt(OptResult { check, normalized: None, tree: None, gted_tree: None, lean_requests: None }),
        }
    }

    /// Runs the request on `worker` (whose header is the request's key).
    /// A time-out comes back as `Ok` with status `timeout`; the worker is
    /// dead if the driver killed it (grace 0), else still working on the
    /// timed-out request: the slot interrupts it (`Slot::after_timeout`).
    ///
    /// The driver and terms functions screen the text again; that repeat
    /// costs one lexing pass (microseconds) and keeps them safe to call
    /// on their own.
    pub(crate) async fn run(
        &self,
        worker: &mut Worker,
        default_timeout: Duration,
        guard: &GuardPolicy,
    ) -> Result<Output, WorkerError> {
        let limit = self.timeout(default_timeout);
        let r = match self {
            Input::Check(p) => leanpool_lean::check::check_on_with(worker, p, default_timeout, guard).await.map(Output::Check),
            Input::Normalize(p) => leanpool_terms::normalize_on_with(worker, p, default_timeout, guard).await.map(Output::Normalize),
            Input::Opt(p) => leanpool_terms::opt_on_with(worker, p, default_timeout, guard).await.map(Output::Opt),
            Input::Lease { .. } => Err(WorkerError::Internal("a lease is not run".into())),
            Input::Verify(p, _) => {
                leanpool_lean::verify::verify_on_with(worker, p, default_timeout, guard).await.map(Output::Verify)
            }
        };
        match r {
            Err(WorkerError::Timeout) => Ok(self.timed_out(limit)),
            other => other,
        }
    }
}

impl Output {
    /// Whether the request ran past its limit.
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            Output::Check(c) => c.status == CheckStatus::Timeout,
            Output::Normalize(n) => n.check.status == CheckStatus::Timeout,
            Output::Opt(o) => o.check.status == CheckStatus::Timeout,
            Output::Verify(v) => v.status == VerifyStatus::Timeout,
        }
    }

    #[cfg(test)]
    pub(crate) fn check(&self) -> &CheckResult {
        match self {
            Output::Check(c) => c,
            Output::Normalize(n) => &n.check,
            Output::Opt(o) => &o.check,
            Output::Verify(_) => panic!("verify has no check result"),
        }
    }
}

pub(crate) type Answer = Result<Output, PoolError>;

/// The answer channel of one accepted request. Dropping it unanswered
/// (a bug, a panicking task, a runtime going away) still sends an error,
/// so the caller never waits forever: every accepted request gets exactly
/// one answer.
pub(crate) struct Reply {
    tx: Option<oneshot::Sender<Answer>>,
}

impl Reply {
    pub(crate) fn new() -> (Reply, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        (Reply { tx: Some(tx) }, rx)
    }

    /// The caller dropped its future (client disconnected): nobody wants
    /// the answer any more.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.tx.as_ref().is_none_or(|t| t.is_closed())
    }

    pub(crate) fn send(mut self, a: Answer) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(a);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(PoolError::Internal("the request was dropped unanswered".into())));
        }
    }
}

pub(crate) struct Job {
    pub input: Input,
    pub reply: Reply,
    pub accepted: Instant,
    /// Run once already on a worker that died under it (the next death
    /// answers `WorkerFailed`).
    pub retried: bool,
    /// Time spent on workers by earlier attempts.
    pub spent: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropped_reply_still_answers_once() {
        let (r, rx) = Reply::new();
        assert!(!r.is_cancelled());
        drop(r);
        assert!(matches!(rx.await, Ok(Err(PoolError::Internal(_)))));
    }

    #[tokio::test]
    async fn cancellation_seen_when_caller_goes_away() {
        let (r, rx) = Reply::new();
        drop(rx);
        assert!(r.is_cancelled());
    }

    #[test]
    fn timeout_answers_keep_the_method_shape() {
        let p = StatementParams { text: "theorem t : True := trivial".into(), timeout_ms: Some(5) };
        let i = Input::Opt(p);
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_millis(5));
        match i.timed_out(Duration::from_millis(5)) {
            Output::Opt(o) => assert_eq!(o.check.status, leanpool_protocol::CheckStatus::Timeout),
            o => panic!("wrong shape {o:?}"),
        }
        let mut i = i;
        i.clamp_timeout(1_000, 600_000);
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_secs(1));
        let mut big = Input::Check(CheckParams { text: String::new(), timeout_ms: Some(u64::MAX), timings: false });
        big.clamp_timeout(1_000, 600_000);
        assert_eq!(big.timeout(Duration::from_secs(9)), Duration::from_secs(600));
        let c = Input::Check(CheckParams { text: String::new(), timeout_ms: None, timings: false });
        assert_eq!(c.timeout(Duration::from_secs(9)), Duration::from_secs(9));
        assert_eq!(c.rejected("no").check().reason.as_deref(), Some("no"));
    }
}
