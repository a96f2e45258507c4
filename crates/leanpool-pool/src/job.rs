//! A request inside the pool: what to run, and the one answer it owes.
//! A queue holds [`Job`]s, whatever their method: a request's method is
//! erased behind [`Queued`], whose one implementation ([`Request`]) keeps
//! the method's own result type to the end.

use crate::error::PoolError;
use leanpool_lean::{Worker, WorkerError};
use leanpool_methods::Policy;
use leanpool_methods::{Input as _, PoolMethod};
use leanpool_screen::Screened;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

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
    /// Its place in the machine-wide worker total the pool shares with
    /// others ([`crate::Pool::with_budget`]; `None` without one): the
    /// holder keeps it as long as the worker lives and drops it after
    /// the worker (field order does that when both go together).
    pub permit: Option<crate::WorkerPermit>,
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
    /// The answer of the last run, until the slot sends it.
    out: Mutex<Option<M::Result>>,
}

impl<M: PoolMethod> Request<M> {
    pub(crate) fn new(
        input: M::Input,
        screened: Box<Screened>,
        reply: Reply<M::Result>,
        accepted: Instant,
    ) -> Self {
        Request {
            input,
            screened,
            reply,
            accepted,
            retried: false,
            spent: Duration::ZERO,
            out: Mutex::new(None),
        }
    }

    pub(crate) fn timeout(&self, default: Duration) -> Duration {
        self.input.options().limit_or(default)
    }
}

/// How a run on a worker ended when the worker gave an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// The method's answer is ready to send.
    Answered,
    /// The answer is `timeout`; the worker may still be elaborating.
    TimedOut,
}

/// The future of one run on a worker.
pub(crate) type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<Ran, WorkerError>> + Send + 'a>>;

/// A queued request whatever its method: what a slot needs to run it and
/// to answer it once.
pub(crate) trait Queued: Send + Sync {
    /// The method's name (`M::NAME`), for per-method statistics.
    fn method(&self) -> &'static str;
    /// When the pool accepted it.
    fn accepted(&self) -> Instant;
    /// Whether it already ran once on a worker that died.
    fn retried(&self) -> bool;
    /// Time spent on workers by earlier attempts.
    fn spent(&self) -> Duration;
    /// Marks it retried after an attempt of `took` on a dying worker.
    fn note_retry(&mut self, took: Duration);
    /// The caller dropped its future: nobody wants the answer any more.
    fn is_cancelled(&self) -> bool;
    /// Runs it on `worker` (whose header is the request's key), keeping
    /// the answer for [`Queued::answer`]. A time-out comes back as
    /// [`Ran::TimedOut`]; the worker is dead if the driver killed it
    /// (grace 0), else still working on the timed-out request: the slot
    /// interrupts it (`Slot::interrupt_or_kill`).
    ///
    /// The worker elaborates the screened text, never the input's text
    /// as such.
    fn run<'a>(
        &'a self,
        worker: &'a mut Worker,
        default: Duration,
        policy: &'a Policy,
    ) -> RunFuture<'a>;
    /// Sends the kept answer (`Ok`) or the error.
    fn answer(self: Box<Self>, outcome: Result<(), PoolError>);
}

impl<M: PoolMethod> Queued for Request<M> {
    fn method(&self) -> &'static str {
        M::NAME
    }
    fn accepted(&self) -> Instant {
        self.accepted
    }
    fn retried(&self) -> bool {
        self.retried
    }
    fn spent(&self) -> Duration {
        self.spent
    }
    fn note_retry(&mut self, took: Duration) {
        self.retried = true;
        self.spent += took;
    }
    fn is_cancelled(&self) -> bool {
        self.reply.is_cancelled()
    }
    fn run<'a>(
        &'a self,
        worker: &'a mut Worker,
        default: Duration,
        policy: &'a Policy,
    ) -> RunFuture<'a> {
        Box::pin(async move {
            let limit = self.timeout(default);
            let result = match M::run(worker, &self.input, &self.screened, default, policy).await {
                Err(WorkerError::Timeout) => M::timed_out(limit.as_millis() as u64),
                other => other?,
            };
            let ran = if M::is_timeout(&result) {
                Ran::TimedOut
            } else {
                Ran::Answered
            };
            *self.out.lock().unwrap() = Some(result);
            Ok(ran)
        })
    }
    fn answer(self: Box<Self>, outcome: Result<(), PoolError>) {
        let this = *self;
        let kept = this.out.into_inner().unwrap_or_else(|e| e.into_inner());
        this.reply.send(match (outcome, kept) {
            (Ok(()), Some(r)) => Ok(r),
            (Ok(()), None) => Err(PoolError::Internal(
                "a request was answered before it ran".into(),
            )),
            (Err(e), _) => Err(e),
        });
    }
}

/// A queue entry: a request of one of the pool's methods, or a lease.
pub(crate) enum Job {
    /// A request, its method erased.
    Request(Box<dyn Queued>),
    /// Hand the slot's warm worker over ([`crate::Pool::lease`]).
    Lease(Reply<Leased>),
}

impl<M: PoolMethod> From<Request<M>> for Job {
    fn from(r: Request<M>) -> Job {
        Job::Request(Box::new(r))
    }
}

impl Job {
    /// The caller dropped its future: nobody wants the answer any more.
    pub(crate) fn is_cancelled(&self) -> bool {
        match self {
            Job::Request(r) => r.is_cancelled(),
            Job::Lease(reply) => reply.is_cancelled(),
        }
    }

    /// Answers the request (or lease) with an error.
    pub(crate) fn fail(self, e: PoolError) {
        match self {
            Job::Request(r) => r.answer(Err(e)),
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

    /// A test request's text as the default guard screens it.
    fn screened(text: &str) -> Box<Screened> {
        leanpool_screen::screen(text, &leanpool_screen::GuardPolicy::default())
            .map(Box::new)
            .expect("a test request's text passes the guard")
    }
    use leanpool_protocol::method;
    use leanpool_protocol::{CheckParams, CheckResult, StatementParams};

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
            StatementParams::new(""),
            screened(""),
            reply,
            Instant::now(),
        )
        .into();
        assert!(matches!(&job, Job::Request(r) if r.method() == "opt"));
        assert!(!job.is_cancelled());
        job.fail(PoolError::ShuttingDown);
        assert!(matches!(rx.await, Ok(Err(PoolError::ShuttingDown))));
    }

    /// A request answered `Ok` without a kept answer is a pool bug: it
    /// still gets one answer, an error.
    #[tokio::test]
    async fn answering_before_running_is_an_internal_error() {
        let (reply, rx) = Reply::new();
        let r: Box<dyn Queued> = Box::new(Request::<method::Check>::new(
            CheckParams::new(""),
            screened(""),
            reply,
            Instant::now(),
        ));
        r.answer(Ok(()));
        assert!(matches!(rx.await, Ok(Err(PoolError::Internal(_)))));
    }

    #[test]
    fn request_limits_are_clamped() {
        let p = StatementParams::new("theorem t : True := trivial").with_timeout_ms(5);
        let (reply, _rx) = Reply::new();
        let mut i = Request::<method::Opt>::new(
            p,
            screened("theorem t : True := trivial"),
            reply,
            Instant::now(),
        );
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_millis(5));
        clamp_timeout(&mut i.input.options_mut().timeout_ms, 1_000, 600_000);
        assert_eq!(i.timeout(Duration::from_secs(9)), Duration::from_secs(1));
        let (reply, _rx) = Reply::new();
        let mut big = Request::<method::Check>::new(
            CheckParams::new("").with_timeout_ms(u64::MAX),
            screened(""),
            reply,
            Instant::now(),
        );
        clamp_timeout(&mut big.input.options_mut().timeout_ms, 1_000, 600_000);
        assert_eq!(
            big.timeout(Duration::from_secs(9)),
            Duration::from_secs(600)
        );
        let (reply, _rx) = Reply::new();
        let c = Request::<method::Check>::new(
            CheckParams::new(""),
            screened(""),
            reply,
            Instant::now(),
        );
        assert_eq!(c.timeout(Duration::from_secs(9)), Duration::from_secs(9));
    }
}
