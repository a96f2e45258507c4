//! Operator trees: leanpool's own format and GTED's.
//!
//! An operator tree has one node per operator application, labelled with
//! the operator's notation and `_` for each argument slot (`_ + _`,
//! `∀ _, _`, `Nat.gcd _ _`), and leaves for atoms. Parentheses do not
//! appear. Bound variables carry a `scope` id (unique per binder within one
//! tree, numbered in pre-order) so that renamings can be compared as a
//! bijection.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};

/// What kind of node this is; decides which renamings are free in GTED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An operator application or other inner node.
    Op,
    /// A constant, literal, or other atom.
    Atom,
    /// An occurrence (or the binding site) of a bound variable.
    BoundVar,
    /// The name of a hypothesis binder (a binder whose type is a `Prop`).
    Hypothesis,
}

/// Binder kinds (Lean's `BinderInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinderKind {
    /// Explicit: `(x : T)`.
    Default,
    /// Implicit: `{x : T}`.
    Implicit,
    /// Strict implicit: `⦃x : T⦄`.
    StrictImplicit,
    /// Instance implicit: `[inst : C]`.
    InstImplicit,
}

/// One node of leanpool's operator tree (the format `opt` answers with).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Node {
    /// The operator's notation with `_` per argument slot (`_ + _`), or
    /// the atom's / variable's text.
    pub label: String,
    /// What the node is; decides which renamings are free.
    pub kind: NodeKind,
    /// For `BoundVar`/`Hypothesis` nodes: the id of the binder they refer to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
    /// For binder nodes: the binder kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binder: Option<BinderKind>,
    /// The argument subtrees, in slot order (absent in the JSON when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

impl Node {
    /// An operator node ([`NodeKind::Op`]) over `children`.
    pub fn op(label: impl Into<String>, children: Vec<Node>) -> Self {
        Node {
            label: label.into(),
            kind: NodeKind::Op,
            scope: None,
            binder: None,
            children,
        }
    }
    /// A leaf atom ([`NodeKind::Atom`]).
    pub fn atom(label: impl Into<String>) -> Self {
        Node {
            label: label.into(),
            kind: NodeKind::Atom,
            scope: None,
            binder: None,
            children: vec![],
        }
    }
    /// A leaf occurrence of the bound variable whose binder has id `scope`.
    pub fn bound(label: impl Into<String>, scope: u32) -> Self {
        Node {
            label: label.into(),
            kind: NodeKind::BoundVar,
            scope: Some(scope),
            binder: None,
            children: vec![],
        }
    }
    /// Number of nodes, root included.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(Node::size).sum::<usize>()
    }
}

/// GTED's tree format (`ast/*.json` in the paper's data), kept so that
/// existing tooling can read our trees and we can read theirs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GtedNode {
    /// The node's label (GTED's name for [`Node::label`]).
    pub content: String,
    /// The argument subtrees, in slot order.
    #[serde(default)]
    pub children: Vec<GtedNode>,
    /// A variable: in the paper's costs, renaming it to another variable
    /// is free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub variable_freecost: bool,
    /// A hypothesis name: renaming it to another hypothesis name is free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hypothesis_freecost: bool,
}

impl From<&Node> for GtedNode {
    fn from(n: &Node) -> Self {
        GtedNode {
            content: n.label.clone(),
            children: n.children.iter().map(GtedNode::from).collect(),
            variable_freecost: n.kind == NodeKind::BoundVar,
            hypothesis_freecost: n.kind == NodeKind::Hypothesis,
        }
    }
}
