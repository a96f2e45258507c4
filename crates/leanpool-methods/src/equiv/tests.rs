//! Unit tests of `equiv` (moved out of `equiv.rs`).

use super::*;

fn params(a: &str, b: &str) -> EquivParams {
    EquivParams::new("", a, b)
}

#[test]
fn statements_become_propositions() {
    let s = side(
        "theorem t (x y : Nat) (h : x < y) : x + 1 ≤ y := by sorry",
        "a",
    )
    .unwrap();
    assert_eq!(s.prop, "(∀ (x y : Nat) (h : x < y),\n    x + 1 ≤ y)");
    assert_eq!(
        s.vars,
        Some(vec![
            Var::Value("x".into()),
            Var::Value("y".into()),
            Var::Hyp("x < y".into())
        ])
    );
    let s = side("lemma t : 2 + 2 = 4", "a").unwrap();
    assert_eq!((s.prop.as_str(), s.vars), ("(2 + 2 = 4)", Some(vec![])));
    let s = side("theorem t {α : Type} [Inhabited α] (a : α) : a = a", "a").unwrap();
    assert_eq!(s.vars, None);
    let s = side(
        "theorem t (a b c d : Nat) : a + b + c + d = d + c + b + a",
        "a",
    )
    .unwrap();
    assert_eq!(s.vars, None, "too many values to refute by decide");
}

/// The class: a statement's text that would close leanpool's
/// parenthesis and re-parse the theorem (`True) ∨ (True`), or end it
/// early (`:=`, a second command), is refused before Lean.
#[test]
fn statements_escaping_their_parentheses_are_refused() {
    for bad in [
        "theorem t : False) ∨ (True",
        "theorem t : (False)) ∨ ((True",
        "theorem t (x : Nat)) (y : Nat : x = y",
        "theorem t : True := trivial",
        "theorem t : True\ntheorem u : False",
        "def t : Nat",
        "theorem t (x : Nat)",
        "theorem t : #eval 1",
    ] {
        assert!(plan(&params(bad, "theorem u : True")).is_err(), "{bad:?}");
        assert!(plan(&params("theorem u : True", bad)).is_err(), "{bad:?}");
    }
    // A trailing comment is not part of the statement's tokens: it is
    // left out, not pasted before leanpool's parenthesis.
    let p = plan(&params("theorem t : True -- )", "theorem u : True /- ) -/")).unwrap();
    assert_eq!(p.statement, "theorem leanpool_equiv : (True) ↔\n  (True)");
}

#[test]
fn headers_may_not_share_variables() {
    let mut p = params("theorem t : n = n", "theorem u : n = n");
    p.header = "variable (n : Nat)\n".into();
    let e = plan(&p).unwrap_err();
    assert_eq!(e.part, Part::Header);
    p.header = "open Nat\n".into();
    let plan = plan(&p).unwrap();
    assert!(plan
        .header
        .ends_with(&format!("set_option maxHeartbeats 50000\n{PLACEHOLDER}")));
    assert_eq!(
        OPTIONS.lines.matches('\n').count(),
        PLACEHOLDER.matches('\n').count()
    );
    assert_eq!(
        plan.attempts.iter().map(|a| a.0).collect::<Vec<_>>(),
        ["definitional", "tactics", "refute_b", "refute_a"]
    );
}

/// Every attempt is followed by the statements declared alone and the
/// check that the theorem states them (the negation for refutations).
#[test]
fn every_attempt_reads_the_statements_alone() {
    let p = params(
        "theorem t (x : Nat) (h : x > 2) : x ≠ 0 := by sorry",
        "theorem u : True",
    );
    let plan = plan(&p).unwrap();
    let iff = "(type_of% @«leanpool_equiv_a») ↔ (type_of% @«leanpool_equiv_b»)";
    assert_eq!(
        plan.reading(0),
        [
            "axiom «leanpool_equiv_a» (x : Nat) (h : x > 2) : x ≠ 0".to_string(),
            "axiom «leanpool_equiv_b» : True".into(),
            format!("#guard_expr type_of% @leanpool_equiv =~ ({iff})"),
        ]
    );
    assert_eq!(plan.attempts[2].0, "refute_b");
    assert_eq!(
        plan.reading(2)[2],
        format!("#guard_expr type_of% @leanpool_equiv =~ (¬ ({iff}))")
    );
}

#[test]
fn every_attempt_is_a_valid_verify_request() {
    let p = params(
        "theorem t (x y : Nat) (h₀ : x = 3) : x + y ≥ 3",
        "theorem u (y x : Nat) (h : x = 3) : ¬ (x + y < 3) := sorry",
    );
    let plan = plan(&p).unwrap();
    for i in 0..plan.attempts.len() {
        verify::assemble(&plan.verify_params(i, None)).unwrap();
    }
    assert_eq!(
            plan.attempts[2].2,
            "fun leanpool_iff => (fun leanpool_h => absurd (show ∀ y : Nat, y < 8 → ∀ x : Nat, x < 8 → (x = 3) → (¬ (x + y < 3)) from fun y _ x _ leanpool_p2 => @leanpool_h y x leanpool_p2) (by decide)) (leanpool_iff.mp (by intros; first | assumption | omega | (simp_all; done) | decide))"
        );
    assert_eq!(plan, super::plan(&p).unwrap(), "deterministic");
    let closed = super::plan(&params("theorem t : 2 + 2 = 4", "theorem u : 2 + 2 = 5")).unwrap();
    assert_eq!(
            closed.attempts[2].2,
            "fun leanpool_iff => (fun leanpool_h => absurd (show (2 + 2 = 5) from leanpool_h) (by decide)) (leanpool_iff.mp (by intros; first | assumption | omega | (simp_all; done) | decide))"
        );
}
