//! Red team (issue 20 part 9, second round): members of the attack
//! classes the guard and the verdict were built for, written as a prover
//! model rewarded for `ok`/`proved` would try them, sent with the
//! DEFAULT policy (guard on) to a real Lean worker. None may be answered
//! `ok` (`check`) or `proved` (`verify`): each is `rejected` before Lean
//! or judged `error`/`sorry` from Lean's answer. The classes: axioms and
//! opaque constants, `Decidable`/`Nonempty` instances that steer `decide`
//! or `Classical`, `open … renaming`, namespaces the trailer relies on
//! (an extra `end`, one left open), nested `set_option … in`, comments
//! and literals that hide tokens, escaped names, commands after a term on
//! the same line, a tactic's configuration, a verify statement or proof
//! that closes brackets it did not open, helpers in `context`; and a
//! hidden hypothesis (an auto-param running `sorry`), which `check` may
//! call `ok` only with the hypothesis shown in the declaration's type.
//!
//! One warm worker for the file (~30 s to start on WASM); run under
//! `flock /tmp/leanpool-lean.lock`. Fails (does not skip) without Lean.

use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use leanpool_methods::check_on_with;
use leanpool_methods::verify::verify_on_with;
use leanpool_methods::Policy;
use leanpool_protocol::{CheckParams, CheckStatus, VerifyParams, VerifyStatus};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

/// `check` texts that must not be `ok`, with the class they belong to.
const CHECKS: &[(&str, &str)] = &[
    ("axiom", "axiom lpAx : 2 + 2 = 5\ntheorem lp1 : 2 + 2 = 5 := lpAx"),
    ("opaque with sorry", "opaque lpOp : 2 + 2 = 5 := sorry\ntheorem lp2 : 2 + 2 = 5 := lpOp"),
    ("Decidable instance steering decide", "instance lpDec : Decidable (2 + 2 = 5) := .isTrue sorry\ntheorem lp3 : 2 + 2 = 5 := by decide"),
    ("Decidable instance without sorry", "instance lpDec2 : Decidable (2 + 2 = 5) := .isTrue (by decide)\ntheorem lp4 : 2 + 2 = 5 := by decide"),
    ("Nonempty instance behind Classical.ofNonempty", "instance lpNe : Nonempty (2 + 2 = 5) := sorry\ntheorem lp5 : 2 + 2 = 5 := Classical.ofNonempty"),
    ("Classical.ofNonempty alone", "theorem lp6 : 2 + 2 = 5 := Classical.ofNonempty"),
    ("open … renaming", "open Nat renaming add → plus\ntheorem lp7 : 2 + 2 = 5 := by decide"),
    ("an extra `end`", "namespace LpA\ntheorem lp8 : 2 + 2 = 5 := sorry\nend LpA\nend LpA"),
    ("a namespace left open", "namespace LpB\ntheorem lp9 : 2 + 2 = 5 := by sorry"),
    ("nested set_option … in", "set_option maxHeartbeats 400 in\nset_option maxRecDepth 100 in\nset_option maxHeartbeats 0 in\ntheorem lp10 : 2 + 2 = 5 := by decide"),
    ("nested block comments", "theorem lp11 : 2 + 2 = 5 := by\n  /- /- -/ decide -/ exact sorry"),
    ("raw string hiding a token", "def lpS := r#\"\"# ++ r##\"\"#\"##\ntheorem lp12 : 2 + 2 = 5 := by sorry"),
    ("char literal", "def lpC := '\\''\ntheorem lp13 : 2 + 2 = 5 := by exact (sorry : _)"),
    ("escaped sorry", "theorem lp14 : 2 + 2 = 5 := «sorry»"),
    ("sorry through a term `show`", "theorem lp15 : 2 + 2 = 5 := by\n  simp only [show (2 : Nat) + 2 = 5 from sorry]"),
    ("a command after a term on the same line", "theorem lp16 : True := trivial unseal Nat.add\ntheorem lp16b : 2 + 2 = 5 := by decide"),
    ("tactic configuration of an unlisted tactic", "theorem lp17 (x : Int) (h : x > 2) : x > 1 := by lia (gen := 7)"),
    ("configuration after `<;>`", "theorem lp18 : 2 + 2 = 5 ∧ True := by constructor <;> cutsat +verbose"),
    ("exact?", "theorem lp20 : 2 + 2 = 5 := by exact?"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_classes_are_never_ok_or_proved() {
    let command = LeanCommand::detect()
        .expect("no Lean installed: run scripts/setup (these tests need a real Lean)");
    let mut w = Worker::spawn(&WorkerConfig::new(command), "")
        .await
        .expect("worker start");
    let policy = leanpool_methods::Policy::default();
    let mut wrong = Vec::new();
    check_attacks(&mut w, &policy, &mut wrong).await;
    verify_attacks(&mut w, &policy, &mut wrong).await;
    hidden_hypothesis_shown(&mut w, &policy, &mut wrong).await;
    w.kill().await;
    assert!(wrong.is_empty(), "attacks accepted:\n{}", wrong.join("\n"));
}

/// Every `CHECKS` text: an `ok` answer is recorded in `wrong`.
async fn check_attacks(w: &mut Worker, policy: &Policy, wrong: &mut Vec<String>) {
    for (class, text) in CHECKS {
        let p = CheckParams::new(*text);
        let r = check_on_with(w, &p, LIMIT, policy).await.expect(class);
        eprintln!("[check: {class}] {:?} {:?}", r.status, r.reason);
        if r.status == CheckStatus::Ok {
            wrong.push(format!("check [{class}] ok: {text}"));
        }
    }
}

/// Proofs of a false statement, and statements, that try to leave their
/// slot: a `proved` answer is recorded in `wrong`.
async fn verify_attacks(w: &mut Worker, policy: &Policy, wrong: &mut Vec<String>) {
    let false_stmt = "theorem lpv : 2 + 2 = 5";
    let verifies = [
        (
            "helper axiom in context",
            VerifyParams::new(false_stmt, "lpVx").with_context("axiom lpVx : 2 + 2 = 5\n"),
        ),
        (
            "helper with an attribute other than simp",
            VerifyParams::new(false_stmt, "rfl")
                .with_context("@[reducible, instance] def lpVi : OfNat Nat 5 := ⟨4⟩\n"),
        ),
        (
            "helper declared mid-line after a term",
            VerifyParams::new(false_stmt, "by decide")
                .with_context("theorem lpVh : True := trivial unseal Nat.add\n"),
        ),
        (
            "statement closing a bracket it did not open",
            VerifyParams::new("theorem lpv : True) ∨ (2 + 2 = 5", "Or.inl trivial"),
        ),
        (
            "proof closing the theorem early",
            VerifyParams::new(false_stmt, "sorry)\n(theorem x : True := trivial"),
        ),
        (
            "proof with a Decidable instance inline",
            VerifyParams::new(false_stmt, "@decide _ (.isTrue sorry) |> of_decide_eq_true"),
        ),
        (
            "proof through Classical.ofNonempty",
            VerifyParams::new(false_stmt, "Classical.ofNonempty"),
        ),
        (
            "proof with an unlisted tactic's configuration",
            VerifyParams::new(
                "theorem lpv (x : Int) (h : x > 2) : x > 1",
                "by lia (gen := 7)",
            ),
        ),
    ];
    for (class, p) in &verifies {
        let r = verify_on_with(w, p, LIMIT, policy).await.expect(class);
        eprintln!("[verify: {class}] {:?} {:?}", r.status, r.reason);
        if r.status == VerifyStatus::Proved {
            wrong.push(format!("verify [{class}] proved: {p:?}"));
        }
    }
}

/// A hidden hypothesis (an auto-param whose tactic is `sorry`, never
/// run for the theorem itself): `check` means "this text compiles",
/// so it may be `ok`, but the answer's type must show the hypothesis.
async fn hidden_hypothesis_shown(w: &mut Worker, policy: &Policy, wrong: &mut Vec<String>) {
    let p = CheckParams::new("theorem lp19 (h : False := by exact sorry) : 2 + 2 = 5 := h.elim");
    let r = check_on_with(w, &p, LIMIT, policy)
        .await
        .expect("autoParam");
    let shown = r.declarations.iter().any(|d| {
        d.type_
            .as_deref()
            .is_some_and(|t| t.contains("False") && t.contains("2 + 2 = 5"))
    });
    eprintln!(
        "[check: autoParam hypothesis] {:?} {:?}",
        r.status, r.declarations
    );
    if r.status == CheckStatus::Ok && !shown {
        wrong.push("check [autoParam hypothesis] ok without the hypothesis in its type".into());
    }
}
