//! Commands: default-deny at every place a command can start, not only
//! at the start of a line.
//!
//! Lean starts a new command wherever the current one cannot go on: at
//! the start of a line, but also after a term on the same line
//! (`… := trivial proof_wanted …`), after `set_option … in` / `open … in`
//! / `include … in` / `omit … in` / `variable … in` / `attribute … in`,
//! after a declaration's attribute block `@[…]`, after a doc comment and
//! after a declaration modifier (`private`, `protected`, `noncomputable`,
//! `partial`, `nonrec`, `public`). Two rules cover these places:
//!
//! 1. **A known command keyword that leanpool does not accept is refused
//!    wherever it is** ([`known_command`]): every word of
//!    [`crate::vocab::COMMAND_WORDS`] (core Lean, Batteries and Mathlib
//!    commands) not on [`ACCEPTED_COMMANDS`]. A keyword is a token, never
//!    an identifier, so this refuses no honest name.
//! 2. **At each place the syntax makes a command start, the word there
//!    must be on [`ACCEPTED_COMMANDS`]** ([`positions`]): the token after
//!    a command-level `… in`, after an attribute block, after a modifier,
//!    after a doc comment (or a structure field: a name followed by a
//!    symbol), after a module doc. A word there that leanpool does not
//!    know is refused, so a library command the vocabulary does not list
//!    is refused there too. (Column 0 has the same rule:
//!    `rules::line_start`.)
//!
//! Rule 1 reads a keyword as Lean's tokenizer does: the longest token
//! wins over an identifier, so `gen_injective_theorems%` is one keyword,
//! not the identifier `gen_injective_theorems` ([`crate::vocab::command_at`]).
//!
//! Rule 1 knows two vocabularies: the static one
//! ([`crate::vocab::COMMAND_WORDS`]: core Lean 4.28, checked against the
//! installed Lean by `tests/vocab_oleans.rs`, and the Batteries/Mathlib
//! commands listed by hand) and the command keywords of the libraries the
//! text imports, read from their `.olean`s when the pool is made
//! ([`crate::vocab::LibraryCommands`]: every `syntax … : command` /
//! `macro` / `elab` of every module on the workers' `LEAN_PATH`, Mathlib
//! and a `[projects]` library's own commands included; a module whose
//! `.olean` cannot be read refuses every text importing it). Every
//! screening path of a pool passes its scan (the pool's methods, the
//! `lease` tunnel, `leanpool lsp` on a local pool; `leanpool lsp
//! --socket` through the daemon's tunnel). A `scoped` command's keyword
//! counts only in a text that may open its namespace
//! ([`ImportedCommands::scoped_in`]). What remains (documented in
//! the guard's threat model): a library command whose syntax starts with
//! no keyword, or whose keyword is also a token of another category's
//! parser or a builtin term keyword (`LibraryCommands::words_for`),
//! written after a term; builtin commands of a later Lean not in the
//! static list (the scan sees `syntax` declarations, not
//! `@[builtin_command_parser]`s).

use super::check::{closing, refuse, Check, MAX_SCAN};
use super::tables::LINE_START_WORDS;
use crate::lex::{Kind, Token};
use crate::vocab::{ImportedCommands, COMMAND_WORDS, DECLARATION_MODIFIERS};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Words of [`LINE_START_WORDS`] that continue a declaration or are
/// header-only; they do not start a command after `in`, a modifier, an
/// attribute block or a doc comment.
const CONTINUATIONS: &[&str] = &[
    "where",
    "termination_by",
    "decreasing_by",
    "with",
    "in",
    "import",
    "module",
    "prelude",
];

/// Whether `word` is a command (or modifier) leanpool accepts where a
/// command starts.
pub(crate) fn accepted(word: &str) -> bool {
    LINE_START_WORDS.contains(&word) && !CONTINUATIONS.contains(&word)
}

/// The accepted commands, for messages.
fn accepted_list() -> String {
    LINE_START_WORDS
        .iter()
        .filter(|w| !CONTINUATIONS.contains(w))
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// The command keywords of the libraries one text imports, as read from
/// their `.olean`s ([`crate::vocab::LibraryCommands::words_for`]), that
/// Lean may read as keywords in that text: the global ones, and the
/// scoped ones whose namespace the text may open
/// ([`ImportedCommands::scoped_in`]).
pub(crate) struct LibraryWords {
    words: Arc<ImportedCommands>,
    /// The scoped keywords the text may have opened.
    opened: BTreeSet<String>,
    /// Those holding a character no identifier has (`reset_grind_attrs%`).
    glued: Vec<String>,
}

impl LibraryWords {
    /// The keywords of `words` that text `src` may read as keywords.
    pub(crate) fn new(words: Arc<ImportedCommands>, src: &str) -> Self {
        let opened: BTreeSet<String> = words.scoped_in(src).map(String::from).collect();
        let glued = words
            .global
            .iter()
            .chain(&opened)
            .filter(|w| !w.chars().all(crate::lex::is_id_rest))
            .cloned()
            .collect();
        LibraryWords {
            words,
            opened,
            glued,
        }
    }

    /// The library command keyword Lean reads at identifier token `t`.
    fn at<'a>(&'a self, src: &str, t: &Token) -> Option<&'a str> {
        let known = |w| self.words.global.get(w).or_else(|| self.opened.get(w));
        if let Some(w) = word(src, t).and_then(known) {
            return Some(w);
        }
        let rest = src.get(t.start..)?;
        (t.kind == Kind::Ident)
            .then(|| self.glued.iter().find(|w| rest.starts_with(w.as_str())))
            .flatten()
            .map(String::as_str)
    }
}

/// Rule 1: a known command keyword leanpool does not accept, anywhere:
/// one of [`COMMAND_WORDS`], or of the imported libraries' ([`LibraryWords`]).
pub(crate) fn known_command(src: &str, t: &Token, library: &LibraryWords) -> Check {
    // `meta` has a rule of its own (refused after the imports).
    let unaccepted = |w: &&str| !LINE_START_WORDS.contains(w) && *w != "meta";
    let (word, whence) = match crate::vocab::command_at(src, t).filter(unaccepted) {
        Some(w) => (w, ""),
        None => match library.at(src, t).filter(unaccepted) {
            Some(w) => (
                w,
                " of the imported libraries (read from their .olean files)",
            ),
            None => return Ok(()),
        },
    };
    refuse(
        t,
        word,
        format!(
            "`{word}` is a command{whence} leanpool does not accept (accepted: {}); a command \
             is refused wherever it starts, in the middle of a line too",
            accepted_list()
        ),
    )
}

fn is_sym(t: Option<&Token>, s: &str) -> bool {
    t.is_some_and(|t| t.kind == Kind::Symbol && t.text == s)
}

/// The plain word of an identifier token (not `«»`-quoted).
fn word<'a>(src: &'a str, t: &Token) -> Option<&'a str> {
    crate::vocab::keyword(src, t)
}

/// Rule 2: the places where the syntax makes a command start.
pub(crate) fn positions(src: &str, toks: &[Token]) -> Check {
    let at_column_0 = |t: &Token| matches!(src.as_bytes()[..t.start].last(), None | Some(b'\n'));
    // Index of the next token that must start an accepted command.
    let mut pending: Option<usize> = None;
    for (i, t) in toks.iter().enumerate() {
        if t.nested {
            continue;
        }
        let chained = pending == Some(i);
        if chained {
            command_start(src, toks, i)?;
        }
        let commanding = chained || at_column_0(t);
        if let Some(next) = chains_to(src, toks, i, commanding)? {
            pending = Some(next);
        }
    }
    Ok(())
}

/// If token `i` makes a later token a command start, its index.
/// `commanding`: token `i` itself starts a command.
fn chains_to(
    src: &str,
    toks: &[Token],
    i: usize,
    commanding: bool,
) -> Result<Option<usize>, super::check::Finding> {
    let t = &toks[i];
    match t.kind {
        Kind::DocComment if t.text == "/-!" => return Ok(Some(i + 1)),
        Kind::DocComment => {
            after_doc_comment(src, toks, i + 1)?;
            return Ok(None);
        }
        Kind::Symbol if t.text == "@" && is_sym(toks.get(i + 1), "[") => {
            return Ok(closing(toks, i + 2, "]").map(|k| k + 1));
        }
        _ => {}
    }
    let Some(w) = word(src, t) else {
        return Ok(None);
    };
    if DECLARATION_MODIFIERS.contains(&w) {
        // `private mk ::` names a structure's constructor.
        let ctor = toks.get(i + 1).is_some_and(|n| n.kind == Kind::Ident)
            && is_sym(toks.get(i + 2), ":")
            && is_sym(toks.get(i + 3), ":");
        return Ok((!ctor).then_some(i + 1));
    }
    if commanding
        && matches!(
            w,
            "set_option" | "open" | "include" | "omit" | "variable" | "attribute"
        )
    {
        return Ok(in_of(src, toks, i).map(|k| k + 1));
    }
    Ok(None)
}

/// The `in` ending the command-level `set_option`/`open`/… at `i`, if
/// the command has one: the first `in` at bracket depth 0 before any
/// `:=`, command word, doc comment or `#` command.
fn in_of(src: &str, toks: &[Token], i: usize) -> Option<usize> {
    let mut depth = 0u32;
    for (k, t) in toks.iter().enumerate().skip(i + 1).take(MAX_SCAN) {
        match t.kind {
            Kind::DocComment | Kind::HashCmd => return None,
            Kind::Symbol => match t.text.as_str() {
                "(" | "[" | "{" | "⟨" | "⦃" => depth += 1,
                ")" | "]" | "}" | "⟩" | "⦄" => depth = depth.saturating_sub(1),
                ":=" if depth == 0 => return None,
                _ => {}
            },
            Kind::Ident => match word(src, t) {
                Some("in") if depth == 0 => return Some(k),
                Some(w) if COMMAND_WORDS.contains(&w) && !matches!(w, "scoped" | "local") => {
                    return None
                }
                _ => {}
            },
            _ => {}
        }
    }
    None
}

/// Token `i` is where the syntax starts a command: an accepted command
/// word, an attribute block, a doc comment or a `#` command (the `#`
/// allowlist judges it).
fn command_start(src: &str, toks: &[Token], i: usize) -> Check {
    let t = &toks[i];
    let ok = match t.kind {
        Kind::DocComment | Kind::HashCmd => true,
        Kind::Symbol => t.text == "@" && is_sym(toks.get(i + 1), "["),
        // `import`/`meta` after a modifier (`public meta import`): their
        // own rules judge them.
        Kind::Ident => word(src, t).is_some_and(|w| accepted(w) || matches!(w, "import" | "meta")),
        _ => false,
    };
    if ok {
        return Ok(());
    }
    refuse(
        t,
        t.text.clone(),
        format!(
            "a command starts here (after `… in`, an attribute block, a modifier or a doc \
             comment) and `{}` is not a command leanpool accepts (accepted: {})",
            t.text,
            accepted_list()
        ),
    )
}

/// After a declaration doc comment: what [`command_start`] accepts, a
/// constructor (`| c`), or a structure field (a name followed by a
/// symbol: `x : T`, `x := v`, `x (a : A) : T`).
fn after_doc_comment(src: &str, toks: &[Token], i: usize) -> Check {
    let Some(t) = toks.get(i) else { return Ok(()) };
    let field = t.kind == Kind::Ident
        && word(src, t).is_none_or(|w| !COMMAND_WORDS.contains(&w))
        && toks.get(i + 1).is_some_and(|n| n.kind == Kind::Symbol);
    if field || is_sym(Some(t), "|") {
        return Ok(());
    }
    command_start(src, toks, i)
}

#[cfg(test)]
mod tests {
    use crate::guard::{screen, GuardPolicy};

    fn refused(text: &str) -> String {
        match screen(text, &GuardPolicy::default()) {
            Ok(_) => panic!("not refused:\n{text}"),
            Err(r) => r.construct,
        }
    }

    fn passes(text: &str) {
        if let Err(r) = screen(text, &GuardPolicy::default()) {
            panic!("refused: {r}\n{text}");
        }
    }

    #[test]
    fn unaccepted_commands_are_refused_mid_line() {
        for (text, construct) in [
            (
                "theorem t : True := trivial proof_wanted f : False",
                "proof_wanted",
            ),
            (
                "theorem t : True := trivial; unif_hint (x : Nat) where x =?= 0",
                "unif_hint",
            ),
            (
                "theorem t : True := by\n  trivial\n  add_decl_doc t",
                "add_decl_doc",
            ),
            ("open Nat in seal Nat.add", "seal"),
            // Core Lean 4.28 commands (issue 20), mid-line after a term.
            (
                "example : True := trivial set_library_suggestions (fun _ _ => pure #[])",
                "set_library_suggestions",
            ),
            (
                "example : True := trivial tactic_extension simp",
                "tactic_extension",
            ),
            (
                "example : True := trivial docs_to_verso Nat.add",
                "docs_to_verso",
            ),
            (
                "example : True := trivial grind_annotated \"x\"",
                "grind_annotated",
            ),
            (
                "example : True := trivial declare_int_theorems Int8 8",
                "declare_int_theorems",
            ),
            (
                "example : True := trivial end_local_scope",
                "end_local_scope",
            ),
            // `?` continues an identifier; `%` does not (the longest token wins).
            (
                "example : True := trivial register_try?_tactic (priority := 1) trivial",
                "register_try?_tactic",
            ),
            (
                "example : True := trivial gen_injective_theorems% Nat",
                "gen_injective_theorems%",
            ),
            ("set_option maxHeartbeats 10 in my_cmd x", "my_cmd"),
            ("open Nat hiding add in\n  my_cmd x", "my_cmd"),
            ("@[simp] my_cmd x", "my_cmd"),
            ("theorem t : True := trivial @[simp] my_cmd x", "my_cmd"),
            ("private my_cmd x", "my_cmd"),
            (
                "theorem t : True := trivial noncomputable my_cmd x",
                "my_cmd",
            ),
            ("theorem t : True := trivial /-- doc -/ my_cmd x", "my_cmd"),
            ("/-- doc -/ my_cmd \"x\"", "my_cmd"),
            ("/-! doc -/ my_cmd x", "my_cmd"),
            ("include h in\n  my_cmd x", "my_cmd"),
            ("variable (x : Nat) in my_cmd x", "my_cmd"),
            ("attribute [local simp] Nat.add_comm in my_cmd", "my_cmd"),
        ] {
            assert_eq!(refused(text), construct, "{text}");
        }
    }

    #[test]
    fn honest_forms_at_command_positions_pass() {
        passes("open Finset in\ntheorem t (s : Finset Nat) : True := trivial");
        passes("set_option maxHeartbeats 400000 in\n@[simp] private theorem t : True := trivial");
        passes("/-- doc -/\n@[simp]\nnoncomputable def f : Nat := 0");
        passes(
            "structure S where\n  /-- a field -/\n  x : Nat\n  /-- another -/\n  y (n : Nat) : Nat",
        );
        passes("structure S where\n  private mk ::\n  x : Nat");
        passes("theorem t : True := by\n  set_option maxRecDepth 1000 in\n  trivial");
        passes("theorem t : True := by\n  open Nat in\n  trivial");
        passes("theorem t (f : Nat → Nat) : f = f := by\n  have h : ∀ x ∈ [1], x = x := fun x _ => rfl\n  rfl");
        passes("noncomputable section\nopen Classical\ntheorem t : True := trivial\nend");
        // An identifier the keyword's letters begin is not the keyword.
        passes("theorem t (register_try : Nat) : register_try = register_try := rfl");
        passes("theorem t (x : Nat) : x % 2 < 2 := Nat.mod_lt x (by decide)");
        passes("def gen_injective_theorems (n : Nat) : Nat := n % 2");
    }
}
