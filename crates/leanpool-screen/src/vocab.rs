//! Lean's vocabulary as leanpool reads it: the one place that says which
//! words start commands, which declare names, and which modify a
//! declaration. The guard, the header split, the verdict, `verify`'s slot
//! rules and the statement finder (`leanpool-terms`) all read these
//! tables, so they cannot disagree about what a command is.

use crate::lex::{Kind, Token};

/// Every keyword that starts a command or modifies the command after it
/// (core Lean, Batteries and Mathlib). A plainly written word from this
/// list is never a declaration's or a section's name, ends an
/// `open A B C` run, and may not appear inside a `verify` proof.
#[rustfmt::skip]
pub const COMMAND_WORDS: &[&str] = &[
    "theorem", "lemma", "def", "example", "abbrev", "instance", "structure", "class",
    "inductive", "axiom", "opaque", "variable", "universe", "universes", "namespace", "section",
    "end", "open", "set_option", "import", "noncomputable", "private", "protected", "public",
    "meta", "attribute", "mutual", "deriving", "notation", "notation3", "infix", "infixl",
    "infixr", "prefix", "postfix", "export", "partial", "nonrec", "unsafe", "omit", "include",
    "local", "scoped", "syntax", "macro", "macro_rules", "elab", "elab_rules",
    "declare_syntax_cat", "initialize", "alias", "irreducible_def", "add_decl_doc",
    "compile_inductive", "suppress_compilation", "assert_not_exists", "library_note",
    // Further commands of core Lean 4.28, Batteries and Mathlib: none is
    // accepted (the guard refuses each wherever it is written), and each
    // ends an `open` run and is refused in a `verify` proof.
    "builtin_initialize", "unif_hint", "seal", "unseal", "proof_wanted", "recall", "init_quot",
    "declare_simp_like_tactic", "simproc", "simproc_decl", "dsimproc", "dsimproc_decl",
    "register_simp_attr", "register_option", "register_builtin_option", "register_label_attr",
    "register_error_explanation", "register_linter_set", "register_tactic_tag",
    "declare_config_elab", "declare_command_config_elab", "binder_predicate", "grind_pattern",
    "unsuppress_compilation", "assert_exists", "assert_not_imported",
    "initialize_simps_projections", "mk_iff_of_inductive_prop", "whatsnew", "extend_docs",
    "recommended_spelling", "declare_aesop_rule_sets", "add_aesop_rules", "erase_aesop_rules",
    "run_cmd", "run_elab", "run_meta", "count_heartbeats", "with_weak_namespace",
    "coinductive", "grind_propagator", "builtin_grind_propagator", "declare_uint_theorems",
    "elab_stx_quot", "builtin_simproc", "builtin_dsimproc", "builtin_simproc_decl",
    "builtin_dsimproc_decl", "declare_syntax_abbrev", "syntax_abbrev",
];

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

/// Whether `t` is one of [`COMMAND_WORDS`], written plainly.
pub fn is_command_word(src: &str, t: &Token) -> bool {
    keyword(src, t).is_some_and(|k| COMMAND_WORDS.contains(&k))
}
