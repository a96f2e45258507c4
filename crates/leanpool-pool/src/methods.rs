//! The methods the pool runs on a warm worker, one [`PoolMethod`] impl
//! each: how its params become a queued input, what it answers for a
//! refused text or a time-out, and what it runs on the worker. The pool's
//! entry ([`crate::Pool::call`]), its queue and its slots are generic over
//! this trait: adding a pool method is its protocol type
//! (`leanpool_protocol::method`) plus one impl here.

use leanpool_lean::{Worker, WorkerError};
use leanpool_methods::terms::TermsError;
use leanpool_methods::verify::Assembled;
use leanpool_methods::VerdictPolicy;
use leanpool_protocol::method;
use leanpool_protocol::{
    CheckParams, CheckResult, CheckStatus, EquivParams, EquivResult, NormalizeResult, OptResult,
    StatementParams, VerifyParams, VerifyResult, VerifyStatus,
};
use leanpool_screen::Screened;
use std::future::Future;
use std::time::Duration;

/// A method the pool runs on a warm worker of the request's import header.
/// Each queued request carries the reply channel of its own method's
/// result type, so a slot cannot answer a `check` with an `opt` result:
/// there is no such value to send.
pub trait PoolMethod: method::Method + Sized + 'static {
    /// What a slot runs: the params, plus what the pool derived from them.
    type Input: Input;
    /// The queued input for `params`, or the answer when the params alone
    /// decide it (a `verify` whose parts do not assemble is `rejected`).
    fn prepare(params: Self::Params) -> Result<Self::Input, Self::Result>;
    /// The answer for a text the guard refused.
    fn rejected(reason: &str) -> Self::Result;
    /// The answer for a request that ran past its limit.
    fn timed_out(limit_ms: u64) -> Self::Result;
    /// Whether `result` is a time-out answer.
    fn is_timeout(result: &Self::Result) -> bool;
    /// Records the request's whole time in leanpool (queue wait, retries)
    /// in `result`, for inputs that asked for timings ([`Input::timings`]).
    fn stamp_elapsed(_result: &mut Self::Result, _elapsed: Duration) {}
    /// Runs the request on `worker` (whose header is the request's key).
    /// The worker elaborates `screened` (the input's text as the guard
    /// screened it, once, in `Pool::call`), never the input's text as such.
    fn run(
        worker: &mut Worker,
        input: &Self::Input,
        screened: &Screened,
        default_timeout: Duration,
        verdict: &VerdictPolicy,
    ) -> impl Future<Output = Result<Self::Result, WorkerError>> + Send;
}

/// What a queued request holds: the text that is screened and whose
/// header keys the worker, and the request's own time limit.
pub trait Input: Send + Sync + 'static {
    /// The text that is screened and whose header keys the worker.
    fn text(&self) -> &str;
    /// The request's own time limit, to read and to clamp.
    fn limit_ms_mut(&mut self) -> &mut Option<u64>;
    /// The same, read only.
    fn limit_ms(&self) -> Option<u64>;
    /// Whether the caller asked for timings (`elapsed_ms`).
    fn timings(&self) -> bool {
        false
    }
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
    fn timings(&self) -> bool {
        self.timings
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
    fn timings(&self) -> bool {
        self.0.timings
    }
}

impl PoolMethod for method::Check {
    type Input = CheckParams;
    fn prepare(p: CheckParams) -> Result<CheckParams, CheckResult> {
        Ok(p)
    }
    fn rejected(reason: &str) -> CheckResult {
        CheckResult::rejected(reason)
    }
    fn timed_out(limit_ms: u64) -> CheckResult {
        CheckResult::timeout(limit_ms)
    }
    fn is_timeout(r: &CheckResult) -> bool {
        r.status == CheckStatus::Timeout
    }
    fn stamp_elapsed(r: &mut CheckResult, elapsed: Duration) {
        r.elapsed_ms = Some(elapsed.as_millis() as u64);
    }
    async fn run(
        w: &mut Worker,
        p: &CheckParams,
        screened: &Screened,
        default: Duration,
        verdict: &VerdictPolicy,
    ) -> Result<CheckResult, WorkerError> {
        leanpool_methods::check::check_screened(w, screened, p, default, verdict).await
    }
}

fn normalize_with(check: CheckResult) -> NormalizeResult {
    NormalizeResult {
        check,
        normalized: None,
    }
}

impl PoolMethod for method::Normalize {
    type Input = StatementParams;
    fn prepare(p: StatementParams) -> Result<StatementParams, NormalizeResult> {
        Ok(p)
    }
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
        _verdict: &VerdictPolicy,
    ) -> Result<NormalizeResult, WorkerError> {
        leanpool_methods::terms::normalize_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
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
    type Input = StatementParams;
    fn prepare(p: StatementParams) -> Result<StatementParams, OptResult> {
        Ok(p)
    }
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
        _verdict: &VerdictPolicy,
    ) -> Result<OptResult, WorkerError> {
        leanpool_methods::terms::opt_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
    }
}

impl PoolMethod for method::Verify {
    /// The params and the text they assemble to (what is screened and
    /// keys the worker).
    type Input = (VerifyParams, Box<Assembled>);
    fn prepare(p: VerifyParams) -> Result<(VerifyParams, Box<Assembled>), VerifyResult> {
        match leanpool_methods::verify::assemble(&p) {
            Ok(a) => Ok((p, Box::new(a))),
            Err(reason) => Err(VerifyResult::rejected(reason.to_string())),
        }
    }
    fn rejected(reason: &str) -> VerifyResult {
        VerifyResult::rejected(reason)
    }
    fn timed_out(limit_ms: u64) -> VerifyResult {
        VerifyResult::timeout(limit_ms)
    }
    fn is_timeout(r: &VerifyResult) -> bool {
        r.status == VerifyStatus::Timeout
    }
    fn stamp_elapsed(r: &mut VerifyResult, elapsed: Duration) {
        r.elapsed_ms = Some(elapsed.as_millis() as u64);
    }
    async fn run(
        w: &mut Worker,
        (p, a): &(VerifyParams, Box<Assembled>),
        screened: &Screened,
        default: Duration,
        verdict: &VerdictPolicy,
    ) -> Result<VerifyResult, WorkerError> {
        leanpool_methods::verify::verify_screened(w, p, a, screened, default, verdict).await
    }
}

/// `equiv`'s params and the text of its first attempt (what is screened
/// and keys the worker; every attempt is screened again, as a `verify`).
impl Input for (EquivParams, String) {
    fn text(&self) -> &str {
        &self.1
    }
    fn limit_ms_mut(&mut self) -> &mut Option<u64> {
        &mut self.0.timeout_ms
    }
    fn limit_ms(&self) -> Option<u64> {
        self.0.timeout_ms
    }
    fn timings(&self) -> bool {
        self.0.timings
    }
}

impl PoolMethod for method::Equiv {
    type Input = (EquivParams, String);
    fn prepare(p: EquivParams) -> Result<(EquivParams, String), EquivResult> {
        match leanpool_methods::equiv::first_text(&p) {
            Ok(text) => Ok((p, text)),
            Err(refused) => Err(EquivResult::rejected(refused.reason)),
        }
    }
    fn rejected(reason: &str) -> EquivResult {
        EquivResult::rejected(reason)
    }
    fn timed_out(limit_ms: u64) -> EquivResult {
        EquivResult::timeout(limit_ms)
    }
    /// An attempt that ran past the limit stopped the worker too.
    fn is_timeout(r: &EquivResult) -> bool {
        r.timed_out()
    }
    fn stamp_elapsed(r: &mut EquivResult, elapsed: Duration) {
        r.elapsed_ms = Some(elapsed.as_millis() as u64);
    }
    /// Every attempt is screened again, as a `verify`: under the guard's
    /// built-in rules (the `[guard]` additions are not passed down to a
    /// slot; stricter, never looser), or not at all when `[guard]` is off.
    async fn run(
        w: &mut Worker,
        (p, _): &(EquivParams, String),
        screened: &Screened,
        default: Duration,
        verdict: &VerdictPolicy,
    ) -> Result<EquivResult, WorkerError> {
        let guard = leanpool_screen::GuardPolicy {
            enabled: screened.guarded(),
            ..Default::default()
        };
        let policy = leanpool_methods::Policy {
            guard,
            verdict: verdict.clone(),
        };
        leanpool_methods::equiv::equiv_on_with(w, p, default, &policy).await
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

    #[test]
    fn timeout_answers_keep_the_method_shape() {
        let o: OptResult = method::Opt::timed_out(5);
        assert_eq!(o.check.status, CheckStatus::Timeout);
        assert!(method::Opt::is_timeout(&o));
        assert!(!method::Opt::is_timeout(&method::Opt::rejected("no")));
        assert_eq!(method::Check::rejected("no").reason.as_deref(), Some("no"));
        let mut c = method::Check::timed_out(7);
        method::Check::stamp_elapsed(&mut c, Duration::from_millis(12));
        assert_eq!(c.elapsed_ms, Some(12));
    }

    #[test]
    fn verify_that_does_not_assemble_is_answered_without_queueing() {
        let p = VerifyParams {
            context: String::new(),
            header: String::new(),
            statement: "theorem t : True".into(),
            proof: "trivial\n#eval 1".into(),
            timeout_ms: None,
            timings: false,
        };
        match method::Verify::prepare(p) {
            Err(r) => assert_eq!(r.status, VerifyStatus::Rejected, "{r:?}"),
            Ok((_, a)) => panic!("assembled: {}", a.text),
        }
    }
}
