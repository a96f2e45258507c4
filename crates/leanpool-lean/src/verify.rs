//! `verify`: a caller's proof judged against a fixed statement.
//!
//! leanpool assembles `header`, the statement (its `:= sorry` removed),
//! ` := ` and the proof into one text, and appends its own trailer (see
//! [`crate::verdict`]): `#check` of the theorem, an `axiom` restating the
//! statement under a reserved name, and `#guard_expr` comparing the two
//! types *syntactically* (`=ₛ`; Lean's built-in command, no user code).
//! The proof slot is lexed with the guard's tokenizer and refused unless it
//! can only be a term or tactic block: no command keyword, no `#` command,
//! no doc comment, no `where`, balanced brackets.

use crate::guard::lexer::{self, Kind, Token};
use crate::text::LineIndex;
use crate::vocab::{keyword, COMMAND_WORDS};
use leanpool_protocol::{Diagnostic, Position, Range, VerifyParams};

/// A proof containing one of [`COMMAND_WORDS`] (or `where`) is refused: it
/// could close the theorem early and declare or change something.
fn starts_command(k: &str) -> bool {
    COMMAND_WORDS.contains(&k) || k == "where"
}

/// The reserved name of the reference axiom in the trailer.
pub const REFERENCE: &str = "«leanpool_verify_reference»";

/// An assembled `verify` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    /// The text elaborated (as a `check` text: header and body).
    pub text: String,
    /// Line of `text` where the statement starts.
    pub statement_line: u32,
    /// Where the proof starts in `text` (UTF-16 column).
    pub proof_start: Position,
    /// The theorem's name as written.
    pub name: String,
    /// Where the name starts in `text`.
    pub name_position: Position,
    /// leanpool's trailer after the body: `#check`, the reference axiom,
    /// `#guard_expr`; and the line (relative to the trailer's first line)
    /// of each of the three.
    pub trailer_lines: Vec<String>,
}

/// The part of a `verify` request (or of the CLI's statement file) that
/// is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `header`: the imports and other header commands.
    Header,
    /// `statement`: the theorem.
    Statement,
    /// `proof`: the proof slot.
    Proof,
    /// The CLI's statement file ([`split_statement_file`]).
    StatementFile,
}

/// Why a `verify` request is refused (answered `status: rejected`): the
/// part at fault, and the reason for people (its `Display`, the answer's
/// text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refused {
    /// Which part is at fault.
    pub part: Part,
    /// Why, for people.
    pub reason: String,
}

impl Refused {
    fn new(part: Part, reason: impl Into<String>) -> Self {
        Refused {
            part,
            reason: reason.into(),
        }
    }
}

/// Checks the proof slot; `Err` refuses the request.
pub fn check_proof(proof: &str) -> Result<(), Refused> {
    if proof.trim().is_empty() {
        return Err(Refused::new(Part::Proof, "`proof` is empty"));
    }
    let toks = lexer::tokenize(proof).map_err(|e| {
        Refused::new(
            Part::Proof,
            format!("`proof` cannot be read as Lean reads it: {}", e.reason),
        )
    })?;
    // The slot must end where the text ends: text after it (leanpool's
    // trailer) is read as a token of its own, not swallowed by an
    // unterminated comment.
    let probe = format!("{proof}\n#check");
    let closed = lexer::tokenize(&probe)
        .ok()
        .and_then(|t| t.last().cloned())
        .is_some_and(|t| t.start == proof.len() + 1);
    if !closed {
        return Err(Refused::new(Part::Proof, "`proof` does not end where its text ends (an unterminated comment or literal would swallow what follows)"));
    }
    let ix = LineIndex::new(proof);
    let at = |t: &Token| {
        let p = ix.position(t.start);
        format!("proof {}:{}", p.line + 1, p.character + 1)
    };
    let mut stack: Vec<&str> = Vec::new();
    for t in &toks {
        match t.kind {
            Kind::HashCmd => {
                return Err(Refused::new(
                    Part::Proof,
                    format!(
                        "{}: `{}` is a command; the proof slot takes a term or tactic block",
                        at(t),
                        t.text
                    ),
                ))
            }
            Kind::DocComment => {
                return Err(Refused::new(
                    Part::Proof,
                    format!(
                        "{}: a doc comment starts a new declaration; not allowed in the proof slot",
                        at(t)
                    ),
                ))
            }
            Kind::Ident => {
                if let Some(k) = keyword(proof, t).filter(|k| starts_command(k)) {
                    return Err(Refused::new(Part::Proof, format!(
                        "{}: `{k}` could end the theorem or declare or change something outside the proof; \
                         the proof slot takes a term or tactic block",
                        at(t)
                    )));
                }
            }
            Kind::Symbol => {
                let close = match t.text.as_str() {
                    "(" | "[" | "{" | "⟨" | "⦃" | "⟦" | "‹" => {
                        stack.push(t.text.as_str());
                        None
                    }
                    ")" => Some("("),
                    "]" => Some("["),
                    "}" => Some("{"),
                    "⟩" => Some("⟨"),
                    "⦄" => Some("⦃"),
                    "⟧" => Some("⟦"),
                    "›" => Some("‹"),
                    _ => None,
                };
                if let Some(open) = close {
                    if stack.pop() != Some(open) {
                        return Err(Refused::new(
                            Part::Proof,
                            format!("{}: unbalanced `{}` in the proof", at(t), t.text),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(Refused::new(
            Part::Proof,
            format!("`{open}` is never closed in the proof"),
        ));
    }
    Ok(())
}

/// The statement without a trailing `:= sorry` / `:= by sorry`, and the
/// byte range of the theorem's name and of the rest (binders and type).
fn statement_parts(statement: &str) -> Result<(&str, std::ops::Range<usize>), Refused> {
    let toks = lexer::tokenize(statement).map_err(|e| {
        Refused::new(
            Part::Statement,
            format!("`statement` cannot be read as Lean reads it: {}", e.reason),
        )
    })?;
    let first = toks
        .first()
        .ok_or_else(|| Refused::new(Part::Statement, "`statement` is empty"))?;
    if !matches!(keyword(statement, first), Some("theorem" | "lemma")) {
        return Err(Refused::new(
            Part::Statement,
            "`statement` must start with `theorem NAME` (or `lemma NAME`)",
        ));
    }
    let name = toks.get(1).filter(|t| {
        t.kind == Kind::Ident && keyword(statement, t).is_none_or(|k| !starts_command(k))
    });
    let name = name.ok_or_else(|| {
        Refused::new(
            Part::Statement,
            "`statement` must start with `theorem NAME`",
        )
    })?;
    // Drop `:= sorry` / `:= by sorry` at the end.
    let mut end = toks.len();
    let is = |i: usize, s: &str| toks.get(i).is_some_and(|t| &statement[t.start..t.end] == s);
    if end >= 2 && is(end - 1, "sorry") {
        if is(end - 2, ":=") {
            end -= 2;
        } else if end >= 3 && is(end - 2, "by") && is(end - 3, ":=") {
            end -= 3;
        }
    }
    let body = &toks[..end];
    let mut depth = 0i32;
    for t in &body[2..] {
        if t.kind == Kind::Symbol {
            match t.text.as_str() {
                "(" | "[" | "{" | "⟨" | "⦃" => depth += 1,
                ")" | "]" | "}" | "⟩" | "⦄" => depth -= 1,
                _ => {}
            }
        }
        let word = &statement[t.start..t.end];
        if t.kind == Kind::HashCmd || t.kind == Kind::DocComment {
            return Err(Refused::new(
                Part::Statement,
                "`statement` holds one theorem and nothing else",
            ));
        }
        if depth == 0 && (word == ":=" || word == "|" || word == "where")
            || keyword(statement, t).is_some_and(starts_command)
        {
            return Err(Refused::new(
                Part::Statement,
                format!("`statement` holds one theorem's name, binders and type (found `{word}`)"),
            ));
        }
    }
    if depth != 0 {
        return Err(Refused::new(
            Part::Statement,
            "unbalanced brackets in `statement`",
        ));
    }
    let last = body.last().expect("at least the name");
    Ok((&statement[..last.end], name.start..name.end))
}

/// Header words a `verify` header may use besides comments and options'
/// values: it sets the scene for the statement and declares nothing.
const HEADER_WORDS: &[&str] = &[
    "import",
    "open",
    "set_option",
    "universe",
    "universes",
    "namespace",
    "section",
    "end",
    "variable",
    "noncomputable",
    "scoped",
    "in",
];

/// Checks the `header` of a `verify` request: import/open/set_option/
/// universe/namespace/section/variable commands only (no declaration,
/// no `#` command), so nothing but the statement and the proof can add to
/// the environment.
pub fn check_header(header: &str) -> Result<(), Refused> {
    let toks = lexer::tokenize(header).map_err(|e| {
        Refused::new(
            Part::Header,
            format!("`header` cannot be read as Lean reads it: {}", e.reason),
        )
    })?;
    for t in &toks {
        if t.kind == Kind::HashCmd {
            return Err(Refused::new(
                Part::Header,
                format!("`header` may not hold `{}`: header commands only", t.text),
            ));
        }
        if let Some(k) =
            keyword(header, t).filter(|k| starts_command(k) && !HEADER_WORDS.contains(k))
        {
            return Err(Refused::new(Part::Header, format!(
                "`header` may hold only header commands (`import`, `open`, `set_option`, `universe`, `namespace`, `section`, `variable`), found `{k}`"
            )));
        }
    }
    Ok(())
}

/// Splits a statement file (the CLI's) into the header and the statement:
/// the statement starts at the first `theorem` or `lemma` keyword.
pub fn split_statement_file(text: &str) -> Result<(String, String), Refused> {
    let toks = lexer::tokenize(text).map_err(|e| {
        Refused::new(
            Part::StatementFile,
            format!(
                "the statement file cannot be read as Lean reads it: {}",
                e.reason
            ),
        )
    })?;
    let t = toks
        .iter()
        .find(|t| matches!(keyword(text, t), Some("theorem" | "lemma")))
        .ok_or_else(|| {
            Refused::new(Part::StatementFile, "the statement file holds no `theorem`")
        })?;
    Ok((
        text[..t.start].to_string(),
        text[t.start..].trim_end().to_string(),
    ))
}

/// Assembles the request, or refuses it.
pub fn assemble(p: &VerifyParams) -> Result<Assembled, Refused> {
    check_header(&p.header)?;
    check_proof(&p.proof)?;
    let (stmt, name) = statement_parts(&p.statement)?;
    let mut text = p.header.clone();
    if !text.is_empty() && !text.ends_with('\n') {
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
    let rest = &stmt[name.end..];
    let reference = format!("axiom {REFERENCE}{rest}");
    let name_position = {
        let at = LineIndex::new(&text).position(statement_start + name.start);
        at
    };
    let mut trailer_lines =
        vec![format!("#check @{name_text}"), format!("set_option pp.fullNames true in set_option pp.notation false in #print axioms {name_text}")];
    trailer_lines.extend(reference.split('\n').map(str::to_string));
    trailer_lines.push(format!(
        "#guard_expr type_of% @{name_text} =ₛ type_of% @{REFERENCE}"
    ));
    Ok(Assembled {
        text,
        statement_line,
        proof_start,
        name: name_text,
        name_position,
        trailer_lines,
    })
}

/// Where a position of the assembled text lands for the caller.
pub enum Place {
    /// In the caller's `proof`, at this position.
    Proof(Position),
    /// In the caller's `statement`, at this position.
    Statement(Position),
    /// Before the statement: in the header.
    Header,
}

impl Assembled {
    /// Which of the caller's texts position `p` of the assembled text
    /// falls in, and where.
    pub fn place(&self, p: Position) -> Place {
        let s = self.proof_start;
        if (p.line, p.character) >= (s.line, s.character) {
            let character = if p.line == s.line {
                p.character - s.character
            } else {
                p.character
            };
            Place::Proof(Position {
                line: p.line - s.line,
                character,
            })
        } else if p.line >= self.statement_line {
            Place::Statement(Position {
                line: p.line - self.statement_line,
                character: p.character,
            })
        } else {
            Place::Header
        }
    }

    /// Splits diagnostics (in assembled-text coordinates) into the
    /// proof's and the statement's (header messages at 0:0, prefixed).
    pub fn split(&self, diags: Vec<Diagnostic>) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        let zero = Position {
            line: 0,
            character: 0,
        };
        let (mut proof, mut stmt) = (vec![], vec![]);
        for d in diags {
            match self.place(d.range.start) {
                Place::Proof(start) => {
                    let end = match self.place(d.range.end) {
                        Place::Proof(e) => e,
                        _ => start,
                    };
                    proof.push(Diagnostic {
                        range: Range { start, end },
                        ..d
                    });
                }
                Place::Statement(start) => {
                    let end = match self.place(d.range.end) {
                        Place::Statement(e) => e,
                        _ => start,
                    };
                    stmt.push(Diagnostic {
                        range: Range { start, end },
                        ..d
                    });
                }
                Place::Header => stmt.push(Diagnostic {
                    range: Range {
                        start: zero,
                        end: zero,
                    },
                    message: format!("header: {}", d.message),
                    ..d
                }),
            }
        }
        (proof, stmt)
    }
}

/// Runs an assembled `verify` on `worker` (whose header must be the
/// assembled text's header key). A timeout is an answer and leaves the
/// worker dead, as for `check`.
pub async fn verify_on_with(
    worker: &mut crate::Worker,
    params: &VerifyParams,
    default_timeout: std::time::Duration,
    policy: &crate::guard::GuardPolicy,
) -> Result<leanpool_protocol::VerifyResult, crate::WorkerError> {
    use leanpool_protocol::VerifyResult;
    let started = std::time::Instant::now();
    let with_time = |mut r: VerifyResult| {
        if params.timings {
            r.elapsed_ms = Some(started.elapsed().as_millis() as u64);
        }
        r
    };
    let a = match assemble(params) {
        Ok(a) => a,
        Err(refused) => return Ok(with_time(VerifyResult::rejected(refused.to_string()))),
    };
    match crate::guard::screen(&a.text, policy) {
        Ok(screened) => {
            verify_screened(worker, params, &a, &screened, default_timeout, policy).await
        }
        Err(reason) => Ok(with_time(VerifyResult::rejected(reason.to_string()))),
    }
}

/// [`verify_on_with`] for a request already assembled and screened (the
/// pool screens once, off the async runtime): `screened` is `a.text`
/// screened under `policy`.
pub async fn verify_screened(
    worker: &mut crate::Worker,
    params: &VerifyParams,
    a: &Assembled,
    screened: &crate::guard::Screened,
    default_timeout: std::time::Duration,
    policy: &crate::guard::GuardPolicy,
) -> Result<leanpool_protocol::VerifyResult, crate::WorkerError> {
    use crate::verdict::{self, Declaration};
    use leanpool_protocol::{CheckResult, CheckStatus, Severity, VerifyResult, VerifyStatus};
    let started = std::time::Instant::now();
    let with_time = |mut r: VerifyResult| {
        if params.timings {
            r.elapsed_ms = Some(started.elapsed().as_millis() as u64);
        }
        r
    };
    let doc = screened.document();
    if doc.header != worker.header() {
        return Err(crate::WorkerError::Internal(format!(
            "worker has header {:?}, text needs {:?}",
            worker.header(),
            doc.header
        )));
    }
    let timeout = params
        .timeout_ms
        .map(std::time::Duration::from_millis)
        .unwrap_or(default_timeout);
    let first_line = doc.text.matches('\n').count() as u32;
    let sent = match screened.with_trailer(&format!("{}\n", a.trailer_lines.join("\n"))) {
        Ok(sent) => sent,
        Err(e) => return Ok(with_time(VerifyResult::rejected(e.to_string()))),
    };
    let diags = match worker.elaborate(&sent, timeout).await {
        Ok(d) => d,
        Err(crate::WorkerError::Timeout) => {
            return Ok(with_time(VerifyResult::timeout(timeout.as_millis() as u64)))
        }
        Err(e) => return Err(e),
    };
    // Trailer lines 0-1 (`#check`, `#print axioms`) are judged like a
    // `check` declaration's; the reference axiom and `#guard_expr` after
    // them must say nothing at all.
    let judged_end = first_line + verdict::LINES_PER_DECLARATION;
    let (rest, diags): (Vec<_>, Vec<_>) = diags
        .into_iter()
        .partition(|d| d.range.start.line >= judged_end);
    let name_at = doc.from_caller(a.name_position).unwrap_or(a.name_position);
    let name_range = Range {
        start: name_at,
        end: name_at,
    };
    let decl = Declaration {
        name: vec![a.name.clone()],
        keyword: "theorem".into(),
        start: 0,
        end: 0,
    };
    let end = Position {
        line: first_line,
        character: 0,
    };
    let unlisted = policy.verdict.unlisted_axioms.resolve(worker.backend());
    let (body, judged) = verdict::judge(
        diags,
        first_line,
        &[(decl, name_range)],
        end,
        &policy.verdict,
        unlisted,
    );
    let judged = judged.into_iter().next().expect("one declaration judged");
    let body: Vec<Diagnostic> = body
        .into_iter()
        .map(|mut d| {
            d.range = doc.range_to_caller(d.range);
            d
        })
        .collect();
    let (proof, mut stmt) = a.split(body);
    if judged.present && !rest.is_empty() {
        let at = Position {
            line: 0,
            character: 0,
        };
        stmt.push(Diagnostic {
            severity: Severity::Error,
            range: Range { start: at, end: at },
            message: format!(
                "leanpool: the elaborated type of `{}` is not syntactically the statement's (or leanpool's check of it did not run as written)",
                a.name
            ),
        });
    }
    let proof = CheckResult::from_diagnostics(proof);
    let stmt = CheckResult::from_diagnostics(stmt);
    let status = match (proof.status, stmt.status) {
        (CheckStatus::Error, _) | (_, CheckStatus::Error) => VerifyStatus::Error,
        (CheckStatus::Sorry, _) | (_, CheckStatus::Sorry) => VerifyStatus::Sorry,
        _ => VerifyStatus::Proved,
    };
    Ok(with_time(VerifyResult {
        status,
        diagnostics: proof.diagnostics,
        statement_diagnostics: stmt.diagnostics,
        reason: None,
        axioms: judged.axioms,
        elapsed_ms: None,
    }))
}

/// The worker header a `verify` request needs (the pool's key), or `None`
/// when the request is refused before Lean.
pub fn header_key(params: &VerifyParams) -> Option<String> {
    assemble(params)
        .ok()
        .map(|a| crate::check::header_key(&a.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(statement: &str, proof: &str) -> VerifyParams {
        VerifyParams {
            header: "import Init\n".into(),
            statement: statement.into(),
            proof: proof.into(),
            timeout_ms: None,
            timings: false,
        }
    }

    #[test]
    fn assembles_and_strips_sorry() {
        for s in [
            "theorem t (n : Nat) : n + 0 = n := sorry",
            "theorem t (n : Nat) : n + 0 = n := by sorry",
            "theorem t (n : Nat) : n + 0 = n",
        ] {
            let a = assemble(&params(s, "by\n  simp")).unwrap();
            assert_eq!(
                a.text,
                "import Init\ntheorem t (n : Nat) : n + 0 = n := by\n  simp\n"
            );
            assert_eq!(a.statement_line, 1);
            assert_eq!(
                a.proof_start,
                Position {
                    line: 1,
                    character: 35
                }
            );
            assert_eq!(
                a.trailer_lines[1],
                "set_option pp.fullNames true in set_option pp.notation false in #print axioms t"
            );
            assert_eq!(
                a.trailer_lines[2],
                format!("axiom {REFERENCE} (n : Nat) : n + 0 = n")
            );
            assert_eq!(
                a.name_position,
                Position {
                    line: 1,
                    character: 8
                }
            );
            assert!(matches!(
                a.place(Position {
                    line: 2,
                    character: 2
                }),
                Place::Proof(Position {
                    line: 1,
                    character: 2
                })
            ));
            assert!(matches!(
                a.place(Position {
                    line: 1,
                    character: 36
                }),
                Place::Proof(Position {
                    line: 0,
                    character: 1
                })
            ));
            assert!(matches!(
                a.place(Position {
                    line: 1,
                    character: 8
                }),
                Place::Statement(Position {
                    line: 0,
                    character: 8
                })
            ));
        }
    }

    #[test]
    fn proofs_escaping_their_slot_are_refused() {
        for p in [
            "rfl\ntheorem extra : False := sorry",
            "rfl\naxiom cheat : False",
            "by\n  simp\nend",
            "(rfl",
            "rfl)",
            "⟨rfl, rfl⟩⟩",
            "by\n  set_option maxRecDepth 10000 in simp",
            "by\n  open Nat in simp",
            "rfl\n#check 1",
            "by\n  #guard_msgs in simp",
            "by\n  simp\n/-",
            "rfl\n/-- doc -/\ndef x := 1",
            "rfl where foo := 1",
            "rfl\nnamespace X",
            "",
        ] {
            assert!(check_proof(p).is_err(), "{p:?} should be refused");
        }
        for p in [
            "rfl",
            "by\n  intro n\n  simp [Nat.add_comm] at *",
            "fun h => ⟨h.1, h.2⟩",
            "by\n  have h : 1 = 1 := rfl\n  exact h",
        ] {
            assert!(check_proof(p).is_ok(), "{p:?}");
        }
    }

    #[test]
    fn statements_must_be_one_theorem() {
        assert!(assemble(&params("def t : Nat", "1")).is_err());
        assert!(assemble(&params("theorem t : True := trivial", "trivial")).is_err());
        assert!(assemble(&params("theorem t : True\ntheorem u : False", "trivial")).is_err());
        assert!(assemble(&params("theorem t (x : Nat := 3) : x = x", "rfl")).is_ok());
    }

    #[test]
    fn a_refusal_names_the_part_at_fault() {
        let part = |p: VerifyParams| assemble(&p).unwrap_err().part;
        let bad_header = VerifyParams {
            header: "#eval 1\n".into(),
            ..params("theorem t : True", "trivial")
        };
        assert_eq!(part(bad_header), Part::Header);
        assert_eq!(part(params("def t : Nat", "1")), Part::Statement);
        assert_eq!(
            part(params("theorem t : True", "rfl\n#check 1")),
            Part::Proof
        );
        let e = split_statement_file("def x := 1").unwrap_err();
        assert_eq!(
            (e.part, e.to_string().as_str()),
            (Part::StatementFile, "the statement file holds no `theorem`")
        );
    }

    #[test]
    fn headers_declaring_things_are_refused() {
        let with = |h: &str| VerifyParams {
            header: h.into(),
            ..params("theorem t : True", "trivial")
        };
        for h in [
            "import Init
axiom cheat : False
",
            "import Init
#eval 1
",
            "theorem x : True := trivial
",
            "instance : Inhabited Nat := ⟨0⟩
",
            "attribute [simp] Nat.add_comm
",
        ] {
            assert!(assemble(&with(h)).is_err(), "{h:?} should be refused");
        }
        for h in [
            "import Init
open Nat
set_option maxHeartbeats 400000
",
            "open scoped Nat in
",
            "universe u
variable (n : Nat)
namespace A
",
        ] {
            assert!(assemble(&with(h)).is_ok(), "{h:?}");
        }
        let (h, st) = split_statement_file(
            "import Init
open Nat
-- theorem no
theorem t : True := sorry
",
        )
        .unwrap();
        assert_eq!(
            (h.as_str(), st.as_str()),
            (
                "import Init\nopen Nat\n-- theorem no\n",
                "theorem t : True := sorry"
            )
        );
    }
}
