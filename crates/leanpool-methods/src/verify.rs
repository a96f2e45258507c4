//! `verify`: a caller's proof judged against a fixed statement.
//!
//! leanpool assembles `header`, `context` (helper declarations), the
//! statement (its `:= sorry` removed), ` := ` and the proof into one text,
//! and appends its own trailer (see [`crate::verdict`]): per helper and for
//! the theorem the verdict's `#check`s and `#print axioms`, then a
//! reference `theorem` restating the statement under a reserved name, and
//! a comparison of the two types *syntactically* (`=ₛ`; Lean's built-in
//! `guard_expr`, no user code) at the same explicit universe parameters
//! ([`reference`](mod@reference)). Each part is checked before
//! ([`parts`]): the proof slot can only be a term or tactic block, the
//! context only helpers that cannot change how the statement reads.
//! Helpers are judged like the theorem: present, no `sorry`, no axiom
//! outside the policy, every message recognised.

pub mod parts;
pub mod reference;

pub use parts::{check_context, check_header, check_proof, split_statement_file, Part, Refused};

use crate::verdict::{self, Declaration};
use leanpool_protocol::{Diagnostic, Position, Range, VerifyParams};
use leanpool_screen::text::LineIndex;

pub use reference::REFERENCE;

/// An assembled `verify` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    /// The text elaborated (as a `check` text: header and body).
    pub text: String,
    /// Where the context starts in `text` (the statement's start when
    /// there is none).
    pub context_start: Position,
    /// The helpers the context declares, with the byte offset in `text`
    /// of each one's name.
    pub helpers: Vec<(Declaration, usize)>,
    /// Line of `text` where the statement starts.
    pub statement_line: u32,
    /// Where the proof starts in `text` (UTF-16 column).
    pub proof_start: Position,
    /// The theorem's name as written.
    pub name: String,
    /// Where the name starts in `text`.
    pub name_position: Position,
    /// leanpool's trailer after the body, one line each: the verdict's
    /// lines for every helper, then for the theorem, then the reference
    /// theorem and the comparison ([`reference`](mod@reference)).
    pub trailer_lines: Vec<String>,
    /// Index in `trailer_lines` of the comparison's alternative with no
    /// universe parameters ([`reference::lines`]).
    pub comparison_line: u32,
}

/// Assembles the request, or refuses it.
pub fn assemble(p: &VerifyParams) -> Result<Assembled, Refused> {
    check_header(&p.header)?;
    check_proof(&p.proof)?;
    let (stmt, name) = parts::statement_parts(&p.statement)?;
    let context = check_context(&p.context, stmt)?;
    let mut text = p.header.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let context_start = LineIndex::new(&text).position(text.len());
    let helpers = context
        .declarations
        .into_iter()
        .map(|d| {
            let at = text.len() + d.start;
            (d, at)
        })
        .collect();
    text.push_str(&p.context);
    if !p.context.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let statement_line = text.matches('\n').count() as u32;
    let statement_start = text.len();
    text.push_str(stmt);
    text.push_str(" := ");
    let proof_start = LineIndex::new(&text).position(text.len());
    text.push_str(&p.proof);
    text.push('\n');
    let name_text = p.statement[name.clone()].to_string();
    let name_position = LineIndex::new(&text).position(statement_start + name.start);
    let mut a = Assembled {
        text,
        context_start,
        helpers,
        statement_line,
        proof_start,
        name: name_text,
        name_position,
        trailer_lines: vec![],
        comparison_line: 0,
    };
    a.trailer_lines = a.trailer(&stmt[name.end..]);
    Ok(a)
}

/// Where a position of the assembled text lands for the caller.
pub enum Place {
    /// In the caller's `proof`, at this position.
    Proof(Position),
    /// In the caller's `statement`, at this position.
    Statement(Position),
    /// In the caller's `context`, at this position.
    Context(Position),
    /// Before the context: in the header.
    Header,
}

/// `p` relative to `start` (both in the same text).
fn relative(p: Position, start: Position) -> Position {
    let character = if p.line == start.line {
        p.character - start.character
    } else {
        p.character
    };
    Position {
        line: p.line - start.line,
        character,
    }
}

/// Diagnostics of a `verify`, split by the caller's part they are about.
#[derive(Debug, Default)]
pub struct Split {
    /// About the proof, in the caller's `proof`.
    pub proof: Vec<Diagnostic>,
    /// About the statement, in the caller's `statement` (header messages
    /// at 0:0, prefixed `header: `).
    pub statement: Vec<Diagnostic>,
    /// About the helpers, in the caller's `context`.
    pub context: Vec<Diagnostic>,
}

impl Assembled {
    /// The trailer for this request; `binders_and_type` is the
    /// statement after its name: the verdict's lines for every helper and
    /// the theorem, then the comparison ([`reference`]). Sets
    /// `comparison_line`.
    fn trailer(&mut self, binders_and_type: &str) -> Vec<String> {
        let mut lines = Vec::new();
        for (d, _) in &self.helpers {
            lines.extend(verdict::trailer::declaration_lines(&d.display()));
        }
        lines.extend(verdict::trailer::declaration_lines(&self.name));
        let (comparison, first) = reference::lines(&self.name, binders_and_type);
        self.comparison_line = (lines.len() + first) as u32;
        lines.extend(comparison);
        lines
    }

    /// Which of the caller's texts position `p` of the assembled text
    /// falls in, and where.
    pub fn place(&self, p: Position) -> Place {
        let at_or_after = |s: Position| (p.line, p.character) >= (s.line, s.character);
        if at_or_after(self.proof_start) {
            Place::Proof(relative(p, self.proof_start))
        } else if p.line >= self.statement_line {
            Place::Statement(Position {
                line: p.line - self.statement_line,
                character: p.character,
            })
        } else if at_or_after(self.context_start) {
            Place::Context(relative(p, self.context_start))
        } else {
            Place::Header
        }
    }

    /// Splits diagnostics (in assembled-text coordinates) by the caller's
    /// part they are about.
    pub fn split(&self, diags: Vec<Diagnostic>) -> Split {
        let zero = Position {
            line: 0,
            character: 0,
        };
        let mut out = Split::default();
        for d in diags {
            let start = self.place(d.range.start);
            let end = self.place(d.range.end);
            let (list, range) = match (start, end) {
                (Place::Proof(s), Place::Proof(e)) => (&mut out.proof, Range { start: s, end: e }),
                (Place::Proof(s), _) => (&mut out.proof, Range { start: s, end: s }),
                (Place::Statement(s), Place::Statement(e)) => {
                    (&mut out.statement, Range { start: s, end: e })
                }
                (Place::Statement(s), _) => (&mut out.statement, Range { start: s, end: s }),
                (Place::Context(s), Place::Context(e)) => {
                    (&mut out.context, Range { start: s, end: e })
                }
                (Place::Context(s), _) => (&mut out.context, Range { start: s, end: s }),
                (Place::Header, _) => {
                    out.statement.push(Diagnostic {
                        range: Range {
                            start: zero,
                            end: zero,
                        },
                        message: format!("header: {}", d.message),
                        ..d
                    });
                    continue;
                }
            };
            list.push(Diagnostic { range, ..d });
        }
        out
    }
}

/// Runs an assembled `verify` on `worker` (whose header must be the
/// assembled text's header key). A timeout is an answer and leaves the
/// worker dead, as for `check`.
pub async fn verify_on_with(
    worker: &mut leanpool_lean::Worker,
    params: &VerifyParams,
    default_timeout: std::time::Duration,
    policy: &crate::Policy,
) -> Result<leanpool_protocol::VerifyResult, leanpool_lean::WorkerError> {
    use leanpool_protocol::VerifyResult;
    let started = std::time::Instant::now();
    let with_time = |r: VerifyResult| VerifyResult {
        elapsed_ms: params.options.elapsed_ms(started),
        ..r
    };
    let a = match assemble(params) {
        Ok(a) => a,
        Err(refused) => return Ok(with_time(VerifyResult::rejected(refused.to_string()))),
    };
    match leanpool_screen::screen(&a.text, policy.screening()) {
        Ok(screened) => {
            verify_screened(
                worker,
                params,
                &a,
                &screened,
                default_timeout,
                &policy.verdict,
            )
            .await
        }
        Err(reason) => Ok(with_time(VerifyResult::rejected(reason.to_string()))),
    }
}

/// [`verify_on_with`] for a request already assembled and screened (the
/// pool screens once, off the async runtime): `screened` is `a.text`
/// screened; the answer is judged under `policy`.
pub async fn verify_screened(
    worker: &mut leanpool_lean::Worker,
    params: &VerifyParams,
    a: &Assembled,
    screened: &leanpool_screen::Screened,
    default_timeout: std::time::Duration,
    policy: &crate::verdict::VerdictPolicy,
) -> Result<leanpool_protocol::VerifyResult, leanpool_lean::WorkerError> {
    verify_fixed(worker, params, a, screened, None, default_timeout, policy).await
}

/// leanpool's own fixed lines, sent to Lean in place of a placeholder of
/// as many lines at the end of a `verify` request's header: the one route
/// by which text the guard would refuse a caller (an option such as
/// `autoImplicit`) reaches Lean inside a verify, used by
/// [`crate::equiv`]. Both fields are `'static`, so they can never be made
/// from a caller's text; everything else is screened as usual, and the
/// sent text is checked to read as its pieces ([`Screened::assemble`]).
/// The line count is kept, so every position after them is unchanged.
///
/// [`Screened::assemble`]: leanpool_screen::Screened::assemble
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedLines {
    /// Comment lines that end the request's `header` (screened).
    pub placeholder: &'static str,
    /// What Lean is sent instead: as many lines as `placeholder`.
    pub lines: &'static str,
}

/// The text sent for an assembled, screened request: the document with
/// `fixed`'s lines in place of its placeholder, then the trailer.
fn sent_text(
    params: &VerifyParams,
    a: &Assembled,
    screened: &leanpool_screen::Screened,
    fixed: Option<FixedLines>,
) -> Result<leanpool_screen::LeanText, String> {
    use leanpool_screen::header::Piece;
    let trailer = format!("{}\n", a.trailer_lines.join("\n"));
    let Some(f) = fixed else {
        return screened.with_trailer(&trailer).map_err(|e| e.to_string());
    };
    let doc = &screened.document().text;
    let lines = |t: &str| t.matches('\n').count();
    // The text after the imports is the caller's verbatim: the header's
    // end is as far from the document's end as from the assembled text's.
    let end = (doc.len() + params.header.len()).checked_sub(a.text.len());
    let start = end.and_then(|e| e.checked_sub(f.placeholder.len()));
    match (start, end) {
        (Some(s), Some(e))
            if params.header.ends_with(f.placeholder)
                && doc.get(s..e) == Some(f.placeholder)
                && lines(f.placeholder) == lines(f.lines) =>
        {
            let pieces = [
                Piece::Copied(0..s),
                Piece::Written(f.lines),
                Piece::Copied(e..doc.len()),
                Piece::Written(&trailer),
            ];
            screened.assemble(&pieces).map_err(|e| e.to_string())
        }
        _ => Err("internal: leanpool's fixed lines have no placeholder of as many lines at the end of the header".into()),
    }
}

/// [`verify_screened`], with leanpool's `fixed` lines (if any) in place
/// of their placeholder in the text sent.
pub async fn verify_fixed(
    worker: &mut leanpool_lean::Worker,
    params: &VerifyParams,
    a: &Assembled,
    screened: &leanpool_screen::Screened,
    fixed: Option<FixedLines>,
    default_timeout: std::time::Duration,
    policy: &crate::verdict::VerdictPolicy,
) -> Result<leanpool_protocol::VerifyResult, leanpool_lean::WorkerError> {
    use leanpool_protocol::VerifyResult;
    let started = std::time::Instant::now();
    let with_time = |r: VerifyResult| VerifyResult {
        elapsed_ms: params.options.elapsed_ms(started),
        ..r
    };
    let doc = screened.document();
    if doc.header != worker.header() {
        return Err(leanpool_lean::WorkerError::Internal(format!(
            "worker has header {:?}, text needs {:?}",
            worker.header(),
            doc.header
        )));
    }
    let timeout = params.options.limit_or(default_timeout);
    let first_line = doc.text.matches('\n').count() as u32;
    let sent = match sent_text(params, a, screened, fixed) {
        Ok(sent) => sent,
        Err(e) => return Ok(with_time(VerifyResult::rejected(e))),
    };
    match worker.elaborate_messages(&sent, timeout).await {
        Ok(messages) => Ok(with_time(judge::judge(
            a,
            doc,
            first_line,
            messages,
            policy,
            worker.backend(),
        ))),
        Err(leanpool_lean::WorkerError::Timeout) => {
            Ok(with_time(VerifyResult::timeout(timeout.as_millis() as u64)))
        }
        Err(e) => Err(e),
    }
}

mod judge;

/// The assembled text (what is screened and keys the pool's worker).
impl AsRef<str> for Assembled {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// The worker header a `verify` request needs (the pool's key), or `None`
/// when the request is refused before Lean.
pub fn header_key(params: &VerifyParams) -> Option<String> {
    assemble(params)
        .ok()
        .map(|a| leanpool_screen::header_key(&a.text))
}

/// The pool's `verify`: the params and the text they assemble to.
mod pooled {
    use super::{assemble, verify_screened, Assembled};
    use crate::method::PoolMethod;
    use leanpool_lean::{Worker, WorkerError};
    use leanpool_protocol::{method, VerifyParams, VerifyResult, VerifyStatus};
    use leanpool_screen::Screened;
    use std::time::Duration;

    impl PoolMethod for method::Verify {
        /// The params and the text they assemble to (what is screened and
        /// keys the worker).
        type Input = (VerifyParams, Box<Assembled>);
        fn prepare(p: VerifyParams) -> Result<(VerifyParams, Box<Assembled>), VerifyResult> {
            match assemble(&p) {
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
            policy: &crate::Policy,
        ) -> Result<VerifyResult, WorkerError> {
            verify_screened(w, p, a, screened, default, &policy.verdict).await
        }
    }
}

#[cfg(test)]
mod tests;
