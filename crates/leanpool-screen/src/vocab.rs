//! Lean's vocabulary as leanpool reads it: the one place that says which
//! words start commands, which declare names, and which modify a
//! declaration. The guard, the header split, the verdict, `verify`'s slot
//! rules and the statement finder (`leanpool-terms`) all read these
//! tables, so they cannot disagree about what a command is.

use crate::lex::{Kind, Token};

mod library;
mod olean;
mod readings;

pub use library::{ImportedCommands, LibraryCommands, ScanError, TERM_KEYWORDS};

/// The command keywords of core Lean 4.28 (`Init`, `Std`, `Lean`): every
/// keyword a parser of the `command` category starts with, and the
/// declaration modifiers. Provenance (issue 20, sixth session): the
/// builtin parsers of `src/Lean/Parser/Command.lean`
/// (`@[builtin_command_parser] … leading_parser "kw "`, read at
/// leanprover/lean4; the 4.28 `lean.wasm` holds each of these strings) and
/// of `Lean/Parser/Syntax.lean` (`syntax`, `macro`, `notation`, ...); the
/// `syntax … : command` declarations of `Init`/`Std`/`Lean` found in the
/// 4.28 `.olean`s: the kinds Lean generated (`commandDeclare_int_theorems__`,
/// `command__Unif_hint____Where_|_-⊢_`, ...) and the keywords of named ones
/// (`set_library_suggestions` in `Init/Notation`, `register_try?_tactic` in
/// `Init/Try`, `grind_annotated` in `Init/Grind/Annotated`). Real Lean
/// 4.28 (file mode, `Init` only) read each keyword added then, written
/// after `example : True := trivial`, as a command of its own, except
/// `end_local_scope` (scoped to `Lean.Parser.Command.InternalSyntax`,
/// listed for documents that open it). Not done: listing Lean's own
/// table of the category's leading tokens (`#eval` of library code fails
/// on the WASM build: its `.olean`s hold no private definitions), which is
/// what would prove the list complete; `crates/leanpool-screen/tests/vocab_oleans.rs`
/// checks it against the installed Lean instead: every word here is still
/// in its `.olean`s or `lean.wasm`, and every command kind Lean generated
/// for a `syntax … : command` there starts with a word of [`COMMAND_WORDS`].
///
/// A keyword with a character an identifier cannot hold
/// (`gen_injective_theorems%`) is still one token for Lean (its token
/// table's longest match wins over the identifier before the `%`):
/// [`command_at`] finds it.
#[rustfmt::skip]
pub const CORE_COMMAND_WORDS: &[&str] = &[
    // Declarations and their modifiers (Lean/Parser/Command.lean).
    "theorem", "def", "example", "abbrev", "instance", "structure", "class", "inductive",
    "coinductive", "axiom", "opaque", "noncomputable", "private", "protected", "public", "meta",
    "partial", "nonrec", "unsafe", "local", "scoped", "deriving",
    // Scopes and environment (Lean/Parser/Command.lean).
    "variable", "universe", "namespace", "section", "end", "open", "set_option", "import",
    "attribute", "mutual", "export", "omit", "include", "initialize", "builtin_initialize",
    "with_weak_namespace", "end_local_scope", "add_decl_doc", "assert_not_exists",
    "assert_not_imported", "init_quot", "docs_to_verso", "register_tactic_tag",
    "tactic_extension", "recommended_spelling", "register_error_explanation",
    "gen_injective_theorems%",
    // Syntax extension (Lean/Parser/Syntax.lean).
    "syntax", "macro", "macro_rules", "elab", "elab_rules", "declare_syntax_cat", "notation",
    "infix", "infixl", "infixr", "prefix", "postfix", "binder_predicate",
    // `syntax … : command` of Init, Std and Lean.
    "unif_hint", "seal", "unseal", "declare_simp_like_tactic", "simproc", "simproc_decl",
    "dsimproc", "dsimproc_decl", "builtin_simproc", "builtin_dsimproc", "builtin_simproc_decl",
    "builtin_dsimproc_decl", "register_simp_attr", "register_option", "register_builtin_option",
    "register_label_attr", "register_linter_set", "declare_config_elab",
    "declare_command_config_elab", "grind_pattern", "grind_propagator",
    "builtin_grind_propagator", "grind_annotated", "declare_uint_theorems",
    "declare_int_theorems", "declare_bitwise_int_theorems", "declare_bitwise_uint_theorems",
    "declare_sint_simprocs", "declare_uint_simprocs", "gen_cnstr_fns", "elab_stx_quot",
    "set_library_suggestions", "register_try?_tactic", "run_cmd", "run_elab", "run_meta",
    // Found by the runtime scan of the 4.28 `.olean`s (`LibraryCommands`,
    // seventh session): named `syntax (name := …) … : command` of `Lean`.
    "reprove", "test_extern", "show_panel_widgets", "norm_cast_add_elim", "register_grind_attr",
    "reset_grind_attrs%", "simproc_pattern%", "builtin_simproc_pattern%",
    "declare_config_getter", "aux_def",
];

/// Command keywords of Batteries and Mathlib (and older spellings): a
/// document importing them reads these as keywords too.
#[rustfmt::skip]
pub const LIBRARY_COMMAND_WORDS: &[&str] = &[
    "lemma", "universes", "notation3", "alias", "irreducible_def", "compile_inductive",
    "suppress_compilation", "unsuppress_compilation", "library_note", "proof_wanted", "recall",
    "assert_exists", "initialize_simps_projections", "mk_iff_of_inductive_prop", "whatsnew",
    "extend_docs", "declare_aesop_rule_sets", "add_aesop_rules", "erase_aesop_rules",
    "count_heartbeats", "declare_syntax_abbrev", "syntax_abbrev",
];

const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[i + j] = b[j];
        j += 1;
    }
    out
}

const ALL_COMMAND_WORDS: [&str; CORE_COMMAND_WORDS.len() + LIBRARY_COMMAND_WORDS.len()] =
    concat(CORE_COMMAND_WORDS, LIBRARY_COMMAND_WORDS);

/// Every keyword that starts a command or modifies the command after it:
/// [`CORE_COMMAND_WORDS`] then [`LIBRARY_COMMAND_WORDS`]. A plainly written
/// word from this list is never a declaration's or a section's name, ends
/// an `open A B C` run, and may not appear inside a `verify` proof; the
/// guard refuses every one it does not accept wherever it is written.
pub const COMMAND_WORDS: &[&str] = &ALL_COMMAND_WORDS;

/// Words after which the next identifier names a new declaration.
pub const DECLARATION_WORDS: &[&str] = &[
    "theorem",
    "lemma",
    "def",
    "abbrev",
    "instance",
    "opaque",
    "axiom",
    "structure",
    "class",
    "inductive",
];

/// Modifiers that may stand between a declaration's doc comment and
/// attributes and its keyword.
pub const DECLARATION_MODIFIERS: &[&str] = &[
    "private",
    "protected",
    "public",
    "noncomputable",
    "partial",
    "nonrec",
    "unsafe",
];

/// The word of an identifier token written plainly (a keyword-like word);
/// `None` for other tokens and for `«»`-quoted names (`«theorem»` is an
/// identifier, not the keyword).
pub fn keyword<'a>(src: &'a str, t: &Token) -> Option<&'a str> {
    (t.kind == Kind::Ident && src.get(t.start..t.end) == Some(t.text.as_str()))
        .then(|| &src[t.start..t.end])
}

/// The command keyword Lean reads at identifier token `t`, if any: its
/// plain word when that is one of [`COMMAND_WORDS`], or a keyword of the
/// list holding a character no identifier has (`gen_injective_theorems%`)
/// that the text spells from `t`'s start (Lean's tokenizer takes the
/// longest token there, so `gen_injective_theorems% x` is the command, not
/// the identifier `gen_injective_theorems`). `?` and `!` continue an
/// identifier: `register_try?_tactic` is one identifier-shaped token.
pub fn command_at(src: &str, t: &Token) -> Option<&'static str> {
    if t.kind != Kind::Ident {
        return None;
    }
    let rest = src.get(t.start..)?;
    COMMAND_WORDS.iter().copied().find(|w| {
        if w.chars().all(crate::lex::is_id_rest) {
            t.text == *w
        } else {
            rest.starts_with(w)
        }
    })
}

/// Whether `t` is one of [`COMMAND_WORDS`], written plainly.
pub fn is_command_word(src: &str, t: &Token) -> bool {
    keyword(src, t).is_some_and(|k| COMMAND_WORDS.contains(&k))
}
