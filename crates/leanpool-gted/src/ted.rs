//! Exact tree edit distance.
//!
//! Two exact algorithms over the same dynamic program (the forest-distance
//! recurrence of Zhang & Shasha, in the private `kernel` module):
//!
//! - [`Algorithm::ZhangShasha`]: Zhang & Shasha (1989), always decomposing
//!   along leftmost paths. Time `O(Σ_{k∈KR(A)} |A_k| · Σ_{l∈KR(B)} |B_l|)`,
//!   at worst `O(n²m²)`, typically `O(nm · min(depth, leaves)²)`; space
//!   `O(nm)`. The baseline.
//! - [`Algorithm::Lr`] (default): per subtree, the left or the right path,
//!   with the paths in whichever tree is cheaper (the private `strategy`
//!   module: RTED's optimal path strategy restricted to left/right paths,
//!   found exactly in `O(n + m)` before running, under a cost model of this
//!   kernel: cells, plus a per-row overhead, plus a penalty for mixing
//!   orientations). Zhang–Shasha in both directions is among the
//!   candidates, so the estimate is never worse than ZS's; on operator
//!   trees, whose big argument is often the last one (`_ → _` chains), it
//!   saves about a third of the cells.
//!
//! Both are exact for any non-negative costs; the tests compare them with a
//! definition-level oracle. A [`TedSolver`] keeps the layout, the plan and
//! the buffers of one pair for repeated evaluations under different costs,
//! which is what alpha mode's search needs.

use crate::cost::CostModel;
use crate::kernel::{ArenaCosts, Dp};
use crate::layout::{Layout, L, R};
use crate::strategy::{self, Plan};
use crate::tree::OpTree;

/// Which exact algorithm to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Zhang–Shasha, leftmost paths only (baseline).
    ZhangShasha,
    /// Optimal left/right path strategy per subtree (main).
    #[default]
    Lr,
}

/// DP cells filled by Zhang–Shasha (all left paths), by the all-right
/// strategy, and by [`Algorithm::Lr`]'s plan. Exposed for the bench.
pub fn strategy_work(a: &OpTree, b: &OpTree) -> (u64, u64, u64) {
    let (la, lb) = (Layout::new(a), Layout::new(b));
    let pure = |d: usize| la.post[d].keyroot_work() * lb.post[d].keyroot_work();
    (pure(L), pure(R), strategy::choose(a, b, &la, &lb).1.work)
}

/// Largest integer cost run on `u32`; with `n + m < 2^15` nodes no sum can
/// overflow (`2^16 · 2^15 < 2^32`).
const INT_COST_MAX: f64 = 65536.0;
const INT_NODES_MAX: usize = 1 << 15;

/// A pair of trees laid out for repeated distance computations with
/// different costs (alpha mode evaluates many assignments on one pair).
pub struct TedSolver<'t> {
    a: &'t OpTree,
    b: &'t OpTree,
    /// The plan decomposes `b` (so internally `b` is the first tree and the
    /// costs are transposed).
    swap: bool,
    /// Layouts of the internal first and second tree.
    la: Layout,
    lb: Layout,
    plan: Plan,
    used: [bool; 2],
    /// Costs in the internal trees' arena order.
    costs: ArenaCosts,
    float: Dp<f64>,
    int: Dp<u32>,
    evaluations: u64,
}

impl<'t> TedSolver<'t> {
    /// A solver for the pair `a`, `b` with algorithm `alg`.
    pub fn new(a: &'t OpTree, b: &'t OpTree, alg: Algorithm) -> TedSolver<'t> {
        let (la, lb) = (Layout::new(a), Layout::new(b));
        let (swap, plan) = match alg {
            Algorithm::ZhangShasha => (false, strategy::pure(a, &la, &lb, L)),
            Algorithm::Lr => strategy::choose(a, b, &la, &lb),
        };
        let (la, lb) = if swap { (lb, la) } else { (la, lb) };
        let mut used = [plan.mixed; 2];
        used[plan.steps[0].1] = true;
        TedSolver {
            a,
            b,
            swap,
            la,
            lb,
            plan,
            used,
            costs: ArenaCosts::default(),
            float: Dp::default(),
            int: Dp::default(),
            evaluations: 0,
        }
    }

    /// How many distances this solver has computed.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// DP cells one evaluation fills.
    pub fn work(&self) -> u64 {
        self.plan.work
    }

    /// The exact edit distance under `cost`.
    pub fn distance(&mut self, cost: &impl CostModel) -> f64 {
        self.evaluations += 1;
        let (a, b) = (self.a, self.b);
        let (n, m) = if self.swap {
            (b.len(), a.len())
        } else {
            (a.len(), b.len())
        };
        self.costs.del.resize(n, 0.0);
        self.costs.ins.resize(m, 0.0);
        self.costs.ren.resize(n * m, 0.0);
        // TED(A, B) under c = TED(B, A) under c with insert and delete
        // exchanged and renames transposed.
        for x in 0..n {
            self.costs.del[x] = if self.swap {
                cost.insert(b, x)
            } else {
                cost.delete(a, x)
            };
            let row = &mut self.costs.ren[x * m..(x + 1) * m];
            for (y, r) in row.iter_mut().enumerate() {
                *r = if self.swap {
                    cost.rename(a, y, b, x)
                } else {
                    cost.rename(a, x, b, y)
                };
            }
        }
        for y in 0..m {
            self.costs.ins[y] = if self.swap {
                cost.delete(a, y)
            } else {
                cost.insert(b, y)
            };
        }
        // `as` saturates and truncates, so the round trip is exact iff `c` is
        // an integer in range (and it is cheaper than `fract`).
        let small_int = |&c: &f64| c <= INT_COST_MAX && (c as u32) as f64 == c;
        let integral = n + m < INT_NODES_MAX
            && self
                .costs
                .del
                .iter()
                .chain(&self.costs.ins)
                .chain(&self.costs.ren)
                .all(small_int);
        let both = self.used[L] && self.used[R];
        if integral {
            for o in [L, R].into_iter().filter(|&o| self.used[o]) {
                let (pa, pb) = (&self.la.post[o], &self.lb.post[o]);
                self.int.load(o, pa, pb, &self.costs, |c| c as u32);
            }
            self.int.run(&self.la, &self.lb, &self.plan, both) as f64
        } else {
            for o in [L, R].into_iter().filter(|&o| self.used[o]) {
                let (pa, pb) = (&self.la.post[o], &self.lb.post[o]);
                self.float.load(o, pa, pb, &self.costs, |c| c);
            }
            self.float.run(&self.la, &self.lb, &self.plan, both)
        }
    }
}

/// Exact tree edit distance between `a` and `b` under `cost`.
pub fn ted(a: &OpTree, b: &OpTree, cost: &impl CostModel, alg: Algorithm) -> f64 {
    TedSolver::new(a, b, alg).distance(cost)
}

/// `1 - distance / max(|a|, |b|)`, node counts including the root, as the
/// GTED paper defines it (negative when the distance exceeds the larger
/// tree). Written exactly as the paper's Python computes it so that the
/// floats are bit-identical.
pub fn similarity(distance: f64, size_a: usize, size_b: usize) -> f64 {
    1.0 - distance / (size_a.max(size_b) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::UnitCost;
    use crate::tree::TreeNode;

    /// Builds a tree from a compact s-expression: `f(a,g(b))`.
    pub(crate) fn t(s: &str) -> OpTree {
        fn parse(s: &[u8], pos: &mut usize, nodes: &mut Vec<TreeNode>) -> usize {
            let start = *pos;
            while *pos < s.len() && !b"(),".contains(&s[*pos]) {
                *pos += 1;
            }
            let me = nodes.len();
            nodes.push(TreeNode {
                label: String::from_utf8(s[start..*pos].to_vec()).unwrap(),
                bound: None,
                children: vec![],
            });
            if *pos < s.len() && s[*pos] == b'(' {
                *pos += 1;
                loop {
                    let c = parse(s, pos, nodes);
                    nodes[me].children.push(c);
                    let sep = s[*pos];
                    *pos += 1;
                    if sep == b')' {
                        break;
                    }
                }
            }
            me
        }
        let mut nodes = vec![];
        parse(s.as_bytes(), &mut 0, &mut nodes);
        OpTree::from_nodes(nodes)
    }

    #[test]
    fn classic_examples() {
        // Zhang & Shasha's example: f(d(a,c(b)),e) vs f(c(d(a,b)),e) = 2.
        for alg in [Algorithm::ZhangShasha, Algorithm::Lr] {
            assert_eq!(
                ted(&t("f(d(a,c(b)),e)"), &t("f(c(d(a,b)),e)"), &UnitCost, alg),
                2.0
            );
            assert_eq!(ted(&t("a"), &t("a"), &UnitCost, alg), 0.0);
            assert_eq!(ted(&t("a"), &t("b"), &UnitCost, alg), 1.0);
            assert_eq!(ted(&t("a(b,c)"), &t("a"), &UnitCost, alg), 2.0);
            // c is d's ancestor on one side, its sibling on the other: b goes,
            // and c goes and comes back.
            assert_eq!(ted(&t("a(b(c(d)))"), &t("a(c,d)"), &UnitCost, alg), 3.0);
            assert_eq!(ted(&t("a(b(c,d))"), &t("a(c,d)"), &UnitCost, alg), 1.0);
        }
    }

    #[test]
    fn lr_picks_the_cheaper_side() {
        // A right comb: left paths are short, so left key roots are many.
        let comb = t("a(b,a(b,a(b,a(b,a(b,c)))))");
        let (l, r, lr) = strategy_work(&comb, &comb);
        assert!(
            r < l,
            "right strategy should be cheaper on a right comb: {l} vs {r}"
        );
        assert!(lr <= r);
        let (l, r, lr) = strategy_work(&comb.mirrored(), &comb.mirrored());
        assert!(l < r && lr <= l);
        // A left comb beside a right comb: neither pure strategy fits both
        // halves, and when they are big enough mixing pays for itself.
        let (mut left, mut right) = ("c".to_string(), "c".to_string());
        for _ in 0..40 {
            left = format!("a({left},c)");
            right = format!("a(b,{right})");
        }
        let mixed = t(&format!("r({left},{right})"));
        let (l, r, lr) = strategy_work(&mixed, &mixed);
        let s = TedSolver::new(&mixed, &mixed, Algorithm::Lr);
        assert!(s.plan.mixed, "the chosen plan mixes orientations");
        assert!(lr < l.min(r), "{lr} vs {l}, {r}");
        assert_eq!(s.work(), lr);
        for alg in [Algorithm::ZhangShasha, Algorithm::Lr] {
            assert_eq!(
                ted(&mixed, &comb, &UnitCost, alg),
                ted(&comb, &mixed, &UnitCost, alg)
            );
        }
    }

    /// Random trees from a fixed LCG, as s-expressions.
    fn random_tree(seed: &mut u64, nodes: usize) -> OpTree {
        fn next(seed: &mut u64) -> u64 {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *seed >> 33
        }
        fn go(seed: &mut u64, budget: &mut usize) -> String {
            let label = ["a", "b", "c"][(next(seed) % 3) as usize];
            *budget = budget.saturating_sub(1);
            let kids = if *budget == 0 { 0 } else { next(seed) % 4 };
            let mut children = Vec::new();
            for _ in 0..kids {
                if *budget > 0 {
                    children.push(go(seed, budget));
                }
            }
            let kids = children;
            if kids.is_empty() {
                label.to_string()
            } else {
                format!("{label}({})", kids.join(","))
            }
        }
        t(&go(seed, &mut { nodes }))
    }

    /// Every plan shape (pure left, pure right, mixed; either role) gives
    /// Zhang–Shasha's distance, including mixed plans the cost model would
    /// rarely pick on small trees.
    #[test]
    fn every_plan_shape_is_exact() {
        use crate::cost::PaperCost;
        let mut seed = 7;
        let mut mixed_seen = 0;
        for _ in 0..60 {
            let (a, b) = (random_tree(&mut seed, 40), random_tree(&mut seed, 40));
            let want = ted(&a, &b, &UnitCost, Algorithm::ZhangShasha);
            for swap in [false, true] {
                let (f, g) = if swap { (&b, &a) } else { (&a, &b) };
                let (lf, lg) = (Layout::new(f), Layout::new(g));
                let plans = [
                    strategy::pure(f, &lf, &lg, L),
                    strategy::pure(f, &lf, &lg, R),
                    strategy::mixed(f, &lg),
                ];
                for plan in plans {
                    mixed_seen += plan.mixed as usize;
                    let mut s = TedSolver::new(&a, &b, Algorithm::ZhangShasha);
                    s.used = [plan.mixed; 2];
                    s.used[plan.steps[0].1] = true;
                    (s.swap, s.la, s.lb, s.plan) = (swap, Layout::new(f), Layout::new(g), plan);
                    assert_eq!(s.distance(&UnitCost), want);
                    assert_eq!(
                        s.distance(&PaperCost),
                        ted(&a, &b, &PaperCost, Algorithm::ZhangShasha)
                    );
                }
            }
        }
        assert!(mixed_seen > 20, "only {mixed_seen} mixed plans");
    }

    #[test]
    fn keyroots_of_small_tree() {
        // post-order of f(d(a,c(b)),e): a b c d e f; key roots: c, e, f.
        let p = crate::layout::Post::new(&t("f(d(a,c(b)),e)"), false);
        assert_eq!(p.lld, vec![0, 1, 1, 0, 4, 0]);
        assert_eq!(p.keyroots, vec![2, 4, 5]);
    }
}
