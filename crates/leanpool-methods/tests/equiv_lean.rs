//! Attacks on `equiv`'s `equivalent` on the real Lean (the WASM backend
//! here), issue 24: the adversary writes both statements and the header,
//! and `equivalent` must never be the answer for statements that are not
//! equivalent. Each attack is named by what it tries; the rule that stops
//! it is in its doc comment. The guard is on (the default policy), as in
//! the daemon.
//!
//! One warm worker for the whole file (a WASM worker costs ~25 s and
//! several GB). Fails (does not skip) when no Lean is installed.

use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use leanpool_methods::equiv::equiv_on_with;
use leanpool_methods::Policy;
use leanpool_protocol::{EquivParams, EquivResult, EquivStatus};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

async fn equiv(w: &mut Worker, name: &str, header: &str, a: &str, b: &str) -> EquivResult {
    let p = EquivParams::new(header, a, b);
    let r = equiv_on_with(w, &p, LIMIT, &Policy::default())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    eprintln!("[{name}] {}", serde_json::to_string(&r).unwrap());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equiv_attacks_on_real_lean() {
    let command = LeanCommand::detect()
        .expect("no Lean installed: run scripts/setup (these tests need a real Lean)");
    let mut w = Worker::spawn(&WorkerConfig::new(command), "")
        .await
        .expect("worker start");
    // The control: an honest pair is `equivalent` with every rule on.
    let r = equiv(
        &mut w,
        "control",
        "",
        "theorem a (x : Nat) (h : x > 5) : x > 3",
        "theorem b (y : Nat) (hy : y > 5) : y > 3",
    )
    .await;
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    // Every attack runs; the ones that got through are listed at the end.
    let mut broken = Vec::new();
    statement_that_is_no_theorem_alone(&mut w, &mut broken).await;
    statements_sharing_a_hole(&mut w, &mut broken).await;
    sorry_in_both_statements(&mut w, &mut broken).await;
    local_instance_binder(&mut w, &mut broken).await;
    local_instance_in_the_type(&mut w, &mut broken).await;
    header_declaring_instances_notations_variables(&mut w, &mut broken).await;
    term_level_options(&mut w, &mut broken).await;
    universe_tricks(&mut w, &mut broken).await;
    assert!(broken.is_empty(), "attacks that got through: {broken:#?}");
}

/// Records `attack` as broken unless `r`'s status is `want` (`Some`) or
/// anything but `equivalent` (`None`).
fn expect(broken: &mut Vec<String>, attack: &str, r: &EquivResult, want: Option<EquivStatus>) {
    let ok = match want {
        Some(want) => r.status == want,
        None => r.status != EquivStatus::Equivalent,
    };
    if !ok {
        broken.push(format!("{attack}: {r:?}"));
    }
}

/// The attack: a text that `∀` reads but that is no theorem (`x > 5` is
/// binder syntax of `∀` only): leanpool's `∀ x > 5, x > 3` is the
/// candidate's "meaning", definitionally the reference's. Rule: each
/// statement is declared alone after the theorem and the theorem's type
/// is checked to be `(a) ↔ (b)` of those declarations (`Plan::reading`).
async fn statement_that_is_no_theorem_alone(w: &mut Worker, broken: &mut Vec<String>) {
    let r = equiv(
        w,
        "binder_predicate",
        "",
        "theorem a x > 5 : x > 3",
        "theorem b (x : Nat) (h : x > 5) : x > 3",
    )
    .await;
    expect(
        broken,
        "statement_that_is_no_theorem_alone",
        &r,
        Some(EquivStatus::Error),
    );
}

/// The attack: a `?p` hole is one metavariable in leanpool's theorem, so
/// one statement could fix what the other's means. Rules: a theorem's
/// type may not keep a hole (Lean), and each statement is read alone
/// (`Plan::reading`).
async fn statements_sharing_a_hole(w: &mut Worker, broken: &mut Vec<String>) {
    let r = equiv(
        w,
        "shared_hole",
        "",
        "theorem a (h : ?p) : ?p",
        "theorem b (h : ?p) : ?p",
    )
    .await;
    expect(
        broken,
        "statements_sharing_a_hole",
        &r,
        Some(EquivStatus::Error),
    );
}

/// The attack: `sorry` in both statements, so that `Iff.rfl` proves
/// `(sorry) ↔ (sorry)`. Rule: `verify`'s verdict on every attempt (a
/// theorem resting on `sorryAx` is `sorry`, never `proved`).
async fn sorry_in_both_statements(w: &mut Worker, broken: &mut Vec<String>) {
    for (a, b) in [
        ("theorem a : (sorry : Prop)", "theorem b : (sorry : Prop)"),
        (
            "theorem a (n : Nat) (h : (by exact sorry : Prop)) : n = n",
            "theorem b (n : Nat) (h : (by exact sorry : Prop)) : n = n",
        ),
    ] {
        let r = equiv(w, "sorry", "", a, b).await;
        expect(
            broken,
            &format!("sorry {a:?}"),
            &r,
            Some(EquivStatus::Error),
        );
    }
}

/// The attack: an instance binder makes `+` any addition, so the
/// candidate says something else (false) though it reads the same.
/// Rule: the theorem is about the statements' whole types; `apply` of
/// the true side cannot close the instance-generic goal.
async fn local_instance_binder(w: &mut Worker, broken: &mut Vec<String>) {
    let r = equiv(
        w,
        "instance_binder",
        "",
        "theorem a [inst : Add Nat] (x y : Nat) : x + y = y + x",
        "theorem b (x y : Nat) : x + y = y + x",
    )
    .await;
    expect(broken, "local_instance_binder", &r, None);
}

/// The attack: `letI` in the type makes `x + 1` mean `x`: the candidate
/// is true, the reference false, and the texts look alike. Rule: a
/// statement's `:=` is refused unless it belongs to a `let`/`have`
/// (`letI`'s is refused before Lean); and Lean checks the types as
/// elaborated, instances and all.
async fn local_instance_in_the_type(w: &mut Worker, broken: &mut Vec<String>) {
    let r = equiv(
        w,
        "letI",
        "",
        "theorem a (x : Nat) : letI : Add Nat := ⟨fun a _ => a⟩; x + 1 = x",
        "theorem b (x : Nat) : x + 1 = x",
    )
    .await;
    expect(broken, "local_instance_in_the_type", &r, None);
}

/// The attack: a header that gives the statements a meaning of its own
/// (an instance, a notation) or a `variable` both statements would share
/// (one `n` bound once for both sides). Rules: `verify`'s header check
/// (header commands only) and `equiv`'s refusal of `variable`.
async fn header_declaring_instances_notations_variables(w: &mut Worker, broken: &mut Vec<String>) {
    for header in [
        "instance : Add Nat := ⟨Nat.mul⟩\n",
        "local notation \"ONE\" => 2\n",
        "notation \"ONE\" => 2\n",
        "variable (n : Nat)\n",
        "section\nvariable {n : Nat}\n",
    ] {
        let r = equiv(
            w,
            "header",
            header,
            "theorem a : n + 0 = n",
            "theorem b : 0 + n = n",
        )
        .await;
        expect(
            broken,
            &format!("header {header:?}"),
            &r,
            Some(EquivStatus::Rejected),
        );
    }
}

/// The attack: `set_option autoImplicit true in` inside a statement, so
/// that a free `n` is bound again (and shared). Rule: statements hold no
/// command (`set_option` is refused in a statement before Lean) and the
/// guard's option allowlist.
async fn term_level_options(w: &mut Worker, broken: &mut Vec<String>) {
    let r = equiv(
        w,
        "term_set_option",
        "",
        "theorem a : set_option autoImplicit true in n + 0 = n",
        "theorem b : set_option autoImplicit true in 0 + n = n",
    )
    .await;
    expect(
        broken,
        "term_level_options",
        &r,
        Some(EquivStatus::Rejected),
    );
}

/// The attack: proof irrelevance holds in `Prop` only; a statement over
/// `Sort u` (false for `u ≥ 1`) against the `Prop` one, with the
/// universe declared in the header or left to Lean (`Sort _`). Rule:
/// leanpool's theorem is universe-polymorphic like the statements, and
/// `verify`'s comparison (`verify::reference`: the theorem and its
/// statement at the same explicit universe parameters) makes it count
/// only when proved at every universe, which this one is not. The
/// control: the same universe-polymorphic statement under two names,
/// its universe declared in the header, is `equivalent`.
async fn universe_tricks(w: &mut Worker, broken: &mut Vec<String>) {
    let prop = "theorem b (p : Prop) (x y : p) : x = y";
    for (header, a) in [
        ("universe u\n", "theorem a (p : Sort u) (x y : p) : x = y"),
        ("", "theorem a (p : Sort _) (x y : p) : x = y"),
    ] {
        let r = equiv(w, "universe", header, a, prop).await;
        expect(broken, &format!("universe {a:?}"), &r, None);
    }
    let r = equiv(
        w,
        "universe_honest",
        "universe u\n",
        "theorem a {α : Type u} (l : List α) : l ++ [] = l",
        "theorem b {β : Type u} (m : List β) : m ++ [] = m",
    )
    .await;
    expect(
        broken,
        "universe_honest (a false negative)",
        &r,
        Some(EquivStatus::Equivalent),
    );
}
