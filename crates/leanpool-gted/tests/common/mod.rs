//! Shared test helpers: the data directory, a definition-level TED oracle,
//! brute-force alpha distance, and random tree generators.
#![allow(dead_code)]

use leanpool_gted::{AlphaCost, CostModel, NameKind, OpTree};
use leanpool_protocol::GtedNode;
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;

/// The miniF2F data ([`leanpool_testkit::data::minif2f_dir`]). Panics with
/// instructions when absent: the reproduction is part of the suite and must
/// not silently skip.
pub fn data_dir() -> PathBuf {
    leanpool_testkit::data::minif2f_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// Tree edit distance straight from its recursive definition on ordered
/// forests (Tai 1979 / Zhang–Shasha's recurrence, rightmost roots), memoised
/// on the forests themselves. Exponential-ish; for trees of a dozen nodes.
/// Shares nothing with the crate's algorithms but the cost model.
pub fn oracle_ted(a: &OpTree, b: &OpTree, cost: &impl CostModel) -> f64 {
    type Memo = HashMap<(Vec<usize>, Vec<usize>), f64>;
    fn fd(
        a: &OpTree,
        b: &OpTree,
        cost: &impl CostModel,
        f: Vec<usize>,
        g: Vec<usize>,
        memo: &mut Memo,
    ) -> f64 {
        if let Some(&d) = memo.get(&(f.clone(), g.clone())) {
            return d;
        }
        let d = match (f.last().copied(), g.last().copied()) {
            (None, None) => 0.0,
            (Some(v), None) => {
                let mut f2 = f[..f.len() - 1].to_vec();
                f2.extend(&a.node(v).children);
                fd(a, b, cost, f2, g.clone(), memo) + cost.delete(a, v)
            }
            (None, Some(w)) => {
                let mut g2 = g[..g.len() - 1].to_vec();
                g2.extend(&b.node(w).children);
                fd(a, b, cost, f.clone(), g2, memo) + cost.insert(b, w)
            }
            (Some(v), Some(w)) => {
                let f_rest = f[..f.len() - 1].to_vec();
                let g_rest = g[..g.len() - 1].to_vec();
                let mut f_del = f_rest.clone();
                f_del.extend(&a.node(v).children);
                let mut g_ins = g_rest.clone();
                g_ins.extend(&b.node(w).children);
                let del = fd(a, b, cost, f_del, g.clone(), memo) + cost.delete(a, v);
                let ins = fd(a, b, cost, f.clone(), g_ins, memo) + cost.insert(b, w);
                let ren = fd(a, b, cost, f_rest, g_rest, memo)
                    + fd(
                        a,
                        b,
                        cost,
                        a.node(v).children.clone(),
                        b.node(w).children.clone(),
                        memo,
                    )
                    + cost.rename(a, v, b, w);
                del.min(ins).min(ren)
            }
        };
        memo.insert((f, g), d);
        d
    }
    fd(a, b, cost, vec![0], vec![0], &mut Memo::new())
}

/// All maximal injective assignments between the classes of `a` and `b`,
/// per kind, combined across kinds.
pub fn all_assignments(a: &OpTree, b: &OpTree) -> Vec<Vec<(NameKind, u32, u32)>> {
    fn injections(p: u32, q: u32) -> Vec<Vec<(u32, u32)>> {
        // All injective partial maps of size min(p, q) from 0..p to 0..q.
        let want = p.min(q) as usize;
        let mut out = vec![];
        fn go(
            c: u32,
            p: u32,
            q: u32,
            want: usize,
            used: &mut Vec<bool>,
            cur: &mut Vec<(u32, u32)>,
            out: &mut Vec<Vec<(u32, u32)>>,
        ) {
            if cur.len() == want {
                out.push(cur.clone());
                return;
            }
            if c == p || (p - c) as usize + cur.len() < want {
                return;
            }
            for d in 0..q {
                if !used[d as usize] {
                    used[d as usize] = true;
                    cur.push((c, d));
                    go(c + 1, p, q, want, used, cur, out);
                    cur.pop();
                    used[d as usize] = false;
                }
            }
            go(c + 1, p, q, want, used, cur, out); // c unmatched
        }
        go(
            0,
            p,
            q,
            want,
            &mut vec![false; q as usize],
            &mut vec![],
            &mut out,
        );
        out
    }
    let vars = injections(a.classes(NameKind::Var), b.classes(NameKind::Var));
    let hyps = injections(a.classes(NameKind::Hyp), b.classes(NameKind::Hyp));
    let mut out = vec![];
    for v in &vars {
        for h in &hyps {
            let mut m: Vec<(NameKind, u32, u32)> =
                v.iter().map(|&(x, y)| (NameKind::Var, x, y)).collect();
            m.extend(h.iter().map(|&(x, y)| (NameKind::Hyp, x, y)));
            out.push(m);
        }
    }
    out
}

/// `min_σ TED_σ` by enumerating every assignment and running the oracle.
pub fn brute_alpha(a: &OpTree, b: &OpTree) -> f64 {
    all_assignments(a, b)
        .iter()
        .map(|m| oracle_ted(a, b, &AlphaCost::with_matching(a, b, m)))
        .fold(f64::INFINITY, f64::min)
}

/// A node to be placed in a generated tree.
#[derive(Debug, Clone)]
pub enum Gen {
    Plain(u8),
    Var(u8),
    Hyp(u8),
}

/// A generated tree before conversion.
#[derive(Debug, Clone)]
pub struct Shape(pub Gen, pub Vec<Shape>);

impl Shape {
    /// Through GTED's format, so classes are assigned by the real reader.
    pub fn to_tree(&self) -> OpTree {
        fn go(s: &Shape) -> GtedNode {
            let (content, v, h) = match s.0 {
                Gen::Plain(k) => (format!("p{k}"), false, false),
                Gen::Var(k) => (format!("x{k}"), true, false),
                Gen::Hyp(k) => (format!("h{k}"), false, true),
            };
            GtedNode {
                content,
                children: s.1.iter().map(go).collect(),
                variable_freecost: v,
                hypothesis_freecost: h,
            }
        }
        OpTree::from_gted(&go(self))
    }
}

/// Random small trees: labels from a small alphabet (so that equal labels
/// and partial matches are frequent), some leaves bound names from a small
/// pool of variables and hypotheses (equal name = same binder, as in GTED's
/// format). Plain labels are disjoint from names.
pub fn arb_tree(max_nodes: usize) -> impl Strategy<Value = OpTree> {
    let leaf = prop_oneof![
        3 => (0u8..3).prop_map(Gen::Plain),
        2 => (0u8..3).prop_map(Gen::Var),
        1 => (0u8..2).prop_map(Gen::Hyp),
    ]
    .prop_map(|g| Shape(g, vec![]));
    leaf.prop_recursive(4, max_nodes as u32, 3, |inner| {
        (
            (0u8..3).prop_map(Gen::Plain),
            prop::collection::vec(inner, 1..=3),
        )
            .prop_map(|(g, kids)| Shape(g, kids))
    })
    .prop_map(|s| s.to_tree())
    .prop_filter("too big", move |t| t.len() <= max_nodes)
}
