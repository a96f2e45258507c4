//! Path strategies: which path of which subtree the DP decomposes along.
//!
//! The forest-distance DP of Zhang & Shasha computes, for one root-leaf path
//! `γ` of a subtree `F_v` of the first tree, the distances between every
//! subtree rooted on `γ` and every subtree of the second tree `G`, provided
//! the distances of all subtrees *hanging off* `γ` to all of `G` are known
//! (RTED's "single-path function"). Running it for a left path costs
//! `|F_v| · Σ_{k∈KR_L(G)} |G_k|` cells (all of `G` decomposed along left
//! paths), for a right path the same with `G`'s right key roots. A
//! *strategy* picks, recursively for `v` and for every subtree hanging off
//! its path, left or right. Zhang–Shasha is the all-left strategy.
//!
//! The cheapest such strategy is found exactly by a bottom-up DP in
//! `O(n)`: `cost(v) = min_d |F_v| · c_d(G) + Σ_{u hanging off path_d(v)}
//! cost(u)`, where `c_d(G)` is the cells of a pass plus a per-row overhead
//! ([`ROW_CELLS`]). The caller tries both roles (paths in `A`, or in `B`
//! with the costs transposed) and all-left, all-right and mixed plans
//! (mixing has a cost of its own, [`MIX_CELLS`]), and runs the cheapest.
//! This is RTED's optimal-strategy idea restricted to left and right paths
//! (no heavy paths, which need a different single-path function), with a
//! cost model fitted to this kernel rather than a pure subproblem count.

use crate::layout::{Layout, L, R};
use crate::tree::OpTree;

/// What to run: single-path passes `(node of F in arena, orientation)` in
/// an order where every pass comes after the passes of the subtrees
/// hanging off its path.
pub(crate) struct Plan {
    pub steps: Vec<(usize, usize)>,
    /// DP cells the plan fills.
    pub work: u64,
    /// Estimated running time, in cell units (see [`ROW_CELLS`]).
    pub cost: u64,
    /// Whether the plan uses both orientations.
    pub mixed: bool,
}

/// Each DP row (one node of F against one key-root subtree of G) costs
/// about this many cells on top of its cells: slicing, and cold cache lines
/// of the cost and tree-distance rows. Measured on the miniF2F pairs
/// (~26 ns a row vs ~3 ns a cell); it makes the choice prefer long rows.
const ROW_CELLS: u64 = 8;

/// A plan mixing orientations writes each of the `n·m` tree distances into
/// both orientations' tables (a scattered write) and loads the costs twice:
/// about this many cells per pair of nodes, measured likewise.
pub(crate) const MIX_CELLS: u64 = 8;

/// Cost in cell units of one node of F against all of G in orientation `d`.
fn per_node(g: &Layout, d: usize) -> u64 {
    g.post[d].keyroot_work() + ROW_CELLS * g.post[d].keyroots.len() as u64
}

/// The plan that decomposes every subtree of `f` along orientation `d`:
/// Zhang–Shasha for `d = L` (its path tops are `f`'s key roots).
pub(crate) fn pure(f: &OpTree, lf: &Layout, g: &Layout, d: usize) -> Plan {
    let mut steps = Vec::new();
    emit(f, 0, &vec![d; f.len()], &mut steps);
    let sizes = lf.post[d].keyroot_work();
    Plan {
        steps,
        work: sizes * g.post[d].keyroot_work(),
        cost: sizes * per_node(g, d),
        mixed: false,
    }
}

/// The cheapest plan with paths in `f` in either orientation, subtree by
/// subtree; `g` is decomposed by key roots (see the module docs).
pub(crate) fn mixed(f: &OpTree, g: &Layout) -> Plan {
    let n = f.len();
    let cells = [g.post[L].keyroot_work(), g.post[R].keyroot_work()];
    let per_node = [per_node(g, L), per_node(g, R)];
    let mut size = vec![0u64; n];
    let mut best = vec![0u64; n];
    let mut choice = vec![L; n];
    // Σ of best costs of the subtrees hanging off v's path, per orientation.
    let mut hang = [vec![0u64; n], vec![0u64; n]];
    // Arena is pre-order: children come after parents.
    for v in (0..n).rev() {
        let kids = &f.node(v).children;
        size[v] = 1 + kids.iter().map(|&c| size[c]).sum::<u64>();
        best[v] = u64::MAX;
        for d in [L, R] {
            let h = match (kids.first(), kids.last()) {
                (Some(&first), Some(&last)) => {
                    let (next, others) = if d == L {
                        (first, &kids[1..])
                    } else {
                        (last, &kids[..kids.len() - 1])
                    };
                    hang[d][next] + others.iter().map(|&c| best[c]).sum::<u64>()
                }
                _ => 0,
            };
            hang[d][v] = h;
            let cost = size[v] * per_node[d] + h;
            if cost < best[v] {
                best[v] = cost;
                choice[v] = d;
            }
        }
    }
    let mut steps = Vec::new();
    emit(f, 0, &choice, &mut steps);
    let work = steps.iter().map(|&(v, d)| size[v] * cells[d]).sum();
    let mixed = steps.iter().any(|s| s.1 != steps[0].1);
    let cost = best[0]
        + if mixed {
            MIX_CELLS * (n * g.post[L].arena.len()) as u64
        } else {
            0
        };
    Plan {
        steps,
        work,
        cost,
        mixed,
    }
}

/// The cheapest plan of all: paths in `a` or in `b` (`true` = in `b`, with
/// the costs to be transposed), each all-left, all-right or mixed. Ties go
/// to the earlier candidate, so Zhang–Shasha when nothing is cheaper.
pub(crate) fn choose(a: &OpTree, b: &OpTree, la: &Layout, lb: &Layout) -> (bool, Plan) {
    // Costs of the pure plans are closed forms; build only the winner.
    let mut best = (u64::MAX, false, None::<usize>);
    for (swap, (lf, lg)) in [(false, (la, lb)), (true, (lb, la))] {
        for d in [L, R] {
            let cost = lf.post[d].keyroot_work() * per_node(lg, d);
            if cost < best.0 {
                best = (cost, swap, Some(d));
            }
        }
    }
    let mut winner = None;
    for (swap, (f, lg)) in [(false, (a, lb)), (true, (b, la))] {
        let p = mixed(f, lg);
        if p.cost < best.0 {
            best = (p.cost, swap, None);
            winner = Some(p);
        }
    }
    match (best.2, winner) {
        (Some(d), _) => {
            let (f, lf, lg) = if best.1 { (b, lb, la) } else { (a, la, lb) };
            (best.1, pure(f, lf, lg, d))
        }
        (None, Some(p)) => (best.1, p),
        (None, None) => unreachable!("some candidate is finite"),
    }
}

/// Appends the passes for the subtrees hanging off `v`'s chosen path, then
/// `v`'s own pass.
fn emit(f: &OpTree, v: usize, choice: &[usize], steps: &mut Vec<(usize, usize)>) {
    let d = choice[v];
    let mut p = v;
    loop {
        let kids = &f.node(p).children;
        let Some((&first, &last)) = kids.first().zip(kids.last()) else {
            break;
        };
        let (next, others) = if d == L {
            (first, &kids[1..])
        } else {
            (last, &kids[..kids.len() - 1])
        };
        for &u in others {
            emit(f, u, choice, steps);
        }
        p = next;
    }
    steps.push((v, d));
}
