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
//! `O(n)`: `cost(v) = min_d |F_v| · K_d(G) + Σ_{u hanging off path_d(v)}
//! cost(u)`. Both roles are tried (paths in `A`, or in `B` with the costs
//! transposed) and the cheaper one is run. This is RTED's optimal-strategy
//! idea restricted to left and right paths (no heavy paths, which need a
//! different single-path function).

use crate::layout::{Layout, L, R};
use crate::tree::OpTree;

/// What to run: single-path passes `(node of F in arena, orientation)` in
/// an order where every pass comes after the passes of the subtrees
/// hanging off its path.
pub(crate) struct Plan {
    pub steps: Vec<(usize, usize)>,
    /// DP cells the plan fills.
    pub work: u64,
}

/// The cheapest plan with paths in `f`, `g` decomposed by key roots.
/// `dirs` are the orientations allowed (`[L]` gives Zhang–Shasha).
pub(crate) fn plan(f: &OpTree, g: &Layout, dirs: &[usize]) -> Plan {
    let n = f.len();
    let k = [g.post[L].keyroot_work(), g.post[R].keyroot_work()];
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
        for &d in dirs {
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
            let cost = size[v] * k[d] + h;
            if cost < best[v] {
                best[v] = cost;
                choice[v] = d;
            }
        }
    }
    let mut steps = Vec::new();
    emit(f, 0, &choice, &mut steps);
    Plan {
        steps,
        work: best[0],
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
