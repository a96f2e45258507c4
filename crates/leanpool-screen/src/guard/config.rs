//! Tactic configuration: `simp (config := { decide := true })`,
//! `simp (maxSteps := 400000)`, `simp +contextual`, `decide -kernel`.
//!
//! Lean *evaluates* a configuration: it elaborates the value as a term of
//! the tactic's configuration structure, compiles it and runs it
//! (`declare_config_elab`, Mathlib's `evalTerm`). Whatever code that term
//! reaches runs inside the worker. So a configuration passes only as:
//!
//! - named fields from the tactic's own list ([`TACTIC_FIELDS`]; the same
//!   list for `+field` / `-field` switches), so that switches not on the
//!   list (`+native`, which is `native_decide`) are refused;
//! - literal values: `true`, `false`, a decimal number; no names (a
//!   caller's definition would be run), no `.ctor` (resolved in the
//!   structure's namespace, where the text may declare a definition), no
//!   positional `.mk …` / `⟨…⟩` / `{ x with … }` forms (`decide (config :=
//!   .mk false true true false)` is `decide +native`);
//! - in a text that declares no instance and no notation (see
//!   [`declares_elaboration_hooks`]): a literal's meaning comes from
//!   instance resolution (`7` is `OfNat.ofNat 7` through an `OfNat Nat 7`
//!   instance, and a caller's `instance (priority := high) : OfNat Nat n :=
//!   ⟨dbgTrace …⟩` wins) or from the token table (`notation "true" => …`
//!   makes `true` the caller's term). Without instances or notations of
//!   the caller's, the evaluated term holds only the configuration
//!   structure's constructor, Lean's `instOfNatNat` and `Bool`'s
//!   constructors; local instances (`letI`, binders) cannot reach it: the
//!   evaluator adds the term as a closed declaration, and a term with free
//!   variables is refused by the kernel before anything runs.
//!
//! Tactics whose configuration is a tactic (`disch := omega`) have that
//! value scanned as code like the rest of the text.

use super::check::{closing, Check, Finding};
use super::tables::NOTATION_WORDS;
use crate::lex::{Kind, Token};

/// Fields of `Lean.Meta.Simp.Config` with Boolean or number values (the
/// enum-valued ones, `etaStruct`, are left out: their values are names).
#[rustfmt::skip]
const SIMP_FIELDS: &[&str] = &[
    "maxSteps", "maxDischargeDepth", "contextual", "memoize", "singlePass", "zeta", "beta", "eta",
    "iota", "proj", "decide", "arith", "autoUnfold", "dsimp", "failIfUnchanged", "ground",
    "unfoldPartialApp", "zetaDelta", "index", "implicitDefEqProofs", "zetaUnused",
    "catchRuntime", "letToHave",
];

/// Per tactic (names without `?`/`!`), the configuration fields it accepts
/// as `(field := literal)`, `(config := { field := literal, … })` or
/// `+field` / `-field`. A tactic with an empty list accepts none.
#[rustfmt::skip]
pub(crate) const TACTIC_FIELDS: &[(&[&str], &[&str])] = &[
    (&["simp", "simp_all", "dsimp", "simpa", "simp_arith", "simp_all_arith", "simp_rw",
       "norm_num", "norm_num1", "field_simp", "push_cast", "norm_cast", "simp_intro"], SIMP_FIELDS),
    (&["decide"], &["kernel", "zetaReduce", "revert"]),
    (&["omega"], &["splitDisjunctions", "splitNatSub", "splitNatAbs", "splitMinMax"]),
    (&["linarith", "nlinarith"], &["exfalso", "splitHypotheses", "splitNe"]),
    (&["rw", "rewrite", "rwa", "erw", "nth_rewrite", "nth_rw", "rw_mod_cast"], &["offsetCnstrs"]),
    (&["ring_nf", "abel_nf"], &["recursive", "zetaDelta", "failIfUnchanged"]),
    (&["congr", "convert", "convert_to"], &["closePre", "closePost"]),
    (&["aesop"], &["maxRuleApplications", "maxRuleApplicationDepth", "maxGoals",
       "maxNormIterations", "terminal", "warnOnNonterminal", "useSimpAll", "enableSimp",
       "enableUnfold", "useDefaultSimpSet"]),
    (&["grind"], &["splits", "ematch", "gen", "instances", "matchEqs", "splitMatch", "splitIte",
       "splitIndPred", "splitImp", "canonHeartbeats", "ext", "extAll", "funext", "lookahead",
       "verbose", "clean", "ring", "ringSteps", "linarith", "cutsat", "ac", "mbtc", "qlia",
       "zeta", "zetaDelta", "failures", "trace"]),
    (&["positivity", "bound", "gcongr", "fun_prop", "tauto", "unfold", "delta", "ext", "use",
       "exists", "apply", "exact", "refine", "intro", "cases", "induction", "constructor", "split",
       "subst", "rfl", "ac_rfl", "ac_nf", "symm", "trans", "exact?", "apply?", "rw?", "hint",
       "continuity", "measurability", "mono", "nontriviality", "zify", "qify", "rify", "push_neg",
       "split_ifs", "interval_cases", "fin_cases", "lift", "wlog", "cc", "bv_omega",
       "bv_normalize", "apply_rules", "solve_by_elim", "tauto"], &[]),
];

/// Configuration items whose value is a tactic (scanned like any code),
/// not a term to evaluate.
const TACTIC_VALUED: &[&str] = &["disch", "discharger"];

/// The fields `tactic` accepts, if leanpool knows the tactic.
pub(crate) fn fields_of(tactic: &str) -> Option<&'static [&'static str]> {
    TACTIC_FIELDS
        .iter()
        .find(|(names, _)| names.contains(&tactic))
        .map(|(_, fields)| *fields)
}

/// Whether the text declares something that changes what a literal
/// means while it is elaborated: an instance (`instance`, `@[instance]`,
/// `attribute [instance]`, `default_instance`, `deriving`, and `class`,
/// whose parent projections are instances) or a notation (which can make
/// a word such as `true` a token of its own). Computed once per text.
pub(crate) fn declares_elaboration_hooks(toks: &[Token]) -> Option<&Token> {
    // Besides the notation commands (`NOTATION_WORDS`).
    const HOOKS: &[&str] = &["instance", "default_instance", "deriving", "class"];
    toks.iter().find(|t| {
        let w = t.text.as_str();
        t.kind == Kind::Ident && (HOOKS.contains(&w) || NOTATION_WORDS.contains(&w))
    })
}

fn is_sym(t: Option<&Token>, s: &str) -> bool {
    t.is_some_and(|t| t.kind == Kind::Symbol && t.text == s)
}

struct Ctx<'a> {
    toks: &'a [Token],
    tactic: &'a Token,
    fields: &'static [&'static str],
    hook: Option<&'a Token>,
    /// `decide`'s `native` field is accepted (trusted compiler).
    native: bool,
}

impl Ctx<'_> {
    fn refuse<T>(&self, at: &Token, construct: String, why: String) -> Result<T, Finding> {
        Err(Finding {
            offset: at.start,
            construct,
            reason: why,
        })
    }

    fn field(&self, at: &Token, name: &str) -> Check {
        if self.fields.contains(&name) || (self.native && name == "native") {
            return Ok(());
        }
        let tactic = &self.tactic.text;
        let list = if self.fields.is_empty() {
            "none".to_string()
        } else {
            self.fields.join(", ")
        };
        let why = if name == "native" {
            "`native` decides the goal by running compiled code and trusts the result \
             (`Lean.ofReduceBool`); "
        } else {
            ""
        };
        self.refuse(
            at,
            format!("{tactic} {name}"),
            format!(
                "{why}configuration field `{name}` is not on leanpool's list for `{tactic}` \
                 (accepted: {list}); configurations are compiled and run by Lean"
            ),
        )
    }

    /// A literal value at `k`: `true`, `false` or a decimal number.
    fn literal(&self, k: usize, field: &str) -> Result<usize, Finding> {
        let v = self.toks.get(k);
        let ok = v.is_some_and(|v| {
            (v.kind == Kind::Ident && matches!(v.text.as_str(), "true" | "false"))
                || (v.kind == Kind::Num && v.text.bytes().all(|b| b.is_ascii_digit()))
        });
        let at = v.unwrap_or(self.tactic);
        if !ok {
            return Err(Finding {
                offset: at.start,
                construct: format!("({field} := …)"),
                reason: format!(
                    "configuration value for `{field}`: Lean compiles and runs configuration \
                     values, so only `true`, `false` or a decimal number is accepted (no names, \
                     `.ctor`, `.mk …` or anonymous constructors)"
                ),
            });
        }
        if let Some(hook) = self.hook {
            return Err(Finding {
                offset: at.start,
                construct: format!("({field} := …)"),
                reason: format!(
                    "tactic configuration in a text that declares `{}` (line-independent): a \
                     configuration is compiled and run, and an instance or notation of the text's \
                     own would decide what its literals mean, so the caller's code would run; \
                     drop the configuration or the declaration",
                    hook.text
                ),
            });
        }
        Ok(k + 1)
    }

    /// `{ field := literal, … }` from `k` (at `{`); index after `}`.
    fn structure(&self, mut k: usize) -> Result<usize, Finding> {
        k += 1;
        loop {
            let t = self.toks.get(k);
            if is_sym(t, "}") {
                return Ok(k + 1);
            }
            let name = t.filter(|t| t.kind == Kind::Ident && is_sym(self.toks.get(k + 1), ":="));
            let Some(name) = name else {
                let at = t.unwrap_or(self.tactic);
                return Err(Finding {
                    offset: at.start,
                    construct: format!("{} (config := …)", self.tactic.text),
                    reason: "a configuration structure must be written `{ field := literal, … }` \
                             (no `with`, no positional or anonymous-constructor form)"
                        .into(),
                });
            };
            self.field(name, &name.text)?;
            k = self.literal(k + 2, &name.text)?;
            if is_sym(self.toks.get(k), ",") {
                k += 1;
            }
        }
    }
}

/// Index of the `)` closing a group whose contents start at `k` (the
/// tactic inside is scanned as code by the other rules).
fn close_of(toks: &[Token], k: usize) -> Result<usize, Finding> {
    if let Some(close) = closing(toks, k, ")") {
        return Ok(close);
    }
    let k = k + super::check::MAX_SCAN;
    let at = toks.get(k.min(toks.len().saturating_sub(1)));
    Err(Finding {
        offset: at.map_or(0, |t| t.start),
        construct: "(disch := …)".into(),
        reason: "a discharger configuration that is not closed within 1024 tokens".into(),
    })
}

/// The tactic at `i` (a tactic head, `super::tactic_heads`) has no
/// field list: a configuration after it (`+x`, `-x`, `(x := v)`) is
/// refused (default-deny: Lean compiles and runs it).
fn unlisted(toks: &[Token], i: usize) -> Result<(), Finding> {
    let t = toks.get(i + 1);
    let n = toks.get(i + 2);
    let switch = (is_sym(t, "+") || is_sym(t, "-"))
        && t.is_some_and(|t| t.space_before)
        && n.is_some_and(|n| n.kind == Kind::Ident && !n.space_before);
    let named =
        is_sym(t, "(") && n.is_some_and(|n| n.kind == Kind::Ident) && is_sym(toks.get(i + 3), ":=");
    if !(switch || named) {
        return Ok(());
    }
    let (t, n) = (t.expect("checked"), n.expect("checked"));
    let construct = if switch {
        format!("{} {}{}", toks[i].text, t.text, n.text)
    } else {
        format!("{} ({} := …)", toks[i].text, n.text)
    };
    Err(Finding {
        offset: t.start,
        construct,
        reason: format!(
            "configuration of `{}`, a tactic leanpool has no configuration list for: Lean \
             compiles and runs a tactic's configuration, so only listed tactics' listed fields \
             are accepted (see docs/protocol.md)",
            toks[i].text
        ),
    })
}

/// Configuration items right after the tactic at `i`; returns the index
/// after them. `head`: the token starts a tactic step. `hook`: the
/// text's first instance or notation declaration.
/// `native`: the operator trusts the compiler on a native backend
/// (`Screening::native_decide`), so `decide`'s `native` field passes.
pub(crate) fn items(
    toks: &[Token],
    i: usize,
    head: bool,
    hook: Option<&Token>,
    native: bool,
) -> Result<usize, Finding> {
    let tactic = &toks[i];
    let name = tactic.text.trim_end_matches(['!', '?']);
    let Some(fields) = fields_of(name).or_else(|| fields_of(&tactic.text)) else {
        if head {
            unlisted(toks, i)?;
        }
        return Ok(i + 1);
    };
    let cx = Ctx {
        toks,
        tactic,
        fields,
        hook,
        native: native && name == "decide",
    };
    let mut k = i + 1;
    loop {
        let t = toks.get(k);
        let next = toks.get(k + 1);
        if (is_sym(t, "+") || is_sym(t, "-"))
            && next.is_some_and(|n| n.kind == Kind::Ident && !n.space_before)
        {
            let n = &toks[k + 1];
            cx.field(n, &n.text)?;
            if let Some(hook) = hook {
                return cx.refuse(
                    n,
                    format!("{}{}", toks[k].text, n.text),
                    format!(
                        "tactic configuration in a text that declares `{}`: configurations are \
                         compiled and run; drop the configuration or the declaration",
                        hook.text
                    ),
                );
            }
            k += 2;
        } else if is_sym(t, "(")
            && next.is_some_and(|n| n.kind == Kind::Ident)
            && is_sym(toks.get(k + 2), ":=")
        {
            let item = &toks[k + 1];
            k =
                match item.text.as_str() {
                    w if TACTIC_VALUED.contains(&w) => close_of(toks, k + 3)?,
                    "config" | "cfg" if is_sym(toks.get(k + 3), "{") => cx.structure(k + 3)?,
                    "config" | "cfg" => return cx.refuse(
                        item,
                        format!("{} (config := …)", tactic.text),
                        "a configuration must be written `(config := { field := literal, … })`: \
                         positional (`.mk …`), anonymous-constructor and named-value forms are \
                         compiled and run as written"
                            .into(),
                    ),
                    field => {
                        cx.field(item, field)?;
                        cx.literal(k + 3, field)?
                    }
                };
            if !is_sym(toks.get(k), ")") {
                let at = toks.get(k).unwrap_or(item);
                return cx.refuse(
                    at,
                    format!("({} := …)", item.text),
                    "a configuration item holds one literal value".into(),
                );
            }
            k += 1;
        } else {
            return Ok(k);
        }
    }
}
