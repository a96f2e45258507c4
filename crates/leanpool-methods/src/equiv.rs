//! `equiv`: are two statements equivalent, as Lean can show?
//!
//! Each statement `theorem NAME binders : concl` is read as the
//! proposition `∀ binders, concl`, and a fixed list of attempts runs, each
//! a `verify` of a theorem leanpool writes with a proof leanpool writes
//! (the verdict is `verify`'s: the same code, so no `sorry`, no axiom
//! outside the policy, every message recognised):
//!
//! 1. `definitional`: `(∀ a) ↔ (∀ b)` by `Iff.rfl`;
//! 2. `tactics`: the same theorem, each direction from the other side as a
//!    hypothesis, the way BEq does: `apply` it (Lean's unifier matches the
//!    binders, renamed or reordered), the hypotheses it leaves closed by
//!    `assumption` only (reordered hypotheses, definitional variants);
//!    else the same after rewriting both sides with a fixed set of core
//!    lemmas (`¬ a ≤ b` to `b < a`, `≥`, `>`, `≠`, `succ`). A direction
//!    is never closed without the other side: no `omega`, `simp_all` or
//!    `decide` on a goal or a hypothesis left by `apply` (they would
//!    prove a true statement outright, so a candidate that is a tautology,
//!    that is `False`-hypothesised or that assumes the reference's
//!    conclusion would be "equivalent" to an easy reference);
//! 3. `refute_b` / `refute_a`: `¬ ((∀ a) ↔ (∀ b))`, by proving one side
//!    (`omega`, `simp_all`, `decide`: any proof of this theorem is a
//!    witness) and refuting the other by `decide` on its instances with
//!    every `Nat` binder below [`REFUTE_BOUND`] (only for statements whose
//!    binders are `Nat` values and hypotheses, at most [`MAX_REFUTE_VARS`]
//!    values).
//!
//! Each attempt's theorem is about leanpool's `∀` reading of the two
//! texts; after it, [`Plan::reading`] declares each statement alone (an
//! `axiom` with the statement's own signature) and checks by
//! `#guard_expr` that the theorem's type is definitionally `(a) ↔ (b)` of
//! those two types. A message there makes the attempt an error: a text
//! that is no theorem on its own (binder syntax only `∀` takes, `x > 0`),
//! or whose meaning comes from the other statement (a `?x` hole that both
//! share in leanpool's theorem) is never `equivalent`.
//!
//! The first attempt Lean accepts is the answer, with its theorem and
//! proof; none is `unknown`. Every attempt runs under `set_option
//! maxHeartbeats` [`HEARTBEATS`] (deterministic, unlike wall time), so the
//! same request gives the same answer and the same evidence; an attempt
//! that runs past the request's wall-time limit stops the request: the
//! answer is `unknown` and its last attempt says `timeout`.
//!
//! What is caller text and what is leanpool's: the header and both
//! statements are the caller's; the theorem around them, its proofs and
//! the option lines are leanpool's fixed templates. Each attempt's whole
//! text (caller's and leanpool's parts alike) is screened by the guard
//! as any `verify`; the only text that is not is [`OPTIONS`], two
//! `'static` lines put in place of their placeholder through
//! [`verify::FixedLines`]: `autoImplicit false` (a name left free in
//! both statements would otherwise be bound once and shared by them) and
//! the unused-variables linter off (its warning on an unused `∀` binder of
//! leanpool's theorem is not a message the verdict recognises). The
//! header may not declare `variable`s, for the same reason as
//! `autoImplicit`. A statement's brackets must nest inside it, so that it
//! cannot close leanpool's parenthesis around it.

use crate::verify::{self, FixedLines, Part, Refused};
use leanpool_protocol::{
    EquivAttempt, EquivEvidence, EquivParams, EquivResult, EquivStatus, Severity, VerifyParams,
    VerifyStatus,
};
use leanpool_screen::lex::{self as lexer, Kind, Token};
use std::time::{Duration, Instant};

/// `maxHeartbeats` of every attempt (Lean's unit: thousands of small
/// allocations; Lean's own default is 200,000).
pub const HEARTBEATS: u32 = 50_000;

/// Refutations try every `Nat` binder at `0 .. REFUTE_BOUND`.
pub const REFUTE_BOUND: u32 = 8;

/// Refutations are tried only for statements with at most this many
/// `Nat` binders (`REFUTE_BOUND ^ n` instances for `decide`).
pub const MAX_REFUTE_VARS: usize = 3;

/// The name of leanpool's theorem in every attempt.
const THEOREM: &str = "leanpool_equiv";

/// The names under which [`Plan::reading`] declares statement `a` and `b`
/// alone.
const ALONE: [&str; 2] = ["«leanpool_equiv_a»", "«leanpool_equiv_b»"];

/// Lemmas both sides are rewritten with before `apply` is retried: each
/// turns a spelling into the one the other side may use.
const NORMALIZE: &str =
    "Nat.not_le, Nat.not_lt, Int.not_le, Int.not_lt, Nat.succ_eq_add_one, ge_iff_le, gt_iff_lt, ne_eq";

/// What closes a hypothesis left by `apply`: one of the goal's own
/// hypotheses, nothing stronger (see the module docs).
const MATCH: &str = "assumption";

/// Tactics that prove one side outright in a refutation (any proof of
/// `¬ (a ↔ b)` is a witness, however it was found).
const CLOSE: &str = "first | assumption | omega | (simp_all; done) | decide";

/// leanpool's option lines in every attempt (see the module docs): sent
/// in place of `PLACEHOLDER`, never screened, never caller text.
pub const OPTIONS: FixedLines = FixedLines {
    placeholder: PLACEHOLDER,
    lines: "set_option autoImplicit false\nset_option linter.unusedVariables false\n",
};

/// The comment lines that stand for [`OPTIONS`] in the screened text.
const PLACEHOLDER: &str = "/- leanpool: equiv option -/\n/- leanpool: equiv option -/\n";

/// One binder of a statement, as a refutation needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Var {
    /// A `Nat` value, by name.
    Value(String),
    /// Anything else of a `(...)`/`{...}` binder: taken as a hypothesis
    /// (when it is not one, Lean refuses the attempt).
    Hyp(String),
}

/// A statement read as a proposition.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Side {
    /// The statement after its name (binders and type), as written: what
    /// [`Plan::reading`] declares alone.
    signature: String,
    /// `(∀ binders, concl)`, or `(concl)` without binders.
    prop: String,
    /// The conclusion, for refutations.
    concl: String,
    /// The binders, when a refutation can be written for them.
    vars: Option<Vec<Var>>,
}

/// The attempts of one request, in order: name, theorem, proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The header every attempt is elaborated under.
    pub header: String,
    /// `theorem leanpool_equiv : (∀ a) ↔ (∀ b)`.
    pub statement: String,
    /// `(attempt, theorem, proof)`, in the order they run.
    pub attempts: Vec<(&'static str, String, String)>,
    /// Each statement's signature (binders and type), as written.
    signatures: [String; 2],
}

fn refused(part: Part, reason: impl Into<String>) -> Refused {
    Refused {
        part,
        reason: reason.into(),
    }
}

/// Whether `t` opens (`1`), closes (`-1`) or does not touch (`0`) a bracket.
fn bracket(t: &Token) -> i32 {
    if t.kind != Kind::Symbol || t.nested {
        return 0;
    }
    match t.text.as_str() {
        "(" | "[" | "{" | "⟨" | "⦃" | "⟦" | "‹" => 1,
        ")" | "]" | "}" | "⟩" | "⦄" | "⟧" | "›" => -1,
        _ => 0,
    }
}

/// Reads one statement (`which` names it in refusals).
fn side(statement: &str, which: &str) -> Result<Side, Refused> {
    let part = Part::Statement;
    let (stmt, name) = verify::parts::statement_parts(statement)
        .map_err(|e| refused(part, format!("`{which}`: {}", e.reason)))?;
    let toks =
        lexer::tokenize(stmt).map_err(|e| refused(part, format!("`{which}`: {}", e.reason)))?;
    let toks: Vec<&Token> = toks
        .iter()
        .filter(|t| !t.nested && t.start >= name.end)
        .collect();
    // Brackets must nest properly all along: `True) ∨ (True` balances in
    // the end but would close leanpool's parenthesis around the statement.
    let mut depth = 0;
    let mut colon = None;
    for (i, t) in toks.iter().enumerate() {
        depth += bracket(t);
        if depth < 0 {
            return Err(refused(
                part,
                format!("`{which}`: `{}` closes a bracket that is not open", t.text),
            ));
        }
        if depth == 0 && colon.is_none() && t.kind == Kind::Symbol && t.text == ":" {
            colon = Some(i);
        }
    }
    let colon = colon.ok_or_else(|| {
        refused(
            part,
            format!("`{which}` has no `:` before its type: write `theorem NAME binders : type`"),
        )
    })?;
    let (binders, rest) = (&toks[..colon], &toks[colon + 1..]);
    let (Some(first), Some(last)) = (rest.first(), rest.last()) else {
        return Err(refused(part, format!("`{which}` has an empty type")));
    };
    let concl = stmt[first.start..last.end].to_string();
    let prop = match (binders.first(), binders.last()) {
        (Some(f), Some(l)) => format!("(∀ {},\n    {concl})", &stmt[f.start..l.end]),
        _ => format!("({concl})"),
    };
    Ok(Side {
        signature: stmt[name.end..].to_string(),
        prop,
        concl,
        vars: vars(stmt, binders),
    })
}

/// The binders as a refutation needs them: `(x y : Nat)` values and
/// `(h : P)` hypotheses (explicit or implicit); `None` for anything else.
fn vars(src: &str, toks: &[&Token]) -> Option<Vec<Var>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let open = toks[i];
        if !matches!(open.text.as_str(), "(" | "{" | "⦃") || open.kind != Kind::Symbol {
            return None;
        }
        // The group's end, and the `:` inside it at its own depth.
        let (mut depth, mut j, mut colon) = (0, i, None);
        loop {
            depth += bracket(toks[j]);
            if depth == 1 && colon.is_none() && toks[j].text == ":" {
                colon = Some(j);
            }
            if depth == 0 {
                break;
            }
            j += 1;
        }
        let colon = colon?;
        let names = &toks[i + 1..colon];
        if names.is_empty() || names.iter().any(|t| t.kind != Kind::Ident) {
            return None;
        }
        let ty = src[toks[colon + 1].start..toks[j - 1].end].trim();
        for n in names {
            out.push(if ty == "Nat" || ty == "ℕ" {
                Var::Value(n.text.clone())
            } else {
                Var::Hyp(ty.to_string())
            });
        }
        i = j + 1;
    }
    let values = out.iter().filter(|v| matches!(v, Var::Value(_))).count();
    (values <= MAX_REFUTE_VARS).then_some(out)
}

/// One direction of `tactics`: the goal's side from `leanpool_h`, by
/// `apply leanpool_h` and nothing else but [`MATCH`] (see the module docs).
fn direction() -> String {
    let apply = format!("intros; apply leanpool_h <;> {MATCH}");
    [
        "intro leanpool_h".to_string(),
        "    first".into(),
        format!("      | ({apply})"),
        format!("      | (simp only [{NORMALIZE}] at leanpool_h ⊢; {apply})"),
    ]
    .join("\n")
}

/// `¬ ((∀ a) ↔ (∀ b))`: `proved` follows from the tactics, `refuted` is
/// false on a finite range (`mp`: `refuted` is the right side).
fn refutation(refuted: &Side, mp: bool) -> Option<String> {
    let vars = refuted.vars.as_ref()?;
    let (mut bounded, mut params, mut args) = (String::new(), vec![], vec![]);
    for (k, v) in vars.iter().enumerate() {
        match v {
            Var::Value(x) => {
                bounded.push_str(&format!("∀ {x} : Nat, {x} < {REFUTE_BOUND} → "));
                params.push(format!("{x} _"));
                args.push(x.clone());
            }
            Var::Hyp(ty) => {
                bounded.push_str(&format!("({ty}) → "));
                params.push(format!("leanpool_p{k}"));
                args.push(format!("leanpool_p{k}"));
            }
        }
    }
    bounded.push_str(&format!("({})", refuted.concl));
    let side = if mp { "mp" } else { "mpr" };
    let instance = if params.is_empty() {
        "leanpool_h".to_string()
    } else {
        format!("fun {} => @leanpool_h {}", params.join(" "), args.join(" "))
    };
    Some(format!(
        "fun leanpool_iff => (fun leanpool_h => absurd (show {bounded} from {instance}) (by decide)) (leanpool_iff.{side} (by intros; {CLOSE}))"
    ))
}

/// The attempts for a request, or why it is refused.
pub fn plan(p: &EquivParams) -> Result<Plan, Refused> {
    verify::check_header(&p.header)?;
    let toks = lexer::tokenize(&p.header).map_err(|e| refused(Part::Header, e.reason))?;
    if toks
        .iter()
        .any(|t| leanpool_screen::vocab::keyword(&p.header, t) == Some("variable"))
    {
        return Err(refused(
            Part::Header,
            "`header` may not declare a `variable` for `equiv` (both statements would share it); bind it in each statement",
        ));
    }
    let (a, b) = (side(&p.a, "a")?, side(&p.b, "b")?);
    let mut header = p.header.clone();
    if !header.is_empty() && !header.ends_with('\n') {
        header.push('\n');
    }
    header.push_str(&format!(
        "set_option maxHeartbeats {HEARTBEATS}\n{PLACEHOLDER}"
    ));
    let iff = format!("{} ↔\n  {}", a.prop, b.prop);
    let statement = format!("theorem {THEOREM} : {iff}");
    let negated = format!("theorem {THEOREM} : ¬ ({iff})");
    let d = direction();
    let tactics = format!("by\n  constructor\n  · {d}\n  · {d}");
    let mut attempts = vec![
        ("definitional", statement.clone(), "Iff.rfl".to_string()),
        ("tactics", statement.clone(), tactics),
    ];
    if let Some(proof) = refutation(&b, true) {
        attempts.push(("refute_b", negated.clone(), proof));
    }
    if let Some(proof) = refutation(&a, false) {
        attempts.push(("refute_a", negated, proof));
    }
    Ok(Plan {
        header,
        statement,
        attempts,
        signatures: [a.signature, b.signature],
    })
}

impl Plan {
    /// leanpool's lines after attempt `i`'s theorem (after `verify`'s
    /// trailer, where any message makes the attempt an error): each
    /// statement declared alone, as an `axiom` with its own signature, and
    /// `#guard_expr` that the theorem's type is definitionally
    /// `(a) ↔ (b)` (or its negation) of those two types. So a proved
    /// theorem is about the statements as Lean elaborates each on its
    /// own, not about leanpool's `∀` reading of their text; the two may
    /// differ (binder syntax only `∀` takes, `?x` holes both sides share,
    /// a text that is no theorem at all), and an error here says so.
    pub fn reading(&self, i: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for (name, signature) in ALONE.iter().zip(&self.signatures) {
            let decl = format!("axiom {name}{signature}");
            lines.extend(decl.split('\n').map(str::to_string));
        }
        let iff = format!("(type_of% @{}) ↔ (type_of% @{})", ALONE[0], ALONE[1]);
        let stated = if self.attempts[i]
            .1
            .starts_with(&format!("theorem {THEOREM} : ¬"))
        {
            format!("¬ ({iff})")
        } else {
            iff
        };
        lines.push(format!("#guard_expr type_of% @{THEOREM} =~ ({stated})"));
        lines
    }

    /// The `verify` request of attempt `i`.
    pub fn verify_params(&self, i: usize, timeout_ms: Option<u64>) -> VerifyParams {
        let (_, statement, proof) = &self.attempts[i];
        let mut p = VerifyParams::new(statement.clone(), proof.clone()).with_header(&self.header);
        p.options.timeout_ms = timeout_ms;
        p
    }
}

/// The text the pool screens and keys a worker by (the first attempt's),
/// or why the request is refused.
pub fn first_text(p: &EquivParams) -> Result<String, Refused> {
    let plan = plan(p)?;
    Ok(verify::assemble(&plan.verify_params(0, None))?.text)
}

/// Runs `equiv` on `worker` (whose header must be the request's key). A
/// time-out is an answer and leaves the worker dead, as for `check`.
pub async fn equiv_on_with(
    worker: &mut leanpool_lean::Worker,
    params: &EquivParams,
    default_timeout: Duration,
    policy: &crate::Policy,
) -> Result<EquivResult, leanpool_lean::WorkerError> {
    let started = Instant::now();
    let r = run_plan(worker, params, default_timeout, policy, started).await?;
    Ok(EquivResult {
        elapsed_ms: params.options.elapsed_ms(started),
        ..r
    })
}

async fn run_plan(
    worker: &mut leanpool_lean::Worker,
    params: &EquivParams,
    default_timeout: Duration,
    policy: &crate::Policy,
    started: Instant,
) -> Result<EquivResult, leanpool_lean::WorkerError> {
    let plan = match plan(params) {
        Ok(plan) => plan,
        Err(e) => return Ok(EquivResult::rejected(e.reason)),
    };
    let limit = params.options.limit_or(default_timeout);
    let mut attempts = Vec::new();
    for i in 0..plan.attempts.len() {
        let name = plan.attempts[i].0;
        let left = limit
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1));
        let vp = plan.verify_params(i, Some(left.as_millis() as u64));
        let v = attempt(worker, &vp, plan.reading(i), default_timeout, policy).await?;
        attempts.push(EquivAttempt {
            attempt: name.to_string(),
            status: v.status,
        });
        let end = |status, reason: Option<String>| EquivResult {
            status,
            statement: Some(plan.statement.clone()),
            reason,
            ..EquivResult::unknown(attempts.clone())
        };
        match v.status {
            VerifyStatus::Proved => {
                let status = if name.starts_with("refute") {
                    EquivStatus::NotEquivalent
                } else {
                    EquivStatus::Equivalent
                };
                return Ok(EquivResult {
                    status,
                    evidence: Some(EquivEvidence {
                        attempt: name.to_string(),
                        statement: vp.statement,
                        proof: vp.proof,
                        axioms: v.axioms,
                    }),
                    attempts,
                    ..EquivResult::unknown(vec![])
                });
            }
            // The worker was stopped: no later attempt can run.
            VerifyStatus::Timeout => {
                let why = format!(
                    "attempt `{name}` ran past the request's limit of {} ms (Lean was stopped); the later attempts did not run",
                    limit.as_millis()
                );
                return Ok(end(EquivStatus::Unknown, Some(why)));
            }
            VerifyStatus::Rejected => {
                return Ok(EquivResult::rejected(v.reason.unwrap_or_default()))
            }
            // leanpool's proofs hold no `sorry`: the statements do.
            VerifyStatus::Sorry => {
                let why = "a statement uses `sorry`; equiv compares statements without it";
                return Ok(end(EquivStatus::Error, Some(why.into())));
            }
            VerifyStatus::Error if i == 0 && has_errors(&v.statement_diagnostics) => {
                let why = "the statements do not elaborate, each alone or both in leanpool's theorem (see `diagnostics`, positioned in `statement`)";
                return Ok(EquivResult {
                    diagnostics: v.statement_diagnostics,
                    ..end(EquivStatus::Error, Some(why.into()))
                });
            }
            VerifyStatus::Error => {}
        }
    }
    Ok(EquivResult::unknown(attempts))
}

fn has_errors(diagnostics: &[leanpool_protocol::Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// One attempt: `verify`'s own steps (assemble, screen the whole text,
/// judge), with [`OPTIONS`] in place of their placeholder and `reading`
/// ([`Plan::reading`]) after `verify`'s trailer.
async fn attempt(
    worker: &mut leanpool_lean::Worker,
    vp: &VerifyParams,
    reading: Vec<String>,
    default_timeout: Duration,
    policy: &crate::Policy,
) -> Result<leanpool_protocol::VerifyResult, leanpool_lean::WorkerError> {
    use leanpool_protocol::VerifyResult;
    let mut a = match verify::assemble(vp) {
        Ok(a) => a,
        Err(refused) => return Ok(VerifyResult::rejected(refused.to_string())),
    };
    a.trailer_lines.extend(reading);
    match leanpool_screen::screen(&a.text, policy.screening()) {
        Ok(screened) => {
            let fixed = Some(OPTIONS);
            verify::verify_fixed(
                worker,
                vp,
                &a,
                &screened,
                fixed,
                default_timeout,
                &policy.verdict,
            )
            .await
        }
        Err(reason) => Ok(VerifyResult::rejected(reason.to_string())),
    }
}

/// The worker header an `equiv` request needs (the pool's key), or `None`
/// when the request is refused before Lean.
pub fn header_key(params: &EquivParams) -> Option<String> {
    first_text(params)
        .ok()
        .map(|t| leanpool_screen::header_key(&t))
}

/// The pool's `equiv`: the params and the text of the first attempt.
mod pooled {
    use super::*;
    use crate::method::PoolMethod;
    use leanpool_lean::{Worker, WorkerError};
    use leanpool_protocol::method;
    use leanpool_screen::Screened;

    impl PoolMethod for method::Equiv {
        /// The params and the text of the first attempt (what is screened
        /// and keys the worker; every attempt is screened again, as a
        /// `verify`).
        type Input = (EquivParams, String);
        fn prepare(p: EquivParams) -> Result<(EquivParams, String), EquivResult> {
            match first_text(&p) {
                Ok(text) => Ok((p, text)),
                Err(refused) => Err(EquivResult::rejected(refused.reason)),
            }
        }
        fn rejected(reason: &str) -> EquivResult {
            EquivResult::rejected(reason)
        }
        fn timed_out(limit_ms: u64) -> EquivResult {
            EquivResult::timeout(limit_ms)
        }
        /// An attempt that ran past the limit stopped the worker too.
        fn is_timeout(r: &EquivResult) -> bool {
            r.timed_out()
        }
        fn stamp_elapsed(r: &mut EquivResult, elapsed: Duration) {
            r.elapsed_ms = Some(elapsed.as_millis() as u64);
        }
        /// Every attempt is screened again, as a `verify`, under the
        /// pool's configured policy (`[guard]` and `[verdict]`: the one the
        /// first attempt's text was screened under in `Pool::call`).
        async fn run(
            w: &mut Worker,
            (p, _): &(EquivParams, String),
            _screened: &Screened,
            default: Duration,
            policy: &crate::Policy,
        ) -> Result<EquivResult, WorkerError> {
            equiv_on_with(w, p, default, policy).await
        }
    }
}

#[cfg(test)]
mod tests;
