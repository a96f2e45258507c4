//! Input guard: refuses Lean text that would run code or change the Lean
//! process before it reaches a worker.
//!
//! # Threat model
//!
//! Callers of the daemon's statement operations (`check`, `normalize`,
//! `opt`) are *untrusted-ish*: prover models, scripts, other users on the
//! machine allowed to reach the socket. Their text is elaborated inside a
//! long-lived, shared Lean worker, so anything the text makes Lean *do*
//! happens with the daemon's privileges and persists for later requests.
//!
//! **Defended** (refused by [`screen`] with status `rejected` and a reason,
//! before Lean sees the text):
//!
//! - *Code execution at elaboration time.* Lean can compile and run user
//!   code while elaborating: `#eval`/`#eval!`, `run_cmd`/`run_elab`/
//!   `run_meta`/`run_tac`, `#guard`, `native_decide`/`decide +native`/
//!   `Lean.ofReduceBool`, `plausible`, tactic configuration values (which
//!   are evaluated), and every way of installing user code into the
//!   elaborator: `macro`, `syntax`, `elab`, `macro_rules`, `elab_rules`,
//!   `declare_syntax_cat`, simprocs, and code attributes (`@[command_elab]`,
//!   `@[tactic]`, `@[app_unexpander]`, `@[norm_num]`, ...). Code without
//!   `IO` in its type is not harmless once run (`dbgTrace` writes to
//!   stderr, `dbgSleep` sleeps, loops spin, and `unsafe`/`@[extern]`/
//!   `@[implemented_by]` reach native code), so the guard refuses the
//!   *executors* rather than judging the code. (Lean 4.28 types the `IO`
//!   world token so pure code cannot forge one: checked on the WASM build.)
//! - *Process and session changes.* `initialize`/`builtin_initialize`,
//!   `register_*` commands, `@[init]`, `@[extern]`, `@[implemented_by]`,
//!   `@[export]`, `unsafe`, `meta` definitions, `#exit` (which would hide the
//!   rest of the text from checking), `import` after the header, kernel and
//!   elaborator switches (`set_option debug.*`, `Elab.*`, `trace.*`, ...),
//!   and side channels: `include_str` (reads files), `polyrith` (network),
//!   `bv_decide`/`bv_check` (external process / files).
//! - *Default deny.* Input passes through allowlists, anything else is
//!   refused with a reason: the words a command may start with, at the
//!   start of a line and wherever else the syntax starts a command (after
//!   a command-level `… in`, an attribute block, a modifier, a doc
//!   comment: `guard/commands.rs`), with every other known command keyword
//!   refused anywhere (`crate::vocab::COMMAND_WORDS`), `#` commands,
//!   attributes, `set_option`
//!   names with capped values (`guard/options.rs`: `maxHeartbeats`,
//!   `maxRecDepth`, …; every `pp.*`, `warn.*`, `linter.*` option refused,
//!   since verdicts read what Lean prints), and tactic configuration
//!   (`guard/config.rs`: per-tactic field lists, literal values only, no
//!   positional `.mk`/`⟨⟩` forms, which spelled `decide +native`; a
//!   tactic without a list takes no configuration at all, recognised at
//!   every tactic head, `guard/tactic_heads.rs`: `lia (gen := 7)` ran the
//!   caller's instance through its literal). Trust
//!   routes are refused by name however spelled (`sorryAx`, `lcProof`,
//!   `Lean.ofReduceBool`, `Lean.trustCompiler`, …; `_root_.`, `«»`, `@`,
//!   `open` forms, name literals), and `native_decide` in all its
//!   spellings unless `[verdict] trust_compiler` is set *and* the workers
//!   are native ([`Screening::native_decide`]), where `#print axioms`
//!   shows the trust in the answer.
//! - *No caller code at elaboration time.* Lean runs compiled code while
//!   elaborating in these places only: the commands that evaluate
//!   (`#eval`, `#guard`, `run_cmd`/`run_elab`/`run_meta`/`run_tac`,
//!   `by_elab`, `eval%`, `#test`/`#sample`: refused), code it installs as
//!   elaborator, parser, delaborator, simproc or extension (`macro`,
//!   `elab`, `syntax`, code attributes, `initialize`: refused), compiled
//!   code the kernel trusts (`native_decide`, `ofReduceBool`: refused), and
//!   *tactic configurations*, which are elaborated, compiled and run. The
//!   last is the subtle one: a configuration holding only literals still
//!   runs whatever its literals elaborate to, and a literal's meaning is
//!   decided by instance resolution (`7` is `OfNat.ofNat 7` through the
//!   highest-priority `OfNat Nat 7` instance: the caller's
//!   `instance (priority := high) evil (n : Nat) : OfNat Nat n :=
//!   ⟨dbgTrace "X" fun _ => n⟩` ran inside `simp (maxSteps := 7)`) or by
//!   the token table (a caller's `notation "true" => …`). The rule: a
//!   configuration passes only as named fields from the tactic's list with
//!   `true`/`false`/decimal values, and only in a text that declares no
//!   instance (`instance`, `default_instance`, `deriving`, `class`, whose
//!   parents are instances) and no notation. Then the evaluated term holds
//!   only the configuration structure's constructor, Lean's `instOfNatNat`
//!   and `Bool`'s constructors. Local instances (`letI`, binders) cannot
//!   reach it: the evaluator adds the term as a closed declaration, and a
//!   term with free variables never gets past the kernel. (Reduction —
//!   `decide`, `rfl`, `#reduce`, `simp` — unfolds caller definitions
//!   symbolically and runs none of their compiled code.) Tactics not on
//!   the configuration list cannot be configured at all.
//! - *Smuggling.* One lexer ([`crate::lex`], Lean's `whitespace` /
//!   `finishCommentBlock` / `tokenFn` rules) is the only reader of the
//!   caller's text: the guard screens its token stream, the import header
//!   and the statement of `normalize`/`opt` are found in it, and every
//!   document sent to Lean is assembled from pieces of the caller's text
//!   and re-tokenized to exactly the screened tokens
//!   ([`crate::header`]), so Lean elaborates what was screened. The
//!   types hold it: [`screen`] alone makes a [`Screened`], and a worker
//!   elaborates only a [`LeanText`], which only a `Screened` makes.
//!   The lexer follows Lean where it is subtle: comments are consumed by
//!   `whitespace` *after* any token, so `=--`, `:/-`, `+/-` start comments
//!   with Lean's own tokens, but not when a longer token (`<-`, or one an
//!   imported library or a `notation` declares) swallows the `-` — the
//!   guard has no token table, so a comment opener glued to a symbol or a
//!   name is refused; a block comment's body starts after `/-X` (so
//!   `/-/- -/` is one comment) and a doc comment's after `/--` / `/-!` (so
//!   `/--/` opens one); nested comments, strings with escapes and gaps, raw
//!   strings with any number of `#`, character literals, `«»` identifiers,
//!   interpolated strings' `{…}` code. Every code token is checked wherever
//!   it is (inside `open … in`, attribute lists, notation, `by` blocks).
//!   Text it cannot tokenize the way Lean would is refused: unterminated or
//!   badly escaped literals (Lean's error recovery restarts *inside* a
//!   token that failed to lex, and would read their contents as code),
//!   invisible or bidirectional-control characters in code, notations
//!   declaring tokens with quotes or comment openers. Text in comments and
//!   strings is not inspected, so mentioning `#eval` there is fine. Visible
//!   lookalikes (`＃eval`, Cyrillic `е` in `#еval`) are *not* refused: Lean
//!   does not read them as the command either; it reports a parse error.
//!   A differential test generates texts with an opener of every kind glued
//!   after every symbol, in header commands, bodies and statements, with a
//!   `#check (N : Nat)` payload that one reading hides, and requires Lean
//!   to print exactly the payloads the lexer says are code, for the
//!   documents `check` and `normalize`/`opt` send (a sample in
//!   `crates/leanpool-methods/tests/terms_lean.rs`, every case in the
//!   `lexdiff` bench).
//!
//! **Not defended here** (other layers, or out of scope):
//!
//! - Proofs that legitimately take forever or loop in the kernel or
//!   elaborator: the per-request timeout kills the worker's process group.
//! - Memory exhaustion: the worker's memory cap; the daemon survives.
//! - Bugs in Lean itself (kernel soundness bugs, crashes on odd input):
//!   a crashed worker is replaced; soundness is Lean's.
//! - Proof *validity* policy: a user `axiom` or `sorry` is elaborated
//!   normally; the verdict (`leanpool_methods::verdict`, after elaboration) reports
//!   `sorry` and answers `error` for a body that declares an axiom. The
//!   guard's share: `#guard_msgs` (which consumes the messages a verdict is
//!   read from) and `set_option warn.*` (`warn.sorry false`) are refused.
//! - Code in the imported libraries (Mathlib and friends) and in the
//!   header's `import`s: trusted, installed by the operator.
//! - New Lean or Mathlib features that execute code through syntax the
//!   guard does not know, written where it cannot see a command start.
//!   Commands are default-deny wherever the syntax makes one start
//!   (`guard/commands.rs`: at the start of a line, after a command-level
//!   `… in`, an attribute block, a modifier or a doc comment, the word
//!   must be an accepted command), and every command keyword of core Lean,
//!   Batteries and Mathlib that leanpool does not accept is refused
//!   anywhere, and so is every command keyword of the libraries a text
//!   imports, read from their `.olean`s when the pool is made
//!   ([`crate::vocab::LibraryCommands`]: Mathlib's, a `[projects]`
//!   library's own `syntax … : command`; a module whose `.olean` cannot
//!   be read refuses every text importing it). What is left: a library
//!   command whose syntax starts with no keyword, or whose keyword is
//!   also another category's token or a builtin term keyword, written
//!   after a term; builtin (compiled-in) commands of a later Lean the
//!   static list lacks (`guard/commands.rs`). Tactic
//!   configuration is default-deny at every tactic head
//!   (`guard/tactic_heads.rs`: after `by`, at a tactic block's column,
//!   after `;`, `<;>`, `·`, `try`/`all_goals`/…, `case … =>`): a tactic
//!   without a field list takes no `+x`/`-x`/`(x := v)`; a named argument
//!   elsewhere is a term's (`f (x := 1)`) and passes. Lean tokens (from
//!   imported libraries) that contain a quote or comment opener after
//!   their first character.
//!   Behind the guard there are only process limits (timeout, memory cap,
//!   process group); workers run with the daemon's user, file system and
//!   network access — there is no OS sandbox.
//!
//! The tokenizer's choices were checked against Lean 4.28 itself
//! (`tests/guard_lean.rs`): Lean *does* execute an `#eval` hidden after
//! `//-`, after `<--`, after `=--` / `/--/` / `/-/- -/` (issue 10), after a
//! failed character literal `'x"`, after a bad
//! string escape, after an unterminated string, and inside the text of an
//! interpolated string after a malformed `{…}` — the guard refuses all of
//! these — and does *not* execute `＃eval`, `#еval`, or `#eval` inside a
//! doc comment in term position, comments or strings — which it lets through.
//!
//! The rules, with the reason for each, are in `guard/tables.rs` and
//! `guard/rules.rs`; the tokenizer and its reasoning in `lex.rs`.

mod check;
mod commands;
mod config;
mod options;
mod rules;
mod screened;
mod tables;
mod tactic_heads;

pub use options::{MAX_HEARTBEATS, MAX_REC_DEPTH};
pub use screened::{screen, LeanText, Screened};

use serde::{Deserialize, Serialize};

/// Why a text was refused: the first offending construct.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The construct as written, e.g. `#eval`, `set_option maxHeartbeats`,
    /// `@[extern]`, `invisible character U+200B`.
    pub construct: String,
    /// 0-based line of the construct's first character.
    pub line: u32,
    /// 0-based column in UTF-16 code units (LSP convention).
    pub character: u32,
    /// Human-readable explanation, meant to be shown to the caller.
    pub reason: String,
}

impl Rejection {
    /// A rejection of `construct` at byte `offset` of `text`.
    fn at(text: &str, offset: usize, construct: String, reason: String) -> Rejection {
        let (line, character) = utf16_position(text, offset);
        Rejection {
            construct,
            line,
            character,
            reason,
        }
    }

    /// Where the refused construct starts, as a protocol position.
    pub fn position(&self) -> leanpool_protocol::Position {
        leanpool_protocol::Position {
            line: self.line,
            character: self.character,
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: rejected `{}`: {}",
            self.line + 1,
            self.character + 1,
            self.construct,
            self.reason
        )
    }
}

impl std::error::Error for Rejection {}

/// What the guard lets through beyond its built-in rules: the config
/// file's `[guard]` table as read (its keys and nothing else; what the
/// pool adds at run time is in [`Screening`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardPolicy {
    /// `false` turns the guard off: requests are not screened at all and
    /// every text goes to Lean as written, so code in it runs (inside the
    /// worker's OS sandbox, `leanpool_lean::sandbox`). For trusted local use and
    /// for testing the sandbox. Default `true`.
    pub enabled: bool,
    /// Options (`set_option NAME v`, not `… in`) allowed in the header,
    /// i.e. among the leading `import` / `set_option` / `open` commands,
    /// beyond the built-in allowlist (`maxHeartbeats`, `maxRecDepth`, …,
    /// with their caps: `guard/options.rs`), with any value. Options that
    /// change how Lean prints or which warnings it gives (`pp.*`,
    /// `warn.*`, `linter.*`), `debug.*`, `trace.*` and `Elab.*` are never
    /// allowed. Default: none.
    pub allow_header_options: Vec<String>,
    /// Attributes to allow in addition to the built-in declarative ones.
    pub extra_attributes: Vec<String>,
    /// `#` commands to allow in addition to `#check`, `#reduce`, `#print`, ...
    pub extra_hash_commands: Vec<String>,
}

/// The guard as applied to one set of workers' texts: the `[guard]` table
/// as read ([`GuardPolicy`]: the config file's shape, only its keys) and
/// what only the code that knows the verdict policy and the workers'
/// backend can say. Made by `leanpool_methods::Policy::screening` (the
/// pool's and the CLI's local commands' policy); a bare `&GuardPolicy`
/// converts into one that allows nothing beyond the table
/// (`native_decide: false`), which is what every other screening path
/// (`leanpool lsp`, tests, tools) means.
#[derive(Debug, Clone, Copy)]
pub struct Screening<'a> {
    /// `[guard]` as read.
    pub policy: &'a GuardPolicy,
    /// `native_decide` and its spellings (`decide +native`,
    /// `native := true`) pass: the operator trusts the compiler
    /// (`[verdict] trust_compiler`) *and* the workers are native Lean,
    /// where `#print axioms` shows that trust in the answer. `false`
    /// otherwise.
    pub native_decide: bool,
    /// The command keywords of the workers' libraries, read from their
    /// `.olean`s when the pool was made
    /// ([`crate::vocab::LibraryCommands`]): each is refused anywhere in a
    /// text that imports its module, unless leanpool accepts it. Empty
    /// (only the static vocabulary) for a bare `&GuardPolicy`.
    pub library: &'a crate::vocab::LibraryCommands,
}

impl<'a> From<&'a GuardPolicy> for Screening<'a> {
    fn from(policy: &'a GuardPolicy) -> Self {
        static NONE: std::sync::LazyLock<crate::vocab::LibraryCommands> =
            std::sync::LazyLock::new(Default::default);
        Screening {
            policy,
            native_decide: false,
            library: &NONE,
        }
    }
}

impl Default for GuardPolicy {
    fn default() -> Self {
        GuardPolicy {
            enabled: true,
            allow_header_options: Vec::new(),
            extra_attributes: Vec::new(),
            extra_hash_commands: Vec::new(),
        }
    }
}

/// 0-based line (lines end at `\n`) and UTF-16 column of a byte offset.
fn utf16_position(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count();
    // `offset` is always a char boundary (tokens start at characters).
    let column = text
        .get(line_start..offset)
        .map_or(0, |s| s.encode_utf16().count());
    (line as u32, column as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_astral_characters_twice() {
        let text = "-- 𝓝\n∀ x, #eval";
        assert_eq!(utf16_position(text, text.find("#eval").unwrap()), (1, 5));
        assert_eq!(utf16_position("a𝓝b", "a𝓝".len()), (0, 3));
    }

    #[test]
    fn lexer_hides_exactly_comments_and_literals() {
        use crate::lex::Kind::*;
        let toks = crate::lex::tokenize(
            "/- a /- b -/ c -/ x \"s{1}\" 'c' «d e».f -- g\n`n r#\"q\"# /-- doc -/",
        )
        .unwrap();
        let kinds: Vec<_> = toks.iter().map(|t| (t.kind, t.text.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (Ident, "x"),
                (Str, "\"s{1}\""),
                (Ident, "s"),
                (Symbol, "{"),
                (Num, "1"),
                (Symbol, "}"),
                (Char, "'c'"),
                (Ident, "d e.f"),
                (NameLit, "n"),
                (Str, "r#\"q\"#"),
                (DocComment, "/--"),
            ]
        );
    }

    #[test]
    fn header_covers_imports_options_and_opens_but_not_in_forms() {
        let toks = crate::lex::tokenize(
            "import Mathlib\nimport Aesop\nset_option maxHeartbeats 0\nopen Real Nat\nset_option maxHeartbeats 0 in\ntheorem x : True := trivial",
        )
        .unwrap();
        let h = rules::header(&toks);
        assert_eq!(h.imports_end, 4);
        assert_eq!(h.options, vec![4]);
    }

    /// The attack: 160,000 header `set_option` lines made screening
    /// quadratic (4 s per pass, on the async runtime): each `set_option`
    /// looked itself up in the list of header options. Now linear; the
    /// bound is loose on purpose (a loaded machine), the quadratic took
    /// seconds.
    #[test]
    fn a_160k_line_header_of_set_options_is_screened_in_linear_time() {
        let text = format!(
            "{}theorem t : True := trivial\n",
            "set_option maxHeartbeats 400000\n".repeat(160_000)
        );
        let t = std::time::Instant::now();
        assert!(screen(&text, &GuardPolicy::default()).is_ok());
        let ms = t.elapsed().as_millis();
        eprintln!("160,000 header set_option lines screened in {ms} ms");
        assert!(ms < 5_000, "screening took {ms} ms");
    }
}
