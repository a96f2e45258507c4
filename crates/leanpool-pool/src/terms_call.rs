//! The pool's only calls into `leanpool-terms` (normalize / opt on a
//! warm worker).
// TEMPORARY until `leanpool_terms::{normalize_on, opt_on}` exist: answer
// with an error instead of calling them. Replace both bodies with the calls.

use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{NormalizeResult, OptResult, StatementParams};
use std::time::Duration;

pub(crate) async fn normalize_on(_w: &mut Worker, _p: &StatementParams, _t: Duration) -> Result<NormalizeResult, WorkerError> {
    Err(WorkerError::Protocol("normalize is not available in this build yet".into()))
}

pub(crate) async fn opt_on(_w: &mut Worker, _p: &StatementParams, _t: Duration) -> Result<OptResult, WorkerError> {
    Err(WorkerError::Protocol("opt is not available in this build yet".into()))
}
