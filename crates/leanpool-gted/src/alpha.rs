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
//! Candidates are priced in a preference order (same name, then similar
//! number of occurrences); a child whose bound equals its parent's cannot
//! be beaten by a sibling and is entered at once, before the siblings are
//! priced; the others are entered in order of their bound (best first).
//! Subtrees whose bound is not below the best complete value are cut, and
//! the search stops as soon as a complete assignment reaches the root's
//! bound (the paper-like relaxation where all variables are
//! interchangeable). That is the common case: a prediction that renamed its
//! variables consistently is settled on the first descent, with about one
//! TED evaluation per class when the preference order guesses right and at
//! most `Σ_k (q - k)` when it does not.
//!
//! # Complexity and fallback
//!
//! Each node costs one TED (`O(nm·min(depth,leaves)²)`, see [`mod@crate::ted`]).
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
    solver: &'s mut TedSolver<'t>,
    order: Vec<(NameKind, u32)>,
    /// Per depth: the candidate classes of `B` in preference order.
    prefs: Vec<Vec<u32>>,
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
        let mut options: Vec<Slot> = self.prefs[depth]
            .iter()
            .filter(|&&d| !self.cost.is_taken(kind, d))
            .map(|&d| Slot::To(d))
            .collect();
        if self.slack[kind as usize] > 0 {
            options.push(Slot::Unmatched);
        }
        let mut pending = Vec::with_capacity(options.len());
        for slot in options {
            if self.stop() {
                break;
            }
            self.cost.set(kind, c, slot);
            let child = self.solver.distance(&self.cost).max(bound);
            if child <= bound {
                // No sibling can do better than its parent's bound: go down
                // at once, before pricing the siblings (often never needed).
                self.descend(depth, kind, c, slot, child);
            } else {
                pending.push((child, slot));
            }
        }
        // Stable: equal bounds keep the preference order, for determinism.
        pending.sort_by(|x, y| x.0.total_cmp(&y.0));
        for (child, slot) in pending {
            if self.stop() {
                break;
            }
            self.descend(depth, kind, c, slot, child);
        }
        self.cost.set(kind, c, Slot::Open);
    }

    fn descend(&mut self, depth: usize, kind: NameKind, c: u32, slot: Slot, bound: f64) {
        self.cost.set(kind, c, slot);
        let k = kind as usize;
        if slot == Slot::Unmatched {
            self.slack[k] -= 1;
        }
        self.dfs(depth + 1, bound);
        if slot == Slot::Unmatched {
            self.slack[k] += 1;
        }
    }

    /// Settled, or out of budget with an answer in hand.
    fn stop(&mut self) -> bool {
        if self.done() {
            return true;
        }
        if self.best.is_finite() && self.solver.evaluations() >= self.max_evaluations {
            self.cut = true;
        }
        self.cut
    }
}

/// The name a class first appears with, per kind and class.
fn class_names(t: &OpTree, kind: NameKind) -> Vec<&str> {
    let mut names = vec![""; t.classes(kind) as usize];
    for n in t.nodes().iter().rev() {
        if let Some(bn) = n.bound.filter(|bn| bn.kind == kind) {
            names[bn.class as usize] = &n.label;
        }
    }
    names
}

/// Candidate classes of `b` for class `c` of `a`, most promising first: same
/// name, then closest number of occurrences. Only an ordering heuristic (it
/// decides how soon a good assignment is found, never what is optimal).
fn preferences(a: &OpTree, b: &OpTree, kind: NameKind, c: u32) -> Vec<u32> {
    let (na, nb) = (class_names(a, kind), class_names(b, kind));
    let (sa, sb) = (a.class_sizes(kind), b.class_sizes(kind));
    let mut ds: Vec<u32> = (0..b.classes(kind)).collect();
    ds.sort_by_key(|&d| {
        (
            na[c as usize] != nb[d as usize],
            sa[c as usize].abs_diff(sb[d as usize]),
            d,
        )
    });
    ds
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
        solver: &mut solver,
        prefs: order
            .iter()
            .map(|&(k, c, _)| preferences(a, b, k, c))
            .collect(),
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
