//! `normalize`: a statement as Lean elaborated it (canonical name, one
//! binder per variable, types and conclusion as Lean printed them), read
//! from Lean's structured answers ([`crate::terms`] for the mechanism).

use crate::method::PoolMethod;
use crate::terms::{
    analyze_on_with, analyze_screened, terms_error, Analysis, Statement, TermsError,
};
use crate::verdict::VerdictPolicy;
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{method, CheckResult, CheckStatus, NormalizeResult, StatementParams};
use leanpool_screen::{GuardPolicy, Screened};
use std::time::Duration;

/// Library `normalize` (see the crate docs for the mechanism).
pub async fn normalize_on(
    worker: &mut Worker,
    params: &StatementParams,
    timeout: Duration,
) -> Result<NormalizeResult, TermsError> {
    normalize_on_with(worker, params, timeout, &GuardPolicy::default()).await
}

/// [`normalize_on`] under an explicit guard policy.
pub async fn normalize_on_with(
    worker: &mut Worker,
    params: &StatementParams,
    timeout: Duration,
    guard: &GuardPolicy,
) -> Result<NormalizeResult, TermsError> {
    let a = analyze_on_with(worker, params, timeout, guard).await?;
    Ok(normalized(a))
}

/// [`normalize_on_with`] for a text already screened (the pool's path).
pub async fn normalize_screened(
    worker: &mut Worker,
    screened: &Screened,
    params: &StatementParams,
    timeout: Duration,
) -> Result<NormalizeResult, TermsError> {
    let a = analyze_screened(worker, screened, params, timeout).await?;
    Ok(normalized(a))
}

fn normalized(a: Analysis) -> NormalizeResult {
    NormalizeResult {
        check: a.check,
        normalized: a.statement.as_ref().map(Statement::normalized),
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
        normalize_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
    }
}
