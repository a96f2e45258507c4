//! The guard's word lists, each entry with the reason a caller sees.
//! Keeping them as data makes the policy reviewable in one place.

/// `#` commands that only read the environment or print. Everything else
/// beginning with `#` is refused: new `#` commands appear with every
/// Mathlib release and several of them run code (`#eval`, `#guard`,
/// Plausible's `#test` and `#sample`), so an allowlist fails safe.
pub(crate) const ALLOWED_HASH_COMMANDS: &[&str] = &[
    "#check",
    "#check_failure",
    "#reduce",
    "#print",
    "#synth",
    "#where",
];

/// Specific reasons for `#` commands commonly tried; the rest get a generic one.
pub(crate) const HASH_REASONS: &[(&str, &str)] = &[
    (
        "#eval",
        "`#eval` compiles and runs arbitrary code (including I/O) inside the Lean process",
    ),
    (
        "#eval!",
        "`#eval!` compiles and runs arbitrary code (including I/O) inside the Lean process",
    ),
    (
        "#exit",
        "`#exit` makes Lean stop reading the text, so whatever follows would never be checked",
    ),
    (
        "#guard",
        "`#guard` evaluates its condition with compiled code",
    ),
    (
        "#guard_msgs",
        "`#guard_msgs` consumes the messages it matches (errors and `declaration uses sorry` \
         warnings included), so a verdict read from Lean's messages could not be trusted",
    ),
    (
        "#test",
        "`#test` evaluates user definitions with compiled code",
    ),
    (
        "#sample",
        "`#sample` evaluates user definitions with compiled code",
    ),
];

const META_CODE: &str =
    "defines or runs meta code: the elaborator would execute user code inside the \
                         Lean process, and its expansion could be any of the commands refused here";
const SYNTAX_EXT: &str =
    "extends Lean's parser or elaborator with user code (macros/elaborators can \
                          expand to `#eval` or other refused commands)";

/// Words refused anywhere in code (outside comments and strings), matched
/// against whole identifier tokens with `«»` removed and trailing `!`/`?`
/// ignored, so `evaluate`, `my_eval` or `Nat.unsafe_thing` are not affected.
pub(crate) const DENY_WORDS: &[(&str, &str)] = &[
    ("run_cmd", META_CODE),
    ("run_elab", META_CODE),
    ("run_meta", META_CODE),
    ("run_tac", META_CODE),
    ("by_elab", META_CODE),
    ("initialize", "registers code that runs when a module is initialized, changing the process"),
    ("builtin_initialize", "registers code that runs when a module is initialized, changing the process"),
    (
        "unsafe",
        "`unsafe` definitions are not checked by the kernel and can reach arbitrary native code",
    ),
    ("extern", "`extern` binds a declaration to native code"),
    ("implemented_by", "`implemented_by` swaps a declaration's compiled code for another definition's"),
    ("macro", SYNTAX_EXT),
    ("macro_rules", SYNTAX_EXT),
    ("elab", SYNTAX_EXT),
    ("elab_rules", SYNTAX_EXT),
    ("syntax", SYNTAX_EXT),
    ("declare_syntax_cat", SYNTAX_EXT),
    ("binder_predicate", SYNTAX_EXT),
    ("declare_config_elab", SYNTAX_EXT),
    ("declare_simp_like_tactic", SYNTAX_EXT),
    ("simproc", SYNTAX_EXT),
    ("simproc_decl", SYNTAX_EXT),
    ("dsimproc", SYNTAX_EXT),
    ("dsimproc_decl", SYNTAX_EXT),
    ("builtin_simproc", SYNTAX_EXT),
    ("builtin_simproc_decl", SYNTAX_EXT),
    ("builtin_dsimproc", SYNTAX_EXT),
    ("builtin_dsimproc_decl", SYNTAX_EXT),
    ("register_simp_attr", "registers a new environment extension at initialization, changing the process"),
    ("register_option", "registers a new option at initialization, changing the process"),
    ("register_builtin_option", "registers a new option at initialization, changing the process"),
    ("register_label_attr", "registers a new attribute at initialization, changing the process"),
    ("declare_aesop_rule_sets", "registers new rule sets at initialization, changing the process"),
    (
        "native_decide",
        "`native_decide` decides the goal by compiling and running code and trusts the result \
         (axiom `Lean.trustCompiler`); compiled user code can perform I/O",
    ),
    ("plausible", "`plausible` evaluates user definitions on random inputs with compiled code"),
    ("slim_check", "`slim_check` evaluates user definitions on random inputs with compiled code"),
    ("polyrith", "`polyrith` sends the goal to an external web service"),
    ("bv_decide", "`bv_decide` runs an external SAT solver and trusts compiled code (`Lean.ofReduceBool`)"),
    ("bv_check", "`bv_check` reads a proof certificate from the file system"),
    (
        "include_str",
        "`include_str` evaluates its argument with compiled code and reads that file from the \
         daemon's file system at elaboration time",
    ),
    ("run_io", "Lake's `run_io` runs arbitrary I/O at elaboration time"),
    (
        "tactic",
        "names user code to run as a tactic (e.g. `aesop (add safe tactic t)`) or declares tactic syntax",
    ),
    ("add_aesop_rules", "registers `aesop` rules, which can be user code run as tactics"),
    ("grind_propagator", SYNTAX_EXT),
    ("builtin_grind_propagator", SYNTAX_EXT),
    ("register_error_explanation", "registers new global data at initialization, changing the process"),
    ("register_tactic_tag", "registers new global data at initialization, changing the process"),
    ("register_try?_tactic", "registers user code to be run by `try?`"),
    (
        "count_heartbeats",
        "`count_heartbeats in` re-elaborates the command with a changed heartbeat limit",
    ),
];

/// Term elaborators written `name%` that evaluate their argument with
/// compiled code at elaboration time (Mathlib's `eval% e`).
pub(crate) const DENY_PERCENT: &[(&str, &str)] = &[(
    "eval",
    "`eval% e` evaluates `e` with compiled code at elaboration time",
)];

/// Constants refused by their last name component, wherever they appear
/// and however they are spelled (`_root_.Lean.ofReduceBool`,
/// `«sorryAx»`, `@sorryAx`, `open Lean in ofReduceBool`, a name literal):
/// the trust routes, i.e. axioms and primitives that make Lean accept a
/// proposition without a proof (`sorryAx`, `lcProof`) or on the word of
/// compiled code (`Lean.ofReduceBool`, `Lean.ofReduceNat`,
/// `Lean.trustCompiler`, the `reduceBool`/`reduceNat` markers), and
/// `unsafe` primitives. (`native_decide`, `implemented_by`, `extern` are
/// refused as words: `DENY_WORDS`.)
pub(crate) const DENY_LAST_COMPONENT: &[(&str, &str)] = &[
    (
        "ofReduceBool",
        "`Lean.ofReduceBool` makes the kernel trust the result of running compiled code",
    ),
    (
        "ofReduceNat",
        "`Lean.ofReduceNat` makes the kernel trust the result of running compiled code",
    ),
    (
        "reduceBool",
        "`Lean.reduceBool` makes the kernel trust the result of running compiled code",
    ),
    (
        "reduceNat",
        "`Lean.reduceNat` makes the kernel trust the result of running compiled code",
    ),
    (
        "trustCompiler",
        "`Lean.trustCompiler` is the axiom behind trusting compiled code",
    ),
    (
        "sorryAx",
        "`sorryAx` is the axiom behind `sorry`: it proves anything; write `sorry` if a proof \
         is missing (the answer then says `sorry`)",
    ),
    ("lcProof", TRUST_INTERNAL),
    ("lcCast", TRUST_INTERNAL),
    ("lcUnreachable", TRUST_INTERNAL),
    ("lcErased", TRUST_INTERNAL),
    ("lcAny", TRUST_INTERNAL),
    ("unsafeCast", UNSAFE_ROUTE),
    ("unsafeIO", UNSAFE_ROUTE),
    ("unsafeBaseIO", UNSAFE_ROUTE),
    ("unsafeEIO", UNSAFE_ROUTE),
    ("ptrAddrUnsafe", UNSAFE_ROUTE),
    ("withPtrAddrUnsafe", UNSAFE_ROUTE),
];

const TRUST_INTERNAL: &str =
    "a compiler-internal constant (`lcProof` is an axiom that proves any proposition); \
     not for proofs";
const UNSAFE_ROUTE: &str = "an `unsafe` primitive (casts, I/O or pointers outside the type system)";

/// Attributes that only tag declarations for existing, trusted automation
/// (simp sets, instances, reducibility, ...). Others are refused: many
/// attributes register the tagged *user* definition as code the elaborator
/// will run (`@[command_elab]`, `@[tactic]`, `@[app_unexpander]`,
/// `@[norm_num]`, `@[positivity]`, `@[aesop]`, ...), and the list of such
/// attributes grows with every library, so an allowlist fails safe.
/// `GuardPolicy::extra_attributes` extends it.
#[rustfmt::skip]
pub(crate) const ALLOWED_ATTRIBUTES: &[&str] = &[
    "simp", "simps", "reducible", "irreducible", "semireducible", "instance_reducible",
    "implicit_reducible", "instance", "inline", "noinline", "macro_inline", "always_inline",
    "specialize", "nospecialize", "ext", "norm_cast", "push_cast", "class", "match_pattern",
    "elab_as_elim", "elab_without_expected_type", "induction_eliminator", "cases_eliminator",
    "symm", "refl", "trans", "congr", "gcongr", "mono", "bound", "continuity", "measurability",
    "fun_prop", "field_simps", "zify_simps", "qify_simps", "rify_simps", "mfld_simps",
    "parity_simps", "to_additive", "reassoc", "nolint", "deprecated", "inherit_doc",
    "default_instance", "coe", "nontriviality", "grind", "pp_nodot", "pp_using_anonymous_constructor",
    "expose", "wf_preprocess", "mk_iff",
];

/// Attributes known to attach user code to the elaborator, compiler or
/// runtime. Refused as attribute names (with this reason) and also when they
/// appear anywhere inside an attribute list, e.g.
/// `@[to_additive (attr := extern "f")]`.
pub(crate) const CODE_ATTRIBUTES: &[(&str, &str)] = &[
    ("extern", "`@[extern]` binds the declaration to native code"),
    (
        "implemented_by",
        "`@[implemented_by]` swaps the declaration's compiled code for another definition's",
    ),
    ("init", "`@[init]` runs code when the module is initialized"),
    (
        "builtin_init",
        "`@[builtin_init]` runs code when the module is initialized",
    ),
    (
        "export",
        "`@[export]` exposes the declaration under a native symbol name",
    ),
    ("csimp", "`@[csimp]` replaces compiled code"),
    (
        "command_elab",
        "registers user code as a command elaborator",
    ),
    ("term_elab", "registers user code as a term elaborator"),
    ("tactic", "registers user code as a tactic"),
    ("macro", "registers user code as a macro"),
    ("delab", "registers user code as a delaborator"),
    (
        "app_unexpander",
        "registers user code as an unexpander (run when printing)",
    ),
    ("app_delab", "registers user code as a delaborator"),
    ("command_parser", "registers user code as a parser"),
    ("term_parser", "registers user code as a parser"),
    ("tactic_parser", "registers user code as a parser"),
    ("formatter", "registers user code as a formatter"),
    ("parenthesizer", "registers user code as a parenthesizer"),
    ("combinator_formatter", "registers user code as a formatter"),
    (
        "combinator_parenthesizer",
        "registers user code as a parenthesizer",
    ),
    (
        "simproc",
        "registers user code as a simplification procedure",
    ),
    ("norm_num", "registers user code as a `norm_num` extension"),
    (
        "positivity",
        "registers user code as a `positivity` extension",
    ),
    ("aesop", "can register user code as an `aesop` rule"),
    ("env_linter", "registers user code as a linter"),
    (
        "command_code_action",
        "registers user code with the language server",
    ),
    (
        "hole_code_action",
        "registers user code with the language server",
    ),
    (
        "code_action_provider",
        "registers user code with the language server",
    ),
    (
        "server_rpc_method",
        "registers user code with the language server",
    ),
    (
        "widget_module",
        "registers user code with the language server",
    ),
];

/// Commands that declare new tokens; their quoted atoms are checked.
pub(crate) const NOTATION_WORDS: &[&str] = &[
    "notation",
    "notation3",
    "infix",
    "infixl",
    "infixr",
    "prefix",
    "postfix",
];

/// Words a line may start with (at column 0): the commands leanpool
/// accepts, their modifiers, and the words that continue a declaration on
/// a line of its own (`where`, `termination_by`, `deriving`, …). A word
/// at the start of a line that is not on this list is refused: unknown
/// commands are the default-deny case (new commands come with every
/// library, and some run code). Tactics and terms of a proof are
/// indented, as Lean's own style and every model-written proof in the
/// honest corpus (`benches/README.md`) have them.
#[rustfmt::skip]
pub(crate) const LINE_START_WORDS: &[&str] = &[
    "theorem", "lemma", "def", "example", "abbrev", "instance", "structure", "class",
    "inductive", "opaque", "axiom", "namespace", "section", "end", "open", "variable",
    "universe", "universes", "noncomputable", "private", "protected", "public", "partial",
    "nonrec", "set_option", "attribute", "mutual", "omit", "include", "local", "scoped",
    "notation", "notation3", "infix", "infixl", "infixr", "prefix", "postfix", "export",
    "alias", "irreducible_def", "import", "module", "prelude", "deriving", "where",
    "termination_by", "decreasing_by", "with", "in",
];
