//! Alpha mode on hand-made statements: what it is for.

mod common;

use leanpool_gted::{
    alpha_distance, score, Algorithm, AlphaOptions, Mode, OpTree, Options, UnitCost,
};
use leanpool_protocol::Node;
use serde_json::json;

/// `theorem (x : ℝ) (y : ℝ) : body`, leanpool format, binders scoped 0, 1.
fn stmt(body: Node) -> OpTree {
    let binder =
        |name: &str, scope| Node::op(" _ : _ ", vec![Node::bound(name, scope), Node::atom("ℝ")]);
    OpTree::from_node(&Node::op(
        "theorem",
        vec![binder("x", 0), binder("y", 1), body],
    ))
}

fn sub(a: Node, b: Node) -> Node {
    Node::op(" _ - _ ", vec![a, b])
}

fn d(a: &OpTree, b: &OpTree, mode: Mode) -> f64 {
    score(a, b, mode, &Options::default()).distance
}

#[test]
fn swapped_variables_are_not_a_perfect_match() {
    let xy = stmt(sub(Node::bound("x", 0), Node::bound("y", 1)));
    let yx = stmt(sub(Node::bound("y", 1), Node::bound("x", 0)));
    assert_eq!(d(&xy, &yx, Mode::Paper), 0.0, "the paper's flaw");
    assert_eq!(d(&xy, &yx, Mode::Alpha), 2.0);
    assert_eq!(d(&xy, &yx, Mode::Alpha), common::brute_alpha(&xy, &yx));
}

#[test]
fn consistent_renaming_is_free() {
    let xy = stmt(sub(Node::bound("x", 0), Node::bound("y", 1)));
    // Same statement with binders called a, b.
    let binder =
        |name: &str, scope| Node::op(" _ : _ ", vec![Node::bound(name, scope), Node::atom("ℝ")]);
    let ab = OpTree::from_node(&Node::op(
        "theorem",
        vec![
            binder("a", 0),
            binder("b", 1),
            sub(Node::bound("a", 0), Node::bound("b", 1)),
        ],
    ));
    assert_eq!(d(&xy, &ab, Mode::Alpha), 0.0);
    assert_eq!(d(&xy, &ab, Mode::Plain), 4.0);
}

/// Shadowing: two binders named `x` are different variables in leanpool's
/// format (by scope), the same one in GTED's (by name).
#[test]
fn scopes_decide_identity_in_leanpool_format() {
    let shadow = OpTree::from_node(&Node::op(
        "f",
        vec![
            Node::bound("x", 0),
            Node::bound("x", 1),
            Node::bound("x", 0),
        ],
    ));
    let same = OpTree::from_node(&Node::op(
        "f",
        vec![
            Node::bound("x", 0),
            Node::bound("x", 0),
            Node::bound("x", 0),
        ],
    ));
    assert_eq!(d(&shadow, &same, Mode::Alpha), 1.0);
    assert_eq!(d(&shadow, &same, Mode::Paper), 0.0);
    let g = |v: serde_json::Value| OpTree::from_json(&v).unwrap();
    let leaf = json!({"content": "x", "variable_freecost": true});
    let by_name = g(json!({"content": "f", "children": [leaf, leaf, leaf]}));
    assert_eq!(d(&by_name, &same, Mode::Alpha), 0.0);
}

/// A bound `x` is not the constant `x` in alpha mode (the paper's equal-label
/// rule makes it free), which is also why paper mode is not a metric.
#[test]
fn bound_name_is_not_a_constant_and_paper_breaks_the_triangle() {
    let g = |v: serde_json::Value| OpTree::from_json(&v).unwrap();
    let bound_x = g(json!({"content": "x", "variable_freecost": true}));
    let bound_y = g(json!({"content": "y", "variable_freecost": true}));
    let const_x = g(json!({"content": "x"}));
    assert_eq!(d(&bound_x, &const_x, Mode::Alpha), 1.0);
    assert_eq!(d(&bound_x, &const_x, Mode::Paper), 0.0);
    assert_eq!(d(&bound_y, &bound_x, Mode::Paper), 0.0);
    assert_eq!(d(&bound_y, &const_x, Mode::Paper), 1.0, "0 + 0 < 1");
    assert_eq!(
        leanpool_gted::ted(&bound_y, &const_x, &UnitCost, Algorithm::Lr),
        1.0
    );
}

/// More binders than the search can afford: it still answers, says the
/// answer is only an upper bound, and the bound is a real one.
#[test]
fn capped_search_reports_an_upper_bound() {
    // 8 variables permuted by a derangement, with binding sites in order:
    // no assignment is free everywhere.
    let n = 8u32;
    let mk = |perm: &dyn Fn(u32) -> u32| {
        let mut kids: Vec<Node> = (0..n)
            .map(|i| Node::op("bind", vec![Node::bound(format!("v{i}"), i)]))
            .collect();
        kids.extend((0..n).map(|i| {
            Node::op(
                format!("g{i}"),
                vec![Node::bound(format!("v{}", perm(i)), perm(i))],
            )
        }));
        OpTree::from_node(&Node::op("theorem", kids))
    };
    let a = mk(&|i| i);
    let b = mk(&|i| (i * 3 + 1) % n);
    let full = alpha_distance(&a, &b, Algorithm::Lr, &AlphaOptions::default());
    assert!(full.exact);
    let capped = alpha_distance(&a, &b, Algorithm::Lr, &AlphaOptions { max_evaluations: 1 });
    assert!(capped.distance >= full.distance);
    assert!(capped.lower_bound <= full.distance);
    assert_eq!(capped.exact, capped.distance == capped.lower_bound);
    assert!(
        !capped.exact,
        "this instance should not be settled by the first descent"
    );
}
