//! Unit tests of `build` (moved out of `build.rs`).

use super::*;
use serde_json::{json, Value};

fn tag(pos: &str, body: Value) -> Value {
    json!({"tag": [{"subexprPos": pos, "info": {"p": "1"}}, body]})
}
fn text(s: &str) -> Value {
    json!({"text": s})
}
fn app(xs: Vec<Value>) -> Value {
    json!({"append": xs})
}
fn build(v: Value) -> Node {
    TreeBuilder::new().term(&Tagged::parse(&v).unwrap())
}

/// `∀ (c : Nat), a + c < b + c` shaped like Lean's goal output.
fn forall_goal(var: &str) -> Value {
    let sum = |x: &str, p: &str| {
        tag(
            p,
            app(vec![
                tag(&format!("{p}/0/1"), text(x)),
                text(" + "),
                tag(&format!("{p}/1"), text(var)),
            ]),
        )
    };
    tag(
        "/",
        app(vec![
            text("∀ ("),
            tag("/", text(var)),
            text(" : "),
            tag("/0", text("Nat")),
            text("), "),
            tag(
                "/1",
                app(vec![sum("a", "/1/0/1"), text(" < "), sum("b", "/1/1")]),
            ),
        ]),
    )
}

#[test]
fn forall_binder_and_operators() {
    let n = build(forall_goal("c"));
    assert_eq!(n.label, "∀ _, _");
    assert_eq!(n.children.len(), 2);
    let b = &n.children[0];
    assert_eq!(b.label, "(_ : _)");
    assert_eq!(b.binder, Some(BinderKind::Default));
    assert_eq!(b.children[0].kind, NodeKind::BoundVar);
    assert_eq!(b.children[0].scope, Some(0));
    assert_eq!(b.children[1], Node::atom("Nat"));
    let body = &n.children[1];
    assert_eq!(body.label, "_ < _");
    assert_eq!(body.children[0].label, "_ + _");
    // `c` in the body refers to the binder; `a` is free here.
    assert_eq!(body.children[0].children[1].scope, Some(0));
    assert_eq!(body.children[0].children[0], Node::atom("a"));
}

#[test]
fn renaming_gives_equal_trees_up_to_names() {
    let a = build(forall_goal("c"));
    let b = build(forall_goal("d"));
    assert_ne!(a, b);
    assert_eq!(erase_bound_names(&a), erase_bound_names(&b));
}

#[test]
fn parentheses_do_not_matter() {
    // `x * (y + z)`: the parenthesizer's parens sit in the parent's text.
    let v = tag(
        "/",
        app(vec![
            tag("/0/1", text("x")),
            text(" * ("),
            tag(
                "/1",
                app(vec![
                    tag("/1/0/1", text("y")),
                    text(" + "),
                    tag("/1/1", text("z")),
                ]),
            ),
            text(")"),
        ]),
    );
    let n = build(v);
    assert_eq!(n.label, "_ * _");
    assert_eq!(n.children[1].label, "_ + _");
    // A wrapper holding one parenthesized child is transparent.
    let w = tag("/", app(vec![text("("), tag("/1", text("q")), text(")")]));
    assert_eq!(build(w), Node::atom("q"));
}

#[test]
fn grouped_binders_split_and_kinds() {
    // `∀ {α : Type} (a b : α), a = b` (positions as the delaborator gives).
    let v = tag(
        "/",
        app(vec![
            text("∀ {"),
            tag("/", text("α")),
            text(" : "),
            tag("/0", text("Type")),
            text("} ("),
            tag("/1", text("a")),
            text(" "),
            tag("/1/1", text("b")),
            text(" : "),
            tag("/1/0", text("α")),
            text("), "),
            tag(
                "/1/1/1",
                app(vec![
                    tag("/1/1/1/0/1", text("a")),
                    text(" = "),
                    tag("/1/1/1/1", text("b")),
                ]),
            ),
        ]),
    );
    let n = build(v);
    // Nested: ∀ {α}, ∀ (a), ∀ (b), a = b
    assert_eq!(n.label, "∀ _, _");
    assert_eq!(n.children[0].binder, Some(BinderKind::Implicit));
    assert_eq!(n.children[0].label, "{_ : _}");
    let n2 = &n.children[1];
    assert_eq!(n2.children[0].binder, Some(BinderKind::Default));
    // `a`'s type `α` refers to the first binder.
    assert_eq!(n2.children[0].children[1].scope, Some(0));
    let n3 = &n2.children[1];
    assert_eq!(n3.children[0].children[0].label, "b");
    assert_eq!(n3.children[0].children[1].scope, Some(0));
    let eq = &n3.children[1];
    assert_eq!(eq.label, "_ = _");
    assert_eq!(eq.children[0].scope, Some(1));
    assert_eq!(eq.children[1].scope, Some(2));
}

#[test]
fn big_operator_scope_excludes_the_range() {
    // `∑ i ∈ s, f i` = Finset.sum s (fun i => f i): `i` at /1, s at /0/1,
    // body at /1/1. A free `i` in `s` must not bind to the sum's `i`.
    let v = tag(
        "/",
        app(vec![
            text("∑ "),
            tag("/1", text("i")),
            text(" ∈ "),
            tag(
                "/0/1",
                app(vec![text("Finset.range "), tag("/0/1/1", text("i"))]),
            ),
            text(", "),
            tag("/1/1", app(vec![text("f "), tag("/1/1/1", text("i"))])),
        ]),
    );
    let mut b = TreeBuilder::new();
    let (_, outer) = b.fresh("i", NodeKind::BoundVar);
    b.push_scope("i", outer, NodeKind::BoundVar);
    let n = b.term(&Tagged::parse(&v).unwrap());
    assert_eq!(n.label, "∑ _ ∈ _, _");
    assert_eq!(n.children[0].label, "(_)");
    let inner = n.children[0].children[0].scope.unwrap();
    assert_ne!(inner, outer);
    assert_eq!(n.children[1].label, "Finset.range _");
    assert_eq!(n.children[1].children[0].scope, Some(outer));
    assert_eq!(n.children[2].children[0].scope, Some(inner));
}

#[test]
fn extra_positions_of_binder_names() {
    // Lean ≥ 4.x tags binder names with hole-iterator positions, which
    // serialize as "/", "/", "/0", "/1", "/2", … (here colliding with
    // the real domain "/0" and a prefix of the body "/1/1/1/1/1").
    let v = tag(
        "/",
        app(vec![
            text("∀ ("),
            tag("/", text("a")),
            text(" "),
            tag("/", text("b")),
            text(" "),
            tag("/0", text("c")),
            text(" "),
            tag("/1", text("d")),
            text(" "),
            tag("/2", text("e")),
            text(" : "),
            tag("/0", text("Nat")),
            text("), "),
            tag(
                "/1/1/1/1/1",
                app(vec![
                    tag("/1/1/1/1/1/0/1", text("a")),
                    text(" = "),
                    tag("/1/1/1/1/1/1", text("e")),
                ]),
            ),
        ]),
    );
    let n = build(v);
    let mut names = vec![];
    let mut cur = &n;
    while cur.label == "∀ _, _" {
        names.push(cur.children[0].children[0].label.clone());
        assert_eq!(cur.children[0].children[1], Node::atom("Nat"));
        cur = &cur.children[1];
    }
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(cur.children[0].scope, Some(0));
    assert_eq!(cur.children[1].scope, Some(4));
}

#[test]
fn pairs_and_set_builder() {
    // `(x, y)`: real subterm positions, so no binders.
    let v = tag(
        "/",
        app(vec![
            text("("),
            tag("/0/1", text("x")),
            text(", "),
            tag("/1", text("y")),
            text(")"),
        ]),
    );
    let n = build(v);
    assert_eq!(n.label, "_, _");
    assert!(n.children.iter().all(|c| c.kind == NodeKind::Atom));
    // `{x | p x}`: the braces are notation, not an implicit binder.
    let v = tag(
        "/",
        app(vec![
            text("{"),
            tag("/", text("x")),
            text(" | "),
            tag("/1/1", app(vec![text("p "), tag("/1/1/1", text("x"))])),
            text("}"),
        ]),
    );
    let n = build(v);
    assert_eq!(n.label, "{_ | _}");
    assert_eq!(n.children[0].binder, Some(BinderKind::Default));
    assert_eq!(
        n.children[1].children[0].scope,
        n.children[0].children[0].scope
    );
}

#[test]
fn subtype() {
    // `{ x // 0 < x }` (core's `Subtype`): `x` binds in the predicate.
    let v = tag(
        "/",
        app(vec![
            text("{ "),
            tag("/", text("x")),
            text(" // "),
            tag(
                "/1/1",
                app(vec![
                    tag("/1/1/0/1", text("0")),
                    text(" < "),
                    tag("/1/1/1", text("x")),
                ]),
            ),
            text(" }"),
        ]),
    );
    let n = build(v);
    assert_eq!(n.label, "{ _ // _ }");
    assert_eq!(
        n.children[1].children[1].scope,
        n.children[0].children[0].scope
    );
}

#[test]
fn whitespace_and_line_breaks_in_labels() {
    let v = tag(
        "/",
        app(vec![
            text("Nat.gcd\n    "),
            tag("/0/1", text("a")),
            text("  "),
            tag("/1", text("b")),
        ]),
    );
    assert_eq!(build(v).label, "Nat.gcd _ _");
}
