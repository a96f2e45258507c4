//! Exact tree edit distance.
//!
//! Two exact algorithms over the same dynamic program:
//!
//! - [`Algorithm::ZhangShasha`]: Zhang & Shasha (1989), always decomposing
//!   along leftmost paths. Time `O(Σ_{k∈KR(A)} |A_k| · Σ_{l∈KR(B)} |B_l|)`,
//!   at worst `O(n²m²)`, typically `O(nm · min(depth, leaves)²)`; space
//!   `O(nm)`. The baseline.
//! - [`Algorithm::Lr`] (default): the same recurrence, but per pair of trees
//!   it picks the cheaper of the two path strategies (all-left or
//!   all-right, the latter by mirroring both trees, which leaves the
//!   distance unchanged). The subproblem count of each strategy is known in
//!   `O(n + m)` before running it (it is exactly the product above), so the
//!   choice is free; this is the two-strategy special case of RTED/APTED's
//!   strategy selection. On trees that lean right — operator trees whose
//!   last argument is the big one, like `_ → _` chains — it saves most of
//!   the work. All cost matrices are precomputed into flat arrays and the
//!   buffers are reused across calls with new costs ([`TedSolver`]), which
//!   is what alpha mode's search needs.
//!
//! Both are exact for any non-negative costs; their results are compared
//! against a definition-level oracle in the tests.

use crate::cost::CostModel;
use crate::tree::OpTree;

/// Which exact algorithm to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Zhang–Shasha, leftmost paths only (baseline).
    ZhangShasha,
    /// Zhang–Shasha with the cheaper of left/right path strategy per pair.
    #[default]
    Lr,
}

/// A tree in post-order, as Zhang–Shasha needs it.
struct Post {
    /// Post-order index -> arena index.
    arena: Vec<usize>,
    /// Leftmost leaf descendant of each node (post-order indices).
    lld: Vec<usize>,
    /// Key roots, ascending: the highest node for each distinct `lld`.
    keyroots: Vec<usize>,
}

impl Post {
    /// `mirror` visits children right to left, i.e. lays out the mirrored tree.
    fn new(t: &OpTree, mirror: bool) -> Post {
        let n = t.len();
        let mut arena = Vec::with_capacity(n);
        let mut lld = Vec::with_capacity(n);
        // Iterative post-order: (node, next child position, lld so far).
        let mut stack: Vec<(usize, usize, Option<usize>)> = vec![(0, 0, None)];
        while let Some(top) = stack.last_mut() {
            let (node, pos) = (top.0, top.1);
            let kids = &t.node(node).children;
            if pos < kids.len() {
                top.1 += 1;
                let c = if mirror {
                    kids[kids.len() - 1 - pos]
                } else {
                    kids[pos]
                };
                stack.push((c, 0, None));
            } else {
                let me = arena.len();
                let my_lld = top.2.unwrap_or(me);
                arena.push(node);
                lld.push(my_lld);
                stack.pop();
                if let Some(parent) = stack.last_mut() {
                    // The first finished child carries the parent's lld.
                    parent.2.get_or_insert(my_lld);
                }
            }
        }
        let mut highest = vec![usize::MAX; n];
        for (i, &l) in lld.iter().enumerate() {
            highest[l] = i; // post-order: later = higher
        }
        let mut keyroots: Vec<usize> = highest.into_iter().filter(|&k| k != usize::MAX).collect();
        keyroots.sort_unstable();
        Post {
            arena,
            lld,
            keyroots,
        }
    }

    /// Σ of key-root subtree sizes: this tree's factor in the number of
    /// forest-distance cells Zhang–Shasha fills.
    fn work(&self) -> u64 {
        self.keyroots
            .iter()
            .map(|&k| (k - self.lld[k] + 1) as u64)
            .sum()
    }
}

/// Cells of the forest-distance table a strategy fills for two trees
/// (left = Zhang–Shasha, right = mirrored). Exposed for the bench.
pub fn strategy_work(a: &OpTree, b: &OpTree) -> (u64, u64) {
    let l = Post::new(a, false).work() * Post::new(b, false).work();
    let r = Post::new(a, true).work() * Post::new(b, true).work();
    (l, r)
}

/// A pair of trees laid out for repeated distance computations with
/// different costs (alpha mode evaluates many assignments on one pair).
pub struct TedSolver<'t> {
    a: &'t OpTree,
    b: &'t OpTree,
    pa: Post,
    pb: Post,
    float: Dp<f64>,
    int: Dp<u32>,
    evaluations: u64,
}

/// The numbers the kernel runs on. Costs arrive as `f64`; when they are all
/// small integers (unit costs: every mode here) the kernel runs on `u32`,
/// whose add/min chain in the inner loop is several times shorter than the
/// floating-point one, with an identical (exact) result.
trait Num: Copy + PartialOrd + std::ops::Add<Output = Self> + Default {}
impl Num for f64 {}
impl Num for u32 {}

/// Cost arrays (post-order indices) and the two DP tables.
#[derive(Default)]
struct Dp<T> {
    del: Vec<T>,
    ins: Vec<T>,
    ren: Vec<T>,
    treedist: Vec<T>,
    fd: Vec<T>,
}

impl<T: Num> Dp<T> {
    fn size(&mut self, n: usize, m: usize) {
        if self.treedist.len() != n * m {
            self.del = vec![T::default(); n];
            self.ins = vec![T::default(); m];
            self.ren = vec![T::default(); n * m];
            self.treedist = vec![T::default(); n * m];
            self.fd = vec![T::default(); (n + 1) * (m + 1)];
        }
    }

    fn run(&mut self, pa: &Post, pb: &Post) -> T {
        let (n, m) = (pa.arena.len(), pb.arena.len());
        for &i in &pa.keyroots {
            for &j in &pb.keyroots {
                self.forest_dist(pa, pb, i, j);
            }
        }
        self.treedist[(n - 1) * m + (m - 1)]
    }

    /// Fills the forest distances between all prefixes (in post-order) of
    /// the subtrees rooted at key roots `i` and `j`, recording tree
    /// distances for the subtree pairs whose leftmost paths they share.
    fn forest_dist(&mut self, pa: &Post, pb: &Post, i: usize, j: usize) {
        let m = pb.arena.len();
        let (li, lj) = (pa.lld[i], pb.lld[j]);
        let w = j - lj + 2; // row width: forest prefixes of B's subtree, plus empty
        let fd = &mut self.fd[..(i - li + 2) * w];
        // Slices of B's side for columns lj..=j, so the inner loops index
        // nothing out of bounds and the compiler can drop the checks.
        let ins = &self.ins[lj..=j];
        let lld_b = &pb.lld[lj..=j];
        fd[0] = T::default();
        for (k, &c) in ins.iter().enumerate() {
            fd[k + 1] = fd[k] + c;
        }
        for x in li..=i {
            let r = x - li + 1;
            let (before, cur) = fd.split_at_mut(r * w);
            let prev = &before[(r - 1) * w..];
            let cur = &mut cur[..w];
            let dx = self.del[x];
            cur[0] = prev[0] + dx;
            let mut left = cur[0];
            let lx = pa.lld[x];
            let td = &mut self.treedist[x * m + lj..=x * m + j];
            if lx == li {
                // x is on A's leftmost path: tree distances for columns on
                // B's leftmost path are final here.
                let ren = &self.ren[x * m + lj..=x * m + j];
                for k in 0..ins.len() {
                    let v = min(prev[k + 1] + dx, left + ins[k]);
                    let v = if lld_b[k] == lj {
                        let v = min(v, prev[k] + ren[k]);
                        td[k] = v;
                        v
                    } else {
                        min(v, before[lld_b[k] - lj] + td[k])
                    };
                    cur[k + 1] = v;
                    left = v;
                }
            } else {
                let sub = &before[(lx - li) * w..];
                for k in 0..ins.len() {
                    // The term not depending on `left` first: shorter chain.
                    let v = min(prev[k + 1] + dx, sub[lld_b[k] - lj] + td[k]);
                    let v = min(v, left + ins[k]);
                    cur[k + 1] = v;
                    left = v;
                }
            }
        }
    }
}

/// `min` without NaN handling (costs are never NaN), a single instruction
/// in the inner loop.
#[inline(always)]
fn min<T: PartialOrd>(a: T, b: T) -> T {
    if a < b {
        a
    } else {
        b
    }
}

/// Largest integer cost run on `u32`; with `n + m < 2^15` nodes no sum can
/// overflow (`2^16 · 2^15 < 2^32`).
const INT_COST_MAX: f64 = 65536.0;
const INT_NODES_MAX: usize = 1 << 15;

impl<'t> TedSolver<'t> {
    pub fn new(a: &'t OpTree, b: &'t OpTree, alg: Algorithm) -> TedSolver<'t> {
        let mirror = match alg {
            Algorithm::ZhangShasha => false,
            Algorithm::Lr => {
                let (l, r) = strategy_work(a, b);
                r < l
            }
        };
        let (pa, pb) = (Post::new(a, mirror), Post::new(b, mirror));
        TedSolver {
            a,
            b,
            pa,
            pb,
            float: Dp::default(),
            int: Dp::default(),
            evaluations: 0,
        }
    }

    /// How many distances this solver has computed.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// The exact edit distance under `cost`.
    pub fn distance(&mut self, cost: &impl CostModel) -> f64 {
        self.evaluations += 1;
        let (n, m) = (self.a.len(), self.b.len());
        let f = &mut self.float;
        f.size(n, m);
        for x in 0..n {
            let i = self.pa.arena[x];
            f.del[x] = cost.delete(self.a, i);
            for y in 0..m {
                f.ren[x * m + y] = cost.rename(self.a, i, self.b, self.pb.arena[y]);
            }
        }
        for y in 0..m {
            f.ins[y] = cost.insert(self.b, self.pb.arena[y]);
        }
        // `as` saturates and truncates, so the round trip is exact iff `c` is
        // an integer in range (and it is cheaper than `fract`).
        let small_int = |&c: &f64| c <= INT_COST_MAX && (c as u32) as f64 == c;
        let integral =
            n + m < INT_NODES_MAX && f.del.iter().chain(&f.ins).chain(&f.ren).all(small_int);
        if !integral {
            return f.run(&self.pa, &self.pb);
        }
        let k = &mut self.int;
        k.size(n, m);
        for (dst, src) in [
            (&mut k.del, &f.del),
            (&mut k.ins, &f.ins),
            (&mut k.ren, &f.ren),
        ] {
            for (d, s) in dst.iter_mut().zip(src.iter()) {
                *d = *s as u32;
            }
        }
        k.run(&self.pa, &self.pb) as f64
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
        let (l, r) = strategy_work(&comb, &comb);
        assert!(
            r < l,
            "right strategy should be cheaper on a right comb: {l} vs {r}"
        );
        let (l, r) = strategy_work(&comb.mirrored(), &comb.mirrored());
        assert!(l < r);
    }

    #[test]
    fn keyroots_of_small_tree() {
        // post-order of f(d(a,c(b)),e): a b c d e f; key roots: c, e, f.
        let p = Post::new(&t("f(d(a,c(b)),e)"), false);
        assert_eq!(p.lld, vec![0, 1, 1, 0, 4, 0]);
        assert_eq!(p.keyroots, vec![2, 4, 5]);
    }
}
