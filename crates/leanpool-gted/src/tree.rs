//! The tree the metric works on, read from either tree format.
//!
//! Both wire formats (`leanpool_protocol::Node` with `label`/`kind`/`scope`,
//! and GTED's `GtedNode` with `content` and the two `*_freecost` flags) are
//! converted into one arena tree so that every algorithm in this crate is
//! written once. What the metric needs from a node is its label and whether
//! it is a bound name; bound names are grouped into *classes* (one class per
//! binder), which alpha mode matches up between the two trees.

use leanpool_protocol::{GtedNode, Node, NodeKind};
use std::collections::HashMap;

/// Which of GTED's two kinds of bound name a node is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// A bound variable (GTED's `variable_freecost`).
    Var,
    /// A hypothesis name (GTED's `hypothesis_freecost`).
    Hyp,
}

/// A bound name: its kind and its class, i.e. the binder it refers to.
/// Class ids are dense per tree and per kind (`0..classes(kind)`), numbered
/// in pre-order of first occurrence, so they are deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoundName {
    /// A bound variable or a hypothesis name.
    pub kind: NameKind,
    /// The binder it refers to, numbered per tree and kind.
    pub class: u32,
}

/// One node of an [`OpTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// The node's operator or name.
    pub label: String,
    /// `Some` for bound variables and hypothesis names.
    pub bound: Option<BoundName>,
    /// Arena indices of the children, in order.
    pub children: Vec<usize>,
}

/// An ordered labelled tree in an arena; node 0 is the root and nodes are
/// stored in pre-order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpTree {
    nodes: Vec<TreeNode>,
    /// A hash of each label: cost models compare labels `n × m` times per
    /// distance, and almost all of those are unequal; see [`OpTree::same_label`].
    hashes: Vec<u64>,
    var_classes: u32,
    hyp_classes: u32,
}

/// Errors from reading a tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("tree JSON must be an object with a `content` (GTED format) or `label` (leanpool format) key")]
    /// Neither GTED's format nor leanpool's.
    UnknownFormat,
    #[error("invalid tree JSON: {0}")]
    /// Not JSON of a tree.
    Json(#[from] serde_json::Error),
}

impl OpTree {
    /// Reads a tree in either format: an object with a `content` key is
    /// GTED's format, one with a `label` key is leanpool's.
    pub fn from_json(v: &serde_json::Value) -> Result<OpTree, TreeError> {
        let obj = v.as_object().ok_or(TreeError::UnknownFormat)?;
        if obj.contains_key("content") {
            let g: GtedNode = serde_json::from_value(v.clone())?;
            Ok(OpTree::from_gted(&g))
        } else if obj.contains_key("label") {
            let n: Node = serde_json::from_value(v.clone())?;
            Ok(OpTree::from_node(&n))
        } else {
            Err(TreeError::UnknownFormat)
        }
    }

    /// Parses JSON text, then [`OpTree::from_json`].
    pub fn from_json_str(s: &str) -> Result<OpTree, TreeError> {
        OpTree::from_json(&serde_json::from_str(s)?)
    }

    /// GTED format. GTED trees carry no binder identity, so leaves flagged
    /// `variable_freecost` with equal `content` are taken to be the same
    /// variable (likewise for hypotheses). A node with both flags counts as
    /// a variable.
    pub fn from_gted(root: &GtedNode) -> OpTree {
        let mut b = Builder::default();
        b.add_gted(root);
        b.finish()
    }

    /// leanpool format. Bound variables and hypotheses are identified by
    /// their `scope` (the binder), so two different binders that happen to
    /// use the same name are different variables; a bound node without a
    /// scope falls back to its label.
    pub fn from_node(root: &Node) -> OpTree {
        let mut b = Builder::default();
        b.add_node(root);
        b.finish()
    }

    /// Builds a tree directly (tests, generators). Class ids should be dense
    /// per kind: the number of classes is taken as the largest id + 1.
    pub fn from_nodes(nodes: Vec<TreeNode>) -> OpTree {
        assert!(!nodes.is_empty(), "a tree has a root");
        let mut counts = [0u32; 2];
        for n in &nodes {
            if let Some(bn) = n.bound {
                let k = bn.kind as usize;
                counts[k] = counts[k].max(bn.class + 1);
            }
        }
        OpTree::with_classes(nodes, counts)
    }

    fn with_classes(nodes: Vec<TreeNode>, counts: [u32; 2]) -> OpTree {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let h = BuildHasherDefault::<DefaultHasher>::default();
        let hashes = nodes.iter().map(|n| h.hash_one(&n.label)).collect();
        OpTree {
            nodes,
            hashes,
            var_classes: counts[0],
            hyp_classes: counts[1],
        }
    }

    /// Whether node `i` of this tree and node `j` of `other` have equal
    /// labels (hashes first, so unequal labels are rejected without
    /// comparing the strings).
    #[inline]
    pub fn same_label(&self, i: usize, other: &OpTree, j: usize) -> bool {
        self.hashes[i] == other.hashes[j] && self.nodes[i].label == other.nodes[j].label
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i` (pre-order index; 0 is the root).
    pub fn node(&self, i: usize) -> &TreeNode {
        &self.nodes[i]
    }

    /// All nodes in pre-order.
    pub fn nodes(&self) -> &[TreeNode] {
        &self.nodes
    }

    /// Number of bound-name classes of a kind.
    pub fn classes(&self, kind: NameKind) -> u32 {
        match kind {
            NameKind::Var => self.var_classes,
            NameKind::Hyp => self.hyp_classes,
        }
    }

    /// Number of nodes in each class of a kind (index = class id).
    pub fn class_sizes(&self, kind: NameKind) -> Vec<usize> {
        let mut v = vec![0; self.classes(kind) as usize];
        for n in &self.nodes {
            if let Some(bn) = n.bound.filter(|bn| bn.kind == kind) {
                v[bn.class as usize] += 1;
            }
        }
        v
    }

    /// The same tree with every node's children reversed. Tree edit
    /// distance is invariant under mirroring both trees, which is how the
    /// right-path strategy reuses the left-path code.
    pub fn mirrored(&self) -> OpTree {
        let mut t = self.clone();
        for n in &mut t.nodes {
            n.children.reverse();
        }
        t
    }

    /// Back to GTED's format (bound names lose their class, as in GTED).
    pub fn to_gted(&self) -> GtedNode {
        fn go(t: &OpTree, i: usize) -> GtedNode {
            let n = &t.nodes[i];
            GtedNode {
                content: n.label.clone(),
                children: n.children.iter().map(|&c| go(t, c)).collect(),
                variable_freecost: matches!(
                    n.bound,
                    Some(BoundName {
                        kind: NameKind::Var,
                        ..
                    })
                ),
                hypothesis_freecost: matches!(
                    n.bound,
                    Some(BoundName {
                        kind: NameKind::Hyp,
                        ..
                    })
                ),
            }
        }
        go(self, 0)
    }
}

/// Assigns arena slots in pre-order and dense class ids per kind.
#[derive(Default)]
struct Builder {
    nodes: Vec<TreeNode>,
    classes: [HashMap<String, u32>; 2],
}

impl Builder {
    fn class(&mut self, kind: NameKind, key: String) -> BoundName {
        let map = &mut self.classes[kind as usize];
        let next = map.len() as u32;
        let class = *map.entry(key).or_insert(next);
        BoundName { kind, class }
    }

    fn push(&mut self, label: &str, bound: Option<BoundName>) -> usize {
        self.nodes.push(TreeNode {
            label: label.to_string(),
            bound,
            children: vec![],
        });
        self.nodes.len() - 1
    }

    fn add_gted(&mut self, g: &GtedNode) -> usize {
        let bound = if g.variable_freecost {
            Some(self.class(NameKind::Var, g.content.clone()))
        } else if g.hypothesis_freecost {
            Some(self.class(NameKind::Hyp, g.content.clone()))
        } else {
            None
        };
        let me = self.push(&g.content, bound);
        for c in &g.children {
            let ci = self.add_gted(c);
            self.nodes[me].children.push(ci);
        }
        me
    }

    fn add_node(&mut self, n: &Node) -> usize {
        let key = || match n.scope {
            Some(s) => format!("scope:{s}"),
            None => format!("name:{}", n.label),
        };
        let bound = match n.kind {
            NodeKind::BoundVar => Some(self.class(NameKind::Var, key())),
            NodeKind::Hypothesis => Some(self.class(NameKind::Hyp, key())),
            NodeKind::Op | NodeKind::Atom => None,
        };
        let me = self.push(&n.label, bound);
        for c in &n.children {
            let ci = self.add_node(c);
            self.nodes[me].children.push(ci);
        }
        me
    }

    fn finish(self) -> OpTree {
        let counts = [self.classes[0].len() as u32, self.classes[1].len() as u32];
        OpTree::with_classes(self.nodes, counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gted_format_groups_variables_by_content() {
        let t = OpTree::from_json(&json!({"content": " _ - _ ", "children": [
            {"content": "x", "variable_freecost": true},
            {"content": "y", "variable_freecost": true},
            {"content": "x", "variable_freecost": true},
            {"content": "h", "hypothesis_freecost": true}]}))
        .unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(t.classes(NameKind::Var), 2);
        assert_eq!(t.classes(NameKind::Hyp), 1);
        assert_eq!(t.node(1).bound, t.node(3).bound);
        assert_ne!(t.node(1).bound, t.node(2).bound);
        assert_eq!(t.class_sizes(NameKind::Var), vec![2, 1]);
    }

    #[test]
    fn leanpool_format_groups_variables_by_scope_not_name() {
        let t = OpTree::from_node(&Node::op(
            "_ + _",
            vec![
                Node::bound("x", 0),
                Node::bound("x", 1),
                Node::bound("y", 0),
            ],
        ));
        assert_eq!(t.classes(NameKind::Var), 2);
        assert_eq!(t.node(1).bound, t.node(3).bound);
        assert_ne!(t.node(1).bound, t.node(2).bound);
        let j = serde_json::to_value(Node::op("f", vec![Node::atom("a")])).unwrap();
        assert_eq!(OpTree::from_json(&j).unwrap().len(), 2);
    }

    #[test]
    fn unknown_format_is_an_error() {
        assert!(matches!(
            OpTree::from_json(&json!({"name": "x"})),
            Err(TreeError::UnknownFormat)
        ));
        assert!(matches!(
            OpTree::from_json(&json!([1])),
            Err(TreeError::UnknownFormat)
        ));
        assert!(matches!(
            OpTree::from_json(&json!({"content": 3})),
            Err(TreeError::Json(_))
        ));
    }

    #[test]
    fn gted_round_trip() {
        let g: GtedNode = serde_json::from_value(json!({"content": "theorem", "children": [
            {"content": "x", "variable_freecost": true}, {"content": "h", "hypothesis_freecost": true}]}))
        .unwrap();
        assert_eq!(OpTree::from_gted(&g).to_gted(), g);
    }
}
