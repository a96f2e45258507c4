//! Edit costs, pluggable.
//!
//! A [`CostModel`] prices deleting a node of the first tree, inserting a node
//! of the second, and renaming (relabelling) one into the other. The
//! algorithms only ever see these prices, so paper mode, alpha mode and plain
//! unit costs differ only here.

use crate::tree::{BoundName, NameKind, OpTree};

/// Prices of the three edit operations. Nodes are arena indices.
pub trait CostModel {
    /// Deleting a node of `a`; 1 unless a model says otherwise (every
    /// model of GTED's modes prices insert and delete at 1).
    fn delete(&self, _a: &OpTree, _i: usize) -> f64 {
        1.0
    }
    /// Inserting a node of `b`; 1 unless a model says otherwise.
    fn insert(&self, _b: &OpTree, _j: usize) -> f64 {
        1.0
    }
    /// Renaming node `i` of `a` into node `j` of `b` (0 for equal labels
    /// under the model).
    fn rename(&self, a: &OpTree, i: usize, b: &OpTree, j: usize) -> f64;
}

/// Unit costs, rename free iff the labels are equal. Bound names are just
/// labels here: plain textbook tree edit distance.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitCost;

impl CostModel for UnitCost {
    fn rename(&self, a: &OpTree, i: usize, b: &OpTree, j: usize) -> f64 {
        if a.same_label(i, b, j) {
            0.0
        } else {
            1.0
        }
    }
}

/// The GTED paper's costs: unit costs, and renaming is free when the labels
/// are equal, or when both nodes are variables, or both are hypotheses —
/// *whatever* they are renamed to. So every occurrence of `x` may match a
/// different variable, and `x - y` vs `y - x` is a perfect match.
///
/// Not a metric: a variable `x` renames freely to a variable `y` and, by
/// equal labels, to a constant `x`, but `y` to constant `x` costs 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct PaperCost;

impl CostModel for PaperCost {
    fn rename(&self, a: &OpTree, i: usize, b: &OpTree, j: usize) -> f64 {
        let (x, y) = (a.node(i), b.node(j));
        let same_kind = matches!((x.bound, y.bound), (Some(p), Some(q)) if p.kind == q.kind);
        if same_kind || a.same_label(i, b, j) {
            0.0
        } else {
            1.0
        }
    }
}

/// What a class of the first tree is matched to, in a (possibly partial)
/// assignment of bound-name classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Not decided yet: optimistically free against any class of the second
    /// tree that is still available (used for lower bounds).
    Open,
    /// Decided to match nothing: renames to or from it cost 1.
    Unmatched,
    /// Matched to this class of the second tree.
    To(u32),
}

/// Alpha-equivalence costs: unit costs; two non-bound nodes rename freely
/// iff their labels are equal; two bound names rename freely iff their
/// classes are matched by the assignment (a bijection between the two
/// trees' binders, per kind). A bound name never renames freely to a
/// non-bound node, whatever the labels: a bound `x` is not the constant `x`.
///
/// With an assignment that still has [`Slot::Open`] classes, the costs are
/// a relaxation: an open class renames freely to any class of the second
/// tree that no class is matched to yet. Every completion of the assignment
/// has pointwise higher-or-equal costs, so its distance is a lower bound for
/// all completions (tree edit distance is monotone in the costs).
#[derive(Debug, Clone)]
pub struct AlphaCost {
    /// Per kind (index `NameKind as usize`), the slot of each class of `a`.
    slots: [Vec<Slot>; 2],
    /// Per kind, whether each class of `b` is the target of some slot.
    taken: [Vec<bool>; 2],
}

impl AlphaCost {
    /// Everything open: the root of the search.
    pub fn open(a: &OpTree, b: &OpTree) -> AlphaCost {
        let k = |kind| (a.classes(kind) as usize, b.classes(kind) as usize);
        let ((av, bv), (ah, bh)) = (k(NameKind::Var), k(NameKind::Hyp));
        AlphaCost {
            slots: [vec![Slot::Open; av], vec![Slot::Open; ah]],
            taken: [vec![false; bv], vec![false; bh]],
        }
    }

    /// A complete assignment from explicit pairs `(class in a, class in b)`
    /// per kind; unlisted classes of `a` are unmatched. Panics if a pair is
    /// out of range or the pairs are not injective.
    pub fn with_matching(a: &OpTree, b: &OpTree, pairs: &[(NameKind, u32, u32)]) -> AlphaCost {
        let mut c = AlphaCost::open(a, b);
        for s in c.slots.iter_mut().flatten() {
            *s = Slot::Unmatched;
        }
        for &(kind, x, y) in pairs {
            assert!(c.slot(kind, x) == Slot::Unmatched, "class {x} listed twice");
            c.set(kind, x, Slot::To(y));
        }
        c
    }

    /// Where `class` of `kind` is mapped.
    pub fn slot(&self, kind: NameKind, class: u32) -> Slot {
        self.slots[kind as usize][class as usize]
    }

    /// Sets a slot, keeping `taken` consistent. Panics on a target that is
    /// already taken (the assignment must stay injective).
    pub fn set(&mut self, kind: NameKind, class: u32, slot: Slot) {
        let k = kind as usize;
        if let Slot::To(old) = self.slots[k][class as usize] {
            self.taken[k][old as usize] = false;
        }
        if let Slot::To(t) = slot {
            assert!(!self.taken[k][t as usize], "target class {t} already taken");
            self.taken[k][t as usize] = true;
        }
        self.slots[k][class as usize] = slot;
    }

    /// Whether target `class` of `kind` is already the image of a class.
    pub fn is_taken(&self, kind: NameKind, class: u32) -> bool {
        self.taken[kind as usize][class as usize]
    }

    fn bound_cost(&self, p: BoundName, q: BoundName) -> f64 {
        if p.kind != q.kind {
            return 1.0;
        }
        let free = match self.slot(p.kind, p.class) {
            Slot::To(t) => t == q.class,
            Slot::Open => !self.is_taken(q.kind, q.class),
            Slot::Unmatched => false,
        };
        if free {
            0.0
        } else {
            1.0
        }
    }
}

impl CostModel for AlphaCost {
    fn rename(&self, a: &OpTree, i: usize, b: &OpTree, j: usize) -> f64 {
        let (x, y) = (a.node(i), b.node(j));
        match (x.bound, y.bound) {
            (None, None) if a.same_label(i, b, j) => 0.0,
            (Some(p), Some(q)) => self.bound_cost(p, q),
            _ => 1.0,
        }
    }
}
