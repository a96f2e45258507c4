//! `opt`: the normalized statement and its operator tree (ours and
//! GTED's format), read from Lean's structured answers ([`crate::terms`]
//! for the mechanism and the path `opt` shares with `normalize`).

use crate::terms::{
    answer_on_with, terms_pool_method, Analysis, Statement, TermsAnswer, TermsError,
};
use leanpool_lean::Worker;
use leanpool_protocol::{method, CheckResult, GtedNode, OptResult, StatementParams};
use leanpool_screen::GuardPolicy;
use std::time::Duration;

impl TermsAnswer for OptResult {
    fn from_analysis(a: Analysis) -> Self {
        let tree = a.statement.as_ref().map(Statement::tree);
        OptResult {
            check: a.check,
            normalized: a.statement.as_ref().map(Statement::normalized),
            gted_tree: tree.as_ref().map(GtedNode::from),
            tree,
            lean_requests: Some(a.lean_requests),
        }
    }
    fn from_check(check: CheckResult) -> Self {
        OptResult {
            check,
            normalized: None,
            tree: None,
            gted_tree: None,
            lean_requests: None,
        }
    }
    fn check(&self) -> &CheckResult {
        &self.check
    }
    fn check_mut(&mut self) -> &mut CheckResult {
        &mut self.check
    }
}

terms_pool_method!(method::Opt, OptResult);

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
    answer_on_with(worker, params, timeout, guard).await
}
