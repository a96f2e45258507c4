//! Library `check`: does a caller's Lean text elaborate, and what did Lean
//! say about it, in the caller's coordinates.

use crate::method::PoolMethod;
use crate::verdict::{self, VerdictPolicy};
use crate::Policy;
use leanpool_lean::{Worker, WorkerConfig, WorkerError};
use leanpool_protocol::{method, CheckParams, CheckResult, CheckStatus, DeclarationInfo};
use leanpool_screen::{screen, LineIndex, Screened};
use std::time::{Duration, Instant};

/// Checks `params.text` on `worker`, whose header must be
/// `header_key(&params.text)`, under the default guard policy. A timeout
/// is an answer (`status: timeout`), not an error, but it leaves the
/// worker dead: the caller respawns.
pub async fn check_on(
    worker: &mut Worker,
    params: &CheckParams,
    default_timeout: Duration,
) -> Result<CheckResult, WorkerError> {
    check_on_with(worker, params, default_timeout, &Policy::default()).await
}

/// [`check_on`] with explicit guard and verdict policies (the daemon's config).
pub async fn check_on_with(
    worker: &mut Worker,
    params: &CheckParams,
    default_timeout: Duration,
    policy: &Policy,
) -> Result<CheckResult, WorkerError> {
    let started = Instant::now();
    let with_time = |r: CheckResult| CheckResult {
        elapsed_ms: params.options.elapsed_ms(started),
        ..r
    };
    match screen(&params.text, policy.screening()) {
        Ok(screened) => {
            check_screened(worker, &screened, params, default_timeout, &policy.verdict).await
        }
        Err(reason) => Ok(with_time(CheckResult::rejected(reason.to_string()))),
    }
}

/// [`check_on_with`] for a text already screened (the pool screens once,
/// off the async runtime): `screened` is `params.text` screened; the
/// answer is judged under `policy`.
pub async fn check_screened(
    worker: &mut Worker,
    screened: &Screened,
    params: &CheckParams,
    default_timeout: Duration,
    policy: &VerdictPolicy,
) -> Result<CheckResult, WorkerError> {
    let started = Instant::now();
    let with_time = |r: CheckResult| CheckResult {
        elapsed_ms: params.options.elapsed_ms(started),
        ..r
    };
    let doc = screened.document();
    if doc.header != worker.header() {
        return Err(WorkerError::Internal(format!(
            "worker has header {:?}, text needs {:?}",
            worker.header(),
            doc.header
        )));
    }
    let timeout = params.options.limit_or(default_timeout);
    let body = &doc.text[doc.header.len()..];
    let doc_index = LineIndex::new(&doc.text);
    let scan = match verdict::scan_tokens(&doc.text, screened.body_tokens()) {
        Ok(s) => s,
        Err((offset, reason)) => {
            let p = doc.to_caller(doc_index.position(offset));
            return Ok(with_time(CheckResult::rejected(format!(
                "{}:{}: {reason}",
                p.line + 1,
                p.character + 1
            ))));
        }
    };
    let trailer = verdict::trailer(body, &scan);
    let sent = match screened.with_trailer(&trailer) {
        Ok(sent) => sent,
        Err(e) => return Ok(with_time(CheckResult::rejected(e.to_string()))),
    };
    let first_line =
        (doc.text.matches('\n').count() + usize::from(trailer.starts_with('\n'))) as u32;
    let body_end = doc_index.position(doc.text.len());
    let decls = verdict::located(&scan, &doc_index);
    let on_worker = Instant::now();
    let elaborated = worker.elaborate_messages(&sent, timeout).await;
    // Lean's share of the request, so that callers (the daemon bench) can
    // tell it from leanpool's own overhead.
    let worker_us = params
        .options
        .timings
        .then(|| on_worker.elapsed().as_micros() as u64);
    let with_time = |r: CheckResult| CheckResult {
        worker_us,
        ..with_time(r)
    };
    match elaborated {
        Ok(messages) => {
            let unlisted = policy.unlisted_axioms.resolve(worker.backend());
            let (diags, judged) =
                verdict::judge(messages, first_line, &decls, body_end, policy, unlisted);
            Ok(with_time(answer(doc, diags, judged, body_end)))
        }
        Err(WorkerError::Timeout) => {
            Ok(with_time(CheckResult::timeout(timeout.as_millis() as u64)))
        }
        Err(e) => Err(e),
    }
}

/// `check`'s answer from the verdict's diagnostics and declarations (in
/// document coordinates): mapped to the caller's text and capped.
fn answer(
    doc: &leanpool_screen::header::Document,
    diags: Vec<leanpool_protocol::Diagnostic>,
    judged: Vec<verdict::Judged>,
    body_end: leanpool_protocol::Position,
) -> CheckResult {
    let diags = diags
        .into_iter()
        .map(|mut d| {
            // A message that runs into leanpool's trailer (a body cut
            // off mid-command) ends where the caller's text ends.
            d.range.end = d.range.end.min(body_end).max(d.range.start);
            d.range = doc.range_to_caller(d.range);
            d
        })
        .collect();
    let mut r = CheckResult::from_diagnostics(diags);
    r.diagnostics = verdict::cap::cap(r.diagnostics, doc.to_caller(body_end));
    r.declarations = judged
        .into_iter()
        .map(|j| DeclarationInfo {
            name: j.name,
            kind: j.keyword,
            range: doc.range_to_caller(j.range),
            present: j.present,
            type_: j.type_,
            explicit_type: j.explicit_type,
            axioms: j.axioms,
        })
        .collect();
    r
}

/// One-shot check on a fresh worker (the CLI without a daemon): spawn for
/// the text's header, check, kill. `rejected` texts never start Lean.
pub async fn check_once(
    cfg: &WorkerConfig,
    params: &CheckParams,
    default_timeout: Duration,
) -> Result<CheckResult, WorkerError> {
    let policy = Policy::default();
    let screened = match screen(&params.text, policy.screening()) {
        Ok(s) => s,
        Err(reason) => return Ok(CheckResult::rejected(reason.to_string())),
    };
    let mut worker = Worker::spawn(cfg, screened.header()).await?;
    let r = check_screened(
        &mut worker,
        &screened,
        params,
        default_timeout,
        &policy.verdict,
    )
    .await;
    worker.kill().await;
    r
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
        policy: &crate::Policy,
    ) -> Result<CheckResult, WorkerError> {
        check_screened(w, screened, p, default, &policy.verdict).await
    }
}
