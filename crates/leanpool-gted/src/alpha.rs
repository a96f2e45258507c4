//! Alpha mode: tree edit distance up to a consistent renaming of binders.
//!
//! # Definition
//!
//! Let `A` and `B` have bound-name classes (one per binder; see
//! [`crate::tree`]) of two kinds, variables and hypotheses. An *assignment*
//! `σ` is an injective partial map from `A`'s classes to `B`'s classes of
//! the same kind. Under `σ` a bound node of class `c` renames freely to a
//! bound node of class `d` iff `σ(c) = d` ([`AlphaCost`]). The alpha
//! distance is
//!
//! `d_α(A, B) = min_σ TED_σ(A, B)`.
//!
//! So `x - y` vs `y - x` (with binders for `x` and `y`) is not a perfect
//! match: matching `x↦x, y↦y` costs the two swapped leaves, `x↦y, y↦x`
//! costs the two binding sites. Extending `σ` only lowers costs, so the
//! minimum is attained by a maximal assignment (`min(p, q)` pairs per kind);
//! only those are searched. `d_α` is symmetric, and it is a metric on trees
//! up to renaming of binders (compose the assignments and the edit mappings
//! for the triangle inequality; the tests check it).
//!
//! # Algorithm: branch and bound over assignments
//!
//! Classes of `A` are decided one at a time, the most frequent first; a
//! class is matched to a free class of `B` or, when `A` has more classes of
//! that kind than `B` and the surplus is not yet used, left unmatched. The
//! bound of a partial assignment is the exact TED under the *relaxed* costs
//! in which undecided classes rename freely to any still-free class
//! ([`Slot::Open`]); every completion has pointwise higher costs, so this is
//! a valid lower bound, and at a complete assignment it is the exact value.
//! Children are explored in order of their bound (best first), subtrees
//! whose bound is not below the best complete value are cut, and the search
//! stops as soon as a complete assignment reaches the root's bound (the
//! paper-like relaxation where all variables are interchangeable), which is
//! the common case: a prediction that renamed its variables consistently is
//! settled on the first descent with `Σ (q - k)` TED evaluations.
//!
//! # Complexity and fallback
//!
//! Each node costs one TED (`O(nm·min(depth,leaves)²)`, see [`crate::ted`]).
//! Without pruning the search tree has `Σ_k q!/(q-k)!` nodes for `p ≤ q`
//! classes, which is fine for the ~≤10 binders of a typical statement but
//! not in general (the problem contains graph matching). The search is
//! therefore capped at [`AlphaOptions::max_evaluations`] TED evaluations;
//! the first descent always completes (so there is always an answer), and
//! if the cap cuts the search the result is the best assignment found — an
//! upper bound on `d_α`, reported with `exact = false`, together with the
//! root bound, which is a proven lower bound.

use crate::cost::{AlphaCost, Slot};
use crate::ted::{Algorithm, TedSolver};
use crate::tree::{NameKind, OpTree};

/// Limits of the assignment search.
#[derive(Debug, Clone, Copy)]
pub struct AlphaOptions {
    /// TED evaluations after which the search stops with the best
    /// assignment found so far (never before one is found).
    pub max_evaluations: u64,
}

impl Default for AlphaOptions {
    fn default() -> Self {
        AlphaOptions {
            max_evaluations: 20_000,
        }
    }
}

/// The result of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct AlphaOutcome {
    /// `d_α` if `exact`, else an upper bound on it.
    pub distance: f64,
    /// A proven lower bound on `d_α` (equal to `distance` when `exact`).
    pub lower_bound: f64,
    /// Whether the search finished (the distance is the minimum).
    pub exact: bool,
    /// TED evaluations spent.
    pub evaluations: u64,
    /// The best assignment: `(kind, class in A, class in B)`.
    pub matching: Vec<(NameKind, u32, u32)>,
}

const KINDS: [NameKind; 2] = [NameKind::Var, NameKind::Hyp];

struct Search<'s, 't> {
    b: &'t OpTree,
    solver: &'s mut TedSolver<'t>,
    order: Vec<(NameKind, u32)>,
    /// Per kind: how many classes of `A` may still be left unmatched.
    slack: [u32; 2],
    cost: AlphaCost,
    best: f64,
    best_cost: Option<AlphaCost>,
    root_bound: f64,
    max_evaluations: u64,
    cut: bool,
}

impl Search<'_, '_> {
    fn done(&self) -> bool {
        self.best <= self.root_bound
    }

    fn dfs(&mut self, depth: usize, bound: f64) {
        if bound >= self.best || self.done() {
            return;
        }
        let Some(&(kind, c)) = self.order.get(depth) else {
            // Complete: no open slot left, so the bound is the exact value.
            self.best = bound;
            self.best_cost = Some(self.cost.clone());
            return;
        };
        let k = kind as usize;
        let mut options: Vec<Slot> = (0..self.b.classes(kind))
            .filter(|&d| !self.cost.is_taken(kind, d))
            .map(Slot::To)
            .collect();
        if self.slack[k] > 0 {
            options.push(Slot::Unmatched);
        }
        let mut children = Vec::with_capacity(options.len());
        for slot in options {
            if self.best.is_finite() && self.solver.evaluations() >= self.max_evaluations {
                self.cut = true;
                break;
            }
            self.cost.set(kind, c, slot);
            let child = self.solver.distance(&self.cost).max(bound);
            children.push((child, slot));
        }
        // Stable: equal bounds keep the class order, for determinism.
        children.sort_by(|x, y| x.0.total_cmp(&y.0));
        for (child, slot) in children {
            if self.cut && self.best.is_finite() {
                break;
            }
            self.cost.set(kind, c, slot);
            if slot == Slot::Unmatched {
                self.slack[k] -= 1;
            }
            self.dfs(depth + 1, child);
            if slot == Slot::Unmatched {
                self.slack[k] += 1;
            }
        }
        self.cost.set(kind, c, Slot::Open);
    }
}

/// `d_α(a, b)` by branch and bound (see the module docs).
pub fn alpha_distance(a: &OpTree, b: &OpTree, alg: Algorithm, opts: &AlphaOptions) -> AlphaOutcome {
    let mut solver = TedSolver::new(a, b, alg);
    let mut cost = AlphaCost::open(a, b);
    let mut order = vec![];
    let mut slack = [0u32; 2];
    for kind in KINDS {
        let (p, q) = (a.classes(kind), b.classes(kind));
        if q == 0 {
            // Nothing to match to: decided, not searched.
            for c in 0..p {
                cost.set(kind, c, Slot::Unmatched);
            }
            continue;
        }
        slack[kind as usize] = p.saturating_sub(q);
        let sizes = a.class_sizes(kind);
        order.extend((0..p).map(|c| (kind, c, sizes[c as usize])));
    }
    // Most frequent classes first: they move the bound the most.
    let mut order: Vec<(NameKind, u32, usize)> = order;
    order.sort_by_key(|x| std::cmp::Reverse(x.2));
    let root_bound = solver.distance(&cost);
    let mut s = Search {
        b,
        solver: &mut solver,
        order: order.into_iter().map(|(k, c, _)| (k, c)).collect(),
        slack,
        cost,
        best: f64::INFINITY,
        best_cost: None,
        root_bound,
        max_evaluations: opts.max_evaluations,
        cut: false,
    };
    s.dfs(0, root_bound);
    let exact = !s.cut || s.done();
    let best_cost = s
        .best_cost
        .take()
        .expect("the first descent always completes");
    let mut matching = vec![];
    for kind in KINDS {
        for c in 0..a.classes(kind) {
            if let Slot::To(d) = best_cost.slot(kind, c) {
                matching.push((kind, c, d));
            }
        }
    }
    AlphaOutcome {
        distance: s.best,
        lower_bound: if exact { s.best } else { root_bound },
        exact,
        evaluations: solver.evaluations(),
        matching,
    }
}
