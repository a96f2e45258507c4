//! The verdict: what leanpool itself establishes about a body after Lean
//! elaborated it. `ok` rests on positive evidence only:
//!
//! - **every message** Lean returned for the caller's text is recognised
//!   as harmless ([`evidence`]: information, and warnings Lean tagged as a
//!   linter's); a warning mentioning `sorry` in any form is `sorry`, any
//!   other warning leanpool does not recognise is `error`;
//! - **leanpool's own trailer** ([`trailer`](mod@trailer)) after the body answered
//!   exactly as written: per declaration the body introduces (found from
//!   the guard's token stream, [`scan`]; an `example` or anonymous
//!   `instance` is judged from Lean's messages only) three commands, each
//!   under fixed printing options (a caller's `pp.*` cannot reword them):
//!   `#check @_root_.«A».«x»` (the declaration exists in Lean's
//!   environment: exactly one information message, and its type as Lean
//!   elaborated it), the same `#check` with every implicit argument shown,
//!   and `#print axioms` (Lean's list of the axioms it rests on). Messages
//!   are read back by position; a trailer line that does not carry exactly
//!   what leanpool expects is `error` (a body that swallowed or changed the
//!   trailer, e.g. by ending inside a command, cannot produce that). The
//!   trailer's messages are taken out of the caller's diagnostics.
//!
//! Axioms ([`VerdictPolicy`]): every axiom listed must be in
//! `allowed_axioms` (default `propext`, `Classical.choice`, `Quot.sound`);
//! `sorryAx` makes the answer `sorry` (never `ok`), any other axiom adds an
//! error diagnostic naming it at the declaration. A body that declares an
//! `axiom` is `error` whatever it is used for.
//!
//! Where Lean refuses `#print axioms` ("cannot use `#print axioms` in a
//! `module`": the WASM build imports every library at the `exported` level
//! and elaborates every file as a `module`), the declaration's axioms are
//! *unlisted* (`axioms: null` in the answer). `unlisted_axioms = "error"`
//! makes that an error; `"allow"` accepts it; the default `"auto"` is
//! `error` on the native backend (the deployment, where the listing works)
//! and `allow` on WASM (the test backend of this repository, where it never
//! can), and `status`/`doctor` report which applies.
//!
//! What the answer carries back is capped ([`cap`]), after the verdict.

pub mod cap;
pub mod evidence;
mod scan;
pub mod trailer;

pub use scan::{scan, scan_tokens, Declaration, Scan, MAX_DECLARATIONS};
pub use trailer::{parse_axioms, trailer, LINES_PER_DECLARATION, MODULE_REFUSAL};

use evidence::Reading;
use leanpool_lean::backend::BackendKind;
use leanpool_lean::lsp::LeanMessage;
use leanpool_protocol::{Diagnostic, Position, Range, Severity};
use serde::{Deserialize, Serialize};

/// What to do with a declaration whose axioms Lean would not list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnlistedAxioms {
    /// `error` on the native backend, `allow` on WASM (see the module docs).
    #[default]
    Auto,
    /// An unlisted declaration makes the answer `error` (fail closed).
    Error,
    /// Accepted; the declaration reports `axioms: null`.
    Allow,
}

impl UnlistedAxioms {
    /// `Error` or `Allow` for a backend.
    pub fn resolve(self, backend: BackendKind) -> UnlistedAxioms {
        match (self, backend) {
            (UnlistedAxioms::Auto, BackendKind::Native) => UnlistedAxioms::Error,
            (UnlistedAxioms::Auto, BackendKind::Wasm) => UnlistedAxioms::Allow,
            (other, _) => other,
        }
    }

    /// `error`, `allow` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            UnlistedAxioms::Auto => "auto",
            UnlistedAxioms::Error => "error",
            UnlistedAxioms::Allow => "allow",
        }
    }
}

/// The daemon's `[verdict]` table: which axioms an `ok` may rest on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerdictPolicy {
    /// Axioms a declaration may depend on and still be `ok`/`proved`.
    pub allowed_axioms: Vec<String>,
    /// What a declaration whose axioms Lean did not list gives.
    pub unlisted_axioms: UnlistedAxioms,
    /// Trust the compiler: `native_decide` and its spellings (`decide
    /// +native`, `native := true`) pass the guard, on the native backend
    /// only (where `#print axioms` lists `Lean.ofReduceBool` /
    /// `Lean.trustCompiler` and the answer's `axioms` show them; add them
    /// to `allowed_axioms` for such a declaration to be `ok`). On WASM,
    /// where axioms are never listed, they stay refused. Default `false`.
    #[serde(default)]
    pub trust_compiler: bool,
}

impl Default for VerdictPolicy {
    fn default() -> Self {
        VerdictPolicy {
            allowed_axioms: ["propext", "Classical.choice", "Quot.sound"]
                .map(String::from)
                .to_vec(),
            unlisted_axioms: UnlistedAxioms::Auto,
            trust_compiler: false,
        }
    }
}
/// A declaration as the answer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Full name, `«»` where a component needs it.
    pub name: String,
    /// The declaring keyword.
    pub keyword: String,
    /// The name's range in the document.
    pub range: Range,
    /// Whether Lean's environment holds it after elaboration.
    pub present: bool,
    /// Its type as Lean elaborated it, printed under fixed options.
    pub type_: Option<String>,
    /// The same with every implicit argument and instance shown.
    pub explicit_type: Option<String>,
    /// Lean's list of its axioms; `None` when Lean did not list them.
    pub axioms: Option<Vec<String>>,
}

fn error(range: Range, message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        range,
        message,
    }
}

/// The body's messages, each read ([`evidence::read`]): Lean's messages
/// stay, and a warning leanpool does not recognise adds an error at it.
fn read_body(body: Vec<LeanMessage>) -> Vec<Diagnostic> {
    let mut out = Vec::with_capacity(body.len());
    for m in body {
        if evidence::read(&m) == Reading::Unrecognised {
            out.push(error(
                m.diagnostic.range,
                "leanpool: this warning is not one leanpool recognises as harmless (not a linter's, not about \
                 `sorry`), so the text cannot be `ok`; see \"Verdicts\" in docs/protocol.md"
                    .into(),
            ));
        }
        out.push(m.diagnostic);
    }
    out
}

/// The information message of a trailer `#check` line: `Some(text)` when
/// the line carries exactly one information message and nothing else but
/// harmless warnings (`#check` of a deprecated declaration warns).
fn check_answer(here: &[&LeanMessage]) -> Option<String> {
    let mut infos = here
        .iter()
        .filter(|m| m.diagnostic.severity == Severity::Information);
    let info = infos.next()?;
    let rest_harmless = here.iter().all(|m| {
        m.diagnostic.severity == Severity::Information
            || matches!(evidence::read(m), Reading::Harmless(_))
    });
    (infos.next().is_none() && rest_harmless).then(|| info.diagnostic.message.clone())
}

/// Lean's axiom list from a trailer `#print axioms` line: `Ok(Some)` a
/// list, `Ok(None)` Lean's refusal in a `module`, `Err` anything else.
fn axioms_answer(here: &[&LeanMessage]) -> Result<Option<Vec<String>>, ()> {
    match here {
        [m] if m.diagnostic.severity == Severity::Information => {
            parse_axioms(&m.diagnostic.message).map(Some).ok_or(())
        }
        [m] if m.diagnostic.severity == Severity::Error
            && m.diagnostic.message.starts_with(MODULE_REFUSAL) =>
        {
            Ok(None)
        }
        _ => Err(()),
    }
}

/// Errors (and the `sorry` warning) a declaration's axioms call for.
fn judge_axioms(
    d: &Declaration,
    range: Range,
    axioms: &Option<Vec<String>>,
    present: bool,
    policy: &VerdictPolicy,
    unlisted: UnlistedAxioms,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    match axioms {
        Some(list) => {
            for a in list {
                if a == "sorryAx" {
                    out.push(Diagnostic {
                        severity: Severity::Warning,
                        range,
                        message: format!(
                            "leanpool: `{}` depends on `sorryAx`: declaration uses 'sorry'",
                            d.display()
                        ),
                    });
                } else if !policy.allowed_axioms.iter().any(|x| x == a) {
                    out.push(error(
                        range,
                        format!(
                            "leanpool: `{}` depends on axiom `{a}`, which is not allowed (allowed: {})",
                            d.display(),
                            policy.allowed_axioms.join(", ")
                        ),
                    ));
                }
            }
        }
        None if present && unlisted == UnlistedAxioms::Error => out.push(error(
            range,
            format!(
                "leanpool: Lean did not list the axioms of `{}` (`#print axioms` refused: the worker runs the document as a `module`); \
                 `[verdict] unlisted_axioms` is `error`",
                d.display()
            ),
        )),
        None => {}
    }
    out
}
/// Each declaration of `scan` with its name's range in the document
/// (`index` is the document's): what [`judge`] takes.
pub fn located(scan: &Scan, index: &leanpool_screen::LineIndex) -> Vec<(Declaration, Range)> {
    scan.declarations
        .iter()
        .map(|d| {
            let range = Range {
                start: index.position(d.start),
                end: index.position(d.end),
            };
            (d.clone(), range)
        })
        .collect()
}

/// Splits the document's messages into the body's (returned, read for
/// positive evidence) and the trailer's (judged). Per declaration `k` the
/// trailer has [`LINES_PER_DECLARATION`] lines from `first_line +
/// 3k`: each `#check` must carry exactly one information message (and
/// nothing but harmless warnings), the `#print axioms` exactly one
/// message: Lean's list, or its refusal in a `module`. Adds error
/// diagnostics (in document coordinates, at the declaration's name) for a
/// declaration that is not present, that is an `axiom`, that depends on an
/// axiom not allowed, or whose axioms were not listed under `unlisted =
/// Error`; a `sorry` warning for `sorryAx`; and one error at `body_end` if
/// the trailer's messages are not exactly where leanpool put them.
pub fn judge(
    messages: Vec<LeanMessage>,
    first_line: u32,
    decls: &[(Declaration, Range)],
    body_end: Position,
    policy: &VerdictPolicy,
    unlisted: UnlistedAxioms,
) -> (Vec<Diagnostic>, Vec<Judged>) {
    let (trail, body): (Vec<_>, Vec<_>) = messages
        .into_iter()
        .partition(|m| m.diagnostic.range.start.line >= first_line);
    let mut body = read_body(body);
    let mut judged = Vec::new();
    // What all declarations' types may add to the answer, together.
    let mut type_budget = cap::MAX_TOTAL_BYTES;
    let mut trailer_broken = false;
    let on = |line: u32| -> Vec<&LeanMessage> {
        trail
            .iter()
            .filter(|m| m.diagnostic.range.start.line == line)
            .collect()
    };
    for (k, (d, range)) in decls.iter().enumerate() {
        let line = first_line + LINES_PER_DECLARATION * k as u32;
        let answers = [on(line), on(line + 1), on(line + 2)];
        let ctx = (policy, unlisted);
        let (j, broken) = judge_declaration(d, *range, answers, ctx, &mut type_budget, &mut body);
        trailer_broken |= broken;
        judged.push(j);
    }
    let expected = first_line + LINES_PER_DECLARATION * decls.len() as u32;
    if trailer_broken
        || trail
            .iter()
            .any(|m| m.diagnostic.range.start.line >= expected)
    {
        body.push(error(
            Range {
                start: body_end,
                end: body_end,
            },
            "leanpool: its own checks after the body did not run as written (the body's end changed \
             how Lean read them); no verdict"
                .into(),
        ));
    }
    (body, judged)
}

/// One declaration judged from the messages on its trailer lines
/// (readable `#check`, explicit `#check`, `#print axioms`); its own
/// errors go to `body`, its types use up `type_budget`. Also says whether
/// the trailer answered inconsistently (no verdict then).
fn judge_declaration(
    d: &Declaration,
    range: Range,
    [readable, explicit, axioms]: [Vec<&LeanMessage>; 3],
    (policy, unlisted): (&VerdictPolicy, UnlistedAxioms),
    type_budget: &mut usize,
    body: &mut Vec<Diagnostic>,
) -> (Judged, bool) {
    let readable = check_answer(&readable);
    let explicit = check_answer(&explicit);
    let present = readable.is_some();
    let mut trailer_broken = present != explicit.is_some();
    if !present {
        body.push(error(
            range,
            format!(
                "leanpool: `{}` is not in Lean's environment after elaboration (the {} failed or never ran)",
                d.display(),
                d.keyword
            ),
        ));
    }
    let axioms = match axioms_answer(&axioms) {
        Ok(list) => list,
        // Absent declarations make `#print axioms` fail too.
        Err(()) => {
            trailer_broken |= present;
            None
        }
    };
    if d.keyword == "axiom" {
        body.push(error(
            range,
            format!(
                "leanpool: axiom `{}` is declared here; a body may not add axioms (anything can be proved from them)",
                d.display()
            ),
        ));
    }
    body.extend(judge_axioms(d, range, &axioms, present, policy, unlisted));
    let mut shown = |m: Option<String>| {
        m.and_then(|m| trailer::parse_type(&m, d))
            .map(|t| cap::budgeted(&t, type_budget))
    };
    let (type_, explicit_type) = (shown(readable), shown(explicit));
    let judged = Judged {
        name: d.display(),
        keyword: d.keyword.clone(),
        range,
        present,
        type_,
        explicit_type,
        axioms,
    };
    (judged, trailer_broken)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(sev: Severity, line: u32, msg: &str) -> LeanMessage {
        let p = Position { line, character: 0 };
        LeanMessage {
            diagnostic: Diagnostic {
                severity: sev,
                range: Range { start: p, end: p },
                message: msg.into(),
            },
            code: None,
            tags: vec![],
            lean_tags: vec![],
        }
    }

    const LISTED: &str = "'a' depends on axioms: [propext]";

    fn run(diags: Vec<LeanMessage>, unlisted: UnlistedAxioms) -> (Vec<Diagnostic>, Vec<Judged>) {
        let s = scan("theorem a : True := trivial\ntheorem b : True := trivial\n").unwrap();
        let zero = Position {
            line: 0,
            character: 0,
        };
        let decls: Vec<_> = s
            .declarations
            .iter()
            .map(|d| {
                (
                    d.clone(),
                    Range {
                        start: zero,
                        end: zero,
                    },
                )
            })
            .collect();
        judge(
            diags,
            2,
            &decls,
            Position {
                line: 2,
                character: 0,
            },
            &VerdictPolicy::default(),
            unlisted,
        )
    }

    /// The trailer's answers for `a` (lines 2-4) and `b` (5-7), with the
    /// given axiom lines.
    fn answers(a: LeanMessage, b: LeanMessage) -> Vec<LeanMessage> {
        use Severity::*;
        vec![
            diag(Information, 2, "a : True"),
            diag(Information, 3, "a : True"),
            a,
            diag(Information, 5, "b : False → True"),
            diag(Information, 6, "b : False → True"),
            b,
        ]
    }

    #[test]
    fn judge_requires_exactly_the_trailer_answers() {
        use Severity::*;
        let ok = answers(
            diag(Information, 4, LISTED),
            diag(Information, 7, "'b' does not depend on any axioms"),
        );
        let (body, j) = run(ok.clone(), UnlistedAxioms::Error);
        assert!(body.is_empty() && j.iter().all(|j| j.present), "{body:?}");
        assert_eq!(j[0].axioms, Some(vec!["propext".to_string()]));
        assert_eq!(j[1].axioms, Some(vec![]));
        assert_eq!(j[1].type_.as_deref(), Some("False → True"));
        let mut missing = ok.clone();
        missing.truncate(3);
        missing.push(diag(Error, 5, "unknown constant"));
        missing.push(diag(Error, 6, "unknown constant"));
        missing.push(diag(Error, 7, "unknown constant"));
        let (body, j) = run(missing, UnlistedAxioms::Error);
        assert!(
            !j[1].present && body.len() == 1 && body[0].message.contains("`b`"),
            "{body:?}"
        );
        let mut extra = ok.clone();
        extra.push(diag(Error, 8, "unexpected end"));
        assert!(run(extra, UnlistedAxioms::Error)
            .0
            .iter()
            .any(|d| d.message.contains("no verdict")));
        let mut doubled = ok.clone();
        doubled.push(diag(Information, 2, "forged"));
        assert!(!run(doubled, UnlistedAxioms::Error).1[0].present);
        // A warning on a `#check` line that is not harmless.
        let mut warned = ok.clone();
        warned.push(diag(Warning, 2, "something"));
        assert!(!run(warned, UnlistedAxioms::Error).1[0].present);
        // One `#check` answered, the other not: the trailer was changed.
        let mut half = ok;
        half.remove(1);
        assert!(run(half, UnlistedAxioms::Error)
            .0
            .iter()
            .any(|d| d.message.contains("no verdict")));
    }

    #[test]
    fn unrecognised_body_warnings_are_errors_sorry_warnings_sorry() {
        use leanpool_protocol::{CheckResult, CheckStatus};
        use Severity::*;
        let mut msgs = answers(diag(Information, 4, LISTED), diag(Information, 7, LISTED));
        msgs.push(diag(Warning, 0, "declaration uses `sorryAx`"));
        let (body, _) = run(msgs.clone(), UnlistedAxioms::Error);
        assert_eq!(
            CheckResult::from_diagnostics(body).status,
            CheckStatus::Sorry
        );
        msgs.push(diag(Warning, 1, "a warning of a future Lean"));
        let (body, _) = run(msgs, UnlistedAxioms::Error);
        assert_eq!(
            CheckResult::from_diagnostics(body).status,
            CheckStatus::Error
        );
    }

    #[test]
    fn axioms_not_allowed_sorry_and_unlisted() {
        use Severity::*;
        let cheat = answers(
            diag(
                Information,
                4,
                "'a' depends on axioms: [propext, Classical.choice, Lean.ofReduceBool]",
            ),
            diag(Information, 7, "'b' depends on axioms: [sorryAx]"),
        );
        let (body, j) = run(cheat, UnlistedAxioms::Error);
        let r = leanpool_protocol::CheckResult::from_diagnostics(body.clone());
        assert_eq!(r.status, leanpool_protocol::CheckStatus::Error);
        assert!(
            body.iter()
                .any(|d| d.severity == Error && d.message.contains("`Lean.ofReduceBool`")),
            "{body:?}"
        );
        assert!(body.iter().any(leanpool_protocol::is_sorry_warning));
        assert_eq!(j[1].axioms.as_deref(), Some(&["sorryAx".to_string()][..]));
        let refused = "cannot use `#print axioms` in a `module`; consider temporarily removing the `module` header or placing the command in a separate file";
        let module = answers(diag(Error, 4, refused), diag(Error, 7, refused));
        let (body, j) = run(module.clone(), UnlistedAxioms::Allow);
        assert!(body.is_empty() && j.iter().all(|j| j.present && j.axioms.is_none()));
        let (body, _) = run(module, UnlistedAxioms::Error);
        assert_eq!(body.len(), 2);
        // A listing leanpool cannot read: no verdict.
        let odd = answers(
            diag(Information, 4, "'a' depends on axioms: propext"),
            diag(Information, 7, LISTED),
        );
        assert!(run(odd, UnlistedAxioms::Allow)
            .0
            .iter()
            .any(|d| d.message.contains("no verdict")));
    }

    #[test]
    fn unlisted_auto_is_fail_closed_natively() {
        assert_eq!(
            UnlistedAxioms::Auto.resolve(BackendKind::Native),
            UnlistedAxioms::Error
        );
        assert_eq!(
            UnlistedAxioms::Auto.resolve(BackendKind::Wasm),
            UnlistedAxioms::Allow
        );
        assert_eq!(
            UnlistedAxioms::Allow.resolve(BackendKind::Native),
            UnlistedAxioms::Allow
        );
    }
}
