//! A `verify` answer from Lean's messages: the verdict's rules
//! ([`crate::verdict::judge`]) for every helper and the theorem, then the
//! statement comparison, each message placed in the caller's part.

use super::Assembled;
use crate::verdict::VerdictPolicy;
use crate::verdict::{self, cap, Declaration, LINES_PER_DECLARATION};
use leanpool_lean::backend::BackendKind;
use leanpool_lean::lsp::LeanMessage;
use leanpool_protocol::{
    CheckResult, CheckStatus, Diagnostic, Position, Range, Severity, VerifyResult, VerifyStatus,
};
use leanpool_screen::header::Document;
use leanpool_screen::text::LineIndex;

/// The verdict's declarations: every helper, then the theorem, each with
/// its name's range in the document.
fn declarations(a: &Assembled, doc: &Document) -> Vec<(Declaration, Range)> {
    let ix = LineIndex::new(&a.text);
    let at = |p: Position| {
        let p = doc.from_caller(p).unwrap_or(p);
        Range { start: p, end: p }
    };
    let mut decls: Vec<(Declaration, Range)> = a
        .helpers
        .iter()
        .map(|(d, offset)| (d.clone(), at(ix.position(*offset))))
        .collect();
    let theorem = Declaration {
        name: vec![a.name.clone()],
        keyword: "theorem".into(),
        start: 0,
        end: 0,
    };
    decls.push((theorem, at(a.name_position)));
    decls
}

/// The answer for Lean's `messages` about the document `doc` (built from
/// `a.text`), whose trailer starts at `first_line`.
pub(super) fn judge(
    a: &Assembled,
    doc: &Document,
    first_line: u32,
    messages: Vec<LeanMessage>,
    policy: &VerdictPolicy,
    backend: BackendKind,
) -> VerifyResult {
    let decls = declarations(a, doc);
    // The verdict's lines come first; after them, the reference and the
    // comparison must say exactly the comparison's marker, nothing else.
    let judged_end = first_line + LINES_PER_DECLARATION * decls.len() as u32;
    let (rest, messages): (Vec<_>, Vec<_>) = messages
        .into_iter()
        .partition(|m| m.diagnostic.range.start.line >= judged_end);
    let end = Position {
        line: first_line,
        character: 0,
    };
    let unlisted = policy.unlisted_axioms.resolve(backend);
    let (body, judged) = verdict::judge(messages, first_line, &decls, end, policy, unlisted);
    let theorem = judged.last().expect("the theorem is judged");
    let body: Vec<Diagnostic> = body
        .into_iter()
        .map(|mut d| {
            d.range = doc.range_to_caller(d.range);
            d
        })
        .collect();
    let mut split = a.split(body);
    let shown: Vec<_> = rest
        .iter()
        .map(|m| {
            let d = &m.diagnostic;
            (d.range.start.line, d.severity, d.message.as_str())
        })
        .collect();
    let comparison_line = first_line + a.comparison_line;
    if theorem.present && !super::reference::matched(&shown, comparison_line) {
        let at = Position {
            line: 0,
            character: 0,
        };
        split.statement.push(Diagnostic {
            severity: Severity::Error,
            range: Range { start: at, end: at },
            message: format!(
                "leanpool: the elaborated type of `{}` is not syntactically the statement's at the same universe parameters (or leanpool's check of it did not run as written)",
                a.name
            ),
        });
    }
    let parts = [split.proof, split.statement, split.context].map(CheckResult::from_diagnostics);
    let status = if parts.iter().any(|p| p.status == CheckStatus::Error) {
        VerifyStatus::Error
    } else if parts.iter().any(|p| p.status == CheckStatus::Sorry) {
        VerifyStatus::Sorry
    } else {
        VerifyStatus::Proved
    };
    let [proof, statement, context] = parts.map(|p| {
        cap::cap(
            p.diagnostics,
            Position {
                line: 0,
                character: 0,
            },
        )
    });
    VerifyResult {
        status,
        diagnostics: proof,
        statement_diagnostics: statement,
        context_diagnostics: context,
        reason: None,
        axioms: theorem.axioms.clone(),
        elapsed_ms: None,
    }
}
