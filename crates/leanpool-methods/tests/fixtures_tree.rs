//! Tree building from recorded real server answers (no Lean needed):
//! `tests/fixtures/recorded/*.json` hold the `getInteractiveGoals` and
//! `getInteractiveDiagnostics` answers of the WASM Lean for core statements
//! (recorded by `terms_lean.rs` with `-- --ignored record_fixtures`).

use leanpool_methods::terms::goals::parse_first_goal;
use leanpool_methods::terms::{binder_kinds, Statement, StatementBinder};
use leanpool_protocol::{BinderKind, Node, NodeKind};
use serde_json::Value;

fn load(name: &str) -> Value {
    let p = format!(
        "{}/tests/fixtures/recorded/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}")))
        .unwrap()
}

/// The statement as `analyze_on` would assemble it (`is_prop` is not in
/// these two answers; it is taken as false here).
fn statement(v: &Value) -> Statement {
    let goal = parse_first_goal(&v["goals"]).unwrap().expect("a goal");
    let kinds = binder_kinds(
        &v["check"],
        v["check_line"].as_u64().unwrap() as u32,
        goal.hyps.len(),
    )
    .unwrap();
    Statement {
        binders: goal
            .hyps
            .into_iter()
            .zip(kinds)
            .map(|(h, kind)| StatementBinder {
                name: h.name,
                kind,
                ty: h.ty,
                is_prop: false,
            })
            .collect(),
        conclusion: goal.target,
    }
}

#[test]
fn done_when_statement() {
    let s = statement(&load("done_when"));
    let t = s.tree();
    assert_eq!(t.children.len(), 4);
    assert_eq!(t.children[3].label, "∀ _, _");
    assert_eq!(t.children[3].children[1].label, "_ < _");
    assert_eq!(t.children[3].children[1].children[0].label, "_ + _");
    assert_eq!(
        t.children[3].children[1].children[0].children[0].scope,
        Some(0)
    );
    assert_eq!(
        s.normalized().statement,
        "theorem stmt (a : Nat) (b : Nat) (h : a < b) : ∀ (c : Nat), a + c < b + c"
    );
}

#[test]
fn binder_kinds_from_check_message() {
    let s = statement(&load("kinds"));
    let kinds: Vec<BinderKind> = s.binders.iter().map(|b| b.kind).collect();
    use BinderKind::*;
    assert_eq!(
        kinds,
        [
            Implicit,
            InstImplicit,
            InstImplicit,
            StrictImplicit,
            StrictImplicit,
            Default
        ]
    );
}

#[test]
fn nested_quantifiers() {
    let t = statement(&load("nested")).tree();
    let f = &t.children[0];
    assert_eq!(f.label, "∀ _, _");
    assert_eq!(f.children[1].label, "∃ _, _");
    assert_eq!(f.children[1].children[1].label, "∀ _, _");
}

#[test]
fn lambda_and_function_application() {
    let t = statement(&load("lambda_gcd")).tree();
    // h : f = fun n => Nat.gcd n 4
    let h_ty = &t.children[1].children[1];
    assert_eq!(h_ty.label, "_ = _");
    let lam = &h_ty.children[1];
    assert!(lam.label.starts_with("fun _"), "{}", lam.label);
    let body = lam.children.last().unwrap();
    assert_eq!(body.label, "Nat.gcd _ _");
    assert_eq!(body.children[0].kind, NodeKind::BoundVar);
    assert_eq!(body.children[0].scope, lam.children[0].children[0].scope);
    let _: &Node = &t;
}
