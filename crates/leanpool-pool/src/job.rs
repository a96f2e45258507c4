//! A request inside the pool: what to run, and the one answer it owes.

use crate::error::PoolError;
use leanpool_lean::guard::{GuardPolicy, Screened};
use leanpool_lean::verify::Assembled;
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::method;
use leanpool_protocol::{
    CheckParams, CheckResult, CheckStatus, NormalizeResult, OptResult, StatementParams,
    VerifyParams, VerifyResult, VerifyStatus,
};
use leanpool_terms::TermsError;
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
    pub(crate) const ALL: [Method; 4] = [
        Method::Check,
        Method::Normalize,
        Method::Opt,
        Method::Verify,
    ];
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

/// A method the pool runs on a warm worker. Each queued request carries
/// the reply channel of its own method's result type, so a slot cannot
/// answer a `check` with an `opt` result: there is no such value to send.
pub(crate) trait PoolMethod: leanpool_protocol::method::Method + Sized + 'static {
    /// The method's index into the per-method statistics.
    const STAT: Method;
    /// What a slot runs: the params, plus what the pool derived from them.
    type Input: Input;
    /// The answer for a text the guard refused.
    fn rejected(reason: &str) -> Self::Result;
    /// The answer for a request that ran past its limit.
    fn timed_out(limit_ms: u64) -> Self::Result;
    /// Whether `result` is a time-out answer.
    fn is_timeout(result: &Self::Result) -> bool;
    /// Runs the request on `worker` (whose header is the request's key).
    fn run(
        worker: &mut Worker,
        input: &Self::Input,
        screened: &Screened,
        default_timeout: Duration,
        guard: &GuardPolicy,
    ) -> impl std::future::Future<Output = Result<Self::Result, WorkerError>> + Send;
    /// The queue entry holding `request`.
    fn job(request: Request<Self>) -> Job;
}

/// What a queued request holds: the text that is screened and whose
/// header keys the worker, and the request's own time limit.
pub(crate) trait Input: Send + Sync + 'static {
    /// The text that is screened and whose header keys the worker.
    fn text(&self) -> &str;
    /// The request's own time limit, to read and to clamp.
    fn limit_ms_mut(&mut self) -> &mut Option<u64>;
    /// The same, read only.
    fn limit_ms(&self) -> Option<u64>;
}

impl Input for CheckParams {
    fn text(&self) -> &str {
        &self.text
    }
    fn limit_ms_mut(&mut self) -> &mut Option<u64> {
        &mut self.timeout_ms
    }
    fn limit_ms(&self) -> Option<u64> {
        self.timeout_ms
    }
}

impl Input for StatementParams {
    fn text(&self) -> &str {
        &self.text
    }
    fn limit_ms_mut(&mut self) -> &mut Option<u64> {
        &mut self.timeout_ms
    }
    fn limit_ms(&self) -> Option<u64> {
        self.timeout_ms
    }
}

/// `verify`'s params and the text they assemble to.
impl Input for (VerifyParams, Box<Assembled>) {
    fn text(&self) -> &str {
        &self.1.text
    }
    fn limit_ms_mut(&mut self) -> &mut Option<u64> {
        &mut self.0.timeout_ms
    }
    fn limit_ms(&self) -> Option<u64> {
        self.0.timeout_ms
    }
}

fn normalize_with(check: CheckResult) -> NormalizeResult {
    NormalizeResult {
        check,
        normalized: None,
    }
}

impl PoolMethod for method::Check {
    const STAT: Method = Method::Check;
    type Input = CheckParams;
    fn rejected(reason: &str) -> CheckResult {
        CheckResult::rejected(reason)
    }
    fn timed_out(limit_ms: u64) -> CheckResult {
        CheckResult::timeout(limit_ms)
    }
    fn is_timeout(r: &CheckResult) -> bool {
        r.status == CheckStatus::Timeout
    }
    async fn run(
        w: &mut Worker,
        p: &CheckParams,
        screened: &Screened,
        default: Duration,
        guard: &GuardPolicy,
    ) -> Result<CheckResult, WorkerError> {
        leanpool_lean::check::check_screened(w, screened, p, default, guard).await
    }
    fn job(r: Request<Self>) -> Job {
        Job::Check(r)
    }
}

impl PoolMethod for method::Normalize {
    const STAT: Method = Method::Normalize;
    type Input = StatementParams;
    fn rejected(reason: &str) -> NormalizeResult {
        normalize_with(CheckResult::rejected(reason))
    }
    fn timed_out(limit_ms: u64) -> NormalizeResult {
        normalize_with(CheckResult::timeout(limit_ms))
    }
    fn is_timeout(r: &NormalizeResult) -> bool {
        r.check.status == CheckStatus::Timeout
    }
    async fn run(
        w: &mut Worker,
        p: &StatementParams,
        screened: &Screened,
        default: Duration,
        _guard: &GuardPolicy,
    ) -> Result<NormalizeResult, WorkerError> {
        leanpool_terms::normalize_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
    }
    fn job(r: Request<Self>) -> Job {
        Job::Normalize(r)
    }
}

/// A `normalize`/`opt` failure as the slot reads worker failures: an
/// answer the terms reader could not read is `WorkerError::Protocol`
/// (answered `WORKER_FAILED` / `unexpected_answer`, the worker replaced).
fn terms_error(e: TermsError) -> WorkerError {
    match e {
        TermsError::Worker(e) => e,
        TermsError::Unreadable(why) => WorkerError::Protocol(why),
    }
}

fn opt_with(check: CheckResult) -> OptResult {
    OptResult {
        check,
        normalized: None,
        tree: None,
        gted_tree: None,
        lean_requests: None,
    }
}

impl PoolMethod for method::Opt {
    const STAT: Method = Method::Opt;
    type Input = StatementParams;
    fn rejected(reason: &str) -> OptResult {
        opt_with(CheckResult::rejected(reason))
    }
    fn timed_out(limit_ms: u64) -> OptResult {
        opt_with(CheckResult::timeout(limit_ms))
    }
    fn is_timeout(r: &OptResult) -> bool {
        r.check.status == CheckStatus::Timeout
    }
    async fn run(
        w: &mut Worker,
        p: &StatementParams,
        screened: &Screened,
        default: Duration,
        _guard: &GuardPolicy,
    ) -> Result<OptResult, WorkerError> {
        leanpool_terms::opt_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
    }
    fn job(r: Request<Self>) -> Job {
        Job::Opt(r)
    }
}

impl PoolMethod for method::Verify {
    const STAT: Method = Method::Verify;
    /// The params and the text they assemble to (what is screened and
    /// keys the worker).
    type Input = (VerifyParams, Box<Assembled>);
    fn rejected(reason: &str) -> VerifyResult {
        VerifyResult::rejected(reason)
    }
    fn timed_out(limit_ms: u64) -> VerifyResult {
        VerifyResult::timeout(limit_ms)
    }
    fn is_timeout(r: &VerifyResult) -> bool {
        r.status == VerifyStatus::Timeout
    }
    async fn run(
        w: &mut Worker,
        (p, a): &(VerifyParams, Box<Assembled>),
        screened: &Screened,
        default: Duration,
        guard: &GuardPolicy,
    ) -> Result<VerifyResult, WorkerError> {
        leanpool_lean::verify::verify_screened(w, p, a, screened, default, guard).await
    }
    fn job(r: Request<Self>) -> Job {
        Job::Verify(r)
    }
}

/// Clamps a request's own `timeout_ms` to `[min_ms, max_ms]`, so the
/// driver and the `timeout` answer use the limit that applies.
pub(crate) fn clamp_timeout(t: &mut Option<u64>, min_ms: u64, max_ms: u64) {
    if let Some(ms) = t {
        *ms = (*ms).clamp(min_ms, max_ms.max(min_ms));
    }
}

/// A worker taken out of the pool for one caller's exclusive, long use
/// (an editor's open document, `leanpool lsp`). The pool no longer counts
/// or supervises it: the holder watches it (`rss_cap`) and kills it when
/// done (dropping a `Worker` kills its process group too).
pub struct Leased {
    /// The warm worker, its document open on the leased header.
    pub worker: Worker,
    /// The memory cap the pool would apply to this process (bytes
    /// resident), from `rss_limit_bytes` / `rss_headroom_bytes`.
    pub rss_cap: Option<u64>,
}

/// One accepted request of method `M`, and the one answer it owes.
pub(crate) struct Request<M: PoolMethod> {
    pub input: M::Input,
    /// The input's text as the guard screened it: what the worker
    /// elaborates (screened once, in `Pool::submit`; boxed: queue
    /// entries stay small).
    pub screened: Box<Screened>,
    pub reply: Reply<M::Result>,
    pub accepted: Instant,
    /// Run once already on a worker that died under it (the next death
    /// answers `WorkerFailed`).
    pub retried: bool,
    /// Time spent on workers by earlier attempts.
    pub spent: Duration,
}

impl<M: PoolMethod> Request<M> {
    #[cfg(test)]
    pub(crate) fn new(input: M::Input, reply: Reply<M::Result>) -> Self {
        let screened = leanpool_lean::screen(input.text(), &GuardPolicy::default())
            .map(Box::new)
            .expect("a test request's text passes the guard");
        Request {
            input,
            screened,
            reply,
            accepted: Instant::now(),
            retried: false,
            spent: Duration::ZERO,
        }
    }

    pub(crate) fn timeout(&self, default: Duration) -> Duration {
        self.input
            .limit_ms()
            .map(Duration::from_millis)
            .unwrap_or(default)
    }

    /// Runs the request on `worker` (whose header is the request's key).
    /// A time-out comes back as `Ok` with status `timeout`; the worker is
    /// dead if the driver killed it (grace 0), else still working on the
    /// timed-out request: the slot interrupts it (`Slot::interrupt_or_kill`).
    /// The worker elaborates the screened text (`self.screened`), never
    /// the input's text as such.
    pub(crate) async fn run(
        &self,
        worker: &mut Worker,
        default: Duration,
        guard: &GuardPolicy,
    ) -> Result<M::Result, WorkerError> {
        let limit = self.timeout(default);
        match M::run(worker, &self.input, &self.screened, default, guard).await {
            Err(WorkerError::Timeout) => Ok(M::timed_out(limit.as_millis() as u64)),
            other => other,
        }
    }
}

/// A queue entry: a request of one of the pool's methods, or a lease.
pub(crate) enum Job {
    Check(Request<method::Check>),
    Normalize(Request<method::Normalize>),
    Opt(Request<method::Opt>),
    Verify(Request<method::Verify>),
    /// Hand the slot's warm worker over ([`crate::Pool::lease`]).
    Lease(Reply<Leased>),
}

impl<M: PoolMethod> From<Request<M>> for Job {
    fn from(r: Request<M>) -> Job {
        M::job(r)
    }
}

impl Job {
    /// The caller dropped its future: nobody wants the answer any more.
    pub(crate) fn is_cancelled(&self) -> bool {
        match self {
            Job::Check(r) => r.reply.is_cancelled(),
            Job::Normalize(r) => r.reply.is_cancelled(),
            Job::Opt(r) => r.reply.is_cancelled(),
            Job::Verify(r) => r.reply.is_cancelled(),
            Job::Lease(reply) => reply.is_cancelled(),
        }
    }

    /// Answers the request (or lease) with an error.
    pub(crate) fn fail(self, e: PoolError) {
        match self {
            Job::Check(r) => r.reply.send(Err(e)),
            Job::Normalize(r) => r.reply.send(Err(e)),
            Job::Opt(r) => r.reply.send(Err(e)),
            Job::Verify(r) => r.reply.send(Err(e)),
            Job::Lease(reply) => reply.send(Err(e)),
        }
    }
}

/// What a caller receives.
pub(crate) type Answer<T> = Result<T, PoolError>;

/// The answer channel of one accepted request. Dropping it unanswered
/// (a bug, a panicking task, a runtime going away) still sends an error,
/// so the caller never waits forever: every accepted request gets exactly
/// one answer.
pub(crate) struct Reply<T> {
    tx: Option<oneshot::Sender<Answer<T>>>,
}

impl<T> Reply<T> {
    pub(crate) fn new() -> (Reply<T>, oneshot::Receiver<Answer<T>>) {
        let (tx, rx) = oneshot::channel();
        (Reply { tx: Some(tx) }, rx)
    }

    /// The caller dropped its future (client disconnected): nobody wants
    /// the answer any more.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.tx.as_ref().is_none_or(|t| t.is_closed())
    }

    pub(crate) fn send(mut self, a: Answer<T>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(a);
        }
    }

    /// Sends `value` as the answer; gives it back when the caller is gone.
    pub(crate) fn try_send(mut self, value: T) -> Result<(), T> {
        match self.tx.take() {
            Some(tx) => tx
                .send(Ok(value))
                .map_err(|a| a.expect("the value just sent")),
            None => Err(value),
        }
    }
}

impl<T> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(PoolError::Internal(
                "the request was dropped unanswered".into(),
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_failures_keep_their_meaning_for_the_slot() {
        let unreadable = terms_error(TermsError::Unreadable("no goal".into()));
        assert!(
            matches!(unreadable, WorkerError::Protocol(ref m) if m == "no goal"),
            "{unreadable:?}"
        );
        let died = terms_error(TermsError::Worker(WorkerError::Died {
            stderr_tail: String::new(),
        }));
        assert!(matches!(died, WorkerError::Died { .. }), "{died:?}");
        assert!(matches!(
            terms_error(WorkerError::Timeout.into()),
            WorkerError::Timeout
        ));
    }

    #[tokio::test]
    async fn dropped_reply_still_answers_once() {
        let (r, rx) = Reply::<CheckResult>::new();
        assert!(!r.is_cancelled());
        drop(r);
        assert!(matches!(rx.await, Ok(Err(PoolError::Internal(_)))));
    }

    #[tokio::test]
    async fn cancellation_seen_when_caller_goes_away() {
        let (r, rx) = Reply::<CheckResult>::new();
        drop(rx);
        assert!(r.is_cancelled());
    }

    #[tokio::test]
    async fn try_send_gives_the_value_back_when_the_caller_is_gone() {
        let (r, rx) = Reply::<u32>::new();
        drop(rx);
        assert_eq!(r.try_send(7), Err(7));
        let (r, rx) = Reply::<u32>::new();
        assert_eq!(r.try_send(7), Ok(()));
        assert!(matches!(rx.await, Ok(Ok(7))));
    }

    #[tokio::test]
    async fn a_failed_job_answers_its_own_method() {
        let (reply, rx) = Reply::new();
        let job: Job = Request::<method::Opt>::new(
            StatementParams {
                text: String::new(),
                timeout_ms: None,
            },
            reply,
        )
        .into();
        assert!(matches!(job, Job::Opt(_)));
        assert!(!job.is_cancelled());
        job.fail(PoolError::ShuttingDown);
        assert!(matches!(rx.await, Ok(Err(PoolError::ShuttingDown))));
    }

    #[test]
    fn timeout_answers_keep_the_method_shape() {
        let p = StatementParams {
            text: "theorem t : True := trivial".into(),
            timeout_ms: Some(5),
        };
        let (reply, _rx) = Reply::new();
        let mut i = Request::<method::Opt>::new(p, reply);
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_millis(5));
        let o: OptResult = method::Opt::timed_out(5);
        assert_eq!(o.check.status, leanpool_protocol::CheckStatus::Timeout);
        assert!(method::Opt::is_timeout(&o));
        clamp_timeout(i.input.limit_ms_mut(), 1_000, 600_000);
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_secs(1));
        let (reply, _rx) = Reply::new();
        let mut big = Request::<method::Check>::new(
            CheckParams {
                text: String::new(),
                timeout_ms: Some(u64::MAX),
                timings: false,
            },
            reply,
        );
        clamp_timeout(big.input.limit_ms_mut(), 1_000, 600_000);
        assert_eq!(
            big.timeout(Duration::from_secs(9)),
            Duration::from_secs(600)
        );
        let (reply, _rx) = Reply::new();
        let c = Request::<method::Check>::new(
            CheckParams {
                text: String::new(),
                timeout_ms: None,
                timings: false,
            },
            reply,
        );
        assert_eq!(c.timeout(Duration::from_secs(9)), Duration::from_secs(9));
        assert_eq!(method::Check::rejected("no").reason.as_deref(), Some("no"));
    }
}
