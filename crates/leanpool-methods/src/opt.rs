//! `opt`: the normalized statement and its operator tree (ours and
//! GTED's format), read from Lean's structured answers ([`crate::terms`]
//! for the mechanism).

use crate::method::PoolMethod;
use crate::terms::{
    analyze_on_with, analyze_screened, terms_error, Analysis, Statement, TermsError,
};
use crate::verdict::VerdictPolicy;
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{method, CheckResult, CheckStatus, GtedNode, OptResult, StatementParams};
use leanpool_screen::{GuardPolicy, Screened};
use std::time::Duration;

/// Library `opt`: the normalized statement and its operator tree, in both
/// formats, with the number of LSP requests it cost.
pub async fn opt_on(
    worker: &mut Worker,
    params: &StatementParams,
    timeout: Duration,
) -> Result<OptResult, TermsError> {
    opt_on_with(worker, params, timeout, &GuardPolicy::default()).await
}

/// [`opt_on`] under an explicit guard policy.
pub async fn opt_on_with(
    worker: &mut Worker,
    params: &StatementParams,
    timeout: Duration,
    guard: &GuardPolicy,
) -> Result<OptResult, TermsError> {
    let a = analyze_on_with(worker, params, timeout, guard).await?;
    Ok(optimized(a))
}

/// [`opt_on_with`] for a text already screened (the pool's path).
pub async fn opt_screened(
    worker: &mut Worker,
    screened: &Screened,
    params: &StatementParams,
    timeout: Duration,
) -> Result<OptResult, TermsError> {
    let a = analyze_screened(worker, screened, params, timeout).await?;
    Ok(optimized(a))
}

fn optimized(a: Analysis) -> OptResult {
    let tree = a.statement.as_ref().map(Statement::tree);
    OptResult {
        check: a.check,
        normalized: a.statement.as_ref().map(Statement::normalized),
        gted_tree: tree.as_ref().map(GtedNode::from),
        tree,
        lean_requests: Some(a.lean_requests),
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
        opt_screened(w, screened, p, default)
            .await
            .map_err(terms_error)
    }
}
