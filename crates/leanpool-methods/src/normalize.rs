//! `normalize`: a statement as Lean elaborated it (canonical name, one
//! binder per variable, types and conclusion as Lean printed them), read
//! from Lean's structured answers ([`crate::terms`] for the mechanism and
//! the path `normalize` shares with `opt`).

use crate::terms::{
    answer_on_with, terms_pool_method, Analysis, Statement, TermsAnswer, TermsError,
};
use leanpool_lean::Worker;
use leanpool_protocol::{method, CheckResult, NormalizeResult, StatementParams};
use leanpool_screen::GuardPolicy;
use std::time::Duration;

impl TermsAnswer for NormalizeResult {
    fn from_analysis(a: Analysis) -> Self {
        NormalizeResult {
            check: a.check,
            normalized: a.statement.as_ref().map(Statement::normalized),
        }
    }
    fn from_check(check: CheckResult) -> Self {
        NormalizeResult {
            check,
            normalized: None,
        }
    }
    fn check(&self) -> &CheckResult {
        &self.check
    }
    fn check_mut(&mut self) -> &mut CheckResult {
        &mut self.check
    }
}

terms_pool_method!(method::Normalize, NormalizeResult);

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
    answer_on_with(worker, params, timeout, guard).await
}
