//! `normalize` and `opt` — a statement as Lean elaborated
//! it, and its operator tree, from a warm worker in a few requests.
//!
//! # Mechanism
//!
//! New Lean code cannot be compiled in the WASM build, so everything comes
//! from what Lean's server already offers, on one elaborated document:
//!
//! 1. **One `didChange`** ([`source`]): the caller's header, then
//!    `set_option pp.… in` (fixed options, [`source::PP_OPTIONS`]) and the
//!    statement renamed to `theorem stmt` with its proof replaced by
//!    `by sorry`, then `#check @stmt` (with `pp.piBinderNames true`).
//!    Diagnostics on the statement are the answer's `check`; with an error
//!    we stop there (no half result).
//! 2. **`Lean.Widget.getInteractiveGoals` at `sorry`** (`$/lean/rpc/call`):
//!    the hypotheses are exactly the statement's binders, in order
//!    (bundled by type, with `fvarIds`, `isType`, `isInstance`), and the
//!    goal is the conclusion. Hypothesis types and the goal are
//!    `CodeWithInfos`: the delaborator's output with every subterm tagged
//!    by its `SubExpr.Pos`. The nesting of tags is the term tree
//!    ([`build`]); no pretty-printed text is ever parsed back.
//! 3. **`Lean.Widget.getInteractiveDiagnostics`** for the `#check` line:
//!    the message embeds the type of `stmt` as one tagged `∀` telescope.
//!    Binder kinds are not in the goal (Lean's `InteractiveHypothesisBundle`
//!    has no `BinderInfo`), but the telescope prints each binder in its own
//!    bracket (`(…)`, `{…}`, `⦃…⦄`, `[…]`); the tree builder reads the
//!    bracket around each *tagged* binder name, and the first N levels of
//!    the telescope are the N statement binders.
//! 4. **`Lean.Widget.InteractiveDiagnostics.infoToInteractive`**, once per
//!    hypothesis *bundle* that is not a type: the info popup of the bundle
//!    type's root tag gives the type of that type; `Prop` means the binder
//!    is a hypothesis. This is the one cost that grows with the statement
//!    (per bundle, not per character): Lean's goal view reports `isType`
//!    and `isInstance` but not "is a proposition", and no other answer of
//!    the server carries it.
//!
//! Plus `$/lean/rpc/connect` when the worker has no live RPC session.
//! [`leanpool_protocol::OptResult::lean_requests`] counts the LSP requests actually sent
//! ([`leanpool_lean::Worker::lsp_requests`]); the `didChange` is a
//! notification, `waitForDiagnostics` (the driver's barrier) a request.
//! Total: 3 + (hypothesis bundles that are not types) [+ 1 connect]; 5 for
//! `theorem t (a b : Nat) (h : a < b) : ∀ c, a + c < b + c` on a warm
//! worker, against ~60 hovers for the same signature (see `benches/`).
//!
//! Binder names inside terms: Lean tags them with "extra" positions from
//! the delaborator's hole iterator, which serialize as short, ambiguous
//! `subexprPos` strings (`"/"`, `"/0"`, …), so [`build`] finds them by
//! the shape of the tagged text (a text-only identifier in a binder list
//! of a construct with a body separator) and vetoes candidates sitting at
//! a plausible subterm position; see [`build`] for labels and scopes.
//!
//! Why not the paper's method (a hover per character, then re-elaborating
//! pretty-printed text)? It costs 350-460 sequential round trips per
//! statement, its ranges are UTF-16 positions a Python index misreads, and
//! re-parsing printed text loses information. [`hover`] keeps that method
//! (correctly indexed) as the bench baseline.
//!
//! Mathlib: nothing here knows a notation. `∑ x ∈ s, f x`, `ℝ`, set-builder
//! and coercions come out of the same tags; scopes follow `SubExpr.Pos`
//! (a binder at `q` scopes over `q/1`), so the code runs unchanged under
//! `import Mathlib`.

#![deny(missing_docs)]

pub mod build;
pub mod goals;
pub mod hover;
pub mod source;
pub mod tagged;

use build::{squash_ws, TreeBuilder};
use goals::{message_exprs, parse_first_goal, parse_interactive_diagnostics, Goal};
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{
    is_sorry_warning, Binder, BinderKind, CheckResult, CheckStatus, Node, NodeKind, Normalized,
    StatementParams,
};
use leanpool_screen::{GuardPolicy, Screened};
use serde_json::{json, Value};
use source::{StatementDoc, CANONICAL_NAME};
use std::time::Duration;
use tagged::Tagged;

/// Everything one statement's analysis produced.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The statement's check (status and diagnostics).
    pub check: CheckResult,
    /// Present iff the statement elaborated.
    pub statement: Option<Statement>,
    /// LSP requests sent for this analysis.
    pub lean_requests: u32,
}

/// The elaborated statement: binders (one per variable) and conclusion.
#[derive(Debug, Clone)]
pub struct Statement {
    /// One per bound variable, in order.
    pub binders: Vec<StatementBinder>,
    /// The conclusion, as Lean's tagged goal text.
    pub conclusion: Tagged,
}

/// One binder of the statement.
#[derive(Debug, Clone)]
pub struct StatementBinder {
    /// The bound name.
    pub name: String,
    /// Explicit, implicit, strict-implicit or instance.
    pub kind: BinderKind,
    /// Its type, as Lean's tagged text.
    pub ty: Tagged,
    /// Whether its type is a `Prop` (a hypothesis).
    pub is_prop: bool,
}

/// Why a statement's analysis (`normalize`, `opt`) failed; a statement
/// that does not elaborate, is refused or runs out of time is an answer,
/// not an error. Callers decide what each means to their own callers (the
/// pool: `TermsError::Unreadable` is `WORKER_FAILED` / `unexpected_answer`).
#[derive(Debug, thiserror::Error)]
pub enum TermsError {
    /// The worker failed (died, timed out, answered an error, ...), or a
    /// leanpool bug (a text for another worker's header).
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// Lean's answer did not have the shape this crate reads (an
    /// unsupported Lean version, or a reader bug); the reason says what
    /// was missing.
    #[error("LSP protocol error: {0}")]
    Unreadable(String),
}

fn unreadable(msg: impl Into<String>) -> TermsError {
    TermsError::Unreadable(msg.into())
}

/// Elaborates the statement on `worker` and reads the structured answers
/// (screened with the default guard policy).
pub async fn analyze_on(
    worker: &mut Worker,
    params: &StatementParams,
    default_timeout: Duration,
) -> Result<Analysis, TermsError> {
    analyze_on_with(worker, params, default_timeout, &GuardPolicy::default()).await
}

/// [`analyze_on`] screening the text with `guard` (the pool passes its
/// configured policy, so `check`, `normalize` and `opt` refuse the same texts).
pub async fn analyze_on_with(
    worker: &mut Worker,
    params: &StatementParams,
    default_timeout: Duration,
    guard: &GuardPolicy,
) -> Result<Analysis, TermsError> {
    match leanpool_screen::screen(&params.text, guard) {
        Ok(screened) => analyze_screened(worker, &screened, params, default_timeout).await,
        Err(reason) => Ok(Analysis {
            check: CheckResult::rejected(reason.to_string()),
            statement: None,
            lean_requests: 0,
        }),
    }
}

/// [`analyze_on_with`] for a text already screened (the pool screens
/// once): `screened` is `params.text` screened.
pub async fn analyze_screened(
    worker: &mut Worker,
    screened: &Screened,
    params: &StatementParams,
    default_timeout: Duration,
) -> Result<Analysis, TermsError> {
    let requests_before = worker.lsp_requests();
    let count = |w: &Worker| (w.lsp_requests() - requests_before) as u32;
    let doc = match StatementDoc::new(screened) {
        Ok(d) => d,
        Err(e) => {
            return Ok(Analysis {
                check: CheckResult::rejected(e.to_string()),
                statement: None,
                lean_requests: 0,
            })
        }
    };
    if doc.header != worker.header() {
        // The pool keys workers by header: a text for another header here
        // is a leanpool bug (INTERNAL_ERROR), not Lean's answer.
        return Err(WorkerError::Internal(format!(
            "worker has header {:?}, text needs {:?}",
            worker.header(),
            doc.header
        ))
        .into());
    }
    let timeout = params.options.limit_or(default_timeout);
    let diags = match worker.elaborate(doc.lean_text(), timeout).await {
        Ok(d) => d,
        Err(WorkerError::Timeout) => {
            return Ok(Analysis {
                check: CheckResult::timeout(timeout.as_millis() as u64),
                statement: None,
                lean_requests: count(worker),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let diags = diags
        .into_iter()
        // Our `#check` and the `sorry` we put in place of the proof are
        // not the caller's business.
        .filter(|d| !doc.is_check_line(d.range.start.line))
        .filter(|d| !is_sorry_warning(d) || doc.is_verbatim(d.range.start))
        .map(|mut d| {
            d.range = doc.range_to_caller(d.range);
            d
        })
        .collect();
    let check = CheckResult::from_diagnostics(diags);
    if check.status == CheckStatus::Error {
        return Ok(Analysis {
            check,
            statement: None,
            lean_requests: count(worker),
        });
    }
    let at = leanpool_lean::lsp::position_to_lsp(doc.sorry);
    let mut refs = Vec::new();
    let read = read_statement(worker, &doc, at, timeout, &mut refs).await;
    // Whatever Lean handed out is released, success or not (best effort: a
    // dead worker has nothing left to free).
    if worker.is_alive() {
        let _ = worker.rpc_release(refs);
    }
    Ok(Analysis {
        check,
        statement: Some(read?),
        lean_requests: count(worker),
    })
}

/// The RPC half of [`analyze_on_with`]: goal, binder kinds, Prop-ness.
/// Every RPC reference seen in an answer is added to `refs`.
async fn read_statement(
    worker: &mut Worker,
    doc: &StatementDoc,
    at: lsp_types::Position,
    timeout: Duration,
    refs: &mut Vec<Value>,
) -> Result<Statement, TermsError> {
    let goals = worker
        .rpc_call(
            "Lean.Widget.getInteractiveGoals",
            at,
            json!({
                "textDocument": { "uri": worker.uri() },
                "position": at,
            }),
            timeout,
        )
        .await?;
    leanpool_lean::collect_rpc_refs(&goals, refs);
    let goal = parse_first_goal(&goals)
        .map_err(|e| unreadable(e.to_string()))?
        .ok_or_else(|| unreadable("no goal at the `sorry` of the statement"))?;
    let line_range = json!({ "lineRange": { "start": doc.check_line, "end": doc.check_line + 1 } });
    let idiags = worker
        .rpc_call(
            "Lean.Widget.getInteractiveDiagnostics",
            at,
            line_range,
            timeout,
        )
        .await?;
    leanpool_lean::collect_rpc_refs(&idiags, refs);
    let kinds = binder_kinds(&idiags, doc.check_line, goal.hyps.len())?;
    let mut is_prop = vec![false; goal.hyps.len()];
    let mut bundle_prop: Option<(usize, bool)> = None;
    for (i, h) in goal.hyps.iter().enumerate() {
        if h.is_type {
            continue;
        }
        if let Some((b, p)) = bundle_prop {
            if b == h.bundle {
                is_prop[i] = p;
                continue;
            }
        }
        let p = type_is_prop(worker, &h.ty, at, timeout, refs).await?;
        bundle_prop = Some((h.bundle, p));
        is_prop[i] = p;
    }
    let Goal { hyps, target } = goal;
    let binders = hyps
        .into_iter()
        .zip(kinds)
        .zip(is_prop)
        .map(|((h, kind), is_prop)| StatementBinder {
            name: h.name,
            kind,
            ty: h.ty,
            is_prop,
        })
        .collect();
    Ok(Statement {
        binders,
        conclusion: target,
    })
}

/// Binder kinds of the first `n` binders of `stmt`'s type, from the
/// `#check @stmt` message (see the crate docs, step 3).
pub fn binder_kinds(
    idiags: &Value,
    check_line: u32,
    n: usize,
) -> Result<Vec<BinderKind>, TermsError> {
    let diags = parse_interactive_diagnostics(idiags).map_err(|e| unreadable(e.to_string()))?;
    let msg = diags
        .iter()
        .find(|d| d.line == check_line && d.severity == 3)
        .ok_or_else(|| unreadable("no `#check` message for the statement"))?;
    let exprs = message_exprs(&msg.message).map_err(|e| unreadable(e.to_string()))?;
    let ty = exprs
        .last()
        .ok_or_else(|| unreadable("`#check` message without an expression"))?;
    telescope_kinds(ty, n)
}

/// Kinds of the first `n` binders of a tagged `∀` telescope.
pub fn telescope_kinds(ty: &Tagged, n: usize) -> Result<Vec<BinderKind>, TermsError> {
    let tree = TreeBuilder::new().term(ty);
    let mut kinds = Vec::with_capacity(n);
    let mut node = &tree;
    while kinds.len() < n {
        match node.children.as_slice() {
            [b, body] if b.binder.is_some() && node.label == "∀ _, _" => {
                kinds.push(b.binder.expect("checked"));
                node = body;
            }
            _ => {
                return Err(unreadable(format!(
                    "`#check @{CANONICAL_NAME}` shows {} binders where the goal has {n}",
                    kinds.len()
                )))
            }
        }
    }
    Ok(kinds)
}

/// Asks Lean for the type of a hypothesis' type (`Prop` or a universe).
async fn type_is_prop(
    worker: &mut Worker,
    ty: &Tagged,
    at: lsp_types::Position,
    timeout: Duration,
    refs: &mut Vec<Value>,
) -> Result<bool, TermsError> {
    let Tagged::Tag(payload, _) = ty else {
        return Ok(false);
    };
    let Some(info) = payload.get("info") else {
        return Ok(false);
    };
    let popup = worker
        .rpc_call(
            "Lean.Widget.InteractiveDiagnostics.infoToInteractive",
            at,
            info.clone(),
            timeout,
        )
        .await?;
    leanpool_lean::collect_rpc_refs(&popup, refs);
    let Some(t) = popup.get("type").filter(|t| !t.is_null()) else {
        return Ok(false);
    };
    let t = Tagged::parse(t).map_err(|e| unreadable(e.to_string()))?;
    Ok(t.strip_tags().trim() == "Prop")
}

fn binder_text(b: &StatementBinder) -> String {
    let ty = squash_ws(&b.ty.strip_tags());
    match b.kind {
        BinderKind::Default => format!("({} : {ty})", b.name),
        BinderKind::Implicit => format!("{{{} : {ty}}}", b.name),
        BinderKind::StrictImplicit => format!("⦃{} : {ty}⦄", b.name),
        // An anonymous instance binder (`[Inhabited α]`) has an
        // inaccessible name in the goal (`inst✝`), which cannot be written.
        BinderKind::InstImplicit if b.name.contains('✝') => format!("[{ty}]"),
        BinderKind::InstImplicit => format!("[{} : {ty}]", b.name),
    }
}

impl Statement {
    /// The normalized form: canonical name, one binder per variable,
    /// types and conclusion as Lean printed them (whitespace squashed).
    pub fn normalized(&self) -> Normalized {
        let conclusion = squash_ws(&self.conclusion.strip_tags());
        let mut statement = format!("theorem {CANONICAL_NAME}");
        for b in &self.binders {
            statement.push(' ');
            statement.push_str(&binder_text(b));
        }
        statement.push_str(" : ");
        statement.push_str(&conclusion);
        Normalized {
            statement,
            binders: self
                .binders
                .iter()
                .map(|b| Binder {
                    name: b.name.clone(),
                    kind: b.kind,
                    ty: squash_ws(&b.ty.strip_tags()),
                    is_prop: b.is_prop,
                })
                .collect(),
            conclusion,
        }
    }

    /// The operator tree: root `theorem`, one binder node per statement
    /// binder (children: the name, the type tree), then the conclusion.
    pub fn tree(&self) -> Node {
        let mut b = TreeBuilder::new();
        let mut children = Vec::with_capacity(self.binders.len() + 1);
        for sb in &self.binders {
            let kind = if sb.is_prop {
                NodeKind::Hypothesis
            } else {
                NodeKind::BoundVar
            };
            // Pre-order ids: the binder's name before binders inside its type.
            let (leaf, id) = b.fresh(&sb.name, kind);
            let ty = b.term(&sb.ty);
            children.push(Node {
                label: build::binder_label(sb.kind, true),
                kind: NodeKind::Op,
                scope: None,
                binder: Some(sb.kind),
                children: vec![leaf, ty],
            });
            b.push_scope(&sb.name, id, kind);
        }
        children.push(b.term(&self.conclusion));
        Node::op("theorem", children)
    }
}

/// A statement method's answer, read from the statement's [`Analysis`]:
/// what `normalize` and `opt` share. Their one path from a text to an
/// answer is [`answer_on_with`] (screen, analyze, read) or, for a text the
/// pool screened, [`answer_screened`]; their pool method impls are one
/// macro line (`terms_pool_method!`).
pub trait TermsAnswer: Sized + Send + 'static {
    /// The answer for an analysed statement.
    fn from_analysis(a: Analysis) -> Self;
    /// The answer that carries only `check` (a refused text, a time-out).
    fn from_check(check: CheckResult) -> Self;
    /// Its check (status and diagnostics).
    fn check(&self) -> &CheckResult;
    /// The same, to change (`timings` stamps `check.elapsed_ms`).
    fn check_mut(&mut self) -> &mut CheckResult;
}

/// The answer `R` for `params` on `worker`, the text screened with `guard`
/// (a refused text is `R`'s `rejected` answer, not an error).
pub async fn answer_on_with<R: TermsAnswer>(
    worker: &mut Worker,
    params: &StatementParams,
    timeout: Duration,
    guard: &GuardPolicy,
) -> Result<R, TermsError> {
    analyze_on_with(worker, params, timeout, guard)
        .await
        .map(R::from_analysis)
}

/// [`answer_on_with`] for a text already screened (the pool's path):
/// `screened` is `params.text` screened.
pub async fn answer_screened<R: TermsAnswer>(
    worker: &mut Worker,
    screened: &Screened,
    params: &StatementParams,
    timeout: Duration,
) -> Result<R, TermsError> {
    analyze_screened(worker, screened, params, timeout)
        .await
        .map(R::from_analysis)
}

/// The [`crate::method::PoolMethod`] impl of statement method `$m`, whose
/// result `$r` is a [`TermsAnswer`]: the params are the input, refusals
/// and time-outs are `$r` around the check, a run is [`answer_screened`].
macro_rules! terms_pool_method {
    ($m:ty, $r:ty) => {
        impl $crate::method::PoolMethod for $m {
            type Input = leanpool_protocol::StatementParams;
            fn prepare(
                p: leanpool_protocol::StatementParams,
            ) -> Result<leanpool_protocol::StatementParams, $r> {
                Ok(p)
            }
            fn rejected(reason: &str) -> $r {
                <$r as $crate::terms::TermsAnswer>::from_check(
                    leanpool_protocol::CheckResult::rejected(reason),
                )
            }
            fn timed_out(limit_ms: u64) -> $r {
                <$r as $crate::terms::TermsAnswer>::from_check(
                    leanpool_protocol::CheckResult::timeout(limit_ms),
                )
            }
            fn is_timeout(r: &$r) -> bool {
                $crate::terms::TermsAnswer::check(r).status
                    == leanpool_protocol::CheckStatus::Timeout
            }
            /// `timings`: the request's time is its check's `elapsed_ms`.
            fn stamp_elapsed(r: &mut $r, elapsed: std::time::Duration) {
                $crate::terms::TermsAnswer::check_mut(r).elapsed_ms =
                    Some(elapsed.as_millis() as u64);
            }
            async fn run(
                w: &mut leanpool_lean::Worker,
                p: &leanpool_protocol::StatementParams,
                screened: &leanpool_screen::Screened,
                default: std::time::Duration,
                _policy: &$crate::Policy,
            ) -> Result<$r, leanpool_lean::WorkerError> {
                $crate::terms::answer_screened(w, screened, p, default)
                    .await
                    .map_err($crate::terms::terms_error)
            }
        }
    };
}
pub(crate) use terms_pool_method;

/// A `normalize`/`opt` failure as the slot reads worker failures: an
/// answer the terms reader could not read is `WorkerError::Protocol`
/// (answered `WORKER_FAILED` / `unexpected_answer`, the worker replaced).
pub(crate) fn terms_error(e: TermsError) -> WorkerError {
    match e {
        TermsError::Worker(e) => e,
        TermsError::Unreadable(why) => WorkerError::Protocol(why),
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

    /// Lean's answers of the wrong shape are `Unreadable` (the pool's
    /// `unexpected_answer`), never a worker failure; the text is what
    /// `WorkerError::Protocol` said before this type existed.
    #[test]
    fn an_answer_of_the_wrong_shape_is_unreadable() {
        let e = binder_kinds(&json!({"not": "diagnostics"}), 3, 1).unwrap_err();
        assert!(matches!(e, TermsError::Unreadable(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("LSP protocol error: unexpected TaggedText JSON"),
            "{e}"
        );
        let none = binder_kinds(&json!([]), 3, 1).unwrap_err();
        assert_eq!(
            none.to_string(),
            "LSP protocol error: no `#check` message for the statement"
        );
    }
}
