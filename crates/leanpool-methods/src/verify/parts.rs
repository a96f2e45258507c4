//! The caller's parts of a `verify` request, each checked for what it may
//! hold before anything is assembled: the header (header commands only),
//! the context (helper declarations that cannot change how the statement
//! reads), the statement (one theorem's name, binders and type) and the
//! proof slot (a term or tactic block).

use leanpool_screen::lex::{self as lexer, Kind, Token};
use leanpool_screen::text::LineIndex;
use leanpool_screen::vocab::{keyword, COMMAND_WORDS};

/// A proof containing one of [`COMMAND_WORDS`] (or `where`) is refused: it
/// could close the theorem early and declare or change something.
fn starts_command(k: &str) -> bool {
    COMMAND_WORDS.contains(&k) || k == "where"
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
    /// `context`: the helper declarations.
    Context,
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
    pub(crate) fn new(part: Part, reason: impl Into<String>) -> Self {
        Refused {
            part,
            reason: reason.into(),
        }
    }
}

/// The name of a part, as the caller wrote it.
fn part_name(part: Part) -> &'static str {
    match part {
        Part::Header => "header",
        Part::Statement => "statement",
        Part::Proof => "proof",
        Part::Context => "context",
        Part::StatementFile => "statement file",
    }
}

/// Every slot is one well-bracketed piece: each closing bracket closes
/// the innermost open one of its kind, at every point (a `)` with nothing
/// open, as in `True) ∨ (True`, would close something of leanpool's or
/// end the theorem early), and nothing is left open at the end (it would
/// swallow what leanpool puts after the slot).
pub(crate) fn balanced(text: &str, toks: &[Token], part: Part) -> Result<(), Refused> {
    let ix = LineIndex::new(text);
    let name = part_name(part);
    let mut stack: Vec<&str> = Vec::new();
    for t in toks.iter().filter(|t| t.kind == Kind::Symbol) {
        let open = match t.text.as_str() {
            "(" | "[" | "{" | "⟨" | "⦃" | "⟦" | "‹" => {
                stack.push(t.text.as_str());
                continue;
            }
            ")" => "(",
            "]" => "[",
            "}" => "{",
            "⟩" => "⟨",
            "⦄" => "⦃",
            "⟧" => "⟦",
            "›" => "‹",
            _ => continue,
        };
        if stack.pop() != Some(open) {
            let p = ix.position(t.start);
            return Err(Refused::new(
                part,
                format!(
                    "{name} {}:{}: unbalanced `{}` in the {name}: each slot must be one \
                     well-bracketed piece",
                    p.line + 1,
                    p.character + 1,
                    t.text
                ),
            ));
        }
    }
    match stack.last() {
        Some(open) => Err(Refused::new(
            part,
            format!("`{open}` is never closed in the {name}"),
        )),
        None => Ok(()),
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
    if ends_where_its_text_ends(proof).is_err() {
        return Err(Refused::new(Part::Proof, "`proof` does not end where its text ends (an unterminated comment or literal would swallow what follows)"));
    }
    let ix = LineIndex::new(proof);
    let at = |t: &Token| {
        let p = ix.position(t.start);
        format!("proof {}:{}", p.line + 1, p.character + 1)
    };
    balanced(proof, &toks, Part::Proof)?;
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
            _ => {}
        }
    }
    Ok(())
}

/// The statement without a trailing `:= sorry` / `:= by sorry`, and the
/// byte range of the theorem's name and of the rest (binders and type).
pub(crate) fn statement_parts(statement: &str) -> Result<(&str, std::ops::Range<usize>), Refused> {
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
    balanced(statement, body, Part::Statement)?;
    let mut depth = 0i32;
    // `let x := v; …` / `have h : p := v; …` in the type: each such
    // binder may take one `:=` at bracket depth 0.
    let mut bindings = 0usize;
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
        if matches!(keyword(statement, t), Some("let" | "have")) {
            bindings += 1;
        }
        if depth == 0 && word == ":=" && bindings > 0 {
            bindings -= 1;
            continue;
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
    ends_where_its_text_ends(header).map_err(|_| {
        Refused::new(Part::Header, "`header` does not end where its text ends (an unterminated comment or literal would swallow what follows)")
    })?;
    balanced(header, &toks, Part::Header)?;
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

/// Words a `context` may use among the command words ([`starts_command`]):
/// it declares helper lemmas and definitions, nothing else.
const CONTEXT_WORDS: &[&str] = &[
    "theorem",
    "lemma",
    "def",
    "abbrev",
    "noncomputable",
    "private",
    "protected",
    "where",
    // Only as `open … in` / `set_option … in`: scoped to one helper.
    "open",
    "set_option",
];

/// Checks the `context` of a `verify` request (helper declarations placed
/// between the header and the theorem) against `statement`: only
/// `theorem`/`lemma`/`def`/`abbrev` (with `noncomputable`, `private`,
/// `protected`, `@[simp]`, `open … in`, `set_option … in`), no `#`
/// command, nothing that could change how the statement reads: no
/// `instance`, `notation`, `attribute`, `namespace`/`section`, `variable`,
/// `open` or `set_option` outliving one helper, and no helper whose name
/// (any component) the statement mentions (a helper named like a name in
/// the statement would be what the statement means by it, e.g. instead of
/// an auto-bound variable). Returns the helpers' declarations.
pub fn check_context(context: &str, statement: &str) -> Result<crate::verdict::Scan, Refused> {
    let refuse = |why: String| Refused::new(Part::Context, why);
    let toks = lexer::tokenize(context).map_err(|e| {
        refuse(format!(
            "`context` cannot be read as Lean reads it: {}",
            e.reason
        ))
    })?;
    ends_where_its_text_ends(context).map_err(|_| {
        refuse("`context` does not end where its text ends (an unterminated comment or literal would swallow what follows)".into())
    })?;
    let ix = LineIndex::new(context);
    let at = |t: &Token| {
        let p = ix.position(t.start);
        format!("context {}:{}", p.line + 1, p.character + 1)
    };
    balanced(context, &toks, Part::Context)?;
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map(|n| &context[n.start..n.end]);
        if t.kind == Kind::HashCmd {
            return Err(refuse(format!(
                "{}: `{}` is a command; `context` holds helper declarations only",
                at(t),
                t.text
            )));
        }
        // `@[simp]` only: `@[instance]`, `@[coe]`, `@[default_instance]`
        // … on a helper change how the statement (stated after the
        // context, the reference theorem too) reads.
        if t.kind == Kind::Symbol
            && t.text == "@"
            && next(1) == Some("[")
            && (next(2) != Some("simp") || next(3) != Some("]"))
        {
            return Err(refuse(format!(
                "{}: attributes other than `@[simp]` could change how the statement reads (instances, coercions, unexpanders)",
                at(t)
            )));
        }
        let Some(k) = keyword(context, t) else {
            continue;
        };
        if starts_command(k) && !CONTEXT_WORDS.contains(&k) {
            return Err(refuse(format!(
                "{}: `{k}` is not allowed in `context`: it holds `theorem`, `lemma`, `def` and `abbrev` helpers, nothing that \
                 could change how the statement reads",
                at(t)
            )));
        }
        let scoped = match k {
            "set_option" => next(3) == Some("in"),
            "open" => toks[i + 1..]
                .iter()
                .find(|n| n.kind != Kind::Ident || context[n.start..n.end] == *"in")
                .is_some_and(|n| &context[n.start..n.end] == "in"),
            _ => true,
        };
        if !scoped {
            return Err(refuse(format!(
                "{}: `{k}` in `context` must be scoped to one helper (`{k} … in`); put lasting ones in `header`",
                at(t)
            )));
        }
    }
    let helpers = crate::verdict::scan(context).map_err(|(_, reason)| refuse(reason))?;
    named_apart(&helpers, statement)?;
    Ok(helpers)
}

/// No helper's name (any component) is a name the statement mentions: a
/// helper named `x` would be what the statement's `x` means.
fn named_apart(helpers: &crate::verdict::Scan, statement: &str) -> Result<(), Refused> {
    let mentioned: std::collections::HashSet<&str> = lexer::tokenize(statement)
        .unwrap_or_default()
        .iter()
        .filter(|t| t.kind == Kind::Ident)
        .flat_map(|t| statement[t.start..t.end].split('.'))
        .map(|c| c.trim_matches(|c| c == '«' || c == '»'))
        .collect();
    for d in &helpers.declarations {
        if let Some(c) = d.name.iter().find(|c| mentioned.contains(c.as_str())) {
            return Err(Refused::new(Part::Context, format!(
                "the helper `{}` is named like `{c}` in the statement: a helper may not change what the statement's names mean",
                d.display()
            )));
        }
    }
    Ok(())
}

/// `Err` when Lean would read `text` followed by a new line and a command
/// as swallowing that command (an unterminated comment or literal).
fn ends_where_its_text_ends(text: &str) -> Result<(), ()> {
    let probe = format!("{text}\n#check");
    let closed = lexer::tokenize(&probe)
        .ok()
        .and_then(|t| t.last().cloned())
        .is_some_and(|t| t.start == text.len() + 1);
    closed.then_some(()).ok_or(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    const STATEMENT: &str = "theorem t (x : Nat) (h : x = 2) : x + x = 4";

    #[test]
    fn contexts_declare_helpers_only() {
        for c in [
            "lemma aux (n : Nat) : n + n = 2 * n := by omega",
            "/-- doc -/\ntheorem aux2 : True := trivial\n\ndef twice (n : Nat) : Nat := 2 * n",
            "@[simp] lemma aux3 : (1 : Nat) + 1 = 2 := rfl",
            "set_option maxHeartbeats 400000 in\nlemma aux4 : True := trivial",
            "open Nat in\nlemma aux5 : True := trivial",
            "noncomputable def f5 : Nat := 0\nprivate lemma aux6 : True := trivial",
            "",
        ] {
            assert!(
                check_context(c, STATEMENT).is_ok(),
                "{c:?}: {:?}",
                check_context(c, STATEMENT)
            );
        }
        for c in [
            "instance (priority := high) evil : OfNat Nat 4 := ⟨5⟩",
            "notation \"four\" => 5",
            "@[instance] def evil : OfNat Nat 4 := ⟨5⟩",
            "attribute [simp] Nat.add_comm",
            "open Nat\nlemma a : True := trivial",
            "set_option pp.notation false\nlemma a : True := trivial",
            "namespace Foo\nlemma a : True := trivial",
            "variable (h : False)",
            "axiom cheat : False",
            "#check 1",
            "def x : Nat := 2",
            "def Foo.h : Nat := 2",
            "lemma a : True := trivial\n/-",
            "macro \"x\" : term => `(2)",
            "@[instance 2000] def evil2 : OfNat Nat 5 := ⟨4⟩",
            "@[simp, instance] def evil3 : OfNat Nat 5 := ⟨4⟩",
            "@[coe] def evil4 (n : Nat) : Int := 0",
            "def swallow : Nat := (1",
            "def early : Nat := 1)",
        ] {
            let e = check_context(c, STATEMENT).unwrap_err();
            assert_eq!(e.part, Part::Context, "{c:?}");
        }
    }

    #[test]
    fn statements_may_hold_let() {
        for s in [
            "theorem t : let x := 5; x = 5",
            "theorem t (n : Nat) : let f := fun k => k + n\n  f 0 = n := by sorry",
            "theorem t : have h : 1 = 1 := rfl; True",
        ] {
            assert!(statement_parts(s).is_ok(), "{s}: {:?}", statement_parts(s));
        }
        assert!(statement_parts("theorem t : True := trivial").is_err());
        // Depth never below zero: `)` before `(` would close something of
        // leanpool's or end the theorem early.
        for s in [
            "theorem t : True) ∨ (True",
            "theorem t : (True]",
            "theorem t : ⟨True",
        ] {
            let e = statement_parts(s).unwrap_err();
            assert!(e.reason.contains("statement"), "{s}: {e}");
        }
        assert!(statement_parts("theorem t : let x := 5; x = 5 := rfl").is_err());
    }
}
