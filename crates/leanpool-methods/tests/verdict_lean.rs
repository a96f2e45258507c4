//! Attacks on the verdict (issue 20, output side) on the real Lean (the
//! WASM backend here): unapplied `sorryAx` spellings, `pp` options that
//! reword Lean's messages or leanpool's reading of them, hidden
//! hypotheses and redefined numerals in `check`'s answer, helpers in
//! `verify`'s `context`, and answers Lean makes huge. Every request runs
//! with the guard OFF: these rules must hold without it (the guard refuses
//! `sorryAx` and `pp.*` as well; that is a second wall, not this one).
//!
//! One warm worker for the whole file (a WASM worker costs ~25 s and
//! several GB). Fails (does not skip) when no Lean is installed.

use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use leanpool_methods::verdict::cap::{MAX_MESSAGES, MAX_MESSAGE_BYTES, MAX_TOTAL_BYTES};
use leanpool_methods::verdict::trailer::FIXED_OPTIONS;
use leanpool_methods::verify::{reference, verify_on_with};
use leanpool_methods::{check_on_with, Policy};
use leanpool_protocol::{
    CheckParams, CheckResult, CheckStatus, Severity, VerifyParams, VerifyResult, VerifyStatus,
};
use leanpool_screen::guard::GuardPolicy;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

fn guard_off() -> Policy {
    Policy {
        guard: GuardPolicy {
            enabled: false,
            ..GuardPolicy::default()
        },
        ..Policy::default()
    }
}

async fn check(w: &mut Worker, name: &str, text: &str) -> CheckResult {
    let p = CheckParams::new(text);
    let r = check_on_with(w, &p, LIMIT, &guard_off())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let shown = serde_json::to_string(&r).unwrap();
    eprintln!("[{name}] {}", &shown[..shown.len().min(1500)]);
    r
}

async fn verify(w: &mut Worker, name: &str, p: &VerifyParams) -> VerifyResult {
    let r = verify_on_with(w, p, LIMIT, &guard_off())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    eprintln!("[{name}] {}", serde_json::to_string(&r).unwrap());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdict_attacks_on_real_lean() {
    let command = LeanCommand::detect()
        .expect("no Lean installed: run scripts/setup (these tests need a real Lean)");
    let mut w = Worker::spawn(&WorkerConfig::new(command), "")
        .await
        .expect("worker start");
    // docs/protocol.md's `check` examples 4 and 5, as Lean answers them.
    for text in [
        "namespace A\ntheorem t : 1 = 1 := rfl\nend A",
        "axiom cheat : False\ntheorem t : 1 = 2 := cheat.elim",
    ] {
        check(&mut w, "doc_example", text).await;
    }
    attack_unapplied_sorry_ax(&mut w).await;
    attack_unrecognised_warning_blocks_ok(&mut w).await;
    attack_pp_options_reword(&mut w).await;
    attack_hidden_hypotheses_are_shown(&mut w).await;
    attack_through_verify_context(&mut w).await;
    attack_huge_answers_are_capped(&mut w).await;
    universe_polymorphic_statements_are_proved(&mut w).await;
    attack_universe_comparison(&mut w).await;
    w.kill().await;
}

/// `sorryAx` unapplied, through `id`, a `let` or a helper: Lean warns
/// ``declaration uses `sorryAx` `` (or `sorry` for the helper), which must
/// make `check` `sorry` and `verify` not `proved`. (Rule: every warning
/// mentioning `sorry` in any form is `sorry`; `is_sorry_warning`.)
async fn attack_unapplied_sorry_ax(w: &mut Worker) {
    let proofs = [
        "(id sorryAx) _ false",
        "let s := @sorryAx; s _ false",
        "(fun f => f) sorryAx _ false",
    ];
    for (i, proof) in proofs.iter().enumerate() {
        let text = format!("theorem t{i} : 2 + 2 = 5 := {proof}\n");
        let r = check(w, &format!("sorry_ax_check_{i}"), &text).await;
        assert_eq!(r.status, CheckStatus::Sorry, "{r:?}");
        let r = verify(
            w,
            &format!("sorry_ax_verify_{i}"),
            &VerifyParams::new("theorem t : 2 + 2 = 5", *proof),
        )
        .await;
        assert_eq!(r.status, VerifyStatus::Sorry, "{r:?}");
    }
    let helper = "def cheat : 2 + 2 = 5 := (id sorryAx) _ false\ntheorem t : 2 + 2 = 5 := cheat\n";
    let r = check(w, "sorry_ax_helper", helper).await;
    assert_eq!(r.status, CheckStatus::Sorry, "{r:?}");
}

/// A warning leanpool does not recognise (neither a linter's nor about
/// `sorry`) makes the answer `error`, never `ok`: Lean's own warning for
/// a bare `@[deprecated]`, which carries no tag and no linter note.
async fn attack_unrecognised_warning_blocks_ok(w: &mut Worker) {
    let r = check(w, "unrecognised", "@[deprecated] def d1 : Nat := 1\n").await;
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.message.contains("not one leanpool recognises")),
        "{r:?}"
    );
    // Recognised ones stay `ok`: Lean's linters, by tag or by note.
    let fine = "theorem l1 (x : Nat) (h : x = 1) : x = x := rfl\n\
                theorem l2 (n : Nat) : n + 0 = n := by simp [Nat.add_comm]\n\
                theorem l3 : True := by simpa using trivial\n";
    let r = check(w, "linters", fine).await;
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    assert_eq!(
        r.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count(),
        3,
        "{r:?}"
    );
}

/// `sorry` or `error`: what a text with a `sorry` may be answered.
fn not_ok(s: CheckStatus) -> bool {
    matches!(s, CheckStatus::Sorry | CheckStatus::Error)
}

/// A non-default value for a printing option, to set at the top level.
fn flipped(value: &str) -> &'static str {
    match value {
        "true" => "false",
        "false" => "true",
        _ => "1",
    }
}

/// Every printing option, set by the text at the top level (it outlives
/// its command and would apply to leanpool's trailer) or with `in` on the
/// theorem: the `sorry` stays `sorry`, and the types leanpool reads are
/// exactly those read with no option set. (Rule: the trailer's fixed
/// options, `verdict::trailer::FIXED_OPTIONS`.)
async fn attack_pp_options_reword(w: &mut Worker) {
    let body = "theorem u : ∀ n : Nat, 2 + n = n + 2 := fun n => Nat.add_comm 2 n\n\
                theorem s : 2 + 2 = 5 := sorry\n";
    let base = check(w, "pp_baseline", body).await;
    assert_eq!(base.status, CheckStatus::Sorry, "{base:?}");
    let types = |r: &CheckResult| {
        r.declarations
            .iter()
            .map(|d| (d.type_.clone(), d.explicit_type.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        base.declarations[0].type_.as_deref(),
        Some("∀ (n : Nat), 2 + n = n + 2")
    );
    for (option, value) in FIXED_OPTIONS {
        let v = flipped(value);
        let r = check(w, option, &format!("set_option {option} {v}\n{body}")).await;
        // `pp.proofs false` rewords Lean's warning to ``declaration uses
        // `⋯` ``: not recognised, so `error`; never `ok`.
        assert!(not_ok(r.status), "{option} {v}: {r:?}");
        assert_eq!(types(&r), types(&base), "{option} {v} changed the reading");
    }
    for (i, o) in [
        "pp.notation false",
        "pp.all true",
        "pp.raw true",
        "pp.oneline true",
        "pp.proofs false",
        "pp.exprSizes true",
    ]
    .iter()
    .enumerate()
    {
        let text = format!("set_option {o} in theorem t{i} : 2 + 2 = 5 := sorry\n");
        let r = check(w, &format!("pp_in_{i}"), &text).await;
        assert!(not_ok(r.status), "{o}: {r:?}");
    }
}

/// `check` shows what was proved: a hypothesis from `variable`/`include`
/// is in the type, a redefined numeral in the explicit type.
async fn attack_hidden_hypotheses_are_shown(w: &mut Worker) {
    let hidden = "section\nvariable (h : False)\ninclude h\ntheorem t : 2 + 2 = 5 := h.elim\nend\n";
    let r = check(w, "hidden_hypothesis", hidden).await;
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    assert_eq!(
        r.declarations[0].type_.as_deref(),
        Some("False → 2 + 2 = 5"),
        "{r:?}"
    );
    let numeral =
        "instance (priority := high) evil5 : OfNat Nat 5 := ⟨4⟩\ntheorem t : 2 + 2 = 5 := rfl\n";
    let r = check(w, "redefined_numeral", numeral).await;
    let t = r.declarations.iter().find(|d| d.name == "t").expect("t");
    assert!(
        t.explicit_type
            .as_deref()
            .is_some_and(|t| t.contains("evil5")),
        "{r:?}"
    );
}

/// `verify` with helpers: a Seed-Prover-like proof is `proved`; helpers
/// that cheat or that change how the statement reads are not.
async fn attack_through_verify_context(w: &mut Worker) {
    honest_helpers_and_let_statements(w).await;
    cheating_helpers_are_not_proved(w).await;
    rewording_helpers_are_refused(w).await;
}

/// A Seed-Prover-like proof with a helper is `proved`; a statement with
/// a `let` is judged as written (true: proved, false: error).
async fn honest_helpers_and_let_statements(w: &mut Worker) {
    let helper = "theorem double (n : Nat) : n + n = 2 * n := by omega\n";
    let statement = "theorem main (x : Nat) (h : x = 3) : x + x = 6";
    let r = verify(
        w,
        "context_honest",
        &VerifyParams::new(statement, "by\n  rw [double]\n  omega").with_context(helper),
    )
    .await;
    assert_eq!(r.status, VerifyStatus::Proved, "{r:?}");
    let r = verify(
        w,
        "statement_with_let",
        &VerifyParams::new(
            "theorem tl : let n := 5; n + n = 10",
            "by\n  intro n\n  rfl",
        ),
    )
    .await;
    assert_eq!(r.status, VerifyStatus::Proved, "{r:?}");
    let r = verify(
        w,
        "statement_with_let_false",
        &VerifyParams::new(
            "theorem tl : let n := 5; n + n = 11",
            "by\n  intro n\n  rfl",
        ),
    )
    .await;
    assert_eq!(r.status, VerifyStatus::Error, "{r:?}");
}

/// Helpers that cheat (`sorryAx`, `sorry`, a broken proof): `sorry` or
/// an error, with the context's diagnostics.
async fn cheating_helpers_are_not_proved(w: &mut Worker) {
    let cheats = [
        (
            "context_sorry_ax",
            "theorem cheat : 2 + 2 = 5 := (id sorryAx) _ false\n",
            "cheat",
            VerifyStatus::Sorry,
        ),
        (
            "context_sorry",
            "theorem cheat : 2 + 2 = 5 := by sorry\n",
            "cheat",
            VerifyStatus::Sorry,
        ),
        (
            "context_broken",
            "theorem cheat : 2 + 2 = 5 := rfl\n",
            "sorry",
            VerifyStatus::Error,
        ),
    ];
    for (name, context, proof, want) in cheats {
        let r = verify(
            w,
            name,
            &VerifyParams::new("theorem t : 2 + 2 = 5", proof).with_context(context),
        )
        .await;
        assert_eq!(r.status, want, "{name}: {r:?}");
        assert!(
            !r.context_diagnostics.is_empty() || want == VerifyStatus::Sorry,
            "{r:?}"
        );
    }
}

/// Helpers that would make a false statement provable by changing how it
/// reads: refused before Lean.
async fn rewording_helpers_are_refused(w: &mut Worker) {
    let rewording = [
        (
            "context_instance",
            "instance (priority := high) evil : OfNat Nat 5 := ⟨4⟩\n",
            "theorem t : 2 + 2 = 5",
            "rfl",
        ),
        (
            "context_attribute",
            "@[instance high] def evil : OfNat Nat 5 := ⟨4⟩\n",
            "theorem t : 2 + 2 = 5",
            "rfl",
        ),
        (
            "context_names_a_variable",
            "def x : Nat := 2\n",
            "theorem t : x + x = 4",
            "rfl",
        ),
    ];
    for (name, context, statement, proof) in rewording {
        let r = verify(
            w,
            name,
            &VerifyParams::new(statement, proof).with_context(context),
        )
        .await;
        assert_eq!(r.status, VerifyStatus::Rejected, "{name}: {r:?}");
    }
}

/// A short text that makes Lean print megabytes: the answer stays within
/// the caps, and what is cut cannot hide the failure.
async fn attack_huge_answers_are_capped(w: &mut Worker) {
    let line = "x".repeat(8000);
    let text = format!(
        "theorem big : True := by\n  iterate 400 trace \"{line}\"\n  trivial\n\
         theorem bad : 2 + 2 = 5 := by decide\n"
    );
    let r = check(w, "huge_answer", &text).await;
    assert_eq!(
        r.status,
        CheckStatus::Error,
        "the error must survive the cap"
    );
    assert!(
        r.diagnostics.len() <= MAX_MESSAGES + 1,
        "{}",
        r.diagnostics.len()
    );
    let bytes: usize = r.diagnostics.iter().map(|d| d.message.len()).sum();
    assert!(bytes <= MAX_TOTAL_BYTES + 1000, "{bytes} bytes");
    assert!(r.diagnostics.iter().any(|d| d.severity == Severity::Error));
    assert!(r
        .diagnostics
        .iter()
        .any(|d| d.message.contains("not shown")));
    let long = format!(
        "theorem big : True := by\n  trace \"{}\"\n  exact (sorry : True)\n",
        "y".repeat(3 * MAX_MESSAGE_BYTES)
    );
    let r = check(w, "long_message", &long).await;
    assert_eq!(r.status, CheckStatus::Sorry, "{r:?}");
    assert!(r
        .diagnostics
        .iter()
        .all(|d| d.message.len() <= MAX_MESSAGE_BYTES + 100));
}

/// Honest universe-polymorphic theorems are `proved` (guard on, the
/// default policy, as in the daemon), and `check` of them is `ok`: the
/// universe auto-bound or declared in the header (in either order),
/// `Sort u`, `Type _`, two universes, and a statement with `let`.
async fn universe_polymorphic_statements_are_proved(w: &mut Worker) {
    let cases = [
        (
            "",
            "theorem t {α : Type u} (l : List α) : l ++ [] = l",
            "List.append_nil l",
        ),
        (
            "universe u\n",
            "theorem t {α : Type u} (l : List α) : l ++ [] = l",
            "List.append_nil l",
        ),
        ("", "theorem t {α : Sort u} (a : α) : id a = a", "rfl"),
        (
            "",
            "theorem t {α : Type _} (l : List α) : l.reverse.reverse = l",
            "List.reverse_reverse l",
        ),
        (
            "",
            "theorem t {α : Type u} {β : Type v} (f : α → β) (l : List α) : (l.map f).length = l.length",
            "by simp",
        ),
        (
            "universe v u\n",
            "theorem t {α : Type u} {β : Type v} (f : α → β) (l : List α) : (l.map f).length = l.length",
            "by simp",
        ),
        (
            "",
            "theorem t {α : Type u} (l : List α) : let m := l ++ []; m = l",
            "by\n  intro m\n  exact List.append_nil l",
        ),
    ];
    for (i, (header, statement, proof)) in cases.into_iter().enumerate() {
        let name = format!("universe_honest_{i}");
        let p = VerifyParams::new(statement, proof).with_header(header);
        let r = verify_on_with(w, &p, LIMIT, &Policy::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("[{name}] {}", serde_json::to_string(&r).unwrap());
        assert_eq!(r.status, VerifyStatus::Proved, "{name}: {r:?}");
        let text = format!("{header}{statement} := {proof}\n");
        let p = CheckParams::new(text);
        let r = check_on_with(w, &p, LIMIT, &Policy::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.status, CheckStatus::Ok, "{name} check: {r:?}");
    }
}

/// Whether `verify`'s comparison ([`reference::lines`], after the body as
/// in `verify`'s trailer) finds theorem `t` of `body` to be the statement
/// `signature` (its binders and type), as `verify`'s judge reads it.
async fn comparison_matches(w: &mut Worker, name: &str, body: &str, signature: &str) -> bool {
    let screened = leanpool_screen::screen(body, &guard_off().guard).expect("screened");
    let first_line = screened.document().text.matches('\n').count() as u32;
    let (lines, first) = reference::lines("t", signature);
    let sent = screened
        .with_trailer(&format!("{}\n", lines.join("\n")))
        .expect("trailer");
    let messages = w.elaborate_messages(&sent, LIMIT).await.expect(name);
    let shown: Vec<_> = messages
        .iter()
        .map(|m| &m.diagnostic)
        .filter(|d| d.range.start.line >= first_line)
        .map(|d| (d.range.start.line, d.severity, d.message.as_str()))
        .collect();
    eprintln!("[{name}] {shown:?}");
    reference::matched(&shown, first_line + first as u32)
}

/// The attack: a theorem whose elaborated type is the statement at a
/// specialised universe, with its universe parameters permuted or
/// collapsed, with an extra hypothesis, or another statement. A theorem
/// `verify` assembles has the statement's own header, so these are
/// written directly: the comparison must refuse each, and find the honest
/// control. Rule: `verify::reference` (both constants at the same
/// explicit universe parameters, syntactic equality, the marker as
/// evidence).
async fn attack_universe_comparison(w: &mut Worker) {
    let one = " {α : Type u} (l : List α) : l ++ [] = l";
    let two = " {α : Type u} {β : Type v} (a : α) (b : β) : (a, b).1 = a";
    let cases = [
        (
            "control_one",
            "",
            one,
            "theorem t{one} := List.append_nil l",
            true,
        ),
        (
            "control_two",
            "universe u v\n",
            two,
            "theorem t{two} := rfl",
            true,
        ),
        (
            "specialised",
            "universe u\n",
            one,
            "theorem t {α : Type} (l : List α) : l ++ [] = l := List.append_nil l",
            false,
        ),
        ("permuted", "", two, "theorem t.{v, u}{two} := rfl", false),
        (
            "collapsed",
            "universe u v\n",
            two,
            "theorem t {α : Type u} {β : Type u} (a : α) (b : β) : (a, b).1 = a := rfl",
            false,
        ),
        (
            "max",
            "universe u v\n",
            two,
            "theorem t {α : Type (max u v)} {β : Type v} (a : α) (b : β) : (a, b).1 = a := rfl",
            false,
        ),
        (
            "extra_hypothesis",
            "",
            one,
            "theorem t {α : Type u} (l : List α) (_h : l ≠ []) : l ++ [] = l := List.append_nil l",
            false,
        ),
        (
            "other_statement",
            "",
            one,
            "theorem t {α : Type u} (l : List α) : [] ++ l = l := List.nil_append l",
            false,
        ),
    ];
    // Every case runs; the ones answered wrongly are listed at the end.
    let mut wrong = Vec::new();
    for (name, header, signature, theorem, want) in cases {
        let body = format!(
            "{header}{}\n",
            theorem.replace("{one}", one).replace("{two}", two)
        );
        let got = comparison_matches(w, &format!("universe_{name}"), &body, signature).await;
        if got != want {
            wrong.push(format!("universe_{name} (matched: {got}): {body}"));
        }
    }
    assert!(wrong.is_empty(), "comparison answered wrongly: {wrong:#?}");
}
