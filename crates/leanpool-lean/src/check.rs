//! Library `check`: does a caller's Lean text elaborate, and what did Lean
//! say about it, in the caller's coordinates.

use crate::guard::{GuardPolicy, Rejection};
use crate::header::Document;
use crate::text::LineIndex;
use crate::verdict;
use crate::worker::{Worker, WorkerConfig, WorkerError};
use leanpool_protocol::{CheckParams, CheckResult, DeclarationInfo, Range};
use std::time::{Duration, Instant};

/// Screens a text before it reaches Lean under the default policy;
/// `Err(rejection)` means `rejected`. The rejection names the construct and
/// its position in the caller's text (its `Display` is the answer's reason).
pub fn screen(text: &str) -> Result<(), Rejection> {
    screen_with(text, &GuardPolicy::default())
}

/// [`screen`] under an explicit policy: every guard call goes through here.
/// With `policy.enabled == false` nothing is screened.
pub fn screen_with(text: &str, policy: &GuardPolicy) -> Result<(), Rejection> {
    if !policy.enabled {
        return Ok(());
    }
    crate::guard::screen(text, policy)
}

/// The worker header a text needs (its canonical import header): the
/// pool's key. A text no document can be built for (the guard refuses it
/// anyway) gets the empty header.
pub fn header_key(text: &str) -> String {
    Document::new(text).map(|d| d.header).unwrap_or_default()
}

/// Checks `params.text` on `worker`, whose header must be
/// `header_key(&params.text)`, under the default guard policy. A timeout
/// is an answer (`status: timeout`), not an error, but it leaves the
/// worker dead: the caller respawns.
pub async fn check_on(
    worker: &mut Worker,
    params: &CheckParams,
    default_timeout: Duration,
) -> Result<CheckResult, WorkerError> {
    check_on_with(worker, params, default_timeout, &GuardPolicy::default()).await
}

/// [`check_on`] with an explicit guard policy (the daemon's config).
pub async fn check_on_with(
    worker: &mut Worker,
    params: &CheckParams,
    default_timeout: Duration,
    policy: &GuardPolicy,
) -> Result<CheckResult, WorkerError> {
    let started = Instant::now();
    let with_time = |mut r: CheckResult| {
        if params.timings {
            r.elapsed_ms = Some(started.elapsed().as_millis() as u64);
        }
        r
    };
    if let Err(reason) = screen_with(&params.text, policy) {
        return Ok(with_time(CheckResult::rejected(reason.to_string())));
    }
    let doc = match Document::new(&params.text) {
        Ok(doc) => doc,
        Err(e) => return Ok(with_time(CheckResult::rejected(e.to_string()))),
    };
    if doc.header != worker.header() {
        return Err(WorkerError::Internal(format!(
            "worker has header {:?}, text needs {:?}",
            worker.header(),
            doc.header
        )));
    }
    let timeout = params
        .timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(default_timeout);
    let body = &doc.text[doc.header.len()..];
    let scan = match verdict::scan(body) {
        Ok(s) => s,
        Err((offset, reason)) => {
            let p = doc.to_caller(doc.body_offset_position(offset));
            return Ok(with_time(CheckResult::rejected(format!(
                "{}:{}: {reason}",
                p.line + 1,
                p.character + 1
            ))));
        }
    };
    let trailer = verdict::trailer(body, &scan);
    let sent = format!("{}{trailer}", doc.text);
    let first_line =
        (doc.text.matches('\n').count() + usize::from(trailer.starts_with('\n'))) as u32;
    let body_end = LineIndex::new(&doc.text).position(doc.text.len());
    let decls: Vec<_> = scan
        .declarations
        .iter()
        .map(|d| {
            let range = Range {
                start: doc.body_offset_position(d.start),
                end: doc.body_offset_position(d.end),
            };
            (d.clone(), range)
        })
        .collect();
    let on_worker = Instant::now();
    let elaborated = worker.elaborate(&sent, timeout).await;
    // Lean's share of the request, so that callers (the daemon bench) can
    // tell it from leanpool's own overhead.
    let worker_us = params
        .timings
        .then(|| on_worker.elapsed().as_micros() as u64);
    let with_time = |r: CheckResult| CheckResult {
        worker_us,
        ..with_time(r)
    };
    match elaborated {
        Ok(diags) => {
            let unlisted = policy.verdict.unlisted_axioms.resolve(worker.backend());
            let (diags, judged) = verdict::judge(
                diags,
                first_line,
                &decls,
                body_end,
                &policy.verdict,
                unlisted,
            );
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
            r.declarations = judged
                .into_iter()
                .map(|j| DeclarationInfo {
                    name: j.name,
                    kind: j.keyword,
                    range: doc.range_to_caller(j.range),
                    present: j.present,
                    axioms: j.axioms,
                })
                .collect();
            Ok(with_time(r))
        }
        Err(WorkerError::Timeout) => {
            Ok(with_time(CheckResult::timeout(timeout.as_millis() as u64)))
        }
        Err(e) => Err(e),
    }
}

/// One-shot check on a fresh worker (the CLI without a daemon): spawn for
/// the text's header, check, kill. `rejected` texts never start Lean.
pub async fn check_once(
    cfg: &WorkerConfig,
    params: &CheckParams,
    default_timeout: Duration,
) -> Result<CheckResult, WorkerError> {
    if let Err(reason) = screen(&params.text) {
        return Ok(CheckResult::rejected(reason.to_string()));
    }
    let mut worker = Worker::spawn(cfg, &header_key(&params.text)).await?;
    let r = check_on(&mut worker, params, default_timeout).await;
    worker.kill().await;
    r
}
