//! The forest-distance DP (Zhang & Shasha's recurrence), generic over the
//! number type and the orientation.

use crate::layout::{Layout, Post};
use crate::strategy::Plan;

/// The numbers the kernel runs on. Costs arrive as `f64`; when they are all
/// small integers (unit costs: every mode here) the kernel runs on `u32`,
/// whose add/min chain in the inner loop is shorter than the floating-point
/// one, with an identical (exact) result.
pub(crate) trait Num: Copy + PartialOrd + std::ops::Add<Output = Self> + Default {}
impl Num for f64 {}
impl Num for u32 {}

/// Costs of one evaluation, in the trees' arena order (`ren` is `n × m`,
/// row = node of the first tree).
#[derive(Default)]
pub(crate) struct ArenaCosts {
    pub del: Vec<f64>,
    pub ins: Vec<f64>,
    pub ren: Vec<f64>,
}

/// Per orientation (index 0 = left, 1 = right), in that orientation's
/// post-order: costs and tree distances; plus the forest-distance table.
#[derive(Default)]
pub(crate) struct Dp<T> {
    del: [Vec<T>; 2],
    ins: [Vec<T>; 2],
    ren: [Vec<T>; 2],
    td: [Vec<T>; 2],
    fd: Vec<T>,
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

impl<T: Num> Dp<T> {
    /// Loads arena-ordered costs into orientation `o`, sizing the tables on first use.
    pub fn load(
        &mut self,
        o: usize,
        pa: &Post,
        pb: &Post,
        costs: &ArenaCosts,
        conv: impl Fn(f64) -> T,
    ) {
        let (del, ins, ren) = (&costs.del, &costs.ins, &costs.ren);
        let (n, m) = (del.len(), ins.len());
        if self.td[o].len() != n * m {
            self.del[o] = vec![T::default(); n];
            self.ins[o] = vec![T::default(); m];
            self.ren[o] = vec![T::default(); n * m];
            self.td[o] = vec![T::default(); n * m];
        }
        if self.fd.len() < (n + 1) * (m + 1) {
            self.fd = vec![T::default(); (n + 1) * (m + 1)];
        }
        for (x, &ax) in pa.arena.iter().enumerate() {
            self.del[o][x] = conv(del[ax]);
            let src = &ren[ax * m..(ax + 1) * m];
            let dst = &mut self.ren[o][x * m..(x + 1) * m];
            for (d, &by) in dst.iter_mut().zip(&pb.arena) {
                *d = conv(src[by]);
            }
        }
        for (y, &by) in pb.arena.iter().enumerate() {
            self.ins[o][y] = conv(ins[by]);
        }
    }

    /// Runs the plan's single-path passes; `both` mirrors every tree
    /// distance into the other orientation's table (needed when the plan
    /// mixes orientations). Returns the distance of the two whole trees.
    pub fn run(&mut self, a: &Layout, b: &Layout, plan: &Plan, both: bool) -> T {
        for &(v, o) in &plan.steps {
            let i = a.post[o].index[v];
            for &j in &b.post[o].keyroots {
                self.forest_dist(a, b, o, i, j, both);
            }
        }
        let (n, m) = (a.post[0].arena.len(), b.post[0].arena.len());
        let last = plan.steps.last().expect("a plan has a pass for the root").1;
        self.td[last][(n - 1) * m + (m - 1)]
    }

    /// Fills the forest distances between all prefixes (in orientation
    /// `o`'s post-order) of the subtrees rooted at `i` (a path top of A) and
    /// key root `j` of B, recording the tree distances of subtree pairs on
    /// the two leftmost paths.
    fn forest_dist(&mut self, a: &Layout, b: &Layout, o: usize, i: usize, j: usize, both: bool) {
        let (pa, pb) = (&a.post[o], &b.post[o]);
        let m = pb.arena.len();
        let (li, lj) = (pa.lld[i], pb.lld[j]);
        let w = j - lj + 2; // row width: forest prefixes of B's subtree, plus empty
        let fd = &mut self.fd[..(i - li + 2) * w];
        // Slices of B's side for columns lj..=j, so the inner loops index
        // nothing out of bounds and the compiler can drop the checks.
        let ins = &self.ins[o][lj..=j];
        let lld_b = &pb.lld[lj..=j];
        let (del, ren) = (&self.del[o], &self.ren[o]);
        let (td, other) = {
            let (t0, t1) = self.td.split_at_mut(1);
            if o == 0 {
                (&mut t0[0], &mut t1[0])
            } else {
                (&mut t1[0], &mut t0[0])
            }
        };
        fd[0] = T::default();
        for (k, &c) in ins.iter().enumerate() {
            fd[k + 1] = fd[k] + c;
        }
        for x in li..=i {
            let r = x - li + 1;
            let (before, cur) = fd.split_at_mut(r * w);
            let prev = &before[(r - 1) * w..];
            let cur = &mut cur[..w];
            let dx = del[x];
            cur[0] = prev[0] + dx;
            let mut left = cur[0];
            let lx = pa.lld[x];
            let td_row = &mut td[x * m + lj..=x * m + j];
            if lx == li {
                // x is on the path: tree distances for columns on B's
                // leftmost path are final here.
                let ren = &ren[x * m + lj..=x * m + j];
                for k in 0..ins.len() {
                    let v = min(prev[k + 1] + dx, left + ins[k]);
                    let v = if lld_b[k] == lj {
                        let v = min(v, prev[k] + ren[k]);
                        td_row[k] = v;
                        if both {
                            other[a.cross[o][x] * m + b.cross[o][lj + k]] = v;
                        }
                        v
                    } else {
                        min(v, before[lld_b[k] - lj] + td_row[k])
                    };
                    cur[k + 1] = v;
                    left = v;
                }
            } else {
                let sub = &before[(lx - li) * w..];
                for k in 0..ins.len() {
                    // The term not depending on `left` first: shorter chain.
                    let v = min(prev[k + 1] + dx, sub[lld_b[k] - lj] + td_row[k]);
                    let v = min(v, left + ins[k]);
                    cur[k + 1] = v;
                    left = v;
                }
            }
        }
    }
}
